"""Whole torchvision networks timed through PyTorch: eager forward passes and the same forward
captured in one CUDA graph and replayed. Writes measured_networks.csv (rsim's columns: network,
model, batch, dtype, execution, measured_time_s (median), measured_min_s, measured_reps,
measured_note) so `rsim calibrate` and scripts/validation_gpu.py read it as held-out data.

    python3 scripts/gpu/torchvision_networks.py --device cuda:0 -o DIR [--nets ...] [--batches 1,32]

Needs torch and torchvision only. fp32 runs with TF32 off (fp32 CUDA cores), fp16 runs with
channels-last activations; cudnn.benchmark on; random weights and inputs.
"""

import argparse
import csv
import json
import os
import statistics
import sys
import time

import torch


def timed(dev, fn, reps, warmup):
    for _ in range(warmup):
        fn()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        for a, b in ev:
            a.record()
            fn()
            b.record()
        torch.cuda.synchronize(dev)
        return [a.elapsed_time(b) * 1e-3 for a, b in ev]
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def graphed(dev, fn, warmup):
    s = torch.cuda.Stream(dev)
    s.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(s):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream(dev).wait_stream(s)
    torch.cuda.synchronize(dev)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--nets", default="mobilenet_v2,resnet18,vgg16,resnet50")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--dtypes", default="fp16,fp32")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--size", type=int, default=224)
    args = ap.parse_args()
    import torchvision

    dev = torch.device(args.device)
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    modes = ["eager", "graph"] if dev.type == "cuda" else ["eager"]
    os.makedirs(args.out, exist_ok=True)
    rows = [["network", "model", "batch", "dtype", "execution", "measured_time_s", "measured_min_s", "measured_reps", "measured_note"]]
    torch.manual_seed(0)
    for net in args.nets.split(","):
        for dt in args.dtypes.split(","):
            tdt = {"fp16": torch.float16, "fp32": torch.float32, "bf16": torch.bfloat16}[dt]
            model = getattr(torchvision.models, net)(weights=None).eval().to(dev, tdt)
            if dt != "fp32" and dev.type == "cuda":
                model = model.to(memory_format=torch.channels_last)
            for b in [int(x) for x in args.batches.split(",")]:
                x = torch.randn(b, 3, args.size, args.size, device=dev).to(tdt)
                if dt != "fp32" and dev.type == "cuda":
                    x = x.contiguous(memory_format=torch.channels_last)
                name = "%s_b%d_%s" % (net, b, dt)
                for mode in modes:
                    note = "torchvision %s %s, random weights, %s" % (torchvision.__version__, net,
                                                                      "forward in one CUDA graph, replayed" if mode == "graph" else "eager forward")
                    try:
                        with torch.no_grad():
                            if mode == "graph":
                                g = graphed(dev, lambda: model(x), 5)
                                ts = timed(dev, g.replay, args.reps, 3)
                            else:
                                ts = timed(dev, lambda: model(x), args.reps, 5)
                        rows.append([name, net, b, dt, mode, "%.6g" % statistics.median(ts), "%.6g" % min(ts), len(ts), note])
                        print("%-24s %-5s median %9.4f ms  min %9.4f ms" % (name, mode, statistics.median(ts) * 1e3, min(ts) * 1e3), flush=True)
                    except RuntimeError as e:
                        rows.append([name, net, b, dt, mode, "", "", 0, "not run: %s" % str(e).splitlines()[0]])
                        print("%-24s %-5s not run: %s" % (name, mode, str(e).splitlines()[0]), flush=True)
                    with open(os.path.join(args.out, "measured_networks.csv"), "w", newline="") as f:
                        csv.writer(f, lineterminator="\n").writerows(rows)
            del model
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    env = {"torch": torch.__version__, "torchvision": torchvision.__version__, "python": sys.version.split()[0],
           "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
           "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version() if dev.type == "cuda" else None}
    with open(os.path.join(args.out, "torchvision_env.json"), "w") as f:
        json.dump(env, f, indent=1)


if __name__ == "__main__":
    main()
