#!/usr/bin/env python3
"""A sharded sweep against the same sweep in one process, as ratios printed beside their targets.

The sweep: 10^8 layer evaluations (100,000 points × a chain of 1,000 layers: linear layers and
activations, fp32, on one platform; summary tables: `--tables summary`). Measured in one run, in
turn over --repeat rounds (best of each):
  - one `rsim run --jobs 1`;
  - two shards `rsim run --jobs 1 --shard K/2` started together (two processes: the machine's two
    cores, or two machines' worth of a cluster), wall time until both end;
  - `rsim merge` of the two shards (serial: it formats every table; reported, and added in the
    end-to-end ratio).
Target (issue 44): the two shards ≥ 1.6× faster than the one run. The merged tables are checked
byte for byte against the one run's.

usage: bench/shard.py [--rsim build/rsim] [--repeat N] [--points N]
"""
import argparse
import filecmp
import os
import shutil
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def scenario(points, layers):
    b = 100
    a = points // b
    body = []
    for i in range(layers):
        if i % 2 == 0:
            body.append(f"      - {{name: fc{i}, op: linear, out_features: \"${{f}}\"}}")
        else:
            body.append(f"      - {{name: act{i}, op: relu}}")
    return f"""name: shard_bench
settings: {{dtype: fp32, execution: ideal}}
sweep:
  grid:
    a: {{from: 1, to: {a}, step: 1}}
    f: {{from: 1, to: {b}, step: 1}}
platforms:
  - {{name: p, compute: [{{name: c, dtypes: [fp32], peak: 1 TFLOP/s}}], memory: [{{name: m, bandwidth: 100 GB/s}}]}}
networks:
  - name: chain
    input: ["${{a}}", "${{f}}"]
    layers:
""" + "\n".join(body) + "\n"


def timed(cmds):
    t0 = time.perf_counter()
    procs = [subprocess.Popen(c) for c in cmds]
    for p in procs:
        if p.wait() != 0:
            raise SystemExit(f"failed: {' '.join(p.args)}")
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rsim", default=os.path.join(HERE, "..", "build", "rsim"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--points", type=int, default=100_000)
    ap.add_argument("--layers", type=int, default=1000)
    args = ap.parse_args()
    rsim = os.path.abspath(args.rsim)
    work = tempfile.mkdtemp(prefix="rsim-shard-bench-")
    try:
        scen = os.path.join(work, "s.yaml")
        with open(scen, "w") as f:
            f.write(scenario(args.points, args.layers))
        common = ["-q", "-j", "1", "--tables", "summary"]
        one, two, merge = [], [], []
        for _ in range(args.repeat):
            for d in ("one", "s0", "s1", "merged"):
                shutil.rmtree(os.path.join(work, d), ignore_errors=True)
            one.append(timed([[rsim, "run", scen, "-o", os.path.join(work, "one"), *common]]))
            two.append(timed([[rsim, "run", scen, "-o", os.path.join(work, f"s{k}"), "--shard", f"{k}/2", *common] for k in (0, 1)]))
            merge.append(timed([[rsim, "merge", os.path.join(work, "merged"), os.path.join(work, "s0"), os.path.join(work, "s1"), "-q"]]))
        for name in ("summary.csv", "results.json"):
            if not filecmp.cmp(os.path.join(work, "one", name), os.path.join(work, "merged", name), shallow=False):
                raise SystemExit(f"the merged {name} differs from the one run's")
        evals = args.points * args.layers
        t1, t2, tm = min(one), min(two), min(merge)
        print(f"sweep: {args.points:,} points × {args.layers:,} layers = {evals:.0e} layer evaluations, --tables summary, best of {args.repeat}")
        print(f"  one run --jobs 1:                {t1:7.2f} s ({evals / t1 / 1e6:,.0f} M evaluations/s)")
        print(f"  2 shards --jobs 1, side by side:  {t2:7.2f} s")
        print(f"  rsim merge of the 2 shards:       {tm:7.2f} s (serial: replays the points and formats the tables)")
        print(f"  shards vs one run:   {t1 / t2:5.2f}×   target ≥ 1.6×   {'met' if t1 / t2 >= 1.6 else 'NOT MET'}")
        print(f"  with the merge:      {t1 / (t2 + tm):5.2f}×   (information: the merge's table writing is the one run's too)")
        print("  merged summary.csv and results.json: byte for byte the one run's")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
