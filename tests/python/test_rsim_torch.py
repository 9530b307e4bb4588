#!/usr/bin/env python3
"""rsim_torch on the CPU (Debian's python3-torch 1.13): a plan of every supported operator built
and run in fp32 and bf16; ResNet-18 measured through `rsim measure --backend torch` against a
plain torchvision forward timed in the same run; measure → calibrate; probe; refusals.
Run by ctest with RSIM_BINARY, RSIM_TEST_SOURCE and RSIM_PYTHON (an interpreter with torch)."""
import csv
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch  # noqa: F401  (fail early where the interpreter has no torch)

RSIM = os.environ["RSIM_BINARY"]
SRC = os.environ["RSIM_TEST_SOURCE"]
PY = os.environ.get("RSIM_PYTHON", sys.executable)
ENV = dict(os.environ, RSIM_PYTHON=PY, PYTHONPATH=os.path.join(SRC, "python"))

EVERY_OP = """\
name: every_op
settings: {dtype: "${dt}"}
sweep: {grid: {dt: [fp32, bf16]}}
platforms: [h200]
networks:
  - name: cnn
    input: [2, 8, 16, 16]
    layers:
      - {name: conv, op: conv2d, out_channels: 16, kernel: 3, padding: 1}
      - {name: grouped, op: conv2d, out_channels: 16, kernel: 3, padding: 1, groups: 4, bias: false}
      - {name: dilated, op: conv2d, out_channels: 16, kernel: 3, padding: 2, dilation: 2}
      - {name: dw, op: depthwise_conv2d, kernel: 3, padding: 1, stride: 2}
      - {name: up, op: conv_transpose2d, out_channels: 16, kernel: 2, stride: 2}
      - {name: bn, op: batchnorm}
      - {name: relu, op: relu}
      - {name: relu6, op: relu6}
      - {name: gelu, op: gelu}
      - {name: silu, op: silu}
      - {name: sigmoid, op: sigmoid}
      - {name: tanh, op: tanh}
      - {name: hardswish, op: hardswish}
      - {name: hardsigmoid, op: hardsigmoid}
      - {name: leaky, op: leaky_relu, negative_slope: 0.1}
      - {name: add, op: add, inputs: [leaky, bn]}
      - {name: mul, op: mul, inputs: [add, relu]}
      - {name: sub, op: sub, inputs: [mul, relu]}
      - {name: div, op: div, inputs: [sub, sigmoid]}
      - {name: cat, op: concat, inputs: [div, relu], axis: 1}
      - {name: split, op: split, sections: 2, axis: 1}
      - {name: slice, op: slice, inputs: ["split:1"], axis: 1, start: 0, end: 8}
      - {name: maxpool, op: max_pool2d, kernel: 3, stride: 2, padding: 1}
      - {name: avgpool, op: avg_pool2d, kernel: 2}
      - {name: upsample, op: upsample, scale: 2}
      - {name: adaptive, op: adaptive_avg_pool2d, output_size: 2}
      - {name: permute, op: permute, dims: [0, 2, 3, 1]}
      - {name: transpose, op: transpose, dims: [1, 2]}
      - {name: gap, op: global_avg_pool, inputs: [upsample]}
      - {name: flatten, op: flatten}
      - {name: fc, op: linear, out_features: 10}
      - {name: softmax, op: softmax}
  - name: decoder
    phase: prefill
    input: [2, 16]
    layers:
      - {name: embed, op: embedding, vocab: 100, dim: 64}
      - {name: norm, op: rmsnorm}
      - {name: ln, op: layernorm}
      - {name: q, op: linear, out_features: 64, bias: false, inputs: [norm]}
      - {name: k, op: linear, out_features: 32, bias: false, inputs: [norm]}
      - {name: v, op: linear, out_features: 32, bias: false, inputs: [norm]}
      - {name: q_rope, op: rope, head_dim: 16, inputs: [q]}
      - {name: k_rope, op: rope, head_dim: 16, inputs: [k]}
      - {name: kv, op: kv_cache, context: 8, inputs: [k_rope, v]}
      - {name: attn, op: attention, heads: 4, kv_heads: 2, causal: true, inputs: [q_rope, "kv:0", "kv:1"]}
      - {name: mlp, op: swiglu, intermediate: 128}
      - {name: ln_t, op: transpose, inputs: [ln]}
      - {name: scores, op: matmul, inputs: [mlp, ln_t]}
      - {name: masked, op: softmax, inputs: [scores, scores]}
"""


