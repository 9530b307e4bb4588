"""`probe`: the device's roofs and runtime through PyTorch, written as a platform file for rsim.

- matmul peak per precision the device runs (fp64, fp32, tf32, bf16, fp16, fp8 and int8 where
  torch has a kernel for them), from square products;
- read, write and copy bandwidth over working sets: a read kernel re-reads its working set many
  times in one launch (a stride-0 view summed; on CUDA row by row, `sum(dim=1)`, whose contiguous
  rows stream at the cache's speed, where one total sum of the view is held to ~2.7 TB/s by its
  indexing on an H200), so a set that fits a cache shows that cache's plateau and no launch cost;
  write and copy make one pass per launch;
- the host's time per eager op (a one-element op called in a loop), and on CUDA the gap between
  kernels replayed from one CUDA graph and the launch of a graph.
"""

import datetime
import json
import math
import statistics
import sys

import torch

from .device import Unsupported, device_name, free_bytes, set_math, synchronize, time_calls, time_graph


def _median_time(dev, fn, reps):
    return statistics.median(time_calls(dev, fn, reps, warmup=2))


def matmul_peaks(dev, quick, log):
    n = 8192 if dev.type == "cuda" else (512 if quick else 1024)
    reps = 5 if quick else 10
    out = {}
    for name in ["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"]:
        try:
            set_math(name)
            if name == "fp8":
                if not (dev.type == "cuda" and hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn")):
                    raise Unsupported("no fp8 matmul in this torch or device")
                a = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn)
                b = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn).t()
                one = torch.ones((), device=dev)
                fn = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)  # noqa: E731
            elif name == "int8":
                if not (dev.type == "cuda" and hasattr(torch, "_int_mm")):
                    raise Unsupported("no int8 matmul in this torch or device")
                a = torch.randint(-8, 8, (n, n), device=dev, dtype=torch.int8)
                b = torch.randint(-8, 8, (n, n), device=dev, dtype=torch.int8)
                fn = lambda: torch._int_mm(a, b)  # noqa: E731
            else:
                dt = {"fp64": torch.float64, "fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]
                if name == "tf32" and dev.type != "cuda":
                    raise Unsupported("tf32 is a CUDA tensor-core mode")
                a = torch.randn(n, n, device=dev).to(dt)
                b = torch.randn(n, n, device=dev).to(dt)
                fn = lambda: torch.matmul(a, b)  # noqa: E731
            t = _median_time(dev, fn, reps)
            out[name] = {"flops_per_s": 2.0 * n ** 3 / t, "n": n, "time_s": t}
            print("rsim_torch: matmul %s: %.4g TFLOP/s" % (name, out[name]["flops_per_s"] / 1e12), file=log)
        except (Unsupported, RuntimeError, TypeError) as e:
            out[name] = {"note": str(e).splitlines()[0] if str(e) else type(e).__name__}
        finally:
            set_math("fp32")
    return out


def bandwidth(dev, quick, log):
    """Bytes per second of read, write and copy kernels over working sets of 4 KiB and up."""
    top = min(4 << 30, free_bytes(dev) // 8) if dev.type == "cuda" else min(1 << 30, free_bytes(dev) // 8)
    sizes = []
    s = 4096
    while s <= top:
        sizes.append(s)
        s *= 4 if quick else 2
    reps = 5 if quick else 10
    rows = []
    for size in sizes:
        n = size // 4
        x = torch.ones(n, device=dev, dtype=torch.float32)
        # read: the working set summed R times in one kernel (a stride-0 view), R·size ≥ 256 MiB
        r = max(1, (256 << 20) // size)
        view = x.expand(r, n)
        # CUDA: one sum per row (an H200 read its L2 at 12.9 TB/s so; a total sum of the view ran at
        # 2.7 TB/s at every size up to 256 MiB, below HBM). Sets between the L2 and 4x it read above
        # HBM speed this way (concurrent rows share the L2): the roofs take the L2 below half its
        # size and HBM from the largest sets, read once.
        read = (lambda: view.sum(dim=1)) if dev.type == "cuda" else (lambda: view.sum())
        t = _median_time(dev, read, reps)
        rows.append({"kernel": "read", "bytes": size, "bytes_per_s": r * size / t, "repeats": r})
        t = _median_time(dev, lambda: x.fill_(1.0), reps)
        rows.append({"kernel": "write", "bytes": size, "bytes_per_s": size / t, "repeats": 1})
        y = torch.empty_like(x)
        t = _median_time(dev, lambda: y.copy_(x), reps)
        rows.append({"kernel": "copy", "bytes": size, "bytes_per_s": 2 * size / t, "repeats": 1})
        del x, y, view
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    for k in ("read", "write", "copy"):
        best = max((r for r in rows if r["kernel"] == k), key=lambda r: r["bytes_per_s"])
        print("rsim_torch: %s: best %.4g GB/s at %d bytes" % (k, best["bytes_per_s"] / 1e9, best["bytes"]), file=log)
    return rows


def runtime(dev, quick):
    """The host's time per eager op, and on CUDA the graph gap and a graph's launch."""
    x = torch.ones(1, device=dev)
    calls = 100 if quick else 400
    synchronize(dev)

    def loop():
        for _ in range(calls):
            x.add_(1.0)

    host = min(time_calls(dev, loop, 3, warmup=1)) / calls
    out = {"host_overhead_s": host}
    if dev.type == "cuda":
        def chain(k):
            def f():
                for _ in range(k):
                    x.add_(1.0)
            return f

        one = min(time_graph(dev, chain(1), 20))
        many = min(time_graph(dev, chain(101), 20))
        out["graph_gap_s"] = max(0.0, (many - one) / 100)
        out["launch_overhead_s"] = one
    else:
        out["launch_overhead_s"] = host  # a CPU runtime dispatches each kernel from the host
    return out


def _plateau(rows, kernel, lo, hi):
    v = [r["bytes_per_s"] for r in rows if r["kernel"] == kernel and lo <= r["bytes"] <= hi]
    return statistics.median(v) if v else None


def platform_yaml(name, dev, peaks, bw, rt):
    title = device_name(dev)
    kind = "gpu" if dev.type in ("cuda", "mps") else "cpu"
    today = datetime.date.today().isoformat()
    lines = ["# Measured by `python3 -m rsim_torch probe --device %s` (PyTorch %s) on %s." % (dev, torch.__version__, today),
             "# compute: the median rate of a square matmul per precision (the peak a library reaches, not the datasheet's);",
             "# memory: the largest working sets' read bandwidth (read, re-read in one kernel); runtime: measured times.",
             "name: %s" % name, "title: %s" % json.dumps(title), "kind: %s" % kind,
             "source: %s" % json.dumps("rsim_torch probe, PyTorch %s, %s" % (torch.__version__, today)), "runtime:"]
    lines.append("  launch_overhead: %.4g us" % (rt["launch_overhead_s"] * 1e6))
    if "graph_gap_s" in rt:
        lines.append("  graph_gap: %.4g us" % (rt["graph_gap_s"] * 1e6))
    lines.append("  host_overhead: %.4g us" % (rt["host_overhead_s"] * 1e6))
    lines.append("  source: %s" % json.dumps("measured by rsim_torch probe: a one-element op in a loop" +
                                            ("; CUDA graphs of 1 and of 101 of them" if "graph_gap_s" in rt else "")))
    lines.append("  basis: measured")
    lines.append("compute:")
    groups = [("fp64", ["fp64"]), ("fp32", ["fp32"]), ("tf32", ["tf32"]), ("fp16", ["fp16"]), ("bf16", ["bf16"]), ("fp8", ["fp8"]), ("int8", ["int8"])]
    any_roof = False
    for label, dts in groups:
        p = peaks.get(label, {})
        if "flops_per_s" not in p:
            continue
        unit = "TOP/s" if label == "int8" else "TFLOP/s"
        lines.append("  - {name: %s, dtypes: [%s], peak: %.6g %s, basis: measured}  # matmul %d³" % (json.dumps(label + " (measured matmul)"), ", ".join(dts),
                                                                              p["flops_per_s"] / 1e12, unit, p["n"]))
        any_roof = True
    if not any_roof:
        raise SystemExit("rsim_torch: error: no matmul ran on %s: no compute roof to write" % dev)
    largest = max(r["bytes"] for r in bw)
    dram = _plateau(bw, "read", largest / 4, largest)
    lines.append("memory:")
    mem_name = "HBM" if dev.type == "cuda" else "DRAM"
    total = torch.cuda.get_device_properties(dev).total_memory if dev.type == "cuda" else None
    lines.append("  - {name: %s, bandwidth: %.6g GB/s%s, basis: measured}  # read over %d-%d MiB working sets" % (
        mem_name, dram / 1e9, ", size: %d GiB" % round(total / 2**30) if total else "", largest // 4 >> 20, largest >> 20))
    if dev.type == "cuda":
        l2 = getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0)
        if l2:
            cache = _plateau(bw, "read", l2 / 16, l2 / 2)
            if cache and cache > dram:
                lines.append("  - {name: L2, bandwidth: %.6g GB/s, size: %d MiB, basis: measured}  # read over %d-%d KiB working sets, re-read in one kernel" % (
                    cache / 1e9, l2 >> 20, l2 // 16 >> 10, l2 // 2 >> 10))
    return "\n".join(lines) + "\n"


def probe(dev, output, json_path, name, quick, log=sys.stderr):
    peaks = matmul_peaks(dev, quick, log)
    bw = bandwidth(dev, quick, log)
    rt = runtime(dev, quick)
    print("rsim_torch: host %.3g us per eager op%s" % (rt["host_overhead_s"] * 1e6,
          ", graph gap %.3g us, graph launch %.3g us" % (rt["graph_gap_s"] * 1e6, rt["launch_overhead_s"] * 1e6) if "graph_gap_s" in rt else ""), file=log)
    if not name:
        import os
        name = os.path.splitext(os.path.basename(output))[0] if output else "".join(c if c.isalnum() else "_" for c in device_name(dev).lower())
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"device": str(dev), "name": device_name(dev), "torch": torch.__version__, "matmul": peaks, "bandwidth": bw, "runtime": rt}, f, indent=1)
    text = platform_yaml(name, dev, peaks, bw, rt)
    if output:
        with open(output, "w") as f:
            f.write(text)
        print("rsim_torch: wrote %s" % output, file=log)
    else:
        sys.stdout.write(text)
    if not math.isfinite(rt["host_overhead_s"]):
        return 1
    return 0
