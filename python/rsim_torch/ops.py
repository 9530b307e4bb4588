"""Each plan layer as the torch module or function a model would use.

build(layer, dev) returns a Built: fn(inputs) -> outputs on random weights of the layer's
precision, and the torch call it times. An operator it cannot build raises Unsupported with the
reason, which becomes the row's measured_note: nothing is skipped silently.
"""

import math

import torch
import torch.nn.functional as F

from .device import Unsupported, layout, torch_dtype


class Built:
    def __init__(self, fn, impl, note=""):
        self.fn = fn
        self.impl = impl
        self.note = note


def _pair(v, default=1):
    if v is None:
        return (default, default)
    if isinstance(v, (list, tuple)):
        return tuple(int(x) for x in v) if len(v) == 2 else (int(v[0]), int(v[0]))
    return (int(v), int(v))


def _padding(v, kernel, dilation, stride, in_hw):
    """rsim's padding (ints per side, 'same' or 'valid') as the symmetric ints conv2d takes."""
    if isinstance(v, str):
        if v == "valid":
            return (0, 0)
        # 'same' keeps ceil(H / stride): total padding (out - 1)·s + d·(k - 1) + 1 - H, split evenly
        pads = []
        for i in range(2):
            out = -(-in_hw[i] // stride[i])
            total = max(0, (out - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 - in_hw[i])
            if total % 2:
                raise Unsupported("padding 'same' needs an odd total padding %d: torch pads both sides alike" % total)
            pads.append(total // 2)
        return tuple(pads)
    return _pair(v, 0)


def _weight(shape, dtype, dev, fan_in):
    w = torch.randn(tuple(shape), device=dev, dtype=torch.float32) / math.sqrt(max(fan_in, 1))  # (a tuple: a 0-d shape too)
    return layout(w.to(dtype), dev)


def _act_dtype(layer):
    return torch_dtype(layer["dtype"])


def _math_dtype(layer):
    """The precision the layer's weights and math run in: its compute dtype (weight-only int8/int4
    weights are dequantized to it: torch has no kernel for them here)."""
    return torch_dtype(layer["compute_dtype"] if layer["compute_dtype"] != "tf32" else "fp32")


def quantized_note(layer):
    w = layer.get("weights_dtype", layer["dtype"])
    if w in ("int8", "int4", "fp8") and w != layer["compute_dtype"]:
        return "weights %s run as %s (torch has no weight-only %s kernel here)" % (w, layer["compute_dtype"], w)
    return ""


def input_tensors(layer, dev):
    """Random inputs of the layer's shapes: token ids for an embedding, the activation dtype else."""
    out = []
    for i, shape in enumerate(layer["input_shapes"]):
        if layer["op"] == "embedding":
            vocab = int(layer["attrs"].get("vocab") or 2)
            out.append(torch.randint(0, vocab, tuple(shape), device=dev, dtype=torch.int64))
        else:
            dt = torch_dtype(layer["kv_dtype"]) if layer["op"] == "attention" and i > 0 else _act_dtype(layer)
            out.append(layout(torch.randn(tuple(shape), device=dev, dtype=torch.float32).to(dt), dev))  # (a 0-d shape: a scalar)
    return out


def _unary(name):
    table = {
        "relu": (F.relu, "torch.nn.functional.relu"),
        "relu6": (F.relu6, "torch.nn.functional.relu6"),
        "gelu": (F.gelu, "torch.nn.functional.gelu"),
        "silu": (F.silu, "torch.nn.functional.silu"),
        "sigmoid": (torch.sigmoid, "torch.sigmoid"),
        "tanh": (torch.tanh, "torch.tanh"),
        "hardswish": (F.hardswish, "torch.nn.functional.hardswish"),
        "hardsigmoid": (F.hardsigmoid, "torch.nn.functional.hardsigmoid"),
        "elu": (F.elu, "torch.nn.functional.elu"),
        "mish": (F.mish, "torch.nn.functional.mish"),
    }
    if name in table:
        return table[name]
    fn = getattr(torch, name, None)  # abs, exp, log, neg, sin, cos, sqrt, reciprocal, floor, ceil, erf
    if name in ("abs", "exp", "log", "neg", "sin", "cos", "sqrt", "reciprocal", "floor", "ceil", "erf", "sign", "rsqrt") and fn:
        return fn, "torch." + name
    return None


def _binary(name):
    return {"add": (torch.add, "torch.add"), "sub": (torch.sub, "torch.sub"), "mul": (torch.mul, "torch.mul"), "div": (torch.div, "torch.div"),
            "pow": (torch.pow, "torch.pow"), "max": (torch.maximum, "torch.maximum"), "min": (torch.minimum, "torch.minimum")}.get(name)


def _attention(q, k, v, heads, kv_heads, head_dim, causal):
    """Scaled dot-product attention of (B, Sq, H·hd) over (B, Skv, KVH·hd), as a model calls it:
    torch's SDPA where it exists (torch ≥ 2.0), else the matmul-softmax-matmul it replaces."""
    b, sq, _ = q.shape
    skv = k.shape[1]
    q4 = q.view(b, sq, heads, head_dim).transpose(1, 2)
    k4 = k.view(b, skv, kv_heads, head_dim).transpose(1, 2)
    v4 = v.view(b, skv, kv_heads, head_dim).transpose(1, 2)
    if kv_heads != heads:  # grouped-query: each KV head serves heads / kv_heads query heads
        k4 = k4.repeat_interleave(heads // kv_heads, dim=1)
        v4 = v4.repeat_interleave(heads // kv_heads, dim=1)
    if hasattr(F, "scaled_dot_product_attention"):
        # causal over the last sq of skv positions (decode: one query sees every cached key)
        if causal and sq > 1:
            if sq == skv:
                o = F.scaled_dot_product_attention(q4, k4, v4, is_causal=True)
            else:
                mask = torch.ones(sq, skv, dtype=torch.bool, device=q.device).tril(skv - sq)
                o = F.scaled_dot_product_attention(q4, k4, v4, attn_mask=mask)
        else:
            o = F.scaled_dot_product_attention(q4, k4, v4)
    else:
        s = torch.matmul(q4, k4.transpose(-1, -2)) / math.sqrt(head_dim)
        if causal and sq > 1:
            mask = torch.ones(sq, skv, dtype=torch.bool, device=q.device).tril(skv - sq)
            s = s.masked_fill(~mask, float("-inf"))
        o = torch.matmul(torch.softmax(s, dim=-1), v4)
    return o.transpose(1, 2).reshape(b, sq, heads * head_dim)


def _build_weighted(op, layer, a, ins, outs, wdt, dev, note):
    """Convolutions, linear layers, gated MLPs and matmuls: the ops with weights of `wdt`, or None."""
    if op in ("conv2d", "depthwise_conv2d"):
        x = ins[0]
        cin = x[1]
        if op == "depthwise_conv2d":
            groups = cin
            cout = cin * int(a.get("multiplier") or 1)
        else:
            groups = int(a.get("groups") or 1)
            cout = int(a["out_channels"])
        k = _pair(a["kernel"])
        s = _pair(a.get("stride"))
        d = _pair(a.get("dilation"))
        p = _padding(a.get("padding", 0), k, d, s, (x[2], x[3]))
        w = _weight((cout, cin // groups, k[0], k[1]), wdt, dev, cin // groups * k[0] * k[1])
        b = _weight((cout,), wdt, dev, 1) if a.get("bias") else None
        return Built(lambda t: [F.conv2d(t[0], w, b, s, p, d, groups)], "torch.nn.functional.conv2d", note)
    if op == "conv_transpose2d":
        x = ins[0]
        cin = x[1]
        groups = int(a.get("groups") or 1)
        cout = int(a["out_channels"])
        k = _pair(a["kernel"])
        s = _pair(a.get("stride"))
        d = _pair(a.get("dilation"))
        p = _pair(a.get("padding"), 0)
        op_ = _pair(a.get("output_padding"), 0)
        w = _weight((cin, cout // groups, k[0], k[1]), wdt, dev, cin * k[0] * k[1])
        b = _weight((cout,), wdt, dev, 1) if a.get("bias") else None
        return Built(lambda t: [F.conv_transpose2d(t[0], w, b, s, p, op_, groups, d)], "torch.nn.functional.conv_transpose2d", note)
    if op == "linear":
        fin, fout = ins[0][-1], int(a["out_features"])
        w = _weight((fout, fin), wdt, dev, fin)
        b = _weight((fout,), wdt, dev, 1) if a.get("bias") else None
        return Built(lambda t: [F.linear(t[0], w, b)], "torch.nn.functional.linear", note)
    if op in ("swiglu", "geglu"):
        dmodel, ff = ins[0][-1], int(a["intermediate"])
        wg, wu = _weight((ff, dmodel), wdt, dev, dmodel), _weight((ff, dmodel), wdt, dev, dmodel)
        wd = _weight((dmodel, ff), wdt, dev, ff)
        bias = bool(a.get("bias"))
        bg = _weight((ff,), wdt, dev, 1) if bias else None
        bu = _weight((ff,), wdt, dev, 1) if bias else None
        bd = _weight((dmodel,), wdt, dev, 1) if bias else None
        act = F.silu if op == "swiglu" else F.gelu
        return Built(lambda t: [F.linear(act(F.linear(t[0], wg, bg)) * F.linear(t[0], wu, bu), wd, bd)],
                     "torch.nn.functional.linear ×3, %s, mul" % ("silu" if op == "swiglu" else "gelu"), note)
    if op in ("matmul", "gemm"):
        if op == "gemm" and (a.get("trans_a") or a.get("trans_b") or len(ins) > 2):
            raise Unsupported("gemm with transposes or a C input: not built (use matmul)")
        return Built(lambda t: [torch.matmul(t[0], t[1])], "torch.matmul", note)
    return None


def _build_pool_norm(op, layer, a, ins, outs, wdt, dev, note):
    """Pooling and normalization, or None."""
    if op in ("max_pool2d", "avg_pool2d"):
        k = _pair(a["kernel"])
        s = _pair(a.get("stride"), 0) if a.get("stride") is not None else k
        p = _pair(a.get("padding"), 0)
        ceil = bool(a.get("ceil_mode"))
        if op == "max_pool2d":
            return Built(lambda t: [F.max_pool2d(t[0], k, s, p, ceil_mode=ceil)], "torch.nn.functional.max_pool2d", note)
        return Built(lambda t: [F.avg_pool2d(t[0], k, s, p, ceil_mode=ceil)], "torch.nn.functional.avg_pool2d", note)
    if op == "global_avg_pool":
        return Built(lambda t: [F.adaptive_avg_pool2d(t[0], 1)], "torch.nn.functional.adaptive_avg_pool2d(1)", note)
    if op == "adaptive_avg_pool2d":
        size = _pair(a["output_size"])
        return Built(lambda t: [F.adaptive_avg_pool2d(t[0], size)], "torch.nn.functional.adaptive_avg_pool2d", note)
    if op == "batchnorm":
        c = ins[0][1]
        adt = _act_dtype(layer)
        mean, var = torch.zeros(c, device=dev, dtype=adt), torch.ones(c, device=dev, dtype=adt)
        g, b = torch.ones(c, device=dev, dtype=adt), torch.zeros(c, device=dev, dtype=adt)
        return Built(lambda t: [F.batch_norm(t[0], mean, var, g, b, False, 0.0, 1e-5)], "torch.nn.functional.batch_norm (eval)", note)
    if op == "layernorm":
        dims = int(a.get("dims") or 1)
        shape = tuple(ins[0][-dims:])
        adt = _act_dtype(layer)
        g = torch.ones(shape, device=dev, dtype=adt) if a.get("affine", True) else None
        b = torch.zeros(shape, device=dev, dtype=adt) if a.get("affine", True) else None
        return Built(lambda t: [F.layer_norm(t[0], shape, g, b)], "torch.nn.functional.layer_norm", note)
    if op == "rmsnorm":
        dmodel = ins[0][-1]
        g = torch.ones(dmodel, device=dev, dtype=_act_dtype(layer)) if a.get("affine", True) else None
        if hasattr(F, "rms_norm"):
            return Built(lambda t: [F.rms_norm(t[0], (dmodel,), g, 1e-6)], "torch.nn.functional.rms_norm", note)

        def rms(t):  # as Llama's modules wrote it before torch had one: in fp32, then back
            x = t[0].float()
            y = (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)).to(t[0].dtype)
            return [y * g if g is not None else y]

        return Built(rms, "x · rsqrt(mean(x²) + ε) · γ (torch has no rms_norm here)", note)
    return None


def _build_pointwise(op, layer, a, ins, outs, wdt, dev, note):
    """Softmax, activations, clamps and elementwise ops of one or two inputs, or None."""
    if op == "softmax":
        axis = int(a.get("axis", -1))
        if len(ins) == 2:  # scores + an additive attention mask, as an export spells it
            return Built(lambda t: [torch.softmax(t[0] + t[1], dim=axis)], "torch.softmax(scores + mask)", note)
        return Built(lambda t: [torch.softmax(t[0], dim=axis)], "torch.softmax", note)
    if op == "leaky_relu":
        slope = float(a.get("negative_slope", 0.01))
        return Built(lambda t: [F.leaky_relu(t[0], slope)], "torch.nn.functional.leaky_relu", note)
    if op == "clip":
        lo, hi = a.get("min"), a.get("max")
        return Built(lambda t: [torch.clamp(t[0], lo, hi)], "torch.clamp", note)
    if op in ("identity", "dropout"):
        return Built(lambda t: [t[0]], "identity (no kernel)", note)
    u = _unary(op)
    if u and len(ins) == 1:
        fn, name = u
        return Built(lambda t: [fn(t[0])], name, note)
    bi = _binary(op)
    if bi and len(ins) == 2:
        fn, name = bi
        return Built(lambda t: [fn(t[0], t[1])], name, note)
    return None


def _build_data_movement(op, layer, a, ins, outs, wdt, dev, note):
    """Concatenation, transposes, copies, slices, splits and resampling, or None."""
    if op == "concat":
        axis = int(a.get("axis", 1))
        return Built(lambda t: [torch.cat(t, dim=axis)], "torch.cat", note)
    if op in ("transpose", "permute"):
        if op == "transpose":
            dims = a.get("dims") or [-2, -1]
            return Built(lambda t: [t[0].transpose(dims[0], dims[1]).contiguous()], "Tensor.transpose().contiguous()", note)
        dims = a["dims"]
        return Built(lambda t: [t[0].permute(*dims).contiguous()], "Tensor.permute().contiguous()", note)
    if op == "reshape_copy":
        shape = tuple(outs[0])
        return Built(lambda t: [t[0].reshape(shape).clone()], "Tensor.reshape().clone()", note)
    if op == "slice":
        axis = int(a.get("axis", 1))
        start, end, step = a.get("start", 0), a.get("end"), int(a.get("step", 1))

        def take(t):
            idx = [slice(None)] * t[0].dim()
            idx[axis] = slice(start, end, step)
            return [t[0][tuple(idx)].contiguous()]

        return Built(take, "Tensor slice + contiguous", note)
    if op == "split":
        axis = int(a.get("axis", 1))
        sizes = [o[axis] for o in outs]
        return Built(lambda t: [x.contiguous() for x in torch.split(t[0], sizes, dim=axis)], "torch.split + contiguous", note)
    if op in ("upsample", "interpolate"):
        size = tuple(outs[0][2:])
        mode = a.get("mode") or "nearest"
        if mode not in ("nearest", "bilinear"):
            raise Unsupported("interpolate mode %s: not built" % mode)
        return Built(lambda t: [F.interpolate(t[0], size=size, mode=mode)], "torch.nn.functional.interpolate (%s)" % mode, note)
    return None


def _build_transformer(op, layer, a, ins, outs, wdt, dev, note):
    """Embedding, RoPE, the KV cache append and attention, or None."""
    if op == "embedding":
        vocab, dim = int(a["vocab"]), int(a["dim"])
        table = _weight((vocab, dim), _act_dtype(layer), dev, 1)
        return Built(lambda t: [F.embedding(t[0], table)], "torch.nn.functional.embedding", note)
    if op == "rope":
        hd = int(a["head_dim"])
        b, s, width = ins[0]
        half = hd // 2
        adt = _act_dtype(layer)
        freq = 1.0 / (10000 ** (torch.arange(0, half, device=dev, dtype=torch.float32) / half))
        ang = torch.arange(s, device=dev, dtype=torch.float32)[:, None] * freq[None, :]
        cos = torch.cat([ang.cos(), ang.cos()], -1).to(adt)[None, :, None, :]
        sin = torch.cat([ang.sin(), ang.sin()], -1).to(adt)[None, :, None, :]

        def rope(t):
            x = t[0].view(b, s, width // hd, hd)
            rot = torch.cat([-x[..., half:], x[..., :half]], -1)
            return [(x * cos + rot * sin).view(b, s, width)]

        return Built(rope, "x·cos + rotate_half(x)·sin", note)
    if op == "kv_cache":
        ctx = int(a.get("context") or 0)
        kvdt = torch_dtype(layer["kv_dtype"])
        b, s, width = ins[0]
        kc = torch.zeros(b, ctx + s, width, device=dev, dtype=kvdt)
        vc = torch.zeros(b, ctx + s, width, device=dev, dtype=kvdt)

        def append(t):  # the new keys and values written into a preallocated cache
            kc[:, ctx:ctx + s].copy_(t[0])
            vc[:, ctx:ctx + s].copy_(t[1])
            return [kc, vc]

        return Built(append, "cache[:, C:C+S].copy_() for k and v", note)
    if op == "attention":
        heads = int(a["heads"])
        kvh = int(a.get("kv_heads") or heads)
        hd = int(a.get("head_dim") or ins[0][-1] // heads)
        causal = bool(a.get("causal"))
        impl = "torch.nn.functional.scaled_dot_product_attention" if hasattr(F, "scaled_dot_product_attention") else "matmul, softmax, matmul (torch has no SDPA here)"
        return Built(lambda t: [_attention(t[0], t[1], t[2], heads, kvh, hd, causal)], impl, note)
    return None


def _build_reduce(op, layer, a, ins, outs, wdt, dev, note):
    """reduce_sum / mean / max / min / prod, or None."""
    if op.startswith("reduce_") and op[7:] in ("sum", "mean", "max", "min", "prod"):
        axes = a.get("axes")
        keep = bool(a.get("keepdims", True))
        kind = op[7:]

        def red(t):
            x = t[0]
            dims = axes if axes else list(range(x.dim()))
            if kind in ("sum", "mean"):
                return [getattr(torch, kind)(x, dim=dims, keepdim=keep)]
            for d in sorted(dims, reverse=True):
                x = getattr(torch, "amax" if kind == "max" else "amin" if kind == "min" else "prod")(x, dim=d, keepdim=keep)
            return [x]

        return Built(red, "torch.%s" % kind, note)
    return None


def build(layer, dev):
    """The layer as a callable on `dev`: Built(fn(inputs) -> outputs, impl)."""
    op = layer["op"]
    a = layer["attrs"]
    ins = layer["input_shapes"]
    outs = layer["output_shapes"]
    note = quantized_note(layer)
    if layer.get("view"):
        shape = tuple(outs[0]) if outs else None
        return Built(lambda x: [x[0].reshape(shape)], "Tensor.reshape (a view)", note)
    wdt = _math_dtype(layer)
    # each group returns None for an op it does not build, so the first that builds it wins (in this order)
    for group in (_build_weighted, _build_pool_norm, _build_pointwise, _build_data_movement, _build_transformer, _build_reduce):
        built = group(op, layer, a, ins, outs, wdt, dev, note)
        if built is not None:
            return built
    raise Unsupported("operator %s has no torch builder in rsim_torch" % op)


def run_layer(built, inputs):
    return built.fn(inputs)
