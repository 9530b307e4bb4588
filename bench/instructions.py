#!/usr/bin/env python3
"""Instructions per sweep point of a summary-only run, counted with callgrind: a steady measure
where timings on a shared machine swing by 2x between runs (the ratios of bench/e2e.py are the
targets; this is for comparing two builds while working on the per-point path).

Two scenarios of bench/e2e.py's kind (3x3 convolutions on 14x14 inputs, swept over channel counts,
`--tables summary`, one worker): 50 layers x 2,000 points, and 1 layer x 20,000 points (what a
point costs beyond its layers). For each: the whole process per point (its start spread over the
points), and per point the inclusive counts of the stages (evaluating a point, of which re-binding
its network; formatting it; writing it). Then a point of the 50-layer network alone: a run of
20,000 points minus a run of one, per point. Needs valgrind (apt-get install valgrind).

usage: bench/instructions.py [--rsim build/rsim] [--keep DIR]
"""
import argparse, os, re, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from e2e import scenario  # noqa: E402  (the same scenario as the end-to-end bench)

STAGES = [
    ("evaluating a point", r"evaluate\.cpp:rsim::evaluate_point\("),
    ("  of which re-binding its network", r"graph\.cpp:rsim::rebind_network\("),
    ("formatting it (TableWriter::prepare)", r"rsim::TableWriter::prepare\("),
    ("writing it (TableWriter::consume)", r"output\.cpp:rsim::TableWriter::consume\("),
]


def count(rsim, yaml, points, work):
    out = os.path.join(work, "cg.out")
    shutil.rmtree(os.path.join(work, "o"), ignore_errors=True)
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", rsim, "run", yaml, "--out", os.path.join(work, "o"),
                    "-q", "--no-plots", "--jobs", "1", "--tables", "summary"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", out], check=True, capture_output=True, text=True).stdout
    total = None
    stages = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s", line)
        if not m:
            continue
        n = int(m.group(1).replace(",", ""))
        if "PROGRAM TOTALS" in line:
            total = n
        for name, pat in STAGES:
            # the largest entry of a function: callgrind lists inlined parts under other files too
            if re.search(pat, line) and n > stages.get(name, 0):
                stages[name] = n
    return total / points, {k: v / points for k, v in stages.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rsim", default=os.path.join(os.path.dirname(HERE), "build", "rsim"))
    ap.add_argument("--keep", help="work in this folder and keep it")
    a = ap.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_annotate") is None:
        print("valgrind not installed: apt-get install valgrind")
        return 0
    rsim = os.path.abspath(a.rsim)
    work = a.keep or tempfile.mkdtemp(prefix="rsim_instr_")
    os.makedirs(work, exist_ok=True)
    for layers, points in ((50, 2000), (1, 20000)):
        yaml = os.path.join(work, f"s{layers}.yaml")
        scenario(yaml, points, layers)
        total, stages = count(rsim, yaml, points, work)
        print(f"{layers} layer{'s' if layers > 1 else ''} x {points} points: {total:,.0f} instructions per point (the process's start included)")
        for name, _ in STAGES:
            print(f"  {name:<40} {stages.get(name, 0):>10,.0f}")
    # a point alone: 20,000 points of the 50-layer network beyond a one-point run of it (the
    # process's start taken out; the README's figure)
    runs = {}
    for points in (20000, 1):
        yaml = os.path.join(work, f"t{points}.yaml")
        scenario(yaml, points, 50)
        runs[points] = count(rsim, yaml, points, work)[0] * points
    print(f"50 layers, a point beyond the process's start (20000 points minus 1): {(runs[20000] - runs[1]) / 19999:,.0f} instructions")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
