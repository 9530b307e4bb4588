import torch, statistics
dev = torch.device("cuda:0")
def t(fn, reps=10):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for a, b in ev:
        a.record(); fn(); b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) * 1e-3 for a, b in ev)
print("size_MiB total_sum rowsum(dim1) rowsum_bf16 amax_dim1 (GB/s)")
for mib in [0.25, 1, 4, 8, 16, 24, 32, 48, 64, 128, 256, 1024]:
    size = int(mib * 2**20); n = size // 4
    x = torch.randn(n, device=dev)
    r = max(1, (1 << 30) // size)
    v = x.expand(r, n)
    a = r * size / t(lambda: v.sum())
    b = r * size / t(lambda: v.sum(dim=1))
    xh = torch.randn(size // 2, device=dev, dtype=torch.bfloat16); vh = xh.expand(r, size // 2)
    c = r * size / t(lambda: vh.sum(dim=1))
    d = r * size / t(lambda: v.amax(dim=1))
    print("%8.2f %8.0f %8.0f %8.0f %8.0f" % (mib, a / 1e9, b / 1e9, c / 1e9, d / 1e9), flush=True)
