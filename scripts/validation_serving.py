#!/usr/bin/env python3
"""Writes docs/validation-serving.md: rsim's serving simulation against measurements nobody here
wrote. (1) The vLLM 0.19 run on an RTX 4090 (tests/data/vllm_rtx4090) replayed request by request;
(2) the H100 SXM rows of TensorRT-LLM serving Llama-3.1-8B (../shared/external/e2e_silicon, or
--e2e FILE), each run as a closed loop at its concurrency; (3) vLLM serving Llama-2-7B on an H100 SXM
under constant-rate stages of shared-prefix chat (../shared/external/blis_h100), each stage run as
its own open loop.
Usage: scripts/validation_serving.py [path/to/rsim] [--e2e FILE]"""
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RSIM = next((a for a in sys.argv[1:] if not a.startswith("--") and not a.endswith(".csv")), os.path.join(ROOT, "build", "rsim"))
E2E = os.path.join(ROOT, "..", "shared", "external", "e2e_silicon", "h100_sxm_dense.csv")
BLIS = os.path.join(ROOT, "..", "shared", "external", "blis_h100")
if "--e2e" in sys.argv:
    E2E = sys.argv[sys.argv.index("--e2e") + 1]


def pct(v, q):  # linear interpolation between order statistics (numpy's default)
    v = sorted(v)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def run(yaml_text, name):
    d = tempfile.mkdtemp(prefix="rsim_val_")
    path = os.path.join(ROOT, "scenarios", "_" + name + ".yaml")  # beside the zoo
    with open(path, "w") as f:
        f.write(yaml_text)
    try:
        subprocess.run([RSIM, "run", path, "--out", d, "--quiet", "--tables", "summary"], check=True)
    finally:
        os.remove(path)
    return d


def replay():
    data = os.path.join(ROOT, "tests", "data", "vllm_rtx4090")
    reqs = [json.loads(l) for l in open(os.path.join(data, "requests.jsonl")) if l.strip()]
    m = {"ttft": [r["first_token_ts"] - r["queued_ts"] for r in reqs],
         "tpot": [(r["last_token_ts"] - r["first_token_ts"]) / (r["output_toks"] - 1) for r in reqs if r["output_toks"] > 1],
         "e2e": [r["last_token_ts"] - r["queued_ts"] for r in reqs]}
    ts = list(csv.DictReader(open(os.path.join(data, "timeseries.csv"))))
    m_running = statistics.mean(float(r["running"]) for r in ts)
    out = []
    for label, kv in (("its 2,588 KV blocks (vLLM's own count)", "kv_blocks: 2588"), ("KV blocks from rsim's memory rule", "gpu_memory_utilization: 0.9")):
        y = ("name: replay\nplatforms: [rtx4090]\nnetworks:\n  - {model: llama3_8b}\nserving:\n"
             f"  workload: {{trace: {data}/sharegpt-llama-3.1-8b-300-sps10.jsonl.gz}}\n"
             f"  engine: {{max_num_seqs: 256, max_num_batched_tokens: 2048, chunked_prefill: true, block_size: 16, {kv}, prefix_caching: true}}\n")
        d = run(y, "replay")
        rows = list(csv.DictReader(open(os.path.join(d, "requests.csv"))))
        s = {"ttft": [float(r["ttft_s"]) for r in rows if r["ttft_s"]],
             "tpot": [float(r["tpot_s"]) for r in rows if r["tpot_s"]],
             "e2e": [float(r["e2e_s"]) for r in rows if r["e2e_s"]]}
        tl = list(csv.DictReader(open(os.path.join(d, "timeline.csv"))))
        s_running = statistics.mean(float(r["running"]) for r in tl)
        blocks = list(csv.DictReader(open(os.path.join(d, "serving.csv"))))[0]["kv_blocks"]
        lines = [f"**Replayed with {label}** ({blocks} blocks):", "",
                 "| metric | measured | rsim | rsim / measured |", "|---|---|---|---|"]
        for k, unit, f in (("ttft", "s", 1), ("tpot", "ms", 1e3), ("e2e", "s", 1)):
            for stat, fn in (("mean", statistics.mean), ("p50", lambda v: pct(v, 0.5)), ("p90", lambda v: pct(v, 0.9)), ("p99", lambda v: pct(v, 0.99))):
                a, b = fn(m[k]) * f, fn(s[k]) * f
                lines.append(f"| {k.upper()} {stat} [{unit}] | {a:.3g} | {b:.3g} | {b / a:.2f} |")
        lines.append(f"| running requests, mean of the seconds | {m_running:.1f} | {s_running:.1f} | {s_running / m_running:.2f} |")
        out += lines + [""]
    return out


