#!/usr/bin/python3
"""Regenerates the graph-only ONNX test models in tests/data/onnx/ and prints PyTorch's own
reference numbers (parameter count, MACs counted by intercepting every conv, linear and matrix
product) that tests/test_onnx_models.cpp compares rsim against.

Not run in CI (it needs python3-torch, python3-torchvision and python3-onnx from Debian):
    apt-get install python3-torch python3-torchvision python3-onnx
    /usr/bin/python3 scripts/make_onnx_models.py [MODEL_NAME...]

Each model is exported with torch.onnx.export, then saved with its weights as external data and
the data file deleted, so the committed files hold the graph and the initializers' shapes only
(tensors under 1 KiB, such as reshape targets, stay in the file, as ONNX's default threshold does).
"""
import math
import os
import sys

import onnx
import onnx.external_data_helper
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.overrides import TorchFunctionMode

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "onnx")


class MacCounter(TorchFunctionMode):
    """MACs of every convolution, linear layer and matrix product PyTorch runs (its own count)."""

    def __init__(self):
        super().__init__()
        self.macs = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if name in ("conv1d", "conv2d", "conv3d"):
            w = args[1] if len(args) > 1 else kwargs["weight"]
            self.macs += out.numel() * w.shape[1] * math.prod(w.shape[2:])
        elif name in ("conv_transpose2d",):
            x, w = args[0], args[1]
            self.macs += x.numel() * w.shape[1] * math.prod(w.shape[2:])
        elif name == "linear":
            x, w = args[0], args[1]
            self.macs += x.numel() // x.shape[-1] * w.shape[0] * w.shape[1]
        elif name in ("matmul", "bmm", "__matmul__"):
            a = args[0]
            self.macs += out.numel() * a.shape[-1]
        elif name == "multi_head_attention_forward":
            # the mode does not see inside this function: its in- and out-projections and the two
            # attention products, for query (L, N, E) with num_heads heads
            q = args[0]
            L, N, E = q.shape
            self.macs += 4 * L * N * E * E + 2 * N * L * L * E
        elif name in ("baddbmm", "addmm"):
            a = args[1]
            self.macs += out.numel() * a.shape[-1]
        return out


class GPT2Block(nn.Module):
    def __init__(self, d, heads, ctx):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(ctx, ctx, dtype=torch.bool)).view(1, 1, ctx, ctx))

    def forward(self, x):
        b, t, d = x.size()
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        h = self.heads
        q = q.view(b, t, h, d // h).transpose(1, 2)
        k = k.view(b, t, h, d // h).transpose(1, 2)
        v = v.view(b, t, h, d // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // h))
        att = att.masked_fill(~self.mask[:, :, :t, :t], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT2(nn.Module):
    """A GPT-2-style decoder (nanoGPT layout): token and position embeddings, causal attention."""

    def __init__(self, vocab=1000, ctx=256, d=128, heads=4, layers=2):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList([GPT2Block(d, heads, ctx) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device).unsqueeze(0)
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x))


def graph_only(path):
    m = onnx.load(path)
    data = os.path.basename(path) + ".data"
    onnx.external_data_helper.convert_model_to_external_data(m, all_tensors_to_one_file=True, location=data, size_threshold=1024)
    onnx.save_model(m, path)
    os.remove(os.path.join(os.path.dirname(path), data))


def file_weights(path):
    """Elements of the file's float initializers, BatchNorm running statistics excluded."""
    m = onnx.load(path, load_external_data=False)
    stats = set()
    for n in m.graph.node:
        if n.op_type == "BatchNormalization":
            stats.update(n.input[3:5])
    return sum(math.prod(t.dims) for t in m.graph.initializer if t.data_type in (1, 10, 11, 16) and t.name not in stats)


def randomize(model):
    """Trained-looking weights: with torchvision's initial values (BatchNorm γ = 1, β = 0, zero biases)
    the exporter would share equal tensors between layers, which a trained model never has."""
    with torch.no_grad():
        for name, t in model.state_dict().items():
            if t.is_floating_point():
                t.copy_(torch.rand_like(t) + 0.5 if name.endswith("running_var") else torch.randn_like(t) * 0.05)


ONLY = set(sys.argv[1:])  # regenerate only these models (default: all)


def export(name, model, x, opset, keep_bn=False, dynamic=None, input_names=("input",)):
    if ONLY and name not in ONLY:
        return
    model.eval()
    randomize(model)
    path = os.path.join(OUT, name + ".onnx")
    # with gradients enabled: under no_grad, nn.MultiheadAttention takes a fused fast path that
    # neither the exporter nor the MAC counter can see into
    # TrainingMode.PRESERVE (the model is in eval mode) skips the exporter's BatchNorm-into-Conv fusion
    mode = torch.onnx.TrainingMode.PRESERVE if keep_bn else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(model, x, path, opset_version=opset, training=mode, input_names=list(input_names),
                      output_names=["output"], dynamic_axes=dynamic)
    counter = MacCounter()
    with counter:
        model(x)
    graph_only(path)
    params = sum(p.numel() for p in model.parameters())
    print(f"{name}: opset {opset}, torch params {params}, file weights {file_weights(path)}, torch MACs {counter.macs}, "
          f"{os.path.getsize(path)} bytes")


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    img = torch.randn(1, 3, 224, 224)
    tv = torchvision.models
    # classifiers: BN folded into the convs (the exporter's default in eval mode)
    export("resnet18_op13", tv.resnet18(), img, 13)
    export("resnet50_op17", tv.resnet50(), img, 17)
    # grouped / depthwise convs, SE blocks, hardswish
    export("mobilenet_v3_small_op17", tv.mobilenet_v3_small(), img, 17)
    # channel shuffle (Reshape / Transpose computed from shapes), concat
    export("shufflenet_v2_x0_5_op13", tv.shufflenet_v2_x0_5(), img, 13)
    # concat-heavy fire modules, ceil-mode pools
    export("squeezenet1_1_op17", tv.squeezenet1_1(), img, 17)
    # inception branches
    export("googlenet_op13", tv.googlenet(aux_logits=False, init_weights=False), img, 13)
    # BatchNorm kept as its own node: params are PyTorch's own count
    export("resnet18_bn_op13", tv.resnet18(), img, 13, keep_bn=True)
    # segmentation: dilated convs, Resize to sizes computed from Shape
    export("deeplabv3_mobilenet_v3_large_op13", tv.segmentation.deeplabv3_mobilenet_v3_large(weights_backbone=None, aux_loss=False), img, 13)
    # a ViT
    export("vit_b_16_op17", tv.vit_b_16(), img, 17)
    # depthwise convolutions, squeeze-excite and SiLU: a network whose many small kernels make
    # launches most of its time on a GPU (the answers' breakdown: tests/test_breakdown.cpp)
    export("efficientnet_b0_op13", tv.efficientnet_b0(), img, 13)
    # a GPT-2-style decoder with dynamic batch and sequence axes
    ids = torch.randint(0, 1000, (2, 64))
    export("gpt2_small_op17", GPT2(), ids, 17, dynamic={"idx": {0: "batch", 1: "seq"}, "output": {0: "batch", 1: "seq"}},
           input_names=("idx",))


if __name__ == "__main__":
    sys.exit(main())
