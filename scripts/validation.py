#!/usr/bin/env python3
"""Regenerates docs/validation.md: rsim's predictions against measurements on this machine (issue 10).

One command (`make validation`, or `python3 scripts/validation.py --rsim build/rsim`):
  1. `rsim probe` measures this CPU's roofs (platform file, JSON, two figures);
  2. optionally `rsim_bench_probe --quick` compares the probe with reference kernels (--bench);
  3. `rsim measure` runs every layer of ResNet-18/50, MobileNetV2, VGG16 (batch 1, 224×224, fp32)
     and the six seed sweeps with oneDNN, warm caches, beside the roofline on the probed roofs;
  4. `rsim calibrate` fits the efficiency model on all of them and predicts each network from a fit
     on the others (--predictions: one cross-validated prediction per layer);
  5. the report: per network and per op class, the share of layers at or above the bound, the
     median / 90th percentile of |predicted/measured − 1| before and after calibration, the share of
     FLOP-carrying layers within 1.5×, the whole-network time error, beside the issue's targets.
Standard library only. Everything is written under --work (default out/validation); the report and
its figures go to docs/ (--doc). Takes a few minutes; not part of CI. The run's context (start time,
load, probe and bench output, run log) is kept in WORK/run.json, so that
`--reuse DIR` recomputes steps 4–5 from the measurements kept in DIR (a former --work folder, left
in place) in seconds, without probing or measuring again: the report then states when, and under what
load, those measurements were taken.
"""
import argparse
import csv
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NETWORKS = [  # (name, zoo model) at batch 1, 224×224
    ("resnet18", "resnet18"),
    ("resnet50", "resnet50"),
    ("mobilenet_v2", "mobilenet_v2"),
    ("vgg16", "vgg16"),
]
SWEEPS = ["channel_sweep", "group_conv_sweep", "kernel_size_sweep", "output_size_sweep", "fc_sweep", "reshape_sweep"]
FIGURE_NETS = ["resnet50", "mobilenet_v2"]  # measured rooflines copied into docs/images


def run(cmd, env=None, log=None):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if log is not None:
        log.append((" ".join(cmd), time.time() - t0))
    if p.returncode != 0:
        sys.exit(f"validation: `{' '.join(cmd)}` failed ({p.returncode}):\n{p.stderr}{p.stdout}")
    return p.stdout


def quantile(v, q):  # the same rule as rsim calibrate: the element at floor(q · n)
    if not v:
        return float("nan")
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def loadavg():
    try:
        return "%.1f %.1f %.1f" % os.getloadavg()
    except OSError:
        return "unknown"


def stats(rows):
    """rows: dicts with measured_s, uncalibrated_s, calibrated_s, flops."""
    before = [abs(r["uncalibrated_s"] / r["measured_s"] - 1) for r in rows]
    after = [abs(r["calibrated_s"] / r["measured_s"] - 1) for r in rows]
    flop = [r for r in rows if r["flops"] > 0]

    def within(key):
        if not flop:
            return float("nan")
        return sum(1 for r in flop if 1 / 1.5 <= r[key] / r["measured_s"] <= 1.5) / len(flop)

    sm = sum(r["measured_s"] for r in rows)
    return {
        "n": len(rows),
        "med_before": quantile(before, 0.5), "p90_before": quantile(before, 0.9),
        "med_after": quantile(after, 0.5), "p90_after": quantile(after, 0.9),
        "within_before": within("uncalibrated_s"), "within_after": within("calibrated_s"),
        "net_before": abs(sum(r["uncalibrated_s"] for r in rows) / sm - 1) if sm else float("nan"),
        "net_after": abs(sum(r["calibrated_s"] for r in rows) / sm - 1) if sm else float("nan"),
    }


