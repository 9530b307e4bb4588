#!/usr/bin/env python3
"""rsim's serving simulation against TensorRT-LLM serving Llama-3.1-8B on an H100 SXM
(tests/data/e2e_silicon: AIConfigurator's measured means, nobody here wrote them). Every one of
the 177 rows runs as the issue-41 check prescribes: a closed loop of max(4 x concurrency, 64)
requests at the row's concurrency, fixed lengths, the row's TP, max_num_seqs max(concurrency, 8),
max_num_batched_tokens 8192, chunked prefill, graphs in both phases. Held here at today's level
(docs/validation-serving.md; the issue's targets, TPOT >= 85 % within 20 % and TTFT >= 60 % within
30 %, are not reached yet):
  catalog h100_sxm: TPOT within 20 % for >= 75 % of rows, its median ratio in [0.8, 1.1];
  the H200's kernel models carried to the H100: TPOT within 20 % for >= 75 % of rows, its median
  in [0.9, 1.25] (today 78.5 %, 1.11: the all-reduces by TensorRT-LLM's own kernel; with NCCL's 60 %
  and 1.16, and with a decode priced per sequence at every layer but the first the median was 2.3).
Usage: e2e_silicon_check.py path/to/rsim"""
import csv
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RSIM = sys.argv[1]
DATA = os.path.join(ROOT, "tests", "data", "e2e_silicon", "h100_sxm_dense.csv")


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def tpot_ratios(rows, platform, work):
    z = {"isl": [], "osl": [], "conc": [], "tp": [], "n": [], "seqs": []}
    for r in rows:
        c = int(r["batch_size"])
        z["isl"].append(r["isl"]), z["osl"].append(r["osl"]), z["conc"].append(str(c)), z["tp"].append(r["tp_size"])
        z["n"].append(str(max(4 * c, 64))), z["seqs"].append(str(max(c, 8)))
    sweep = "".join(f"    {k}: [{', '.join(v)}]\n" for k, v in z.items())
    scenario = os.path.join(work, "e2e.yaml")
    shutil.copy(os.path.join(ROOT, "tests", "data", "hf", "llama3_8b.json"), os.path.join(work, "llama3_8b.json"))
    with open(scenario, "w") as f:
        f.write("name: e2e\nsettings: {dtype: bf16}\nplatforms: [" + platform + "]\n"
                "networks:\n  - {model: hf, args: {config: llama3_8b.json}, parallel: {tensor: \"${tp}\"}}\n"
                "sweep:\n  zip:\n" + sweep +
                "serving:\n  workload: {requests: \"${n}\", concurrency: \"${conc}\", prompt: {mean: \"${isl}\"}, output: {mean: \"${osl}\"}}\n"
                "  engine: {scheduler: vllm, max_num_seqs: \"${seqs}\", max_num_batched_tokens: 8192, chunked_prefill: true,"
                " gpu_memory_utilization: 0.9, decode_execution: graph, prefill_execution: graph}\n")
    out = os.path.join(work, "out")
    subprocess.run([RSIM, "run", scenario, "--out", out, "--quiet", "--tables", "summary"], check=True)
    got = list(csv.DictReader(open(os.path.join(out, "serving.csv"))))
    assert len(got) == len(rows), (len(got), len(rows))
    return [float(g["tpot_mean_s"]) * 1e3 / float(r["silicon_tpot_ms"]) for r, g in zip(rows, got)]


def hold(failures, what, ratios, lo, hi):
    """TPOT within 20 % for >= 75 % of rows, the median ratio in [lo, hi]"""
    within = sum(abs(x - 1) <= 0.2 for x in ratios) / len(ratios)
    print(f"{what}: TPOT within 20 % for {100 * within:.1f} % of rows, median {median(ratios):.3f}")
    if within < 0.75:
        failures.append(f"{what}: TPOT within 20 % for {100 * within:.1f} % of rows (held at >= 75 %)")
    if not lo <= median(ratios) <= hi:
        failures.append(f"{what}: median TPOT ratio {median(ratios):.3f} outside [{lo}, {hi}]")


def main():
    rows = [r for r in csv.DictReader(open(DATA))
            if r["backend"] == "trtllm" and r["model_path"] == "meta-llama/Llama-3.1-8B-Instruct" and r["mode"] == "agg"]
    assert len(rows) == 177, len(rows)
    failures = []
    with tempfile.TemporaryDirectory() as work:
        hold(failures, "h100_sxm", tpot_ratios(rows, "h100_sxm", work), 0.8, 1.1)
        shutil.rmtree(os.path.join(work, "out"))
        hold(failures, "kernel model", tpot_ratios(rows, "{name: h100_op, base: h100_sxm, kernel_model: {from: h200_op}}", work), 0.9, 1.25)
    for f in failures:
        print("FAILED:", f)
    sys.exit(1 if failures else 0)


main()