def e2e_rows():
    if not os.path.exists(E2E):
        return ["(`" + E2E + "` not found: the e2e_silicon check was skipped.)", ""]
    rows = [r for r in csv.DictReader(open(E2E)) if r["model_path"] == "meta-llama/Llama-3.1-8B-Instruct" and r["backend"] == "trtllm"]
    zip_vars = {"isl": [], "osl": [], "conc": [], "tp": [], "n": [], "seqs": []}
    for r in rows:
        c = int(r["batch_size"])
        zip_vars["isl"].append(r["isl"]), zip_vars["osl"].append(r["osl"]), zip_vars["conc"].append(str(c)), zip_vars["tp"].append(r["tp_size"])
        zip_vars["n"].append(str(max(4 * c, 64))), zip_vars["seqs"].append(str(max(c, 8)))
    sweep = "".join(f"    {k}: [{', '.join(v)}]\n" for k, v in zip_vars.items())
    y = ("name: e2e\nsettings: {dtype: bf16}\nplatforms: [h100_sxm]\n"
         "networks:\n  - {model: hf, args: {config: ../tests/data/hf/llama3_8b.json}, parallel: {tensor: \"${tp}\"}}\n"
         "sweep:\n  zip:\n" + sweep +
         "serving:\n  workload: {requests: \"${n}\", concurrency: \"${conc}\", prompt: {mean: \"${isl}\"}, output: {mean: \"${osl}\"}}\n"
         "  engine: {scheduler: vllm, max_num_seqs: \"${seqs}\", max_num_batched_tokens: 8192, chunked_prefill: true, gpu_memory_utilization: 0.9,"
         " decode_execution: graph, prefill_execution: graph}\n")
    d = run(y, "e2e")
    got = list(csv.DictReader(open(os.path.join(d, "serving.csv"))))
    assert len(got) == len(rows), (len(got), len(rows))
    tpot_ok = ttft_ok = 0
    tpot_r, ttft_r = [], []
    for r, g in zip(rows, got):
        a = float(g["tpot_mean_s"]) * 1e3 / float(r["silicon_tpot_ms"])
        b = float(g["ttft_mean_s"]) * 1e3 / float(r["silicon_ttft_ms"])
        tpot_r.append(a), ttft_r.append(b)
        tpot_ok += abs(a - 1) <= 0.2
        ttft_ok += abs(b - 1) <= 0.3
    n = len(rows)
    return [f"{n} rows (TensorRT-LLM, Llama-3.1-8B-Instruct bf16, prompts of 1,024–4,096 tokens, outputs of 128–512, concurrency 8–128, TP 1–8), "
            "each a closed loop of max(4 × concurrency, 64) requests at the row's concurrency, the row's TP, "
            "`max_num_batched_tokens: 8192`, graphs in both phases, on the catalog's `h100_sxm`:", "",
            "| | within the bound | median rsim / measured | 10th–90th percentile |", "|---|---|---|---|",
            f"| TPOT (bound 20 %) | {tpot_ok} of {n} ({100 * tpot_ok / n:.0f} %) | {pct(tpot_r, 0.5):.2f} | {pct(tpot_r, 0.1):.2f}–{pct(tpot_r, 0.9):.2f} |",
            f"| TTFT (bound 30 %) | {ttft_ok} of {n} ({100 * ttft_ok / n:.0f} %) | {pct(ttft_r, 0.5):.2f} | {pct(ttft_r, 0.1):.2f}–{pct(ttft_r, 0.9):.2f} |", ""]