def pct(x):
    return "—" if x != x else "%.0f %%" % (100 * x)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rsim", default=os.path.join(ROOT, "build", "rsim"))
    ap.add_argument("--bench", help="rsim_bench_probe to run (--quick) and report; default: build/bench/rsim_bench_probe if it exists")
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--threads", type=int, default=0, help="threads for the probe and oneDNN (default: every online CPU)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="rsim probe --quick")
    ap.add_argument("--work", default=os.path.join(ROOT, "out", "validation"))
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs", "validation.md"))
    ap.add_argument("--reuse", metavar="DIR", help="skip probe, bench and measure: recompute the calibration and the report from the "
                    "measurements kept in DIR (a former --work folder with run.json; DIR is not deleted)")
    return ap.parse_args()


def probe_and_measure(a, work, measured, threads, reps, quick, env, log):
    """Steps 1-3 on this machine: the platform file's path and the probe's and the bench's output (None:
    not run). Fills `measured` with each network's scenario and `log` with the commands run."""
    # 1. probe
    platform = os.path.join(work, "this_machine.yaml")
    probe_out = run([a.rsim, "probe", "--threads", str(threads), "-o", platform, "--json", os.path.join(work, "probe.json"), "--out",
                     os.path.join(work, "probe")] + (["--quick"] if quick else []), env, log)

    # 2. probe vs reference kernels
    bench_out = None
    bench = a.bench or os.path.join(os.path.dirname(os.path.abspath(a.rsim)), "bench", "rsim_bench_probe")
    if not a.no_bench and os.path.exists(bench):
        bench_out = run([bench, "--quick"], env, log)

    # 3. measure
    for name, model in NETWORKS:
        path = os.path.join(work, name + ".yaml")
        with open(path, "w") as f:
            f.write(f"name: {name}\nsettings: {{dtype: fp32, memory_model: inputs+weights+outputs}}\nplatforms: [rtx3080]\n"
                    f"networks:\n  - {{model: {model}, args: {{batch: 1, size: 224}}}}\n")
        measured[name] = path
    for name, path in measured.items():
        out = os.path.join(work, "measure", name)
        run([a.rsim, "measure", path, "--platform", platform, "--reps", str(reps), "--out", out, "--quiet"], env, log)
    return platform, probe_out, bench_out


def read_numbers(work, measured, preds_path):
    """Per scenario (layers at or above the bound, measured layers), and the cross-validated prediction of
    every layer."""
    bound = {}  # name → (at or above the bound, measured layers)
    network_of = {}
    for name in measured:
        with open(os.path.join(work, "measure", name, "measured.csv")) as f:
            rows = [r for r in csv.DictReader(f) if r["measured_time_s"]]
        ok = sum(1 for r in rows if float(r["measured_time_s"]) >= float(r["time_s"]) * 0.95)
        bound[name] = (ok, len(rows))
        for r in rows:
            network_of[r["network"]] = name
    preds = []
    with open(preds_path) as f:
        for r in csv.DictReader(f):
            preds.append({"network": r["network"], "scenario": network_of.get(r["network"], r["network"]), "op": r["op"], "class": r["class"],
                          "flops": float(r["flops"]), "measured_s": float(r["measured_s"]), "uncalibrated_s": float(r["uncalibrated_s"]),
                          "calibrated_s": float(r["calibrated_s"])})
    return bound, preds


def copy_figures(a, work):
    """The probe's and the measured rooflines copied into docs/images: the names of those that exist."""
    doc_dir = os.path.dirname(os.path.abspath(a.doc))
    img_dir = os.path.join(doc_dir, "images")
    os.makedirs(img_dir, exist_ok=True)
    figs = []
    for src, dst in [(os.path.join(work, "probe", "probe_roofline.png"), "validation_probe_roofline.png"),
                     (os.path.join(work, "probe", "probe_bandwidth.png"), "validation_probe_bandwidth.png")] + \
                    [(os.path.join(work, "measure", n, "measured_roofline.png"), f"validation_{n}_measured.png") for n in FIGURE_NETS]:
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(img_dir, dst))
            figs.append(dst)
    return figs


