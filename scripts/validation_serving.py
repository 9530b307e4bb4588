#!/usr/bin/env python3
"""Writes docs/validation-serving.md: rsim's serving simulation against measurements nobody here
wrote. (1) The vLLM 0.19 run on an RTX 4090 (tests/data/vllm_rtx4090) replayed request by request;
(2) the H100 SXM rows of TensorRT-LLM, vLLM and SGLang serving Llama-3.1-8B, Qwen3-32B and
Llama-3.1-70B (../shared/external/e2e_silicon, or --e2e FILE), each run as a closed loop at its
concurrency; (3) vLLM serving Llama-2-7B on an H100 SXM
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


KERNEL_H100 = "{name: h100_sxm_op, base: h100_sxm, kernel_model: {from: h200_op}}"
E2E_GROUPS = [  # (backend, model, its config in tests/data/hf)
    ("trtllm", "meta-llama/Llama-3.1-8B-Instruct", "llama3_8b"),
    ("trtllm", "Qwen/Qwen3-32B", "qwen3_32b"),
    ("vllm", "Qwen/Qwen3-32B", "qwen3_32b"),
    ("sglang", "Qwen/Qwen3-32B", "qwen3_32b"),
    ("vllm", "meta-llama/Llama-3.1-70B", "llama3_1_70b"),
]


def e2e_group(rows, config, platform, queued=False):
    """Each row a closed loop at its concurrency on `platform`; the (TPOT, TTFT) ratios rsim / measured.
    queued: one request more in flight than the engine runs (concurrency c + 1, max_num_seqs c)"""
    z = {"isl": [], "osl": [], "conc": [], "tp": [], "n": [], "seqs": [], "dt": []}
    for r in rows:
        c = int(r["batch_size"])
        z["isl"].append(r["isl"]), z["osl"].append(r["osl"]), z["conc"].append(str(c + 1 if queued else c)), z["tp"].append(r["tp_size"])
        z["n"].append(str(max(4 * c, 64))), z["seqs"].append(str(c if queued else max(c, 8)))
        z["dt"].append("fp8" if r["gemm_quant_mode"] == "fp8" else "bf16")
    sweep = "".join(f"    {k}: [{', '.join(v)}]\n" for k, v in z.items())
    y = ("name: e2e\nsettings: {dtype: bf16, weights_dtype: \"${dt}\", compute_dtype: \"${dt}\"}\nplatforms: [" + platform + "]\n"
         "networks:\n  - {model: hf, args: {config: ../tests/data/hf/" + config + ".json}, parallel: {tensor: \"${tp}\"}}\n"
         "sweep:\n  zip:\n" + sweep +
         "serving:\n  workload: {requests: \"${n}\", concurrency: \"${conc}\", prompt: {mean: \"${isl}\"}, output: {mean: \"${osl}\"}}\n"
         "  engine: {scheduler: vllm, max_num_seqs: \"${seqs}\", max_num_batched_tokens: 8192, chunked_prefill: true, gpu_memory_utilization: 0.9,"
         " decode_execution: graph, prefill_execution: graph}\n")
    d = run(y, "e2e")
    got = list(csv.DictReader(open(os.path.join(d, "serving.csv"))))
    assert len(got) == len(rows), (len(got), len(rows))
    tpot = [float(g["tpot_mean_s"]) * 1e3 / float(r["silicon_tpot_ms"]) for r, g in zip(rows, got)]
    ttft = [float(g["ttft_mean_s"]) * 1e3 / float(r["silicon_ttft_ms"]) for r, g in zip(rows, got)]
    return tpot, ttft, got


def e2e_rows():
    if not os.path.exists(E2E):
        return ["(`" + E2E + "` not found: the e2e_silicon check was skipped.)", ""]
    every = [r for r in csv.DictReader(open(E2E)) if r["mode"] == "agg" and r["isl"] and r["tp_size"]]
    out = ["Each row is run as a closed loop of max(4 × concurrency, 64) requests at the row's concurrency, fixed prompt "
           "and output lengths, the row's TP, `max_num_seqs: max(concurrency, 8)`, `max_num_batched_tokens: 8192`, "
           "chunked prefill, graphs in both phases; fp8 rows with fp8 weights and math. On the catalog's `h100_sxm` "
           "(datasheet figures and the catalog's assumed derating) and on `" + KERNEL_H100 + "` (the GEMM, attention and "
           "collective models fitted on an H200's AIConfigurator op data, carried to the H100's datasheet: nothing fitted to "
           "these rows). TensorRT-LLM's Llama-3.1-8B rows are the issue's acceptance set; the others are models and engines "
           "the check does not name.", "",
           "| engine, model | rows | platform | TPOT within 20 % | TPOT median (p10–p90) | TTFT within 30 % | TTFT median (p10–p90) |",
           "|---|---|---|---|---|---|---|"]
    by_osl = None
    for backend, model, config in E2E_GROUPS:
        rows = [r for r in every if r["backend"] == backend and r["model_path"] == model]
        if not rows:
            continue
        quant = " (fp8)" if all(r["gemm_quant_mode"] == "fp8" for r in rows) else ""
        platforms = ["h100_sxm", KERNEL_H100] if backend == "trtllm" else ["h100_sxm"]
        for pl in platforms:
            tpot, ttft, got = e2e_group(rows, config, pl)
            n = len(rows)
            a = sum(abs(x - 1) <= 0.2 for x in tpot)
            b = sum(abs(x - 1) <= 0.3 for x in ttft)
            name = "`h100_sxm`" if pl == "h100_sxm" else "`h100_sxm` + `h200_op`'s kernel model"
            out.append(f"| {backend}, {model.split('/')[-1]}{quant} | {n} | {name} | {a} ({100 * a / n:.0f} %) | "
                       f"{pct(tpot, 0.5):.2f} ({pct(tpot, 0.1):.2f}–{pct(tpot, 0.9):.2f}) | {b} ({100 * b / n:.0f} %) | "
                       f"{pct(ttft, 0.5):.2f} ({pct(ttft, 0.1):.2f}–{pct(ttft, 0.9):.2f}) |")
            if backend == "trtllm" and config == "llama3_8b" and pl == "h100_sxm":
                by_osl = (rows, got)
    out.append("")
    if by_osl:  # the measured TTFT by output length at low concurrency: what no scheduler model here produces
        rows, got = by_osl
        cells = {}
        for r, g in zip(rows, got):
            if r["batch_size"] == "8" and r["tp_size"] == "1":
                cells.setdefault(r["isl"], {})[r["osl"]] = (float(r["silicon_ttft_ms"]), float(g["ttft_mean_s"]) * 1e3)
        out += ["TensorRT-LLM's Llama-3.1-8B TTFT at concurrency 8, TP 1 (ms, measured / rsim on `h100_sxm`) by output length:", "",
                "| prompt | output 128 | output 256 | output 512 |", "|---|---|---|---|"]
        for isl in sorted(cells, key=int):
            c = cells[isl]
            out.append(f"| {isl} | " + " | ".join(f"{c[o][0]:.0f} / {c[o][1]:.0f}" if o in c else "" for o in ("128", "256", "512")) + " |")
        out.append("")
        out += one_queued(every, rows)
    return out


def one_queued(every, rows):
    """What the TensorRT-LLM Llama-3.1-8B TTFTs are made of: the measured TTFT against the measured interval
    between two completions (osl x TPOT / concurrency), the growth of TTFT with the output length per group,
    and the rows run again with one request always waiting"""
    def growth(group):  # measured TTFT at the longest output over the shortest, same prompt, concurrency and TP
        by = {}
        for r in group:
            by.setdefault((r["isl"], r["batch_size"], r["tp_size"]), {})[int(r["osl"])] = float(r["silicon_ttft_ms"])
        g = [v[max(v)] / v[min(v)] for v in by.values() if len(v) > 1]
        return pct(g, 0.5) if g else float("nan")
    lines = ["What those TTFTs are made of. In a closed loop of c requests whose completions are spread out, one finishes "
             "every osl × TPOT / c (the *completion interval*); a request that has to wait for a free place waits about "
             "that long. The measured TTFT less the measured completion interval, at concurrency ≤ 32 (ms):", "",
             "| TP | prompt | median of TTFT − interval | its range | rows |", "|---|---|---|---|---|"]
    for tp in ("1", "2", "4", "8"):
        for isl in ("1024", "2048", "4096"):
            d = [float(r["silicon_ttft_ms"]) - int(r["osl"]) * float(r["silicon_tpot_ms"]) / int(r["batch_size"])
                 for r in rows if r["tp_size"] == tp and r["isl"] == isl and int(r["batch_size"]) <= 32]
            if d:
                lines.append(f"| {tp} | {isl} | {pct(d, 0.5):.0f} | {min(d):.0f} – {max(d):.0f} | {len(d)} |")
    lines += ["", "The measured TTFT at the longest output over that at the shortest (same prompt, concurrency and TP), "
              "median over the row groups: " + "; ".join(
                  f"{b}, {m.split('/')[-1]} {growth([r for r in every if r['backend'] == b and r['model_path'] == m]):.2f}"
                  for b, m, _ in E2E_GROUPS if any(r["backend"] == b and r["model_path"] == m for r in every)) +
              ". Only the TensorRT-LLM Llama-3.1-8B rows grow with the output length: their TTFT is about one completion "
              "interval plus a near-constant (the table: alike at TP 1–8, growing with the prompt), as though one request always waited for a place "
              "(a client one request ahead of the engine's slots, say). The prescribed loop (concurrency c, max_num_seqs "
              "max(c, 8)) has no such wait, and neither has rsim. The same rows run with one request always waiting "
              "(`concurrency: c + 1`, `max_num_seqs: c`; nothing else changed, nothing fitted):", ""]
    tpot, ttft, _ = e2e_group(rows, "llama3_8b", "h100_sxm", queued=True)
    n = len(rows)
    a = sum(abs(x - 1) <= 0.2 for x in tpot)
    b = sum(abs(x - 1) <= 0.3 for x in ttft)
    lines += ["| rows | platform | TPOT within 20 % | TPOT median | TTFT within 30 % | TTFT median |", "|---|---|---|---|---|---|",
              f"| {n} | `h100_sxm`, one request waiting | {a} ({100 * a / n:.0f} %) | {pct(tpot, 0.5):.2f} | {b} ({100 * b / n:.0f} %) | {pct(ttft, 0.5):.2f} |", ""]
    low = [x for r, x in zip(rows, ttft) if int(r["batch_size"]) <= 32]
    high = [float(r["silicon_ttft_ms"]) for r in rows if int(r["batch_size"]) > 32]
    lines += [f"At concurrency ≤ 32 {sum(abs(x - 1) <= 0.3 for x in low)} of {len(low)} TTFTs are then within 30 %; at 64 and 128 "
              f"the measured TTFTs scatter ({min(high):.0f}–{max(high):.0f} ms, not monotone in output length or TP) in a way "
              "neither loop follows. "
              "NVIDIA's AIConfigurator, fitted to its own measurements of these engines, multiplies its TensorRT-LLM "
              "aggregated-mode TTFT by an empirical factor of 2 to 4 (ai-dynamo/aiconfigurator, "
              "`sdk/backends/trtllm_backend.py`, `run_agg`). rsim's check keeps the prescribed loop: a wait that is "
              "the harness's, not the engine's, is not put into the engine model.", ""]
    return lines


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
    doc += ["## Deployed engines on an H100 SXM: the e2e_silicon rows", ""]
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
            "a calibrated platform would replace that assumption.",
            "- e2e_silicon, TPOT on the catalog: decode-heavy rows (output 512) are right (median about 1.0); prefill-heavy "
            "rows (output 128, long prompts, high concurrency) come out 20–40 % short: a new prompt's prefill shares the "
            "iterations with the running decodes, and the catalog prices prefill at 85 % of the tensor peak (an assumption), "
            "faster than the engines reach, most of all in fp8 (Qwen3-32B).",
            "- e2e_silicon, the kernel model: it prices the prefills as TensorRT-LLM runs them, but the platform's graph gap "
            "(4.83 µs, measured for PyTorch's ResNet-50 kernels on an H200, where it also holds their small-kernel "
            "inefficiency) still comes before each kernel the model does not price: the norms, residual adds, RoPE and KV "
            "append, about 7 a layer that TensorRT-LLM fuses into its GEMMs and attention, some 1.1 ms a Llama-3.1-8B decode "
            "step. As a what-if with `runtime: {graph_gap: 0 us}` its TPOT is within 20 % for 93 % of the Llama-3.1-8B rows "
            "(median 1.01). The modelled kernels' own times hold their graph gap (timed in CUDA graphs): under `execution: "
            "graph` the gap comes out of them. Its fp8 rows are 1.4× slow, not explained yet (a candidate: the model "
            "converts the activations to fp8 before each GEMM, which TensorRT-LLM fuses into the norm before it).",
            "- e2e_silicon, TTFT: TensorRT-LLM's Llama-3.1-8B rows grow with the output length at low concurrency (the table "
            "above), by about one interval between completions (E2E / concurrency) — as if each new request waited for the "
            "next completion; the Qwen3-32B rows of the same TensorRT-LLM version do not, nor does a closed-loop simulation "
            "of the scheduler (rsim's, or AIConfigurator's own closed-loop estimator), whose TTFT is one value for every "
            "output length. vLLM's and SGLang's TTFT miss in opposite directions (1.3× and 0.3×): the rows give means "
            "only, which do not tell their schedulers' admission apart.", ""]
    with open(os.path.join(ROOT, "docs", "validation-serving.md"), "w") as f:
        f.write("\n".join(doc))
    print("wrote docs/validation-serving.md")


main()
