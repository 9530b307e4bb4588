#!/usr/bin/env python3
"""The Python module: rsim.run() returns the tables as lists of dicts with the CSV's columns,
checked against numbers derived by hand; errors raise rsim.Error with the located message.
Run by ctest with PYTHONPATH=build/python and RSIM_TEST_SOURCE=<source dir>."""
import math
import os
import tempfile
import unittest

import rsim

SRC = os.environ["RSIM_TEST_SOURCE"]

SCENARIO = """\
name: py
settings: {dtype: fp32, memory_model: inputs+weights+outputs}
sweep:
  grid:
    groups: [32, 1]
platforms: [rtx3080]
networks:
  - name: g
    input: [1, 32, 56, 56]
    layers:
      - {name: conv, op: conv2d, out_channels: 32, kernel: 3, padding: same, groups: "${groups}", bias: false}
"""


class RunTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.path = os.path.join(cls.dir.name, "py.yaml")
        with open(cls.path, "w") as f:
            f.write(SCENARIO)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_rows_are_dicts_with_the_csv_columns_and_hand_derived_values(self):
        r = rsim.run(self.path)
        self.assertEqual(len(r.rows), 2)  # 2 points × 1 platform × 1 layer
        depthwise, dense = r.rows
        self.assertEqual(list(depthwise)[:5], ["point", "groups", "platform", "network", "layer"])  # sweep variables after point
        self.assertEqual((depthwise["point"], depthwise["groups"], dense["groups"]), (0, 32, 1))
        self.assertEqual(depthwise["platform"], "rtx3080")
        # 56×56 outputs, 32 channels; depthwise: 9 MACs per output, dense: 9 × 32
        self.assertEqual(depthwise["macs"], 56 * 56 * 32 * 9)
        self.assertEqual(dense["macs"], 56 * 56 * 32 * 9 * 32)
        self.assertEqual(dense["flops"], 2 * 56 * 56 * 32 * 9 * 32)
        self.assertEqual(depthwise["params"], 32 * 9)
        # bytes, fp32, inputs + weights + outputs: 2 × 32×56×56 activations + weights
        self.assertEqual(depthwise["bytes"], 4 * (2 * 32 * 56 * 56 + 32 * 9))
        self.assertTrue(math.isclose(depthwise["intensity"], 2 * 56 * 56 * 32 * 9 / (4 * (2 * 32 * 56 * 56 + 32 * 9))))
        # RTX 3080: 29.8 TFLOP/s, 760.32 GB/s: the depthwise conv is memory bound
        self.assertEqual(depthwise["bound"], "memory")
        self.assertTrue(math.isclose(depthwise["time_s"], depthwise["bytes"] / 760.32e9))
        self.assertEqual(len(r.summary), 2)
        self.assertEqual(r.summary[1]["macs"], 56 * 56 * 32 * 9 * 32)

    def test_text_and_dict_give_the_file_s_rows(self):
        # the same scenario as YAML text and as the dict it loads to: the same hand-derived MACs
        for r in (rsim.run(text=SCENARIO), rsim.run(scenario={
                "name": "py", "settings": {"dtype": "fp32", "memory_model": "inputs+weights+outputs"},
                "sweep": {"grid": {"groups": [32, 1]}}, "platforms": ["rtx3080"],
                "networks": [{"name": "g", "input": [1, 32, 56, 56], "layers": [
                    {"name": "conv", "op": "conv2d", "out_channels": 32, "kernel": 3, "padding": "same", "groups": "${groups}", "bias": False}]}]})):
            self.assertEqual(len(r.rows), 2)
            self.assertEqual(r.rows[0]["macs"], 56 * 56 * 32 * 9)
            self.assertEqual(r.rows[1]["macs"], 56 * 56 * 32 * 9 * 32)
        self.assertEqual(rsim.run(text=SCENARIO).scenario, "<text>")
        # errors point into the text, by its stand-in name
        with self.assertRaises(rsim.Error) as e:
            rsim.run(text="name: bad\nplatforms: [rtx3080]\nnetworks: [{model: resnet18}]\nsetings: {}\n")
        self.assertIn("<text>:4:1: error: unknown key 'setings' in scenario", str(e.exception))
        with self.assertRaises(ValueError):
            rsim.run()  # nothing to run
        with self.assertRaises(ValueError):
            rsim.run(self.path, text=SCENARIO)  # two scenarios
        with self.assertRaises(TypeError):
            rsim.run(scenario="name: x")  # a dict, not text

    def test_plot_writes_the_figures_run_draws(self):
        r = rsim.run(self.path)
        with tempfile.TemporaryDirectory() as d:
            written = rsim.plot(r, d, formats="png,svg")
            # no plots: section: a roofline per platform and a trend (intensity vs the sweep variable), png and svg, plot data, report
            self.assertIn("report.md", written)
            self.assertIn("roofline_rtx3080.png", written)
            self.assertIn("roofline_rtx3080.svg", written)
            self.assertIn("roofline_rtx3080.csv", written)
            for f in written:
                self.assertTrue(os.path.getsize(os.path.join(d, f)) > 0, f)
            with open(os.path.join(d, "roofline_rtx3080.png"), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            paper = rsim.plot(r, os.path.join(d, "paper"), formats=["pdf"], style="paper")
            self.assertIn("roofline_rtx3080.pdf", paper)
            with self.assertRaises(rsim.Error):
                rsim.plot(r, d, formats="gif")

    def test_ctrl_c_interrupts_a_run(self):
        # a sweep of 400,000 points takes seconds; SIGINT 0.3 s in stops it within 100 ms of the
        # next point: KeyboardInterrupt, and Python's own handler is back afterwards
        import signal
        import threading
        import time
        big = "name: long\nplatforms: [rtx3080]\nsweep: {grid: {n: {from: 1, to: 400000, step: 1}}}\n" \
              "networks: [{name: r, input: [1, \"${n}\"], layers: [{op: relu}]}]\n"
        for jobs in (1, 2):
            timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
            t0 = time.monotonic()
            timer.start()
            with self.assertRaises(KeyboardInterrupt):
                rsim.run(text=big, jobs=jobs)
            took = time.monotonic() - t0
            timer.join()
            self.assertLess(took, 0.3 + 0.5, "jobs=%d: stopped %.2f s after the start" % (jobs, took))
            self.assertIs(signal.getsignal(signal.SIGINT), signal.default_int_handler)

    def test_ctrl_c_interrupts_one_long_point(self):
        # one point that is a request of 1,000,000 decode steps (each an evaluation of a 2-layer
        # transformer): the stop is asked between its steps too, so SIGINT 0.3 s in raises
        # KeyboardInterrupt within 2 s, and nothing is left half-done
        import signal
        import threading
        import time
        one = "name: long\nplatforms: [h100_sxm]\nnetworks:\n" \
              "  - {model: transformer, args: {hidden: 64, layers: 2, heads: 4, intermediate: 128, vocab: 100}, request: {prompt: 8, generate: 1000000}}\n"
        timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
        t0 = time.monotonic()
        timer.start()
        with self.assertRaises(KeyboardInterrupt):
            rsim.run(text=one)
        took = time.monotonic() - t0
        timer.join()
        self.assertLess(took, 0.3 + 2, "stopped %.2f s after the start" % took)
        self.assertIs(signal.getsignal(signal.SIGINT), signal.default_int_handler)

    def test_a_config_json_from_text_and_from_a_dict(self):
        # `config: config.json` read from the working directory when the scenario is text or a dict
        # (a file's is read from its folder); the network takes the folder's name
        import shutil
        src = os.path.join(SRC, "tests", "data", "hf", "llama3_8b.json")
        with tempfile.TemporaryDirectory() as d:
            folder = os.path.join(d, "llama3")
            os.mkdir(folder)
            shutil.copy(src, os.path.join(folder, "config.json"))
            cwd = os.getcwd()
            os.chdir(folder)
            try:
                entry = {"model": "hf", "args": {"config": "config.json", "phase": "decode", "batch": 1, "context": 128}}
                by_dict = rsim.run(scenario={"name": "h", "platforms": ["h100_sxm"], "networks": [entry]})
                by_text = rsim.run(text="name: h\nplatforms: [h100_sxm]\nnetworks:\n  - {model: hf, args: {config: config.json, phase: decode, batch: 1, context: 128}}\n")
            finally:
                os.chdir(cwd)
            for r in (by_dict, by_text):
                self.assertEqual(r.summary[0]["network"], "llama3")
                # Llama-3-8B: 8,030,261,248 parameters, bf16 from its torch_dtype
                self.assertEqual(r.summary[0]["params"], 8030261248)
                self.assertEqual(r.summary[0]["dtype"], "bf16")

    def test_set_pins_a_sweep_variable(self):
        r = rsim.run(self.path, set={"groups": 4})
        self.assertEqual([row["groups"] for row in r.rows], [4])
        self.assertEqual(r.rows[0]["macs"], 56 * 56 * 32 * 9 * 32 // 4)

    def test_jobs_give_the_same_rows(self):
        self.assertEqual(rsim.run(self.path, jobs=2).rows, rsim.run(self.path).rows)

    def test_the_zoo_and_the_catalog_are_found(self):
        r = rsim.run(os.path.join(SRC, "scenarios", "resnet50.yaml"))
        self.assertTrue(any(s["params"] == 25557032 for s in r.summary))  # torchvision's ResNet-50

    def test_errors_raise_rsim_error_with_the_located_message(self):
        bad = os.path.join(self.dir.name, "bad.yaml")
        with open(bad, "w") as f:
            f.write("name: bad\nplatforms: [rtx3080]\nnetworks: [{model: resnet18}]\nsetings: {}\n")
        with self.assertRaises(rsim.Error) as cm:
            rsim.run(bad)
        self.assertEqual(str(cm.exception),
                         bad + ":4:1: error: unknown key 'setings' in scenario\n"
                         "setings: {}\n"
                         "^\n"
                         "note: did you mean 'settings'?")
        with self.assertRaises(rsim.Error) as cm:
            rsim.run(self.path, set={"grups": 2})
        self.assertIn("the scenario has no variable 'grups'", str(cm.exception))

    def test_to_pandas(self):
        r = rsim.run(self.path)
        try:
            import pandas  # noqa: F401
        except ImportError:
            with self.assertRaises(ImportError) as cm:
                r.to_pandas()
            self.assertIn("needs pandas", str(cm.exception))
            return
        df = r.to_pandas()
        self.assertEqual(list(df["macs"]), [56 * 56 * 32 * 9, 56 * 56 * 32 * 9 * 32])
        self.assertEqual(len(r.to_pandas("summary")), 2)

    def test_an_onnx_entry_reads_as_in_the_cli(self):
        # ONNX's own test model: one Relu on x [3, 4, 5] (libonnx-testdata); it said "this build
        # has no importer" through the module while the CLI read it
        model = "/usr/share/libonnx-testdata/data/node/test_relu/model.onnx"
        if not os.path.exists(model):
            self.skipTest("libonnx-testdata is not installed")
        path = os.path.join(self.dir.name, "onnx.yaml")
        with open(path, "w") as f:
            f.write("name: o\nplatforms: [rtx3080]\nnetworks:\n  - {name: relu, onnx: " + model + "}\n")
        rows = rsim.run(path).rows
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["op"], "relu")
        self.assertEqual(float(rows[0]["flops"]), 3 * 4 * 5)  # one compare per element
        self.assertEqual(float(rows[0]["bytes"]), 2 * 3 * 4 * 5 * 4)  # read and written, fp32

    def test_schema(self):
        self.assertIn('"$schema": "https://json-schema.org/draft/2020-12/schema"', rsim.schema())
        self.assertIn('"title": "rsim platform"', rsim.schema("platform"))


class ServingTablesTest(unittest.TestCase):
    def test_a_serving_scenario_gives_its_request_serving_and_timeline_tables(self):
        # 4 requests at a constant 2 per second: arrivals 0, 0.5, 1.0 and 1.5 s; prompts of 128 and
        # outputs of 16 tokens, as fixed; one serving.csv row (one point, platform and network)
        r = rsim.run(text="""
name: served
platforms: [h100_sxm]
networks: [{model: llama3_8b}]
serving:
  workload:
    requests: 4
    arrivals: {process: constant, rate: 2/s}
    prompt: {dist: fixed, mean: 128}
    output: {dist: fixed, mean: 16}
""")
        self.assertEqual([q["arrival_s"] for q in r.requests], [0, 0.5, 1.0, 1.5])
        self.assertEqual({(q["prompt_tokens"], q["output_tokens"]) for q in r.requests}, {(128, 16)})
        self.assertEqual(len(r.serving), 1)
        self.assertEqual(r.serving[0]["requests"], 4)
        self.assertTrue(len(r.timeline) >= 2)  # 1.5 s of arrivals and the drain: at least two seconds
        page = r._repr_html_()
        self.assertLess(page.index("<b>summary</b>"), page.index("<b>serving</b>"))
        self.assertLess(page.index("<b>serving</b>"), page.index("<b>layers</b>"))
        self.assertEqual(rsim.run(text=SCENARIO).requests, [])  # no serving: section, no requests


class NotebookTest(unittest.TestCase):
    """In Jupyter a Result shows as HTML tables, the summary first; rsim.plot's list shows its figures inline."""

    def test_result_html_has_the_summary_first_with_hand_derived_values(self):
        r = rsim.run(text=SCENARIO)
        page = r._repr_html_()
        self.assertLess(page.index("<b>summary</b>"), page.index("<b>layers</b>"))
        self.assertIn("(2 rows)", page)  # 2 points x 1 platform in the summary, 2 layer rows
        # the dense point's MACs, 56 x 56 outputs x 32 channels x 9 taps x 32 inputs = 28,901,376, in a cell
        self.assertIn("<td>28901376</td>", page)
        self.assertLess(page.index("<th>point</th>"), page.index("<th>platform</th>"))

    def test_plot_list_shows_each_figure_once_inline(self):
        r = rsim.run(text=SCENARIO)
        with tempfile.TemporaryDirectory() as d:
            written = rsim.plot(r, d, formats="png,svg")
            self.assertIn("roofline_rtx3080.png", written)  # still the names, as before
            figs = written.figures()
            stems = [os.path.basename(f) for f in figs]
            self.assertEqual(len(stems), len(set(stems)))  # the PNG and SVG of a figure are one figure
            self.assertIn("roofline_rtx3080.png", stems)
            roof = figs[stems.index("roofline_rtx3080.png")]
            self.assertEqual(roof._repr_png_()[:8], b"\x89PNG\r\n\x1a\n")
            self.assertIn("<svg", roof._repr_svg_())
            self.assertIn("data:image/png;base64,", written._repr_html_())


if __name__ == "__main__":
    unittest.main(verbosity=2)
