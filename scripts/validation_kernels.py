#!/usr/bin/env python3
"""docs/validation-kernels.md: rsim's GEMM kernel model (docs/kernel-models.md) against NVIDIA's
AIConfigurator timings (default: tests/data/aiconfigurator, a copy of ../shared/external/aiconfigurator):
the catalog's h200_op (fitted on the H200's rows by `rsim calibrate --ops`) on the H200, and carried
to the H100 SXM by its datasheet (`kernel_model: {from: h200_op}`), beside the plain roofline bound.

Usage: python3 scripts/validation_kernels.py [--data DIR] [--rsim build/rsim]
Needs python3-matplotlib for the figure (apt install python3-matplotlib).
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(args):
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("validation_kernels: %s failed:\n%s%s" % (" ".join(args), r.stdout, r.stderr))
    return r.stdout


def predictions(rsim, data, gpu, platform, work):
    """measured / predicted and measured / bound per dtype for the GEMM rows of `gpu` on `platform`."""
    out = os.path.join(work, gpu + ".csv")
    run([rsim, "calibrate", "--ops", os.path.join(data, gpu), "--platform", platform, "--check", "--predictions", out,
         "--hw-dir", os.path.join(ROOT, "hardware")])
    by = {}
    with open(out, newline="") as f:
        for r in csv.DictReader(f):
            m = float(r["measured_s"])
            prefix = {"context_attention": "attention ", "decode_attention": "decode "}.get(r["family"], "")
            key = prefix + r["dtype"]
            d = by.setdefault(key, {"model": [], "bound": [], "m": [], "gpus": [], "bytes": [], "isl": [], "batch": []})
            d["model"].append(m / float(r["predicted_s"]))
            d["bound"].append(m / float(r["bound_s"]))
            if r["family"] == "gemm":
                d["m"].append(int(r["m"]))
            elif r["family"] in ("context_attention", "decode_attention"):
                d["isl"].append(int(r["n"]))
                d["batch"].append(int(r["m"]))
            else:
                d["gpus"].append(int(r["gpus"]))
                d["bytes"].append(float(r["bytes"]))
    return by


def stats(v):
    s = sorted(v)

    def q(p):  # linear interpolation between order statistics
        pos = p * (len(s) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(s) - 1)
        return s[lo] + (pos - lo) * (s[hi] - s[lo])

    within = lambda f: 100.0 * sum(1 for x in s if 1 / f <= x <= f) / len(s)
    return {"n": len(s), "p10": q(0.1), "median": q(0.5), "p90": q(0.9), "w125": within(1.25), "w15": within(1.5)}


def figure(cases, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    for ax, dt in zip(axes, ("bf16", "fp8")):
        for label, key, gpu, style in (("H200, fitted here (h200_op)", "model", "h200", "-"),
                                       ("H100, carried from h200_op", "model", "h100", "-"),
                                       ("H100, roofline bound", "bound", "h100", ":")):
            v = sorted(cases[gpu][dt][key])
            ys = [(i + 1) / len(v) for i in range(len(v))]
            ax.plot(v, ys, style, label=label, lw=1.6)
        for x in (1 / 1.25, 1.25):
            ax.axvline(x, color="0.3", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_xlim(0.4, 20)
        ticks = [0.5, 0.8, 1, 1.25, 2, 5, 10, 20]
        ax.set_xticks(ticks)
        ax.set_xticklabels(["%g" % t for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel("measured / predicted time (dashed: 0.8× and 1.25×)")
        ax.set_ylabel("share of GEMM shapes")
        ax.set_title("%s Linear layers (TensorRT-LLM, CUDA graph)" % dt, fontsize=10)
        ax.legend(fontsize=8, loc="lower right")
        ax.grid(True, which="major", lw=0.3)
    fig.suptitle("rsim's GEMM kernel model against AIConfigurator's measured GEMMs", fontsize=11)
    fig.savefig(path, dpi=130)
    plt.close(fig)


def decode_section(w, cases):
    """docs/validation-kernels.md's decode-attention tables: the H200 fit and its carry to the H100."""
    w("## Decode attention")
    w("")
    w("TensorRT-LLM's decode attention through AIConfigurator (`generation_attention_perf`): one query per sequence "
      "over a KV cache of 2 to 131,072 tokens, batch 1–2,048, 1–128 query heads over 1–64 KV heads, head dims 64–256, "
      "full attention and sliding windows; bf16 and fp8 KV caches. The model (docs/kernel-models.md: the XQA or "
      "masked-MHA kernel TensorRT-LLM picks, its multi-block split, the L2 and HBM paths) is fitted on the H200's rows "
      "and carried to the H100 as above. The roofline bound is the KV read (and q and the output) at HBM's bandwidth.")
    w("")
    w("| GPU | KV cache | predicted by | rows | p10 | median | p90 | within 1.25× | within 1.5× |")
    w("|---|---|---|---|---|---|---|---|---|")
    for gpu, title in (("h200", "H200"), ("h100", "H100 SXM")):
        for dt in ("bf16", "fp8"):
            for key, by in (("model", "kernel model (fitted on the H200)" if gpu == "h200" else "kernel model carried from the H200"),
                            ("bound", "roofline bound")):
                s = stats(cases[gpu]["decode " + dt][key])
                w("| %s | %s | %s | %d | %.2f | %.2f | %.2f | %.1f %% | %.1f %% |" % (title, dt, by, s["n"], s["p10"], s["median"], s["p90"],
                                                                                   s["w125"], s["w15"]))
    w("")
    w("By KV tokens (H100, bf16 cache, carried):")
    w("")
    w("| KV tokens | rows | median | within 1.25× |")
    w("|---|---|---|---|")
    d = cases["h100"]["decode bf16"]
    for lo, hi in ((1, 512), (513, 4096), (4097, 32768), (32769, 1 << 30)):
        v = [r for r, n in zip(d["model"], d["isl"]) if lo <= n <= hi]
        if v:
            s = stats(v)
            w("| %s | %d | %.2f | %.1f %% |" % ("%d–%d" % (lo, hi) if hi < (1 << 30) else "≥ %d" % lo, s["n"], s["median"], s["w125"]))
    w("")
    w("A short cache is the kernels' floor (3–4 µs) and a CTA's fixed cost; a long one streams the cache at nearly "
      "HBM's bandwidth (half the L2 holds what CUDA-graph replays leave there), unless too few CTAs run: then the "
      "multi-block split and a CTA's own streaming rate set the time. The roofline bound, the KV bytes at HBM's "
      "bandwidth, is 15× too fast at the median: most rows are small.")
    w("")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "tests", "data", "aiconfigurator"))
    ap.add_argument("--rsim", default=os.path.join(ROOT, "build", "rsim"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        what_if = os.path.join(work, "h100_carried.yaml")
        with open(what_if, "w") as f:
            f.write("name: h100_carried\nbase: h100_sxm\nkernel_model: {from: h200_op}\n")
        cases = {"h200": predictions(args.rsim, args.data, "h200_sxm", "h200_op", work),
                 "h100": predictions(args.rsim, args.data, "h100_sxm", what_if, work)}
    img = os.path.join(ROOT, "docs", "images")
    os.makedirs(img, exist_ok=True)
    figure(cases, os.path.join(img, "validation_kernels_gemm.png"))
    lines = []
    w = lines.append
    w("# Validation: GPU kernel models")
    w("")
    w("Generated by `scripts/validation_kernels.py` from NVIDIA's AIConfigurator database (`ai-dynamo/aiconfigurator` @ "
      "095f58a, Apache-2.0; `tests/data/aiconfigurator` is a copy of `../shared/external/aiconfigurator`): every "
      "TensorRT-LLM `Linear(k → n)` on activations [m, k], m from 1 to 32,768, n and k from 32 to 65,536, timed in a "
      "CUDA graph on an NVIDIA H200 and an NVIDIA H100 80GB HBM3 (SXM). The model is `docs/kernel-models.md`'s; "
      "`hardware/h200_op.yaml` was fitted by `rsim calibrate --ops` on the H200's rows alone. The H100 is the catalog's "
      "`h100_sxm` with `kernel_model: {from: h200_op}`: the H200's parameters on the H100's datasheet figures "
      "(3.35 TB/s instead of 4.8; the same 132 SMs and tensor-core peaks). Nobody here fitted anything to the H100's rows.")
    w("")
    w("Measured / predicted time (> 1: the GEMM took longer than predicted):")
    w("")
    w("| GPU | dtype | predicted by | shapes | p10 | median | p90 | within 1.25× | within 1.5× |")
    w("|---|---|---|---|---|---|---|---|---|")
    for gpu, title in (("h200", "H200"), ("h100", "H100 SXM")):
        for dt in ("bf16", "fp8"):
            for key, by in (("model", "kernel model (fitted on the H200)" if gpu == "h200" else "kernel model carried from the H200"),
                            ("bound", "roofline bound")):
                s = stats(cases[gpu][dt][key])
                w("| %s | %s | %s | %d | %.2f | %.2f | %.2f | %.1f %% | %.1f %% |" % (title, dt, by, s["n"], s["p10"], s["median"], s["p90"],
                                                                                   s["w125"], s["w15"]))
    w("")
    w("![GEMM kernel model](images/validation_kernels_gemm.png)")
    w("")
    w("By rows of the activation (H100 bf16, carried): where the model misses.")
    w("")
    w("| m | shapes | median | within 1.25× |")
    w("|---|---|---|---|")
    d = cases["h100"]["bf16"]
    for lo, hi in ((1, 16), (17, 128), (129, 1024), (1025, 4096), (4097, 1 << 30)):
        v = [r for r, m in zip(d["model"], d["m"]) if lo <= m <= hi]
        if v:
            s = stats(v)
            w("| %s | %d | %.2f | %.1f %% |" % ("%d–%d" % (lo, hi) if hi < (1 << 30) else "≥ %d" % lo, s["n"], s["median"], s["w125"]))
    w("")
    w("## Context attention")
    w("")
    w("TensorRT-LLM's context (prefill) attention through AIConfigurator: one layer on one GPU, batch 1–256, 1–16,384 "
      "tokens, 1–96 query heads and 1–96 KV heads, head dims 64, 128, 192 and 256, full attention and sliding windows "
      "of 128 and 8,192, causal; bf16, and fp8 (an fp8 attention or an fp8 KV cache: TensorRT-LLM computes in fp8). The "
      "model (docs/kernel-models.md: query tiles over key blocks, the masked blocks costing more) is fitted on the "
      "H200's rows and carried to the H100 as above. The roofline bound is 4 FLOPs a score and head dimension at the "
      "tensor-core peak, or the bytes at HBM's.")
    w("")
    w("| GPU | compute dtype | predicted by | rows | p10 | median | p90 | within 1.25× | within 1.5× |")
    w("|---|---|---|---|---|---|---|---|---|")
    for gpu, title in (("h200", "H200"), ("h100", "H100 SXM")):
        for dt in ("bf16", "fp8"):
            for key, by in (("model", "kernel model (fitted on the H200)" if gpu == "h200" else "kernel model carried from the H200"),
                            ("bound", "roofline bound")):
                s = stats(cases[gpu]["attention " + dt][key])
                w("| %s | %s | %s | %d | %.2f | %.2f | %.2f | %.1f %% | %.1f %% |" % (title, dt, by, s["n"], s["p10"], s["median"], s["p90"],
                                                                                   s["w125"], s["w15"]))
    w("")
    w("By tokens (H100 bf16, carried):")
    w("")
    w("| tokens | rows | median | within 1.25× |")
    w("|---|---|---|---|")
    d = cases["h100"]["attention bf16"]
    for lo, hi in ((1, 64), (65, 1024), (1025, 4096), (4097, 1 << 30)):
        v = [r for r, n in zip(d["model"], d["isl"]) if lo <= n <= hi]
        if v:
            s = stats(v)
            w("| %s | %d | %.2f | %.1f %% |" % ("%d–%d" % (lo, hi) if hi < (1 << 30) else "≥ %d" % lo, s["n"], s["median"], s["w125"]))
    w("")
    w("Small problems are the kernel's floor (about 12 µs) and its per-tile start; large ones run the two MMAs at 54–61 % "
      "of the tensor-core peak.")
    w("")
    decode_section(w, cases)
    w("## Collectives")
    w("")
    w("nccl-tests 2.29.2 through AIConfigurator on 2, 4 and 8 GPUs of an HGX board (NVLink 4 through NVSwitch), "
      "messages of 256 elements to 256 Mi elements in half and int8, and TensorRT-LLM's own all-reduce "
      "(custom-all-reduce: its one-shot and two-shot kernels, bf16, 128 elements to 512 Mi elements). The model "
      "(docs/kernel-models.md) is fitted on the H200's rows; the H100 carries it on the catalog's NVLink 4 figure "
      "(450 GB/s each way). The formula is the roofline's ring or tree on the catalog's link, with its assumed 1 µs a step.")
    w("")
    w("| GPU | collective | predicted by | sizes | p10 | median | p90 | within 1.25× | within 1.5× |")
    w("|---|---|---|---|---|---|---|---|---|")
    for gpu, title in (("h200", "H200"), ("h100", "H100 SXM")):
        for op in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "custom_all_reduce"):
            for key, by in (("model", "kernel model (fitted on the H200)" if gpu == "h200" else "kernel model carried from the H200"),
                            ("bound", "link formula")):
                s = stats(cases[gpu][op][key])
                w("| %s | %s | %s | %d | %.2f | %.2f | %.2f | %.1f %% | %.1f %% |" % (title, op.replace("_", "-"), by, s["n"], s["p10"], s["median"],
                                                                                   s["p90"], s["w125"], s["w15"]))
    w("")
    w("The ring and tree formulas take a 256-element all-reduce on 8 GPUs for 6 µs; NCCL takes 16 µs: its floor "
      "(about 5 µs) and a step per further GPU (1.6 µs) are what the fit adds. Mid-sized messages move at about a third "
      "of the link's bandwidth (NCCL's low-latency protocols), the largest at three quarters of it in the fitted model "
      "after a bulk protocol's start-up of 13 µs (the measured 512 MB all-reduce on 8 H200s reaches 460 GB/s of bus "
      "bandwidth, the link's 450 GB/s each way: NVLink SHARP reduces in the switch). The all-to-all is the weakest "
      "(76 % within 1.25× carried): its mid-sized messages vary more between the two boards than the others. "
      "TensorRT-LLM's own all-reduce takes 3 µs for a small message on 8 GPUs (NCCL: 16 µs): a floor of 2.6 µs and "
      "0.13 µs a further GPU in the fit; an all-reduce within the first interconnect level takes the faster of the two "
      "(the engine does, as TensorRT-LLM's AUTO strategy and vLLM's custom all-reduce do). Its misses (81 % within "
      "1.25× carried) are where it changes kernel: one-shot to two-shot near 64 Ki elements, and the largest messages.")
    w("")
    w("What it predicts and where it misses: large GEMMs run at 80–83 % of the tensor-core peak (the fitted "
      "`compute_efficiency`), GEMVs and skinny GEMMs stream their weights at 77–79 % of HBM with split-K, and small "
      "ones sit on a floor of 2.6 µs (bf16; fp8 adds its activation quantization kernel). The remaining misses are "
      "library choices no smooth model follows (a shape where TensorRT-LLM picks a slower kernel) and the H100's "
      "memory-bound shapes, which the carried model predicts slightly slow (median 0.98): the fitted share of HBM is "
      "the H200's, and the H100's HBM3 reaches a slightly larger share of its lower peak. The memory-bound family is not "
      "fitted yet (docs/kernel-models.md).")
    with open(os.path.join(ROOT, "docs", "validation-kernels.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote docs/validation-kernels.md and docs/images/validation_kernels_gemm.png")


if __name__ == "__main__":
    main()
