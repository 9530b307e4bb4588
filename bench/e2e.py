#!/usr/bin/env python3
"""End-to-end speed of `rsim run` against its references, each ratio printed beside its target.

The scenario: a chain of 50 3×3 convolutions (padding 1, bias, fp32) on 14×14 inputs, on one
platform (rtx3080), swept over channel counts c = 8, 9, … (one point per value; 50 rows per point).
References measured in the same run:
  - a plain Python loop computing the same per-layer numbers and building the same CSV rows;
  - a plain C++ program (bench/plain_writer.cpp, compiled here with -O2) hard-coded for this scenario
    that computes every layer's numbers and the network totals and streams the same four files as
    rsim (results.csv, kernels.csv, summary.csv, results.json) with std::to_chars: the same work, and
    byte-identical output (checked after the timed runs; the differences are printed otherwise);
  - for summary-only runs (a sweep of 10^7 evaluations, 200,000 points; rsim's rate there is of
    the evaluations beyond the process start, which a one-point run measures), two Python loops:
    one deriving every number of summary.csv per point the
    way rsim does (each layer's roofline on both roofs, bound counts, kernel times with the launch
    overhead, totals, footprint; not written), and the minimal one of earlier sessions (sums of FLOPs,
    bytes and max(compute, memory) times only). Both ratios are printed against the target.
For information, a summary-only sweep of a zoo transformer (Llama-3-8B decode, 904 points × 419
layers) is timed too. Times are the best of --repeat runs; the runs a ratio compares (rsim and its
references for 10^5 rows, one and two workers; the summary sweep, its one-point run and the two
Python loops) are made in turn, round after round, so that a slow stretch of a shared machine
falls on both sides of the ratio; "CPU" is user + system time of the
process (what one core spends, from its rusage), "wall" is elapsed time. On a shared machine wall time is noisy: the script prints the
load average before and after.

usage: bench/e2e.py [--rsim build/rsim] [--quick] [--repeat N] [--keep DIR]
"""
import argparse, os, resource, shutil, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEAK, BW = 29.8e12, 760.32e9
LAUNCH_US = 5  # rtx3080's launch_overhead (hardware/rtx3080.yaml), charged per kernel
H = W = 14


def scenario(path, points, layers, c0=8):
    with open(path, "w") as f:
        f.write("name: e2e\nplatforms: [rtx3080]\n")
        f.write(f"sweep: {{grid: {{c: {{from: {c0}, to: {c0 + points - 1}, step: 1}}}}, max_points: 2000000}}\n")
        f.write(f"networks:\n  - name: convnet\n    input: [1, \"${{c}}\", {H}, {W}]\n    layers:\n")
        for i in range(layers):
            f.write(f"      - {{name: conv{i}, op: conv2d, out_channels: \"${{c}}\", kernel: 3, padding: 1}}\n")


def chain(path, layers):
    with open(path, "w") as f:
        f.write("name: chain\nplatforms: [rtx3080]\nnetworks:\n  - name: deep\n    input: [1, 8, 8, 8]\n    layers:\n")
        for _ in range(layers):
            f.write("      - {op: relu}\n")


def measure(cmd, repeat):
    """best (wall, cpu, maxrss_MB, user) of `repeat` runs of cmd, each the least over the runs (a
    run's system time, and with it its wall time, swings with the kernel's page-cache work, so the
    run with the least CPU time need not be the one with the least wall time). The CPU time is the rusage os.wait4
    returns (microseconds; /usr/bin/time prints hundredths of a second, too coarse for runs of a few
    hundredths); the peak RSS is /usr/bin/time's (it runs the command from its own small process: a
    child forked from this one could carry this process's size over into its ru_maxrss)."""
    best = None
    for _ in range(repeat):
        # each run starts from the same state, not timed: its output folder gone (replacing a
        # former run's 1.8 GB of files costs their removal, in this run's system time) and the
        # page cache's dirty pages written back (else the former run's writeback lands in this one)
        if "--out" in cmd:
            shutil.rmtree(cmd[cmd.index("--out") + 1], ignore_errors=True)
        os.sync()
        t0 = time.perf_counter()
        with tempfile.TemporaryFile() as err:
            p = subprocess.Popen(["/usr/bin/time", "-f", "rusage %M", *cmd], stdout=subprocess.DEVNULL, stderr=err)
            _, status, ru = os.wait4(p.pid, 0)
            wall = time.perf_counter() - t0
            p.returncode = os.waitstatus_to_exitcode(status)
            err.seek(0)
            text = err.read().decode(errors="replace")
        if p.returncode != 0:
            sys.exit(f"failed: {' '.join(cmd)}\n{text}")
        r = (wall, ru.ru_utime + ru.ru_stime, float(text.strip().splitlines()[-1].split()[1]) / 1024, ru.ru_utime)
        best = r if best is None else tuple(min(x, y) for x, y in zip(best, r))
    return best


