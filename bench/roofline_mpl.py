#!/usr/bin/env python3
"""A 40,000-point roofline drawn by rsim and by matplotlib, in one run (issue 12: "a 40k-point
roofline faster than matplotlib's").

The scenario: one network of 40 drawn layers on one platform (rtx3080) — 20 convolutions and
transposed convolutions on 8×8 maps with 12 to 512 channels and 1×1, 3×3 or 5×5 kernels, an 8×8
convolution down to 1×1, a flatten (a view: 0 FLOPs, not drawn) and 19 fully connected layers of
36 to 4096 features — swept over batch sizes 1, 2, …, 1000. Batch changes every layer's intensity
(weights are read once per batch), and no two layers follow the same curve, so the default
roofline has ≈ 40,000 distinct (intensity, FLOP/s) points, about half memory and half compute
bound; the script counts them in the figure's data (roofline_rtx3080.csv).

  - rsim's figure cost: CPU time (user + system, /usr/bin/time) of `rsim run --jobs 1 -q
    --format png` minus that of the same run with `--no-plots`, each the best of --repeat runs
    (interleaved), and the peak RSS of both;
  - matplotlib's: the same points read from rsim's results.csv (intensity, attainable FLOP/s,
    bound, op; the platform's peak and bandwidth) drawn as a comparable log–log roofline — both
    roofs, the ridge, roof labels, a scatter coloured by bound and shaped by op, axis labels, a
    title, a legend, a grid — to a PNG of the same pixel size and dpi as rsim's; CPU time
    (time.process_time) from figure creation to savefig, best of --repeat, in this process.
    The import of matplotlib is timed once, as information.

usage: bench/roofline_mpl.py [--rsim build/rsim] [--repeat N] [--points N] [--keep DIR]
"""
import argparse, csv, importlib.util, math, os, shutil, struct, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from e2e import measure  # noqa: E402  (best (wall, cpu, maxrss_MB) of N runs under /usr/bin/time)

PLATFORM = "rtx3080"
CONVS = [(24, 3), (128, 1), (16, 3), (192, 5), (40, 1), (20, 5), (320, 3), (56, 1), (384, 5), (12, 3),
         (448, 1), (36, 3), (512, 3), (96, 1), (28, 5), (480, 3), (200, 1), (44, 3), (144, 3), (272, 1)]
FEATURES = [2048, 64, 3072, 48, 4096, 96, 1536, 40, 2560, 80, 3584, 56, 1024, 72, 2304, 88, 1152, 36, 1000]


def scenario(path, points):
    with open(path, "w") as f:
        f.write(f"name: roofline40k\ndescription: 40 drawn layers swept over {points} batch sizes\n")
        f.write(f"platforms: [{PLATFORM}]\n")
        f.write(f"sweep: {{grid: {{batch: {{from: 1, to: {points}, step: 1}}}}, max_points: 2000000}}\n")
        f.write(f"plots:\n  - {{kind: roofline, platforms: [{PLATFORM}]}}\n")
        f.write("networks:\n  - name: mix\n    input: [\"${batch}\", 32, 8, 8]\n    layers:\n")
        for i, (c, k) in enumerate(CONVS):
            op = "conv_transpose2d" if i % 5 == 2 else "conv2d"
            f.write(f"      - {{name: {op[:6]}{i}, op: {op}, out_channels: {c}, kernel: {k}, padding: {k // 2}}}\n")
        f.write("      - {name: conv20, op: conv2d, out_channels: 1024, kernel: 8}\n")
        f.write("      - {name: flat, op: flatten}\n")
        for j, n in enumerate(FEATURES):
            f.write(f"      - {{name: fc{21 + j}, op: linear, out_features: {n}}}\n")


def png_size(path):
    """(width, height, dpi) from the PNG header; dpi from a pHYs chunk, else rsim's default 150"""
    with open(path, "rb") as f:
        data = f.read()
    w, h = struct.unpack(">II", data[16:24])
    dpi, i = 150.0, 8
    while i + 8 <= len(data):
        n, kind = struct.unpack(">I4s", data[i:i + 8])
        if kind == b"pHYs":
            ppm, _, unit = struct.unpack(">IIB", data[i + 8:i + 17])
            if unit == 1:
                dpi = ppm * 0.0254
        if kind in (b"IDAT", b"IEND"):
            break
        i += 12 + n
    return w, h, dpi


