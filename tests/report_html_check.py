#!/usr/bin/env python3
"""report.html in a real browser (issue 44 item 4): rsim run writes it for a three-layer network whose
numbers are derived here by hand; Debian's chromium, headless, loads it with no console error, points at
every marker and bar (the page's #selftest) and sorts every column, and takes a screenshot.

usage: report_html_check.py RSIM_BINARY [SCREENSHOT.png]
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SCENARIO = """name: report_html_check
description: three layers on a platform of round figures, for report.html's tooltips
settings: {execution: ideal, dtype: fp32, memory_model: inputs+weights+outputs}
platforms:
  - {name: p, compute: [{name: c, dtypes: [fp32], peak: 1 TFLOP/s}], memory: [{name: m, bandwidth: 100 GB/s}]}
networks:
  - name: n
    input: [1, 1024]
    layers:
      - {name: fc1, op: linear, out_features: 1000, bias: false}
      - {name: fc2, op: linear, out_features: 10, bias: false}
      - {name: act, op: relu}
plots:
  - {kind: roofline, name: roofline}
  - {kind: layers, name: layers}
"""

# By hand (fp32: 4 bytes an element; bytes = inputs + weights + outputs; no bias):
#   fc1: MACs = 1024 · 1000 = 1,024,000, FLOPs = 2 · MACs = 2,048,000;
#        bytes = (1024 + 1024·1000 + 1000) · 4 = 1,026,024 · 4 = 4,104,096;
#        time = max(2,048,000 / 1e12, 4,104,096 / 100e9) = max(2.048 µs, 41.04096 µs) = 41.04 µs: memory bound
#   fc2: MACs = 1000 · 10 = 10,000, FLOPs = 20,000; bytes = (1000 + 10,000 + 10) · 4 = 44,040;
#        time = 44,040 / 100e9 = 0.4404 µs: memory bound
#   act: FLOPs = 10 (1 a element); bytes = (10 + 10) · 4 = 80; time = 80 / 100e9 = 0.8 ns: memory bound
LAYERS = {
    "fc1": dict(flops=2_048_000, bytes=4_104_096, time=4_104_096 / 100e9),
    "fc2": dict(flops=20_000, bytes=44_040, time=44_040 / 100e9),
    "act": dict(flops=10, bytes=80, time=80 / 100e9),
}
PREFIX = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "m": 1e-3, "µ": 1e-6, "u": 1e-6, "n": 1e-9, "p": 1e-12}


def value(text, what, unit=""):
    m = re.search(what + r" ([-0-9.e+]+) ?([kMGmµunp]?)" + unit, text)
    if not m:
        raise AssertionError(f"no '{what}' in the tooltip {text!r}")
    return float(m.group(1)) * PREFIX[m.group(2)]


def close(a, b, rel=2e-3):
    return abs(a - b) <= rel * abs(b)


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    sys.exit("report_html_check: chromium is not installed (scripts/install-deps.sh installs Debian's chromium)")


def browse(browser, profile, *args):
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=" + profile,
           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=4000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def main():
    rsim = sys.argv[1]
    shot = sys.argv[2] if len(sys.argv) > 2 else None
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        scen = os.path.join(tmp, "s.yaml")
        with open(scen, "w") as f:
            f.write(SCENARIO)
        out = os.path.join(tmp, "out")
        subprocess.run([rsim, "run", scen, "-o", out, "-q", "--format", "png"], check=True)
        page = os.path.join(out, "report.html")
        text = open(page, encoding="utf-8").read()
        # self-contained: nothing fetched (the only URL is the SVG namespace)
        urls = set(re.findall(r"(?:src|href)=\"([^\"]*)\"", text))
        check(all(not u.startswith(("http:", "https:", "//")) for u in urls), f"report.html fetches {urls}")
        check("<script src" not in text and "<link" not in text, "report.html loads a script or a stylesheet")

        # the roofline's tooltips, read from the page: one per layer, each with its numbers
        fig = re.search(r'<figure data-name="roofline">(.*?)</figure>', text, re.S)
        check(fig is not None, "no roofline figure in report.html")
        every = [html.unescape(t) for t in re.findall(r'data-tip="([^"]*)"', fig.group(1) if fig else "")]
        # one platform with one compute roof: one ridge point (10 FLOP/B = 1 TFLOP/s / 100 GB/s) beside the layers
        ridges = [t for t in every if t.startswith("ridge")]
        check(len(ridges) == 1 and "10" in ridges[0], f"the ridge point's tooltip: {ridges}")
        tips = [t for t in every if not t.startswith("ridge")]
        check(len(tips) == 3, f"the roofline has {len(tips)} layer tooltips, not one per layer (3): {tips}")
        for name, want in LAYERS.items():
            mine = [t for t in tips if t.startswith(name + " (")]
            check(len(mine) == 1, f"{name}: {len(mine)} tooltips")
            if not mine:
                continue
            t = mine[0]
            check(close(value(t, "FLOPs"), want["flops"]), f"{name}: FLOPs in {t!r}, by hand {want['flops']}")
            check(close(value(t, "bytes", "B"), want["bytes"]), f"{name}: bytes in {t!r}, by hand {want['bytes']}")
            check(close(value(t, "time", "s"), want["time"]), f"{name}: time in {t!r}, by hand {want['time']}")
            check("memory bound; limit: m 100 GB/s" in t, f"{name}: not memory bound on m in {t!r}")
        bars = re.search(r'<figure data-name="layers">(.*?)</figure>', text, re.S)
        check(bars is not None and bars.group(1).count("data-tip=") >= 3, "the layers chart's bars have no tooltips")

        browser = chromium()
        profile = os.path.join(tmp, "profile")
        r = browse(browser, profile, "--dump-dom", "file://" + page + "#selftest")
        check(r.returncode == 0, f"chromium --dump-dom exited {r.returncode}: {r.stderr[-2000:]}")
        console = [l for l in r.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]
        check(not console, f"console messages: {console}")
        m = re.search(r'data-selftest="([^"]*)"', r.stdout)
        check(m is not None, "the page's self-test did not run (no data-selftest on <body>)")
        check('data-errors="' not in r.stdout, "the page recorded a script error: " + str(re.findall(r'data-errors="([^"]*)"', r.stdout)))
        if m:
            st = json.loads(html.unescape(m.group(1)))
            check(st["tips"] == st["shown"] and st["tips"] > 0, f"tooltips shown on pointing: {st['shown']} of {st['tips']} ({st['bad']})")
            check(st["figures"].get("roofline") == 3 + 1, f"roofline (3 layers and the ridge) markers with a tooltip in the browser: {st['figures']}")
            # every column of both tables sorts: the network totals have 13 columns, the op types 10
            check(st["sorted"] == 13 + 10 and not st["unsorted"], f"sorted columns: {st['sorted']} of 23, unsorted {st['unsorted']}")
        if shot:
            r = browse(browser, profile, "--screenshot=" + os.path.abspath(shot), "--window-size=1280,1800", "file://" + page)
            check(r.returncode == 0 and os.path.getsize(shot) > 10000, f"no screenshot ({r.returncode})")

    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print("report.html: 3 layer tooltips and the ridge's by hand, every tooltip shown, 23 columns sorted, no console error")


if __name__ == "__main__":
    main()