def interleaved(jobs, repeat):
    """the best of `repeat` rounds for each of `jobs` (name -> a function timing one run: a float, or
    a tuple as measure returns, each element its least), the jobs run in turn within a round: a ratio
    of two of them then compares runs made close in time (on a shared VM, a slow stretch of a few
    seconds would otherwise fall on all the runs of one side)"""
    best = {}
    for _ in range(repeat):
        for name, job in jobs.items():
            r = job()
            if name not in best:
                best[name] = r
            elif isinstance(r, tuple):
                best[name] = tuple(min(x, y) for x, y in zip(best[name], r))
            else:
                best[name] = min(best[name], r)
    return best


def python_rows(points, layers, out_path, c0=8):
    """the reference loop: per-layer numbers and the CSV rows, written to a file"""
    t0 = time.process_time()
    with open(out_path, "w") as f:
        for p in range(points):
            c = c0 + p
            rows = []
            for l in range(layers):
                hw = H * W
                macs = c * c * 9 * hw
                flops = 2 * macs  # the bias add is folded into the accumulator (`rsim ops conv2d`)
                params = c * c * 9 + c
                wb, ib, ob = 4 * params, 4 * c * hw, 4 * c * hw
                b = wb + ib + ob
                inten = flops / b
                att = min(PEAK, inten * BW)
                t = max(flops / PEAK, b / BW)
                bound = "compute" if flops / PEAK >= b / BW else "memory"
                shape = f"1x{c}x{H}x{W}"
                rows.append(",".join(map(str, (p, c, "rtx3080", "convnet", f"conv{l}", "conv2d", "fp32", shape, shape, macs, flops, params,
                                              wb, ib, ob, b, inten, macs / b, "fp32 CUDA cores", "GDDR6X", PEAK, BW, att, t, bound,
                                              PEAK, BW, att, t, bound, f"conv{l}", 1, 1, 2, "inputs+weights+outputs"))))
            f.write("\n".join(rows) + "\n")
    return time.process_time() - t0


def python_totals(points, layers, c0=8):
    """the arithmetic of the network totals only"""
    t0 = time.process_time()
    for p in range(points):
        c = c0 + p
        tot_f = tot_b = tot_t = 0.0
        for l in range(layers):
            hw = H * W
            macs = c * c * 9 * hw
            flops = 2 * macs
            b = 4 * (c * c * 9 + c) + 8 * c * hw
            tot_f += flops
            tot_b += b
            tot_t += max(flops / PEAK, b / BW)
    return time.process_time() - t0


def python_summary(points, layers, c0=8):
    """the arithmetic of a summary-only run: every number of summary.csv, derived per point the
    way rsim derives it (per layer: the roofline on the theoretical and the derated roofs, each
    layer its own kernel; then the totals), without writing them"""
    MEM = 10 * 2**30  # rtx3080's 10 GiB of GDDR6X
    t0 = time.process_time()
    for p in range(points):
        c = c0 + p
        n = macs_t = flops_t = params_t = bytes_t = 0
        time_t = dtime_t = 0.0
        mem_b = comp_b = dmem_b = dcomp_b = 0
        weights = act = 0
        for l in range(layers):
            hw = H * W
            macs = c * c * 9 * hw
            flops = 2 * macs
            params = c * c * 9 + c
            wb, ib, ob = 4 * params, 4 * c * hw, 4 * c * hw
            b = wb + ib + ob
            for peak, bw, derated in ((PEAK, BW, False), (PEAK, BW, True)):  # rtx3080: no derating
                inten = flops / b
                att = min(peak, inten * bw)
                ct, mt = flops / peak, b / bw
                t = max(ct, mt) + LAUNCH_US * 1e-6
                if derated:
                    dtime_t += t
                    dmem_b += mt >= ct
                    dcomp_b += mt < ct
                else:
                    time_t += t
                    mem_b += mt >= ct
                    comp_b += mt < ct
            n += 1
            macs_t += macs
            flops_t += flops
            params_t += params
            bytes_t += b
            weights += wb
            act = max(act, ib + ob)
        summary = (n, n, macs_t, flops_t, params_t, bytes_t, flops_t / bytes_t, time_t, flops_t / time_t, mem_b, comp_b, dtime_t,
                   flops_t / dtime_t, dmem_b, dcomp_b, 1, dtime_t / 1, params_t, weights, 0, act, weights + act, MEM, weights + act <= MEM)
    return time.process_time() - t0