def run(args, **kw):
    return subprocess.run(args, env=ENV, capture_output=True, text=True, timeout=900, **kw)


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


class EveryOp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        with open(os.path.join(d, "every_op.yaml"), "w") as f:
            f.write(EVERY_OP)
        r = run([RSIM, "plan", os.path.join(d, "every_op.yaml"), "-o", os.path.join(d, "plan.json")])
        assert r.returncode == 0, r.stderr
        with open(os.path.join(d, "plan.json")) as f:
            cls.plan = json.load(f)
        r = run([PY, "-m", "rsim_torch", "measure", os.path.join(d, "plan.json"), "--device", "cpu", "--reps", "2", "-o", os.path.join(d, "m")])
        assert r.returncode == 0, r.stderr
        cls.measured = rows(os.path.join(d, "m", "measured.csv"))
        cls.networks = rows(os.path.join(d, "m", "measured_networks.csv"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_plan_layers_and_inputs(self):
        cnn = self.plan["points"][0]["networks"][0]
        self.assertEqual(cnn["name"], "cnn")
        names = [L["name"] for L in cnn["layers"]]
        self.assertEqual(len(names), 32)
        by = {L["name"]: L for L in cnn["layers"]}
        # the tensors each layer reads: the network input, earlier layers, a split's second output
        self.assertEqual(by["conv"]["inputs"], ["input"])
        self.assertEqual(by["add"]["inputs"], ["leaky", "bn"])
        self.assertEqual(by["slice"]["inputs"], ["split:1"])
        # conv 8 → 16, 3×3, pad 1 on 2×8×16×16: output 2×16×16×16; MACs = 2·16·16·16 · 8·9 = 589,824
        self.assertEqual(by["conv"]["attrs"]["kernel"], [3, 3])
        self.assertEqual(by["conv"]["output_shapes"], [[2, 16, 16, 16]])
        self.assertEqual(by["conv"]["predicted"][0]["macs"], 2 * 16 * 16 * 16 * 8 * 9)
        # a softmax with an additive mask reads both (the scores twice here: any tensor that broadcasts)
        dec = {L["name"]: L for L in self.plan["points"][0]["networks"][1]["layers"]}
        self.assertEqual(dec["masked"]["inputs"], ["scores", "scores"])
        self.assertEqual(dec["masked"]["predicted"][0]["flops"], 6 * 2 * 16 * 16)  # 6 per element with a mask
        # flatten is a view: no kernel
        self.assertTrue(by["flatten"]["view"])
        self.assertEqual(by["flatten"]["kernel"], "")

    def test_every_layer_ran_in_fp32_and_bf16(self):
        # one row per layer, point and platform (h200), in eager mode on the CPU
        self.assertEqual(len(self.measured), 2 * (32 + 14))
        for r in self.measured:
            with self.subTest(dt=r["dt"], layer=r["layer"]):
                self.assertEqual(r["measured_execution"], "eager")
                if r["op"] == "flatten":
                    self.assertEqual(r["measured_time_s"], "")
                    self.assertIn("a view", r["measured_note"])
                    continue
                self.assertGreater(float(r["measured_time_s"]), 0, r["measured_note"])
                self.assertIn(r["beats_bound"], ("true", "false"))
                self.assertLessEqual(float(r["measured_min_s"]), float(r["measured_time_s"]))

    def test_networks_ran_as_forward_passes(self):
        self.assertEqual([(r["dt"], r["network"], r["execution"]) for r in self.networks],
                         [("fp32", "cnn", "eager"), ("fp32", "decoder", "eager"), ("bf16", "cnn", "eager"), ("bf16", "decoder", "eager")])
        for r in self.networks:
            self.assertGreater(float(r["measured_time_s"]), 0, r["measured_note"])
            self.assertEqual(r["batch"], "2")

    def test_calibrate_reads_both_files(self):
        d = self.tmp.name
        out = os.path.join(d, "cal.yaml")
        r = run([RSIM, "calibrate", os.path.join(d, "m", "measured_networks.csv"), os.path.join(d, "m", "measured.csv"), "--platform", "h200",
                 "-o", out])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("4 measured networks", r.stdout)
        with open(out) as f:
            text = f.read()
        self.assertIn("runtime:", text)
        self.assertIn("host_overhead:", text)


class ResNet18(unittest.TestCase):
    def test_measure_backend_torch_runs_the_plan(self):
        """rsim measure --backend torch --device cpu of ResNet-18 at batch 1: every layer and the
        network timed. Its speed against torchvision (issue 25: within 1.5x) is a benchmark, not a
        test: `make bench-torch` (bench/torch_cpu.py) prints the ratio beside its target."""
        with tempfile.TemporaryDirectory() as d:
            s = os.path.join(d, "r18.yaml")
            with open(s, "w") as f:
                f.write("name: r18\nsettings: {dtype: fp32}\nplatforms: [h200]\nnetworks: [{model: resnet18, args: {batch: 1}}]\n")
            r = run([RSIM, "measure", s, "--backend", "torch", "--device", "cpu", "--reps", "3", "--out", os.path.join(d, "m")])
            self.assertEqual(r.returncode, 0, r.stderr)
            net = rows(os.path.join(d, "m", "measured_networks.csv"))
            self.assertEqual(len(net), 1)
            self.assertGreater(float(net[0]["measured_time_s"]), 0)
            self.assertEqual(net[0]["execution"], "eager")
            # the plan's 68 kernels (every layer but flatten), each timed alone
            layers = rows(os.path.join(d, "m", "measured.csv"))
            self.assertEqual(len(layers), 69)
            self.assertEqual(sum(1 for L in layers if L["measured_time_s"]), 68)


class ScalarInputs(unittest.TestCase):
    def test_an_exported_attention_s_scalar_div_is_built_and_timed(self):
        """torchvision's ViT-B/16 exported to ONNX scales its attention scores by a 0-d tensor (a Div
        by a scalar): rsim_torch builds it with torch.randn(()) and times the layer (a 0-d input
        used to end the run); a layer it cannot build or run is a row with a measured_note."""
        with tempfile.TemporaryDirectory() as d:
            s = os.path.join(d, "vit.yaml")
            with open(s, "w") as f:
                f.write("name: vit\nsettings: {dtype: fp32}\nplatforms: [h200]\nnetworks:\n  - {onnx: %s}\n" % os.path.join(SRC, "tests", "data", "onnx", "vit_b_16_op17.onnx"))
            r = run([RSIM, "plan", s, "-o", os.path.join(d, "plan.json")])
            self.assertEqual(r.returncode, 0, r.stderr)
            r = run([PY, "-m", "rsim_torch", "measure", os.path.join(d, "plan.json"), "--device", "cpu", "--reps", "2", "--what", "layers",
                     "-o", os.path.join(d, "m")])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("Traceback", r.stderr)
            layers = {L["layer"]: L for L in rows(os.path.join(d, "m", "measured.csv"))}
            div = layers["/encoder/layers/encoder_layer_0/self_attention/Div_1"]
            self.assertEqual(div["input_shape"], "12x197x64;scalar")
            self.assertGreater(float(div["measured_time_s"]), 0, div["measured_note"])
            # every layer has a row: a time, or a note saying why not
            for L in layers.values():
                self.assertTrue(L["measured_time_s"] or L["measured_note"], L["layer"])


class Probe(unittest.TestCase):
    def test_probe_cpu_writes_a_platform_rsim_reads(self):
        with tempfile.TemporaryDirectory() as d:
            out, js = os.path.join(d, "this_cpu.yaml"), os.path.join(d, "p.json")
            r = run([RSIM, "probe", "--backend", "torch", "--device", "cpu", "--quick", "-o", out, "--json", js])
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(js) as f:
                p = json.load(f)
            self.assertGreater(p["matmul"]["fp32"]["flops_per_s"], 0)
            self.assertGreater(p["runtime"]["host_overhead_s"], 0)
            kernels = {b["kernel"] for b in p["bandwidth"]}
            self.assertEqual(kernels, {"read", "write", "copy"})
            r = run([RSIM, "hw", "show", "this_cpu", "--hw-dir", d])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("host overhead", r.stdout)
            self.assertIn("no graph gap", r.stdout)  # a CPU has no CUDA graph


class ShapeText(unittest.TestCase):
    def test_shapes_are_written_as_rsim_writes_them(self):
        # rsim's results.csv: dims joined by x, tensors by ;, a 0-d tensor as "scalar" (engine/model/tensor.cpp
        # append_shape); rsim calibrate keys measured_layers by this text, so both writers must agree
        sys.path.insert(0, os.path.join(SRC, "python"))
        from rsim_torch.measure import _shape_text
        self.assertEqual(_shape_text([[32, 64, 56, 56]]), "32x64x56x56")
        self.assertEqual(_shape_text([[1, 8], []]), "1x8;scalar")


class Refusals(unittest.TestCase):
    def test_graph_on_a_cpu(self):
        with tempfile.TemporaryDirectory() as d:
            s = os.path.join(d, "s.yaml")
            with open(s, "w") as f:
                f.write("name: s\nplatforms: [h200]\nnetworks: [{name: n, input: [4, 8], layers: [{op: relu}]}]\n")
            r = run([RSIM, "measure", s, "--backend", "torch", "--device", "cpu", "--execution", "graph", "--out", os.path.join(d, "m")])
            self.assertEqual(r.returncode, 2)
            self.assertIn("--execution graph needs a CUDA device", r.stderr)

    def test_a_plan_past_the_memory_is_refused_before_allocating(self):
        with tempfile.TemporaryDirectory() as d:
            s = os.path.join(d, "s.yaml")
            # 10^6 × 10^5 fp32 activations: 400 GB
            with open(s, "w") as f:
                f.write("name: s\nplatforms: [h200]\nnetworks: [{name: huge, input: [1000000, 100000], layers: [{op: relu}]}]\n")
            r = run([RSIM, "measure", s, "--backend", "torch", "--device", "cpu", "--out", os.path.join(d, "m")])
            self.assertEqual(r.returncode, 1)
            self.assertIn("network 'huge' (point 0) needs about", r.stderr)
            self.assertIn("nothing was allocated", r.stderr)

    def test_torch_missing_says_how_to_install(self):
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "python-without-torch")
            with open(fake, "w") as f:  # the same interpreter, without its site packages
                f.write("#!/bin/sh\nexec %s -S \"$@\"\n" % PY)
            os.chmod(fake, 0o755)
            r = subprocess.run([RSIM, "probe", "--backend", "torch", "--device", "cpu"], env=dict(ENV, RSIM_PYTHON=fake), capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(r.returncode, 1)
            self.assertIn("PyTorch is not installed", r.stdout + r.stderr)
            self.assertIn("apt install python3-torch", r.stdout + r.stderr)

    def test_python3_without_torch_falls_back_to_the_system_interpreter(self):
        # RSIM_PYTHON unset and the python3 on the PATH lacks torch: rsim tries /usr/bin/python3
        # (Debian's python3-torch) and says so
        if not os.path.exists("/usr/bin/python3") or subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode:
            self.skipTest("/usr/bin/python3 has no torch here")
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "python3")
            with open(fake, "w") as f:  # an interpreter without its site packages, first on the PATH
                f.write("#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n")
            os.chmod(fake, 0o755)
            env = {k: v for k, v in ENV.items() if k != "RSIM_PYTHON"}
            env["PATH"] = d + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin")
            r = subprocess.run([RSIM, "probe", "--backend", "torch", "--device", "cpu", "--quick", "-o", os.path.join(d, "p.yaml")], env=env,
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("python3 on the PATH has no torch; trying /usr/bin/python3", r.stderr)
            self.assertIn("rsim: rsim_torch ran with /usr/bin/python3", r.stderr)
            with open(os.path.join(d, "p.yaml")) as f:
                self.assertIn("basis: measured", f.read())


if __name__ == "__main__":
    unittest.main(verbosity=2)