def report_context(w, a, work, started, cpu, ncpu, threads, load_start, load_end):
    """When, where and under what load the measurements ran, and what the probe warned."""
    when = (f"Measured by `make validation` (`scripts/validation.py`) on {started:%Y-%m-%d %H:%M} UTC: {cpu}, {ncpu} logical CPUs, "
            f"{threads} thread{'s' if threads > 1 else ''} for the probe and for oneDNN (`OMP_NUM_THREADS={threads}`). "
            f"Load average {load_start} at the start, {load_end} at the end (1, 5, 15 min)")
    if a.reuse:
        now = datetime.datetime.now(datetime.timezone.utc)
        w(when + f". The calibration and this report were recomputed from those measurements on {now:%Y-%m-%d %H:%M} UTC by "
          "`scripts/validation.py --reuse DIR` (no probe or measurement ran again).\n")
    else:
        w(when + ".\n")
    try:
        busy = float(str(load_start).split()[0]) > 0.5 * (ncpu or 1)
    except (ValueError, IndexError):
        busy = False
    if busy:
        w(f"**The machine was busy**: a load average of {str(load_start).split()[0]} on {ncpu} logical CPUs means several runnable "
          "processes per core, so a layer longer than a scheduler time slice waits for the others' slices and its median time "
          "grows by several times, while a short layer mostly runs in one slice. Every measured time below carries that; the "
          "calibration models it (the `contention` term), and its numbers describe this machine *under that load*, not a quiet one.\n")
    else:
        w("Other work on the machine slows measurements unevenly, so read every number below with the load in mind.\n")
    try:
        with open(os.path.join(work, "probe.json")) as f:
            probe_warnings = json.load(f).get("warnings", [])
    except (OSError, ValueError):
        probe_warnings = []
    if probe_warnings:
        w("**The probe warned** (its roofs, and every bound and calibration below, rest on these figures):\n")
        for pw in probe_warnings:
            w(f"- {pw}")
        w("")


def report_method(w, quick, threads, reps):
    w("## Method\n")
    w(f"1. `rsim probe{' --quick' if quick else ''} --threads {threads}` measures the roofs: FMA peaks per ISA and precision, the clock, and "
      "read/write/copy/triad bandwidth over a working-set sweep with plateaus named L1, L2, L3, DRAM. Its platform file has "
      "theoretical compute roofs (cores × clock × lanes × detected pipes × 2), the measured rates as derated roofs, and one memory "
      "level per plateau with the OS's cache size.")
    w("2. `rsim_bench_probe --quick` (bench/bench_probe.cpp) runs reference kernels written independently of the probe in the same run: "
      "a hand-written FMA chain in assembly and STREAM Copy/Triad.")
    w(f"3. `rsim measure SCENARIO --platform this_machine.yaml --reps {reps}` (warm caches: `memory_level: auto`, `mac_count: "
      "executed`) runs every layer with oneDNN, 3 warm-ups then the median of the repetitions, beside its roofline bound on the "
      "probed roofs: ResNet-18, ResNet-50, MobileNetV2 and VGG16 (batch 1, 224×224, fp32) and the six seed sweeps (channels, "
      "group conv, kernel size, output size, FC, reshape).")
    w("4. `rsim calibrate` fits efficiency = a · x^b · g^c per op class (x = MACs for compute-bound layers, bytes for "
      "memory-bound ones, g = input channels per group; a robust fit, Huber at log 1.5, so a few layers on a slow fallback kernel "
      "do not drag the law of the others) together with one platform-wide time-sharing term: a compute-bound layer of run time t "
      "takes t · (1 + (slowdown − 1) / (1 + (onset / t)^8)), onset and slowdown chosen on a grid by the least squares of "
      "log(predicted / measured) over every layer. For each scenario it predicts the layers from a fit on all the *other* "
      "scenarios (`--predictions`). *Before* = the probed roofs alone (their derated = measured roofs); *after* = the "
      "cross-validated calibrated prediction. Error per layer = |predicted / measured − 1|.\n")


