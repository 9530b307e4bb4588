import csv, gzip, math, random
import numpy as np
BASE = "/work/shared/external/aiconfigurator/%s/trtllm-1.3.0rc20/attention/%s_attention_perf.csv.gz"
GPU = {"h200_sxm": dict(sms=132, bf16=989e12, fp8=1979e12, bw=4.8e12, clock=1.98e9),
       "h100_sxm": dict(sms=132, bf16=989e12, fp8=1979e12, bw=3.35e12, clock=1.98e9)}
def rows(gpu, kind):
    out = []
    with gzip.open(BASE % (gpu, kind), "rt") as f:
        for r in csv.DictReader(f):
            d = {k: (float(v) if k not in ("attn_dtype", "kv_cache_dtype") else v) for k, v in r.items()}
            d["latency"] *= 1e-3
            out.append(d)
    return out
def ctx_work(r):
    b, s, h, hk, d, w = r["batch_size"], r["isl"], r["num_heads"], r["num_key_value_heads"], r["head_dim"], r["window_size"]
    # scores per head: causal (each query attends to itself and earlier), within the window
    if w > 0 and w < s:
        pairs = w * (w + 1) / 2 + (s - w) * w
    else:
        pairs = s * (s + 1) / 2
    flops = 4 * pairs * d * h * b
    kvb = 1 if r["kv_cache_dtype"] == "fp8" else 2
    bytes_ = b * s * (2 * h * d * 2 + 2 * hk * d * kvb + 2 * hk * d * 2)  # q in, o out (bf16), kv write, k v in
    return flops, bytes_, pairs
