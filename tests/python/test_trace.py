#!/usr/bin/env python3
"""rsim_torch.trace(): torchvision's ResNet-18 and MobileNetV2 and a small transformer encoder traced with
torch.fx into rsim networks, counted by rsim and checked against counts derived by hand below (from the
layer shapes and the cost rules of docs/operators.md) and against the ONNX path (torch.onnx.export, then
`onnx:` in a scenario), which folds BatchNorm into the convolutions: params differ by exactly the folded
BatchNorms' channels, FLOPs by their 2 per element. Unsupported operators are listed and warned about;
data-dependent control flow is an error naming the module and the ONNX path.
Run by ctest with RSIM_BINARY, RSIM_TEST_SOURCE and PYTHONPATH=<source>/python (an interpreter with torch)."""
import csv
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest
import warnings

import torch
import torch.nn as nn
import torchvision

import rsim_torch

RSIM = os.environ["RSIM_BINARY"]
SRC = os.environ["RSIM_TEST_SOURCE"]
PLATFORM = "rtx3080"


def conv_macs(cout, hout, wout, cin, k, groups=1):
    """MACs of a convolution: Cout · Hout · Wout · Cin/groups · k · k."""
    return cout * hout * wout * (cin // groups) * k * k


def run_rsim(networks, folder):
    """Run networks (dicts) on PLATFORM with the rsim executable; {network: summary row}, [result rows]."""
    path = os.path.join(folder, "scenario.yaml")
    with open(path, "w") as f:  # JSON is YAML
        json.dump({"name": "trace", "platforms": [PLATFORM], "networks": networks}, f, indent=1)
    out = os.path.join(folder, "out")
    r = subprocess.run([RSIM, "run", path, "--out", out, "--no-plots", "--quiet"], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("rsim run failed:\n" + r.stdout + r.stderr)
    with open(os.path.join(out, "summary.csv")) as f:
        summary = {row["network"]: row for row in csv.DictReader(f)}
    with open(os.path.join(out, "results.csv")) as f:
        rows = list(csv.DictReader(f))
    return summary, rows


def quiet_onnx_export(module, inputs, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, inputs, path, opset_version=17)


def encoder():
    """2 layers of d_model 64, 4 heads, feed-forward 128, batch first; every weight drawn anew, so that the ONNX
    exporter's merging of equal initializers (the layers are deep copies) does not apply."""
    torch.manual_seed(0)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1, batch_first=True), 2)
    with torch.no_grad():
        for p in enc.parameters():
            p.normal_(0, 0.05)
    return enc.eval()


def bn_output_elements(module, x):
    """Elements every BatchNorm writes in one forward pass (torch's own shapes, through hooks)."""
    total = [0]
    hooks = [m.register_forward_hook(lambda m, i, o: total.__setitem__(0, total[0] + o.numel()))
             for m in module.modules() if isinstance(m, nn.BatchNorm2d)]
    with torch.no_grad():
        module(x)
    for h in hooks:
        h.remove()
    return total[0]


def mobilenet_v2_macs():
    """MobileNetV2 (1.0, 224) by hand: the stem, the inverted residual blocks of the paper's table, the 1×1 to
    1280 and the classifier."""
    macs, h, cin = conv_macs(32, 112, 112, 3, 3), 112, 32
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden, hout = cin * t, h // stride
            if t != 1:
                macs += conv_macs(hidden, h, h, cin, 1)                   # expand 1×1
            macs += conv_macs(hidden, hout, hout, hidden, 3, groups=hidden)  # depthwise 3×3
            macs += conv_macs(c, hout, hout, hidden, 1)                   # project 1×1
            cin, h = c, hout
    return macs + conv_macs(1280, 7, 7, 320, 1) + 1280 * 1000