def report_targets(w, preds, measured, bound):
    """The issue's targets: returns the statistics the per-scenario table repeats."""
    w("## The issue's targets\n")
    allp = stats(preds)
    nets = [n for n, _ in NETWORKS]
    net_stats = {n: stats([p for p in preds if p["scenario"] == n]) for n in measured}
    ok_all = sum(v[0] for v in bound.values())
    n_all = sum(v[1] for v in bound.values())
    w("| target | measured here | met? |")
    w("|---|---|---|")
    share = ok_all / n_all if n_all else float("nan")
    w(f"| measured time ≥ roofline bound on the probed roofs (5 % slack), ≥ 99 % of layers | {ok_all} of {n_all} layers ({pct(share)}) | "
      f"{'yes' if share >= 0.99 else 'no'} |")
    for n in nets:
        s = net_stats[n]
        w(f"| {n}: calibrated (fit on the others) within 1.5× for ≥ 80 % of FLOP-carrying layers | {pct(s['within_after'])} "
          f"(before: {pct(s['within_before'])}) | {'yes' if s['within_after'] >= 0.8 else 'no'} |")
        w(f"| {n}: whole-network time within 15 % | {pct(s['net_after'])} off (before: {pct(s['net_before'])}) | "
          f"{'yes' if s['net_after'] <= 0.15 else 'no'} |")
    w("")
    met = sum(1 for n in nets if net_stats[n]["within_after"] >= 0.8) + sum(1 for n in nets if net_stats[n]["net_after"] <= 0.15)
    w(f"Calibrated targets met: {met} of {2 * len(nets)} (per network: layers within 1.5×, whole-network time within 15 %). "
      "The bound target is checked on every measured layer of every scenario.\n")
    w("How to read them: *before* is the roofline on the probed roofs, which are this machine's best "
      "microbenchmark rates, so it is a bound, not a prediction; its error is the efficiency oneDNN leaves on the table. "
      "*After* is a prediction for a network none of whose layers were in the fit. A scenario measured on a busy machine "
      "carries the interference in its times (the medians of short repetitions): the contention term models its average "
      "effect as a function of a layer's length, with one asymptote (slowdown) for every layer much longer than the onset; "
      "how much a layer actually waits varies from layer to layer and run to run, and a network made only of layers far "
      "longer than those the fit saw can wait less (or more) than the asymptote says. On a quiet machine the term can still be "
      "chosen: it then corrects long compute-bound layers that run slower than the class laws say, whatever the cause, and "
      "a network whose long layers run close to the peak (VGG16's convolutions here) is predicted too slow.\n")
    return allp, nets, net_stats, ok_all, share


def report_pairs(w, cal_out, nets):
    # each network predicted by a fit on one other network alone (rsim calibrate's pair lines)
    pair_re = re.compile(r"^\s+(\S+)\s+->\s+(\S+)\s+within 1\.5×:\s+(\d+) %\s+network time ([\d.]+) %\s+extrapolated: (\d+) of (\d+)")
    pairs = {}
    for line in cal_out.splitlines():
        m = pair_re.match(line)
        if m:
            pairs[(m.group(1), m.group(2))] = (int(m.group(3)), float(m.group(4)), int(m.group(5)), int(m.group(6)))
    if pairs:
        w("## One network predicts another\n")
        w("Each cell: the share of the column network's FLOP-carrying layers within 1.5× of measured, predicted by a calibration "
          "fitted on the row network alone (laws held at the end of the range they were fitted on; a class or side the row "
          "network never ran takes the laws of its classes together), then the whole-network time error and how many of the "
          "column network's layers leaned on such a transfer. That is how a user calibrates on their own model and predicts the next.\n")
        w("| fit on ↓ / predicts → | " + " | ".join(nets) + " |")
        w("|---|" + "---|" * len(nets))
        for f in nets:
            cells = []
            for t in nets:
                if f == t:
                    cells.append("—")
                elif (f, t) in pairs:
                    wi, ne, ex, n = pairs[(f, t)]
                    cells.append(f"{wi} % · {ne:.0f} % · {ex}/{n}")
                else:
                    cells.append("?")
            w(f"| {f} | " + " | ".join(cells) + " |")
        w("")
        if ("resnet50", "mobilenet_v2") in pairs:
            wi = pairs[("resnet50", "mobilenet_v2")][0]
            w(f"Target (issue 26): fitted on ResNet-50 alone, at least 80 % of MobileNetV2's FLOP-carrying layers within 1.5×: "
              f"{wi} % — {'met' if wi >= 80 else 'missed'}.\n")