def read_points(results_csv):
    """the drawn points of rsim's roofline (layers with FLOPs and bytes), grouped by (bound, op)"""
    groups, peak, bw = {}, None, None
    with open(results_csv, newline="") as f:
        for r in csv.DictReader(f):
            if r["platform"] != PLATFORM or r["bound"] == "none":
                continue
            x, y = float(r["intensity"]), float(r["attainable_flops_per_s"])
            if not (x > 0 and y > 0):
                continue
            peak, bw = float(r["peak_flops_per_s"]), float(r["bandwidth_bytes_per_s"])
            g = groups.setdefault((r["bound"], r["op"]), ([], []))
            g[0].append(x)
            g[1].append(y / 1e12)
    return groups, peak, bw


def draw_mpl(plt, groups, peak, bw, w, h, dpi, out):
    """a roofline comparable to rsim's default one; returns the CPU seconds it took"""
    t0 = time.process_time()
    fig = plt.figure(figsize=(w / dpi, h / dpi), dpi=dpi)
    ax = fig.add_axes([0.08, 0.1, 0.895, 0.79])
    ax.set_xscale("log")
    ax.set_yscale("log")
    xs = [x for g in groups.values() for x in g[0]]
    x0, x1 = 10.0 ** (math.floor(math.log10(min(xs))) - 1), 10.0 ** (math.ceil(math.log10(max(xs))) + 1)
    ridge = peak / bw
    ax.set_xlim(x0, x1)
    ys = [y for g in groups.values() for y in g[1]]
    ax.set_ylim(10.0 ** math.floor(math.log10(min(ys))), 10.0 ** math.ceil(math.log10(max(ys) * 1.2)))
    ax.plot([x0, ridge, x1], [x0 * bw / 1e12, peak / 1e12, peak / 1e12], color="#333333", lw=1.6, zorder=2)
    ax.plot([ridge], [peak / 1e12], marker="D", ms=6, mfc="white", mec="#333333", zorder=5)
    ax.annotate(f"ridge {ridge:.1f}", (ridge, peak / 1e12), textcoords="offset points", xytext=(0, 8), ha="center", fontsize=8)
    ax.text(x1 / 1.5, peak / 1e12 * 1.08, f"fp32 {peak / 1e12:.1f} TFLOP/s", ha="right", va="bottom", fontsize=8)
    lx = ridge / 30  # the memory roof's label, along it
    ax.text(lx, lx * bw / 1e12 * 1.25, f"{bw / 1e9:.2f} GB/s", rotation=45, transform_rotates_text=True, rotation_mode="anchor",
            ha="left", va="bottom", fontsize=8)
    colors = {"memory": "#0072B2", "compute": "#E69F00"}
    markers = {}
    for (bound, op), (gx, gy) in sorted(groups.items()):
        m = markers.setdefault(op, "os^Dvp<>"[len(markers) % 8])
        ax.scatter(gx, gy, s=14, c=colors.get(bound, "#999999"), marker=m, edgecolors="#222222", linewidths=0.5, alpha=0.9, zorder=3)
    handles = [plt.Line2D([], [], ls="", marker="o", ms=7, mfc=c, mec="#222222", label=f"{b} bound") for b, c in colors.items()]
    handles += [plt.Line2D([], [], ls="", marker=m, ms=7, mfc="#BBBBBB", mec="#222222", label=op) for op, m in markers.items()]
    ax.legend(handles=handles, loc="upper left", fontsize=9)
    ax.grid(True, which="major", color="#DDDDDD", lw=0.8)
    ax.grid(True, which="minor", color="#F0F0F0", lw=0.5)
    ax.set_xlabel("Arithmetic intensity [FLOP/byte]", fontsize=11)
    ax.set_ylabel("Performance [TFLOP/s]", fontsize=11)
    fig.suptitle(f"Roofline — {PLATFORM} (matplotlib)", x=0.08, y=0.97, ha="left", fontsize=14, fontweight="bold")
    fig.text(0.08, 0.915, f"{PLATFORM} · fp32 · FLOPs = 2×MAC · layers", fontsize=9, color="#555555")
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return time.process_time() - t0


