#!/usr/bin/env python3
"""`rsim measure --backend torch --device cpu` of ResNet-18 at batch 1 beside a plain torchvision
forward pass, timed in the same run (issue 25's CPU acceptance: within 1.5×). Each side is the
median of --reps forward passes; the pair is measured --pairs times, alternating, and every ratio
printed beside the target, then the median ratio. Needs Debian's python3-torch and
python3-torchvision (run it with /usr/bin/python3 where the default python3 lacks them); without
them it says so and exits 0.

usage: bench/torch_cpu.py [--rsim build/rsim] [--pairs 3] [--reps 10]
"""
import argparse, csv, os, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TARGET = 1.5


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rsim", default=os.path.join(ROOT, "build", "rsim"))
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    try:
        import torch
        import torchvision
    except ImportError:
        print("bench-torch: skipped: %s has no torch or torchvision (Debian: apt install python3-torch python3-torchvision)" % sys.executable)
        return 0
    env = dict(os.environ, RSIM_PYTHON=sys.executable, PYTHONPATH=os.path.join(ROOT, "python"))
    model = torchvision.models.resnet18().eval()
    x = torch.randn(1, 3, 224, 224)
    ratios = []
    with tempfile.TemporaryDirectory() as d:
        s = os.path.join(d, "r18.yaml")
        with open(s, "w") as f:
            f.write("name: r18\nsettings: {dtype: fp32}\nplatforms: [h200]\nnetworks: [{model: resnet18, args: {batch: 1}}]\n")
        for i in range(args.pairs):
            r = subprocess.run([args.rsim, "measure", s, "--backend", "torch", "--device", "cpu", "--reps", str(args.reps),
                                "--out", os.path.join(d, "m")], env=env, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit("bench-torch: rsim measure failed:\n" + r.stderr)
            with open(os.path.join(d, "m", "measured_networks.csv")) as f:
                ours = float(next(csv.DictReader(f))["measured_time_s"])
            with torch.no_grad():
                for _ in range(3):
                    model(x)
                t = []
                for _ in range(args.reps):
                    t0 = time.perf_counter()
                    model(x)
                    t.append(time.perf_counter() - t0)
            ref = statistics.median(t)
            ratios.append(ours / ref)
            print("pair %d: rsim_torch (rsim's ResNet-18 plan) %.2f ms, torchvision forward %.2f ms: ratio %.2f (target < %.1f)" % (
                i + 1, ours * 1e3, ref * 1e3, ours / ref, TARGET))
    med = statistics.median(ratios)
    print("ResNet-18, batch 1, CPU (%s threads): median ratio %.2f, target within %.1fx: %s" % (
        torch.get_num_threads(), med, TARGET, "met" if 1 / TARGET < med < TARGET else "MISSED"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