def report_scenarios(w, measured, bound, net_stats, allp, ok_all, share):
    w("## Per scenario\n")
    w("Each row is predicted by a calibration fitted on every other row's scenario.\n")
    w("| scenario | layers | ≥ bound | median err before → after | p90 before → after | within 1.5× before → after | network time err before → after |")
    w("|---|---|---|---|---|---|---|")
    for n in measured:
        s = net_stats[n]
        ok, tot = bound[n]
        w(f"| {n} | {tot} | {ok} ({pct(ok / tot if tot else float('nan'))}) | {s['med_before']:.2f} → {s['med_after']:.2f} | "
          f"{s['p90_before']:.2f} → {s['p90_after']:.2f} | {pct(s['within_before'])} → {pct(s['within_after'])} | "
          f"{pct(s['net_before'])} → {pct(s['net_after'])} |")
    w(f"| **all** | {allp['n']} | {ok_all} ({pct(share)}) | {allp['med_before']:.2f} → {allp['med_after']:.2f} | "
      f"{allp['p90_before']:.2f} → {allp['p90_after']:.2f} | {pct(allp['within_before'])} → {pct(allp['within_after'])} | — |")
    w("")


def report_network_error(w, nets, preds):
    w("## Where the whole-network error comes from\n")
    w("Signed: + = predicted slower than measured. Per network, the operator whose summed predicted time is furthest from its "
      "summed measured time, and the share of the network's measured time in layers longer than 1 ms.\n")
    w("| network | measured total | predicted total (after) | error | largest gap: operator, predicted / measured | time in layers > 1 ms |")
    w("|---|---|---|---|---|---|")
    for n in nets:
        rows = [p for p in preds if p["scenario"] == n]
        sm, sp = sum(r["measured_s"] for r in rows), sum(r["calibrated_s"] for r in rows)
        ops = {}
        for r in rows:
            o = ops.setdefault(r["op"], [0.0, 0.0])
            o[0] += r["calibrated_s"]
            o[1] += r["measured_s"]
        gap_op, (gp, gm) = max(ops.items(), key=lambda kv: abs(kv[1][0] - kv[1][1]))
        long_share = sum(r["measured_s"] for r in rows if r["measured_s"] > 1e-3) / sm if sm else float("nan")
        w(f"| {n} | {sm * 1e3:.1f} ms | {sp * 1e3:.1f} ms | {100 * (sp / sm - 1):+.0f} % | {gap_op}: {gp * 1e3:.1f} / {gm * 1e3:.1f} ms | "
          f"{pct(long_share)} |")
    w("")


def report_classes(w, preds):
    w("## Per op class (every scenario)\n")
    w("| class | layers | median err before → after | p90 before → after | within 1.5× before → after |")
    w("|---|---|---|---|---|")
    for c in sorted({p["class"] for p in preds}):
        s = stats([p for p in preds if p["class"] == c])
        w(f"| {c} | {s['n']} | {s['med_before']:.2f} → {s['med_after']:.2f} | {s['p90_before']:.2f} → {s['p90_after']:.2f} | "
          f"{pct(s['within_before'])} → {pct(s['within_after'])} |")
    w("")