def main():
    if importlib.util.find_spec("matplotlib") is None:
        # Debian's python3-matplotlib lives in the system Python, which may not be the first python3
        system = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(system) and os.path.exists(system) and \
                subprocess.run([system, "-c", "import matplotlib"], capture_output=True).returncode == 0:
            os.execv(system, [system, os.path.abspath(__file__), *sys.argv[1:]])
        print("matplotlib not installed: apt-get install python3-matplotlib")
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--rsim", default=os.path.join(ROOT, "build", "rsim"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--points", type=int, default=1000, help="batch sizes swept (40 drawn points each)")
    ap.add_argument("--keep", help="work in this folder and keep it (both PNGs)")
    a = ap.parse_args()
    rsim = os.path.abspath(a.rsim)
    work = os.path.abspath(a.keep) if a.keep else tempfile.mkdtemp(prefix="rsim_roofline_")
    os.makedirs(work, exist_ok=True)
    print(f"load average before: {os.getloadavg()}  (cores: {os.cpu_count()})")

    t0, w0 = time.process_time(), time.perf_counter()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    imp_cpu, imp_wall = time.process_time() - t0, time.perf_counter() - w0

    scen = os.path.join(work, "roofline40k.yaml")
    scenario(scen, a.points)
    run = lambda out, *extra: [rsim, "run", scen, "--out", os.path.join(work, out), "--jobs", "1", "-q", *extra]
    png, bare = None, None
    for _ in range(a.repeat):  # interleaved, so that a burst of load hits both alike
        p = measure(run("plots", "--format", "png"), 1)
        b = measure(run("tables", "--no-plots"), 1)
        png = p if png is None or p[1] < png[1] else png
        bare = b if bare is None or b[1] < bare[1] else bare
    rsim_fig = png[1] - bare[1]

    fig_csv = os.path.join(work, "plots", f"roofline_{PLATFORM}.csv")
    with open(fig_csv, newline="") as f:
        pts = [(r["intensity"], r["performance_flops_per_s"]) for r in csv.DictReader(f)]
    distinct = len(set(pts))
    rsim_png = os.path.join(work, "plots", f"roofline_{PLATFORM}.png")
    w, h, dpi = png_size(rsim_png)

    t0 = time.process_time()
    groups, peak, bw = read_points(os.path.join(work, "plots", "results.csv"))
    prep = time.process_time() - t0
    drawn = sum(len(g[0]) for g in groups.values())
    mpl_png = os.path.join(work, f"roofline_{PLATFORM}_matplotlib.png")
    mpl = min(draw_mpl(plt, groups, peak, bw, w, h, dpi, mpl_png) for _ in range(a.repeat))
    mw, mh, _ = png_size(mpl_png)

    print(f"\nscenario: {a.points} batch sizes × 40 drawn layers on {PLATFORM}: {drawn} roofline points in results.csv, all drawn by "
          f"matplotlib; rsim's figure keeps {len(pts)} of them ({distinct} distinct; the others land on kept marker cells, "
          f"its subtitle counts them; figure data roofline_{PLATFORM}.csv)")
    print(f"PNGs: rsim {w}×{h} px, matplotlib {mw}×{mh} px at {dpi:.0f} dpi")
    print(f"rsim run --format png:  {png[1]:.2f} s CPU, {png[0]:.2f} s wall, peak RSS {png[2]:.0f} MB")
    print(f"rsim run --no-plots:    {bare[1]:.2f} s CPU, {bare[0]:.2f} s wall, peak RSS {bare[2]:.0f} MB")
    print(f"matplotlib {matplotlib.__version__}: import {imp_cpu:.2f} s CPU ({imp_wall:.2f} s wall), reading results.csv "
          f"{prep:.2f} s CPU (both not counted)\n")
    res = [("rsim figure: CPU of the png run − the --no-plots run", f"{rsim_fig:.3f} s", "(info)", True),
           ("  its memory: peak RSS with − without the figure", f"{png[2] - bare[2]:.0f} MB", "(info)", True),
           ("matplotlib figure: figure creation → savefig, CPU", f"{mpl:.3f} s", "(info)", True),
           (f"{drawn / 1000:.0f}k-point roofline: rsim's time / matplotlib's", f"{rsim_fig / mpl:.2f}×", "< 1×", rsim_fig < mpl)]
    wd = max(len(r[0]) for r in res)
    for what, got, target, ok in res:
        verdict = "" if target == "(info)" else ("ok" if ok else "MISSED")
        print(f"{what:<{wd}}  {got:>10}  target {target:<6} {verdict}")
    print(f"\nload average after: {os.getloadavg()}")
    if a.keep:
        print(f"PNGs: {rsim_png}\n      {mpl_png}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