class Models(unittest.TestCase):
    """The three models traced and exported once, every network run in one rsim scenario."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        x224 = torch.randn(1, 3, 224, 224)
        cls.models = {"resnet18": (torchvision.models.resnet18().eval(), x224),
                      "mobilenet_v2": (torchvision.models.mobilenet_v2().eval(), x224),
                      "encoder": (encoder(), torch.randn(2, 10, 64))}
        cls.nets, networks = {}, []
        for name, (m, x) in cls.models.items():
            cls.nets[name] = rsim_torch.trace(m, x, name=name)
            onnx = os.path.join(cls.dir.name, name + ".onnx")
            quiet_onnx_export(m, (x,), onnx)
            networks += [dict(cls.nets[name]), {"name": name + "_onnx", "onnx": onnx}]
        cls.summary, cls.rows = run_rsim(networks, cls.dir.name)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def total(self, network, column):
        return int(self.summary[network][column])

    def layer(self, network, name):
        return next(r for r in self.rows if r["network"] == network and r["layer"] == name)

    def test_resnet18_parameters_are_torchvisions_count(self):
        m = self.models["resnet18"][0]
        self.assertEqual(sum(p.numel() for p in m.parameters()), 11689512)
        self.assertEqual(self.total("resnet18", "params"), 11689512)
        self.assertEqual(self.nets["resnet18"].unsupported, [])

    def test_resnet18_macs_and_flops_by_hand(self):
        # conv1: 64 · 112 · 112 · 3 · 7 · 7; layer1.0.conv1: 64 · 56 · 56 · 64 · 3 · 3
        self.assertEqual(int(self.layer("resnet18", "conv1")["macs"]), 64 * 112 * 112 * 3 * 7 * 7)
        self.assertEqual(int(self.layer("resnet18", "conv1")["macs"]), 118013952)
        self.assertEqual(int(self.layer("resnet18", "layer1.0.conv1")["macs"]), 115605504)
        fc = self.layer("resnet18", "fc")  # Linear 512 → 1000: 512 · 1000 MACs, 2 FLOPs each, 512 · 1000 + 1000 params
        self.assertEqual((int(fc["macs"]), int(fc["flops"]), int(fc["params"])), (512000, 1024000, 513000))
        stages = 4 * conv_macs(64, 56, 56, 64, 3)  # layer1: 4 3×3 convs at 56 × 56
        for c, hw in ((128, 28), (256, 14), (512, 7)):  # layer2-4: the first 3×3 halves the size; a 1×1 shortcut
            stages += conv_macs(c, hw, hw, c // 2, 3) + 3 * conv_macs(c, hw, hw, c, 3) + conv_macs(c, hw, hw, c // 2, 1)
        macs = conv_macs(64, 112, 112, 3, 7) + stages + 512 * 1000
        self.assertEqual(macs, 1814073344)  # the zoo's resnet18.yaml and fvcore: 1.81 G
        self.assertEqual(self.total("resnet18", "macs"), macs)
        # FLOPs: 2 per MAC; BatchNorm 2 per element, ReLU and add 1, the 3×3 max pool 9 per output, the
        # global average 1 per input element (docs/operators.md)
        elems = {0: 64 * 112 * 112, 1: 64 * 56 * 56, 2: 128 * 28 * 28, 3: 256 * 14 * 14, 4: 512 * 7 * 7}
        bn = elems[0] + 4 * elems[1] + 5 * (elems[2] + elems[3] + elems[4])  # 2 a block, and each shortcut's
        relu = elems[0] + 4 * (elems[1] + elems[2] + elems[3] + elems[4])    # 2 a block
        add = 2 * (elems[1] + elems[2] + elems[3] + elems[4])                # 1 a block
        self.assertEqual(bn, 802816 + 802816 + 501760 + 250880 + 125440)
        flops = 2 * macs + 2 * bn + relu + add + 64 * 56 * 56 * 9 + 512 * 7 * 7
        self.assertEqual(self.total("resnet18", "flops"), flops)

    def test_resnet18_against_onnx_which_folds_batchnorm(self):
        m, x = self.models["resnet18"]
        self.assertEqual(self.total("resnet18_onnx", "macs"), self.total("resnet18", "macs"))
        # BatchNorm's γ and β (2 · C) fold into a bias of C on the convolution before it
        channels = sum(b.num_features for b in m.modules() if isinstance(b, nn.BatchNorm2d))
        bn_params = sum(p.numel() for b in m.modules() if isinstance(b, nn.BatchNorm2d) for p in b.parameters())
        self.assertEqual((channels, bn_params), (4800, 9600))
        self.assertEqual(self.total("resnet18", "params") - self.total("resnet18_onnx", "params"), bn_params - channels)
        self.assertEqual(self.total("resnet18", "flops") - self.total("resnet18_onnx", "flops"),
                         2 * bn_output_elements(m, x))
        self.assertEqual(bn_output_elements(m, x), 802816 + 802816 + 501760 + 250880 + 125440)

    def test_layer_names_are_the_modules_own(self):
        m = self.models["resnet18"][0]
        names = {d["name"] for d in self.nets["resnet18"]["layers"]}
        own = {n for n, mod in m.named_modules() if isinstance(mod, (nn.Conv2d, nn.BatchNorm2d, nn.Linear))}
        self.assertEqual(len(own), 41)
        self.assertLessEqual(own, names)
        self.assertIn("layer1.0.add", names)  # `out += identity` inside layer1.0
        self.assertIn("layer2.0.downsample.0", names)
        # a module used twice (BasicBlock's self.relu): its second call is NAME_1
        self.assertIn("layer1.0.relu_1", names)
        ops = {d["name"]: d["op"] for d in self.nets["resnet18"]["layers"]}
        self.assertEqual(ops["layer1.0.bn1"], "batchnorm")
        self.assertIn("layer4.1.bn2", {r["layer"] for r in self.rows if r["network"] == "resnet18"})

    def test_mobilenet_v2_by_hand_and_against_onnx(self):
        m, x = self.models["mobilenet_v2"]
        self.assertEqual(sum(p.numel() for p in m.parameters()), 3504872)
        self.assertEqual(self.total("mobilenet_v2", "params"), 3504872)
        # the first depthwise 3×3: 32 channels at 112 × 112, groups = 32: 32 · 112 · 112 · 1 · 9
        dw = self.layer("mobilenet_v2", "features.1.conv.0.0")
        self.assertEqual(int(dw["macs"]), 32 * 112 * 112 * 9)
        self.assertEqual(self.total("mobilenet_v2", "macs"), mobilenet_v2_macs())
        self.assertEqual(self.total("mobilenet_v2_onnx", "macs"), mobilenet_v2_macs())
        channels = sum(b.num_features for b in m.modules() if isinstance(b, nn.BatchNorm2d))
        self.assertEqual(self.total("mobilenet_v2", "params") - self.total("mobilenet_v2_onnx", "params"), channels)
        self.assertEqual(self.total("mobilenet_v2", "flops") - self.total("mobilenet_v2_onnx", "flops"),
                         2 * bn_output_elements(m, x))
        self.assertEqual(self.nets["mobilenet_v2"].unsupported, [])

    def test_transformer_encoder_by_hand(self):
        B, S, D, H, F, L = 2, 10, 64, 4, 128, 2
        T, hd, P = B * S, D // H, B * H * S * S  # tokens, head size, attention scores
        params = (3 * D * D + 3 * D) + (D * D + D) + (D * F + F) + (F * D + D) + 2 * 2 * D
        self.assertEqual(L * params, 66944)
        self.assertEqual(sum(p.numel() for p in self.models["encoder"][0].parameters()), L * params)
        self.assertEqual(self.total("encoder", "params"), L * params)
        linear_macs = T * D * 3 * D + T * D * D + T * D * F + T * F * D
        attention_macs = 2 * P * hd  # Q·Kᵀ and P·V
        self.assertEqual(self.total("encoder", "macs"), L * (linear_macs + attention_macs))
        # FLOPs: 2 per MAC; attention's scale and softmax 6 per score; two residual adds and ReLU 1 per
        # element; two LayerNorms 8 per element
        flops = 2 * linear_macs + 2 * attention_macs + 6 * P + 2 * T * D + T * F + 2 * 8 * T * D
        self.assertEqual(self.total("encoder", "flops"), L * flops)
        att = self.layer("encoder", "layers.0.self_attn.attention")
        self.assertEqual((int(att["macs"]), int(att["flops"])), (attention_macs, 2 * attention_macs + 6 * P))

    def test_transformer_encoder_against_onnx(self):
        L, P = 2, 2 * 4 * 10 * 10
        self.assertEqual(self.total("encoder_onnx", "macs"), self.total("encoder", "macs"))
        self.assertEqual(self.total("encoder_onnx", "params"), self.total("encoder", "params"))
        # the export scales q (or the scores) with its own Mul/Div and runs a plain softmax (5 per score);
        # rsim's attention counts the scale as 1 per score inside it
        scales = sum(int(r["flops"]) for r in self.rows if r["network"] == "encoder_onnx" and r["op"] in ("div", "mul"))
        self.assertGreater(scales, 0)
        self.assertEqual(self.total("encoder", "flops") - self.total("encoder_onnx", "flops"), L * P - scales)


class Behaviour(unittest.TestCase):
    def test_an_unknown_operator_is_listed_warned_and_its_parameters_kept(self):
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(32, 32)
                self.lstm = nn.LSTM(32, 16)

            def forward(self, x):
                y = self.lstm(self.fc(x))[0]
                return torch.cumprod(y, 1)

        m = Net()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            net = rsim_torch.trace(m, torch.randn(10, 2, 32), name="net")
        self.assertEqual([(u["layer"], u["op"]) for u in net.unsupported], [("lstm", "LSTM"), ("cumprod", "torch.cumprod")])
        self.assertTrue(any("lstm (LSTM), cumprod (torch.cumprod)" in str(i.message) for i in w))
        self.assertEqual(net["ignored"], {"LSTM": 1, "torch.cumprod": 1})
        self.assertIn("not counted (no rsim operator): lstm: LSTM", net.to_yaml())
        with tempfile.TemporaryDirectory() as d:
            summary, rows = run_rsim([dict(net)], d)
        s = summary["net"]
        # LSTM(32, 16): 4 gates · 16 · (32 + 16) weights + 2 · 4 · 16 biases; the Linear 32 · 32 + 32
        self.assertEqual(4 * 16 * 48 + 2 * 4 * 16, 3200)
        self.assertEqual(int(s["params"]), 3200 + 32 * 32 + 32)
        self.assertEqual(int(s["params"]), sum(p.numel() for p in m.parameters()))
        self.assertEqual(int(s["macs"]), 10 * 2 * 32 * 32)  # the Linear's only: the LSTM is not counted
        self.assertIn("LSTM (1 node)", s["ignored_ops"])
        self.assertIn("torch.cumprod (1 node)", s["ignored_ops"])

    def test_a_hand_written_attention_block_by_hand(self):
        class Block(nn.Module):
            def __init__(self, d=32, h=4):
                super().__init__()
                self.h, self.qkv, self.proj = h, nn.Linear(d, 3 * d), nn.Linear(d, d)
                self.pos = nn.Parameter(torch.zeros(1, 10, d))

            def forward(self, x):
                x = x + self.pos
                B, S, D = x.shape  # unpacking: torch 1.13's fx under Python 3.11 needs trace()'s fix
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                q, k, v = (t.view(B, S, self.h, D // self.h).transpose(1, 2) for t in (q, k, v))
                a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(D // self.h), dim=-1)
                return x + self.proj((a @ v).transpose(1, 2).reshape(B, S, D))

        m = Block()
        net = rsim_torch.trace(m, torch.randn(2, 10, 32), name="block")
        self.assertEqual(net.unsupported, [])
        with tempfile.TemporaryDirectory() as d:
            summary, rows = run_rsim([dict(net)], d)
        B, S, D, H = 2, 10, 32, 4
        scores = B * H * S * S
        macs = B * S * D * 3 * D + 2 * scores * (D // H) + B * S * D * D
        self.assertEqual(int(summary["block"]["macs"]), macs)
        # 2 per MAC, the scale 1 and softmax 5 per score, the two adds 1 per element
        self.assertEqual(int(summary["block"]["flops"]), 2 * macs + scores + 5 * scores + 2 * B * S * D)
        self.assertEqual(int(summary["block"]["params"]), sum(p.numel() for p in m.parameters()))
        self.assertEqual(int(summary["block"]["params"]), 10 * 32 + 32 * 96 + 96 + 32 * 32 + 32)

    def test_data_dependent_control_flow_names_the_module_and_the_onnx_path(self):
        class Gate(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 8)

            def forward(self, x):
                if x.sum() > 0:
                    return self.fc(x)
                return x

        x = torch.ones(2, 8)
        with self.assertRaises(rsim_torch.TraceError) as e:
            rsim_torch.trace(Gate(), x, name="gate")
        text = str(e.exception)
        for part in ("gate (Gate)", "data-dependent control flow", "if x.sum() > 0:", "torch.onnx.export",
                     "rsim estimate gate.onnx", "{onnx: gate.onnx}"):
            self.assertIn(part, text)
        # and the path it names works: the export runs the branch the inputs take
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "gate.onnx")
            quiet_onnx_export(Gate().eval(), (x,), path)
            summary, _ = run_rsim([{"name": "gate", "onnx": path}], d)
        self.assertEqual(int(summary["gate"]["macs"]), 2 * 8 * 8)

    def test_training_mode_and_running_statistics_are_left_as_they_were(self):
        m = torchvision.models.resnet18()
        m.train()
        m.layer1.eval()
        before = m.bn1.running_mean.clone()
        rsim_torch.trace(m, torch.randn(2, 3, 64, 64))
        self.assertTrue(m.training and m.bn1.training and not m.layer1.training and not m.layer1[0].bn1.training)
        self.assertTrue(torch.equal(before, m.bn1.running_mean))
        self.assertEqual(int(m.bn1.num_batches_tracked), 0)

    def test_a_single_torch_nn_module_and_tied_weights(self):
        net = rsim_torch.trace(nn.Conv2d(3, 8, 3, padding=1), torch.randn(1, 3, 8, 8), name="conv")
        self.assertEqual([d["name"] for d in net["layers"]], ["conv"])
        self.assertEqual(net["layers"][0]["kernel"], 3)
        with self.assertRaises(rsim_torch.TraceError) as e:  # inputs the module refuses: its own error, named
            rsim_torch.trace(nn.Linear(4, 8), torch.randn(3, 5), name="lin")
        text = str(e.exception)
        self.assertTrue(text.startswith("rsim_torch.trace: lin (Linear) failed on the example inputs: RuntimeError: "))
        self.assertIn("(3x5 and 4x8)", text)
        self.assertNotIn("While executing", text)

        class Tied(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(16, 16)

            def forward(self, x):
                return self.fc(torch.relu(self.fc(x)))

        m = Tied()
        net = rsim_torch.trace(m, torch.randn(4, 16), name="tied")
        with tempfile.TemporaryDirectory() as d:
            summary, _ = run_rsim([dict(net)], d)
        self.assertEqual(int(summary["tied"]["params"]), 16 * 16 + 16)
        self.assertEqual(int(summary["tied"]["macs"]), 2 * 4 * 16 * 16)
        self.assertEqual([d["name"] for d in net["layers"]], ["fc", "relu", "fc_1"])

    def test_to_yaml_is_a_zoo_model_file(self):
        net = rsim_torch.trace(torchvision.models.resnet18(), torch.randn(1, 3, 224, 224), name="resnet18_traced")
        with tempfile.TemporaryDirectory() as d:
            os.mkdir(os.path.join(d, "models"))
            with open(os.path.join(d, "models", "resnet18_traced.yaml"), "w") as f:
                f.write(net.to_yaml())
            summary, _ = run_rsim([{"model": "resnet18_traced"}], d)
        self.assertEqual(int(summary["resnet18_traced"]["params"]), 11689512)
        self.assertEqual(int(summary["resnet18_traced"]["macs"]), 1814073344)
        try:
            import yaml
        except ImportError:
            return
        self.assertEqual(yaml.safe_load(net.to_yaml()), dict(net))


class PythonModule(unittest.TestCase):
    def test_rsim_run_takes_the_network_dict(self):
        sys.path.insert(0, os.path.join(os.path.dirname(RSIM), "python"))
        try:
            import rsim
        except ImportError as e:
            self.skipTest("the rsim module is not built beside %s: %s" % (RSIM, e))
        net = rsim_torch.trace(torchvision.models.resnet18(), torch.randn(1, 3, 224, 224), name="resnet18")
        r = rsim.run(scenario=net.scenario([PLATFORM]))
        self.assertEqual(r.summary[0]["params"], 11689512)
        self.assertEqual(r.summary[0]["macs"], 1814073344)
        self.assertEqual(r.rows[0]["layer"], "conv1")


if __name__ == "__main__":
    unittest.main(verbosity=2)