def report_outputs(w, probe_out, bench_out, cal_out, work, figs, log):
    """The probe's, the bench's and the calibration's output, the figures and the run log."""
    w("## Probe\n")
    w("```\n" + probe_out.strip() + "\n```\n")
    if bench_out:
        w("## Probe against reference kernels (`rsim_bench_probe --quick`)\n")
        w("```\n" + bench_out.strip() + "\n```\n")
    w("## Calibration (`rsim calibrate`, all scenarios)\n")
    w("```\n" + cal_out.strip().replace(work, "$WORK") + "\n```\n")
    w("## Figures\n")
    for f in figs:
        w(f"![{f}](images/{f})\n")
    w("## Run log\n")
    w("| command | wall time |")
    w("|---|---|")
    for cmd, secs in log:
        w(f"| `{cmd.replace(work, '$WORK').replace(ROOT + '/', '')}` | {secs:.1f} s |")
    w("")


def main():
    a = parse_args()

    measured = {}
    for name, _ in NETWORKS:
        measured[name] = None
    for s in SWEEPS:
        measured[s] = os.path.join(ROOT, "scenarios", s + ".yaml")
    if a.reuse:
        work = os.path.abspath(a.reuse)
        try:
            with open(os.path.join(work, "run.json")) as f:
                ctx = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"validation: --reuse {work}: cannot read run.json ({e}); it is written by a full run of this script")
        missing = [n for n in measured if not os.path.exists(os.path.join(work, "measure", n, "measured.csv"))]
        if missing:
            sys.exit(f"validation: --reuse {work}: no measured.csv for {', '.join(missing)}")
        threads, reps, quick = ctx["threads"], ctx["reps"], ctx["quick"]
        started = datetime.datetime.fromisoformat(ctx["started"])
        load_start, load_end, log = ctx["load_start"], ctx["load_end"], [tuple(x) for x in ctx["log"]]
        probe_out, bench_out, cpu, ncpu = ctx["probe_out"], ctx.get("bench_out"), ctx["cpu"], ctx["ncpu"]
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        platform = os.path.join(work, "this_machine.yaml")
    else:
        threads = a.threads or os.cpu_count() or 1
        reps, quick = a.reps, a.quick
        work = os.path.abspath(a.work)
        if os.path.isdir(work):
            shutil.rmtree(work)
        os.makedirs(work)
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        log = []
        load_start = loadavg()
        started = datetime.datetime.now(datetime.timezone.utc)
        cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown CPU")
        ncpu = os.cpu_count()

        platform, probe_out, bench_out = probe_and_measure(a, work, measured, threads, reps, quick, env, log)
        load_end = loadavg()
        with open(os.path.join(work, "run.json"), "w") as f:
            json.dump({"started": started.isoformat(), "load_start": load_start, "load_end": load_end, "threads": threads, "reps": reps,
                       "quick": quick, "cpu": cpu, "ncpu": ncpu, "log": log, "probe_out": probe_out, "bench_out": bench_out}, f, indent=1)

    # 4. calibrate (cross-validated by network)
    csvs = [os.path.join(work, "measure", n, "measured.csv") for n in measured]
    preds_path = os.path.join(work, "predictions.csv")
    cal_log = []
    cal_out = run([a.rsim, "calibrate", *csvs, "--platform", platform, "-o", os.path.join(work, "this_machine_cal.yaml"), "--predictions",
                   preds_path], env, cal_log)
    log = log + cal_log

    # 5. numbers
    bound, preds = read_numbers(work, measured, preds_path)

    # figures into docs/images
    figs = copy_figures(a, work)

    # 6. the report
    L = []
    w = L.append
    w("# Validation: rsim's predictions against measurements on this machine\n")
    report_context(w, a, work, started, cpu, ncpu, threads, load_start, load_end)
    report_method(w, quick, threads, reps)
    allp, nets, net_stats, ok_all, share = report_targets(w, preds, measured, bound)
    report_pairs(w, cal_out, nets)
    report_scenarios(w, measured, bound, net_stats, allp, ok_all, share)
    report_network_error(w, nets, preds)
    report_classes(w, preds)
    report_outputs(w, probe_out, bench_out, cal_out, work, figs, log)
    with open(a.doc, "w") as f:
        f.write("\n".join(L))
    print(f"wrote {a.doc} ({len(preds)} layers, load {load_start} → {load_end})")


if __name__ == "__main__":
    main()