def dir_bytes(d):
    return sum(os.path.getsize(os.path.join(d, n)) for n in os.listdir(d) if not n.startswith("."))


def first_difference(a, b):
    """None when files a and b hold the same bytes, else (line number, excerpt of a, excerpt of b)
    around the first differing byte (results.json is one long line: excerpts, not whole lines)"""
    with open(a, "rb") as x, open(b, "rb") as y:
        line = 1
        while True:
            u, v = x.read(1 << 20), y.read(1 << 20)
            if u != v:
                i = next((k for k in range(min(len(u), len(v))) if u[k] != v[k]), min(len(u), len(v)))
                line += u.count(b"\n", 0, i)
                start = max(u.rfind(b"\n", 0, i) + 1, i - 60)
                cut = lambda t: t[start:i + 60].split(b"\n")[0].decode("utf-8", "replace")
                return line, cut(u), cut(v)
            if not u:
                return None
            line += u.count(b"\n")


def compare_outputs(rsim_dir, plain_dir):
    """prints whether the yardstick wrote the same files as rsim"""
    names = sorted(n for n in os.listdir(rsim_dir) if not n.startswith("."))
    diffs = {}
    for n in names:
        p = os.path.join(plain_dir, n)
        diffs[n] = first_difference(os.path.join(rsim_dir, n), p) if os.path.exists(p) else "missing"
    extra = sorted(set(n for n in os.listdir(plain_dir) if not n.startswith(".")) - set(names))
    if not extra and all(d is None for d in diffs.values()):
        print(f"yardstick output: byte-identical to rsim's ({', '.join(names)})")
        return
    print("yardstick output DIFFERS from rsim's:")
    for n in names:
        d = diffs[n]
        size = lambda f: os.path.getsize(f) if os.path.exists(f) else 0
        print(f"  {n}: rsim {size(os.path.join(rsim_dir, n))} bytes, yardstick {size(os.path.join(plain_dir, n))} bytes", end="")
        if d is None:
            print(", identical")
        elif d == "missing":
            print(", missing from the yardstick's output")
        else:
            print(f"; first difference on line {d[0]}:\n    rsim:      {d[1]}\n    yardstick: {d[2]}")
    for n in extra:
        print(f"  {n}: written by the yardstick only")