def blis_stages():
    if not os.path.isdir(BLIS):
        return ["(`" + BLIS + "` not found: the BLIS check was skipped.)", ""]
    out = ["| workload, stage | rate | requests | TTFT mean (measured / rsim) | TTFT p90 | E2E mean | E2E p90 | "
           "(E2E − TTFT) per token, median |", "|---|---|---|---|---|---|---|---|"]
    ratios = {"ttft": [], "e2e": []}
    for exp in sorted(os.listdir(BLIS)):
        res = os.path.join(BLIS, exp, "results")
        if not os.path.isdir(res):
            continue
        cfg = dict(l.split(": ", 1) for l in open(os.path.join(BLIS, exp, "exp-config.yaml")).read().splitlines() if ": " in l)
        prof = json.load(open(os.path.join(BLIS, exp, "profile.yaml")))
        sp = prof["data"]["shared_prefix"]
        for k, stage in enumerate(prof["load"]["stages"]):
            path = os.path.join(res, f"stage_{k}_lifecycle_metrics.json")
            if not os.path.exists(path):
                continue
            m = json.load(open(path))["successes"]
            lat = m["latency"]
            prompt = round(m["prompt_len"]["mean"])  # system prompt, question and the chat template
            n = int(stage["rate"] * stage["duration"])
            y = ("name: blis\nplatforms: [h100_sxm]\nnetworks:\n  - {model: llama2_7b}\nserving:\n"
                 f"  workload: {{requests: {n}, arrivals: {{process: constant, rate: {stage['rate']}}}, "
                 f"prompt: {{mean: {prompt - sp['system_prompt_len']}}}, output: {{mean: {sp['output_len']}}}, "
                 f"shared_prefix: {{tokens: {sp['system_prompt_len']}, groups: {sp['num_unique_system_prompts']}}}}}\n"
                 f"  engine: {{max_num_seqs: {cfg['max_num_seqs'].strip()}, max_num_batched_tokens: {cfg['max_num_batched_tokens'].strip()}, "
                 "chunked_prefill: true, prefix_caching: true}\n")
            d = run(y, "blis")
            rows = [r for r in csv.DictReader(open(os.path.join(d, "requests.csv"))) if r["e2e_s"]]
            ttft = [float(r["ttft_s"]) for r in rows]
            e2e = [float(r["e2e_s"]) for r in rows]
            per_tok = [(float(r["e2e_s"]) - float(r["ttft_s"])) / (int(r["output_tokens"]) - 1) for r in rows]
            meas_tok = (lat["request_latency"]["median"] - lat["time_to_first_token"]["median"]) / (m["output_len"]["median"] - 1)
            cells = []
            for key, mine in (("time_to_first_token", ttft), ("request_latency", e2e)):
                for q, f in (("mean", statistics.mean), ("p90", lambda v: pct(v, 0.9))):
                    meas, got = lat[key][q], f(mine)
                    cells.append(f"{meas:.3g} s / {got:.3g} s ({100 * (got / meas - 1):+.0f} %)")
                    if q == "mean":
                        ratios["ttft" if key == "time_to_first_token" else "e2e"].append(got / meas)
            name = exp.split("-tp1-")[-1]
            out.append(f"| {name}, stage {k} | {stage['rate']}/s | {n} | " + " | ".join(cells) +
                       f" | {1e3 * meas_tok:.2f} ms / {1e3 * pct(per_tok, 0.5):.2f} ms |")
    out += ["", f"TTFT mean: rsim / measured {min(ratios['ttft']):.2f}–{max(ratios['ttft']):.2f}; E2E mean "
            f"{min(ratios['e2e']):.2f}–{max(ratios['e2e']):.2f} over the {len(ratios['e2e'])} stages.", "",
            "Each stage is simulated from an empty engine with constant arrivals at its rate, fixed prompts of the "
            "stage's mean length (a system prompt of the profile's length shared by its groups, prefix caching on, as "
            "vLLM's default) and the profile's output length (`ignore_eos`); the client's own multi-turn history is "
            "not modelled. The measured `time_per_output_token` of inference-perf is not vLLM's TPOT (it is about half "
            "of (E2E − TTFT) / tokens in these files), so the last column compares (E2E − TTFT) / (output − 1) of the "
            "medians instead. The reasoning stage's client completed 732 of its 4,800 requests (the rest failed at the "
            "client), so its measured figures describe another load than the one simulated; measured outputs average about "
            "200 tokens where the profile asks 247 (requests ended early), which lengthens rsim's E2E; rsim's TTFT is "
            "30–40 % short at light load (its prefills are faster than vLLM's on the catalog's derating), its time a "
            "token 13 % long (the decode steps: 85 % of the HBM bandwidth is the catalog's assumption).", ""]
    return out


def main():
    doc = ["# Serving: validation against measured runs", "",
           "Generated by `scripts/validation_serving.py` (rsim's serving simulation, `docs/serving.md`, against "
           "measurements nobody here wrote). Times on the catalog platforms' derated roofs (datasheet figures and the "
           "catalog's assumed derating); no figure was fitted to these runs.", "",
           "## vLLM 0.19 on an RTX 4090: 300 ShareGPT requests replayed", "",
           "Llama-3.1-8B bf16, the run's engine config (max_num_seqs 256, max_num_batched_tokens 2048, chunked prefill, "
           "prefix caching, blocks of 16); source: LLMServingSim's bench (tests/data/vllm_rtx4090/SOURCE.md). The run is "
           "overloaded (10 requests/s): requests queue for a minute, so TTFT is mostly waiting.", ""]
    doc += replay()
    doc += ["## TensorRT-LLM on an H100 SXM: the e2e_silicon rows of Llama-3.1-8B", ""]
    doc += e2e_rows()
    doc += ["## vLLM on an H100 SXM: the BLIS constant-rate stages of Llama-2-7B", "",
            "Shared-prefix chat workloads (general, codegen, roleplay, reasoning) from BLIS's training data "
            "(`../shared/external/blis_h100`, inference-sim @ f90a1e3, Apache-2.0), vLLM with max_num_seqs 128, "
            "max_num_batched_tokens 2048, TP 1; measured = inference-perf's client-side figures per stage.", ""]
    doc += blis_stages()
    doc += ["## Where it misses, and why", "",
            "- The KV cache's size: vLLM reserves more than rsim's rule (a profile run's peak, the sampler, CUDA graphs), "
            "so from memory alone rsim holds 29 % more blocks on the 4090 and runs more requests at once; with the "
            "engine's own count the replay is within 6 %.",
            "- Decode steps are priced on the derated roofs (the catalog assumes 85 % of the memory bandwidth); "
            "a calibrated platform would replace that assumption.", ""]
    with open(os.path.join(ROOT, "docs", "validation-serving.md"), "w") as f:
        f.write("\n".join(doc))
    print("wrote docs/validation-serving.md")


main()
