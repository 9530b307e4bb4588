import sys, math; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from load import *
def feats(R):
    F = []
    for r in R:
        b, s, h, hk, d, w = r["batch_size"], int(r["isl"]), r["num_heads"], r["num_key_value_heads"], r["head_dim"], int(r["window_size"])
        BM = 64 if s <= 64 else 128; BN = 128 if d <= 128 else 64
        T = -(-s // BM)
        nb, nm = [], []
        for i in range(T):
            q0, q1 = i * BM, min((i + 1) * BM, s) - 1   # the tile's first and last query
            k0 = max(0, q0 - w + 1) if 0 < w < s else 0  # the first key any of its queries sees
            b0, b1 = k0 // BN, q1 // BN
            full = 0
            for j in range(b0, b1 + 1):  # a block is whole when every query sees every key of it
                lo, hi = j * BN, (j + 1) * BN - 1
                whole = hi <= q0 and (not (0 < w < s) or lo >= q1 - w + 1)
                full += whole
            nb.append(b1 - b0 + 1); nm.append(b1 - b0 + 1 - full)
        nb = np.array(nb, float); nm = np.array(nm, float)
        f, by, pairs = ctx_work(r)
        F.append((b * h * T, b * h * nb.sum(), nb.max(), BM * BN * d, BM * BN, by, f, 1.0 if "fp8" in (r["attn_dtype"], r["kv_cache_dtype"]) else 0.0, d, b * h * nm.sum(), nm.max()))
    return np.array(F)
def predict(p, F, g):
    floor, e_mma, soft, blk, start, e_bw, mask = np.exp(p)
    ncta, sumb, maxb, mmaw, scores, by, fl, fp8, d, summ, maxm = F.T
    peak = np.where(fp8 > 0, g["fp8"], g["bf16"]) / g["sms"]
    t_blk = 4 * mmaw / (peak * e_mma) + scores * soft + blk
    total = sumb * t_blk + summ * scores * mask + ncta * start
    longest = maxb * t_blk + maxm * scores * mask + start
    comp = np.maximum(total / g["sms"], longest)
    mem = by / (g["bw"] * e_bw)
    return floor + np.maximum(comp, mem)
def fit(F, y, g, p0, iters=3000):
    def loss(p): return np.mean(np.abs(np.log(predict(p, F, g) / y)))
    n = len(p0); simplex = [np.array(p0, float)] + [np.array(p0, float) + np.eye(n)[i] * 0.5 for i in range(n)]
    vals = [loss(x) for x in simplex]
    for it in range(iters):
        o = np.argsort(vals); simplex = [simplex[i] for i in o]; vals = [vals[i] for i in o]
        c = np.mean(simplex[:-1], axis=0); xr = c + (c - simplex[-1]); fr = loss(xr)
        if fr < vals[0]:
            xe = c + 2 * (c - simplex[-1]); fe = loss(xe)
            simplex[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]: simplex[-1], vals[-1] = xr, fr
        else:
            xc = c + 0.5 * (simplex[-1] - c); fc = loss(xc)
            if fc < vals[-1]: simplex[-1], vals[-1] = xc, fc
            else:
                simplex = [simplex[0] + 0.5 * (x - simplex[0]) for x in simplex]; vals = [loss(x) for x in simplex]
    return simplex[int(np.argmin(vals))], min(vals)
def report(name, pred, y):
    r = pred / y
    print(f"{name}: within 1.25x {np.mean(np.abs(np.log(r)) <= math.log(1.25))*100:.1f}%  1.5x {np.mean(np.abs(np.log(r)) <= math.log(1.5))*100:.1f}%  median {np.median(r):.3f}")
if __name__ == "__main__":
    R2 = [r for r in rows("h200_sxm", "context")]
    R1 = [r for r in rows("h100_sxm", "context")]
    F2, y2 = feats(R2), np.array([r["latency"] for r in R2])
    F1, y1 = feats(R1), np.array([r["latency"] for r in R1])
    idx = np.random.RandomState(0).choice(len(y2), 8000, replace=False)
    for dt in (0, 1):
        m2 = F2[:, 7] == dt; m1 = F1[:, 7] == dt
        sel = idx[m2[idx]]
        p0 = np.log([5e-6, 0.6, 1e-10, 1e-8, 1e-7, 0.8, 1e-11])
        p, l = fit(F2[sel], y2[sel], GPU["h200_sxm"], p0)
        print("dtype fp8" if dt else "dtype bf16", np.exp(p), l)
        report("  H200 all", predict(p, F2[m2], GPU["h200_sxm"]), y2[m2])
        report("  H100 carried", predict(p, F1[m1], GPU["h100_sxm"]), y1[m1])