def files_equal(a, b):
    for name in sorted(os.listdir(a)):
        if name.startswith("."):
            continue
        with open(os.path.join(a, name), "rb") as x, open(os.path.join(b, name), "rb") as y:
            if x.read() != y.read():
                return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rsim", default=os.path.join(ROOT, "build", "rsim"))
    ap.add_argument("--quick", action="store_true", help="10x smaller sizes for the 10^6 cases")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", help="work in this folder and keep it")
    a = ap.parse_args()
    rsim = os.path.abspath(a.rsim)
    work = a.keep or tempfile.mkdtemp(prefix="rsim_e2e_")
    os.makedirs(work, exist_ok=True)
    R = a.repeat
    big = 2000 if a.quick else 20000       # points of the 10^6-row case (50 layers each)
    many = 100000 if a.quick else 1000000  # points of the validate case (1 layer each)
    print(f"load average before: {os.getloadavg()}  (cores: {os.cpu_count()})")

    plain = os.path.join(work, "plain_writer")
    subprocess.check_call(["c++", "-O2", "-std=c++20", os.path.join(HERE, "plain_writer.cpp"), "-o", plain])
    s5 = os.path.join(work, "e5.yaml"); scenario(s5, 2000, 50)
    s6 = os.path.join(work, "e6.yaml"); scenario(s6, big, 50)
    sv = os.path.join(work, "ev.yaml"); scenario(sv, many, 1)
    c10 = os.path.join(work, "c10k.yaml"); chain(c10, 10000)
    c100 = os.path.join(work, "c100k.yaml"); chain(c100, 100000)
    run = lambda scen, out, *extra: [rsim, "run", scen, "--out", os.path.join(work, out), "-q", "--no-plots", *extra]
    rows5 = 2000 * 50

    res = []  # (what, measured text, target text, ok)
    # 1. 10^5 rows with tables, one worker
    # the Python loop, the yardstick, and rsim with one and two workers, in turn (see interleaved)
    os.makedirs(os.path.join(work, "plain"), exist_ok=True)
    t = interleaved({
        "py": lambda: python_rows(2000, 50, os.path.join(work, "py.csv")),
        "pl": lambda: measure([plain, "2000", "50", "8", str(H), str(W), str(PEAK), str(BW), str(LAUNCH_US), s5, os.path.join(work, "plain")], 1),
        "j1": lambda: measure(run(s5, "j1", "--jobs", "1"), 1),
        "j2": lambda: measure(run(s5, "j2", "--jobs", "2"), 1),
    }, R)
    py, pl, j1, j2 = t["py"], t["pl"], t["j1"], t["j2"]
    res.append(("10^5 rows with tables, 1 worker: rows/s per core (CPU)", f"{rows5 / j1[1] / 1e6:.2f} M/s", "≥ 1 M/s", rows5 / j1[1] >= 1e6))
    res.append(("  vs the Python loop (CPU time ratio)", f"{py / j1[1]:.2f}× faster", "≥ 4×", py / j1[1] >= 4))
    res.append(("  vs the plain C++ streaming writer (CPU time ratio)", f"{j1[1] / pl[1]:.2f}× its time", "≤ 1.5×", j1[1] / pl[1] <= 1.5))
    # the yardstick writes the same files: per byte written, for information
    rb, pb = dir_bytes(os.path.join(work, "j1")), dir_bytes(os.path.join(work, "plain"))
    res.append((f"  the same per byte written ({rb / 1e6:.0f} MB vs {pb / 1e6:.0f} MB)", f"{(j1[1] / rb) / (pl[1] / pb):.2f}× its time", "(info)", True))
    # the same work? (after the timed runs: reading 2 × ~180 MB is not timed)
    compare_outputs(os.path.join(work, "j1"), os.path.join(work, "plain"))
    # 2. --jobs 2 vs --jobs 1 (timed above, in turn with the one-worker runs)
    same = files_equal(os.path.join(work, "j1"), os.path.join(work, "j2"))
    res.append(("--jobs 2 vs --jobs 1 (wall time ratio)", f"{j1[0] / j2[0]:.2f}×", "≥ 1.5×", j1[0] / j2[0] >= 1.5))
    res.append(("  identical bytes", "yes" if same else "NO", "yes", same))
    # 3. 10^6 rows: peak RSS and linear time
    big_rows = big * 50
    # best of --repeat: writing 1.8 GB, a run's system time swings from 0.4 to 2.3 s here for the
    # same run, even from the same state (the user time stays within 10 %)
    b1 = measure(run(s6, "big", "--jobs", "1"), R)
    res.append((f"{big_rows:.0e} rows with tables: peak RSS", f"{b1[2]:.0f} MB", "< 200 MB", b1[2] < 200))
    res.append((f"  CPU time per row vs 10^5 rows (linear = 1)", f"{(b1[1] / big_rows) / (j1[1] / rows5):.2f}", "≈ 1", (b1[1] / big_rows) / (j1[1] / rows5) < 1.3))
    res.append((f"  the same in user time (without the kernel's writes)", f"{(b1[3] / big_rows) / (j1[3] / rows5):.2f}", "(info)", True))
    shutil.rmtree(os.path.join(work, "big"), ignore_errors=True)
    # the same run as a user runs it: with its default figures (a roofline and two trends)
    bf = measure([rsim, "run", s6, "--out", os.path.join(work, "bigfig"), "-q", "--jobs", "1"], 1)
    res.append((f"  the same with its figures: peak RSS", f"{bf[2]:.0f} MB ({bf[1]:.1f} s CPU)", "< 200 MB", bf[2] < 200))
    shutil.rmtree(os.path.join(work, "bigfig"), ignore_errors=True)
    # 4. summary-only layer evaluations per core
    # the process's start (loading 30-odd shared libraries, the catalog, Lua) is a constant: a
    # one-point run of the same network measures it, and the rate is of the evaluations beyond it.
    # The sweep, the one-point run and the two Python loops in turn (see interleaved).
    # 10^7 evaluations (10^6 with --quick): the sweep's CPU time (0.5 s) well above the start's and
    # the clock's grain (on the 10^6-row sweep the evaluations beyond the start took 0.05 s)
    s1 = os.path.join(work, "e1.yaml"); scenario(s1, 1, 50)
    sum_points = 10 * big
    ss = os.path.join(work, "es.yaml"); scenario(ss, sum_points, 50)
    sum_rows = sum_points * 50
    t = interleaved({
        "su": lambda: measure(run(ss, "sum", "--jobs", "1", "--tables", "summary"), 1),
        "st": lambda: measure(run(s1, "sum1", "--jobs", "1", "--tables", "summary"), 1),
        "pyt": lambda: python_totals(sum_points, 50),
        "pys": lambda: python_summary(sum_points, 50),
    }, R)
    su, st, pyt, pys = t["su"], t["st"], t["pyt"], t["pys"]
    marginal = max(su[1] - st[1], 1e-9)
    res.append((f"summary only ({sum_rows:.0e} evaluations): layer evaluations/s per core (CPU)", f"{(sum_rows - 50) / marginal / 1e6:.2f} M/s", "≥ 20 M/s", (sum_rows - 50) / marginal >= 20e6))
    res.append((f"  the whole process, with its start ({1000 * st[1]:.1f} ms)", f"{sum_rows / su[1] / 1e6:.2f} M/s", "(info)", True))
    res.append(("  vs a Python loop doing the same arithmetic (every summary number)", f"{pys / marginal:.2f}×", "≥ 10×", pys / marginal >= 10))
    res.append(("  vs a Python loop summing FLOPs, bytes and times only (earlier sessions' reference)", f"{pyt / marginal:.2f}×", "≥ 10×", pyt / marginal >= 10))
    # the same for a zoo transformer (for information): Llama-3-8B decode over 113 context lengths
    # × 8 batch sizes; a point changes two of the model's ~40 parameters
    sl = os.path.join(work, "llm.yaml")
    with open(sl, "w") as f:
        f.write("name: llm\nsweep: {grid: {context: {from: 1024, to: 8192, step: 64}, batch: {values: [1, 2, 4, 8, 16, 32, 64, 128]}}}\n"
                "platforms: [h100_sxm]\nnetworks:\n  - {model: llama3_8b, name: llama3_8b.fp16, "
                "args: {phase: decode, batch: \"${batch}\", context: \"${context}\"}}\n")
    lm = measure(run(sl, "llm", "--jobs", "1", "--tables", "summary"), R)
    llm_evals = 113 * 8 * 419  # points × layers (the model's 419 at decode)
    res.append((f"  a transformer sweep (Llama-3-8B decode, 904 points × 419 layers)", f"{llm_evals / max(lm[1] - st[1], 1e-9) / 1e6:.2f} M/s ({lm[1]:.2f} s)", "(info)", True))
    # 5. 10k vs 100k sequential layers
    k10 = measure(run(c10, "c10", "--jobs", "1"), R)
    k100 = measure(run(c100, "c100", "--jobs", "1"), R)
    res.append(("100k vs 10k sequential layers (CPU time ratio)", f"{k100[1] / k10[1]:.1f}× ({k10[1]:.2f} s, {k100[1]:.2f} s)", "≤ 12×", k100[1] / k10[1] <= 12))
    # 6. validate vs summary-only run of a many-point scenario
    vs = measure(run(sv, "vsum", "--jobs", "1", "--tables", "summary"), 1)
    va = measure([rsim, "validate", sv], R)
    res.append((f"validate of {many:.0e} points vs its summary-only run", f"{100 * va[1] / vs[1]:.2f} % ({va[1]:.3f} s, {vs[1]:.1f} s)", "< 10 %", va[1] / vs[1] < 0.1))

    print(f"\nreferences: Python rows {py:.2f} s CPU; plain C++ writer {pl[1]:.2f} s CPU ({pl[0]:.2f} s wall, {pl[2]:.0f} MB); "
          f"Python summary arithmetic {pys:.2f} s CPU, FLOPs/bytes/times only {pyt:.2f} s CPU")
    print(f"rsim 10^5 rows: --jobs 1 {j1[1]:.2f} s CPU / {j1[0]:.2f} s wall / {j1[2]:.0f} MB; --jobs 2 {j2[1]:.2f} s CPU / {j2[0]:.2f} s wall; "
          f"summary only ({sum_rows:.0e} evaluations) {su[1]:.2f} s CPU\n")
    w = max(len(r[0]) for r in res)
    for what, got, target, ok in res:
        verdict = "" if target == "(info)" else ("ok" if ok else "MISSED")
        print(f"{what:<{w}}  {got:>28}  target {target:<8} {verdict}")
    print(f"\nload average after: {os.getloadavg()}")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
