"""rsim_torch.trace(): torch.nn modules (fx leaves) as rsim layers.

Each mapper is fn(b, name, node, mod) -> the output's reference (a layer name, "NAME:K", or a tuple of them
for a module that returns several tensors); b is trace_fx's builder. A mapper raises Unsupported for what
rsim has no operator for: the node then becomes a listed placeholder.
"""


class Unsupported(Exception):
    """rsim has no operator for this node (the text says which part of it)."""


def arg(node, i, key, default=None):
    """The i-th positional argument of a node, or its keyword `key`."""
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(key, default)


def pair(v):
    """A kernel, stride or padding as rsim writes it: one int when every dimension agrees."""
    if isinstance(v, str):
        return v
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v[0] if len(set(v)) == 1 else v


def nd(v, n):
    v = list(v) if isinstance(v, (list, tuple)) else [v] * n
    return [int(x) for x in v]


def pads(padding, kernel, dilation, n):
    """torch's symmetric padding (or 'same' / 'valid') as rsim's per-side pads: every begin, then every end."""
    if padding == "valid":
        return [0] * (2 * n)
    if padding == "same":
        k, d = nd(kernel, n), nd(dilation, n)
        total = [di * (ki - 1) for ki, di in zip(k, d)]
        return [t // 2 for t in total] + [t - t // 2 for t in total]
    p = nd(padding, n)
    return p + p


def join(prefix, part):
    return prefix + "." + part if prefix else part


def out_shape(b, node):
    s = b.meta_shapes(node)
    if not isinstance(s, tuple):
        raise Unsupported("an output that is not one tensor")
    return s


def x_ref(b, node):
    return b.ref(node.args[0] if node.args else next(iter(node.kwargs.values())))


def simple(op, **fixed):
    """A one-layer mapper: op over the first input, the module's parameters its own."""
    def fn(b, name, node, mod):
        r = b.layer(name, op, [x_ref(b, node)], out_shape(b, node), **fixed)
        if mod is not None:
            b.owns(r, list(mod.parameters()))
        return r
    return fn


# ------------------------------------------------------------ convolutions, linear, norms


def _unless(v, default):
    return None if v == default else v


def conv(b, name, node, mod):
    n = len(mod.kernel_size)
    if getattr(mod, "padding_mode", "zeros") != "zeros":
        b.note("%s: padding_mode %s costed as zero padding" % (name, mod.padding_mode))
    common = dict(out_channels=mod.out_channels, groups=mod.groups if mod.groups != 1 else None, bias=mod.bias is not None)
    if n == 2:
        r = b.layer(name, "conv2d", [x_ref(b, node)], out_shape(b, node), kernel=pair(mod.kernel_size),
                    stride=_unless(pair(mod.stride), 1), padding=_unless(pair(mod.padding), 0),
                    dilation=_unless(pair(mod.dilation), 1), **common)
    else:
        r = b.layer(name, "conv_nd", [x_ref(b, node)], out_shape(b, node), kernel=nd(mod.kernel_size, n),
                    stride=nd(mod.stride, n), pads=pads(mod.padding, mod.kernel_size, mod.dilation, n),
                    dilation=nd(mod.dilation, n), **common)
    b.owns(r, [mod.weight, mod.bias])
    return r


def conv_transpose(b, name, node, mod):
    n = len(mod.kernel_size)
    common = dict(out_channels=mod.out_channels, groups=mod.groups if mod.groups != 1 else None, bias=mod.bias is not None)
    if n == 2:
        r = b.layer(name, "conv_transpose2d", [x_ref(b, node)], out_shape(b, node), kernel=pair(mod.kernel_size),
                    stride=_unless(pair(mod.stride), 1), padding=_unless(pair(mod.padding), 0),
                    output_padding=_unless(pair(mod.output_padding), 0), dilation=_unless(pair(mod.dilation), 1), **common)
    else:
        r = b.layer(name, "conv_transpose_nd", [x_ref(b, node)], out_shape(b, node), kernel=nd(mod.kernel_size, n),
                    stride=nd(mod.stride, n), pads=pads(mod.padding, mod.kernel_size, mod.dilation, n),
                    output_padding=nd(mod.output_padding, n), dilation=nd(mod.dilation, n), **common)
    b.owns(r, [mod.weight, mod.bias])
    return r


def linear(b, name, node, mod):
    r = b.layer(name, "linear", [x_ref(b, node)], out_shape(b, node), out_features=mod.out_features,
                bias=mod.bias is not None)
    b.owns(r, [mod.weight, mod.bias])
    return r


def batchnorm(b, name, node, mod):
    if not mod.affine:
        b.note("%s: BatchNorm without affine: rsim counts 2·C parameters, torch none" % name)
    r = b.layer(name, "batchnorm", [x_ref(b, node)], out_shape(b, node))
    b.owns(r, [mod.weight, mod.bias])
    return r


def instance_norm(b, name, node, mod):
    if isinstance(mod, _nn().GroupNorm):
        b.note("GroupNorm costed as instance_norm (the same FLOPs per element and 2·C parameters)")
    if not mod.affine:
        b.note("%s: %s without affine: rsim counts 2·C parameters, torch none" % (name, type(mod).__name__))
    r = b.layer(name, "instance_norm", [x_ref(b, node)], out_shape(b, node))
    b.owns(r, [mod.weight, mod.bias])
    return r


def layernorm_layer(b, name, x, shape, mod):
    affine = bool(mod.elementwise_affine)
    if affine and getattr(mod, "bias", 0) is None:
        b.note("%s: LayerNorm without bias: rsim counts its 2·D parameters, torch D" % name)
    r = b.layer(name, "layernorm", [x], shape, dims=len(mod.normalized_shape), affine=None if affine else False)
    b.owns(r, [mod.weight, getattr(mod, "bias", None)])
    return r


def layernorm(b, name, node, mod):
    return layernorm_layer(b, name, x_ref(b, node), out_shape(b, node), mod)


def rmsnorm(b, name, node, mod):
    if len(mod.normalized_shape) != 1:
        raise Unsupported("over %d dims" % len(mod.normalized_shape))
    r = b.layer(name, "rmsnorm", [x_ref(b, node)], out_shape(b, node), affine=None if mod.elementwise_affine else False)
    b.owns(r, [mod.weight])
    return r


def embedding(b, name, node, mod):
    r = b.layer(name, "embedding", [x_ref(b, node)], out_shape(b, node), vocab=mod.num_embeddings,
                dim=mod.embedding_dim)
    b.owns(r, [mod.weight])
    return r


def prelu(b, name, node, mod):
    s = out_shape(b, node)  # torch's slope runs along dim 1; rsim broadcasts it from the last
    slope = [mod.num_parameters] + [1] * (len(s) - 2) if mod.num_parameters > 1 else [1]
    r = b.layer(name, "prelu", [x_ref(b, node)], s, slope_shape=slope)
    b.owns(r, [mod.weight])
    return r


def hardtanh(b, name, node, mod):
    op = "relu6" if (mod.min_val, mod.max_val) == (0.0, 6.0) else "clip"
    return b.layer(name, op, [x_ref(b, node)], out_shape(b, node))


def leaky_relu(b, name, node, mod):
    return b.layer(name, "leaky_relu", [x_ref(b, node)], out_shape(b, node), negative_slope=mod.negative_slope)


def softmax(b, name, node, mod):
    op = "log_softmax" if isinstance(mod, _nn().LogSoftmax) else "softmax"
    return b.layer(name, op, [x_ref(b, node)], out_shape(b, node), axis=-1 if mod.dim is None else mod.dim)


def flatten(b, name, node, mod):
    return b.layer(name, "flatten", [x_ref(b, node)], out_shape(b, node), start_dim=mod.start_dim, end_dim=mod.end_dim)


def view(b, name, node, mod):
    s = out_shape(b, node)
    return b.layer(name, "reshape", [x_ref(b, node)], s, shape=list(s))


def copy_view(b, name, node, mod):
    s = out_shape(b, node)
    return b.layer(name, "reshape_copy", [x_ref(b, node)], s, shape=list(s))


def lrn(b, name, node, mod):
    return b.layer(name, "lrn", [x_ref(b, node)], out_shape(b, node), size=mod.size)


# ------------------------------------------------------------ pooling, resizing, padding


def pool(b, name, x, out, kind, kernel, stride, padding, dilation=1, ceil_mode=False):
    """max or avg pooling over the last len(kernel) dims: max_pool2d / avg_pool2d, else pool_nd."""
    n = len(out) - 2
    stride = kernel if stride is None or stride == [] or stride == () else stride
    if n == 2 and nd(dilation, 2) == [1, 1] and not isinstance(padding, str):
        return b.layer(name, kind + "_pool2d", [x], out, kernel=pair(nd(kernel, 2)), stride=pair(nd(stride, 2)),
                       padding=pair(nd(padding, 2)) if any(nd(padding, 2)) else None, ceil_mode=bool(ceil_mode) or None)
    return b.layer(name, "pool_nd", [x], out, mode=kind, kernel=nd(kernel, n), stride=nd(stride, n),
                   pads=pads(padding, kernel, dilation, n), dilation=nd(dilation, n), ceil_mode=bool(ceil_mode) or None)


def adaptive_avg(b, name, x, out):
    if len(out) != 4:
        raise Unsupported("adaptive pooling over %d spatial dims" % (len(out) - 2))
    if out[2:] == (1, 1):
        return b.layer(name, "global_avg_pool", [x], out)
    return b.layer(name, "adaptive_avg_pool2d", [x], out, output_size=pair(list(out[2:])))


def max_pool(b, name, node, mod):
    if getattr(mod, "return_indices", False):
        raise Unsupported("return_indices")
    return pool(b, name, x_ref(b, node), out_shape(b, node), "max", mod.kernel_size, mod.stride, mod.padding,
                mod.dilation, mod.ceil_mode)


def avg_pool(b, name, node, mod):
    return pool(b, name, x_ref(b, node), out_shape(b, node), "avg", mod.kernel_size, mod.stride, mod.padding,
                1, mod.ceil_mode)


def adaptive_avg_pool(b, name, node, mod):
    return adaptive_avg(b, name, x_ref(b, node), out_shape(b, node))


INTERPOLATE = {"nearest": "nearest", "nearest-exact": "nearest", "linear": "linear", "bilinear": "linear",
               "trilinear": "linear", "bicubic": "cubic"}


def resize(b, name, x, out, mode):
    if mode not in INTERPOLATE:
        raise Unsupported("mode %s" % mode)
    return b.layer(name, "interpolate", [x], out, size=list(out), mode=INTERPOLATE[mode])


def upsample(b, name, node, mod):
    return resize(b, name, x_ref(b, node), out_shape(b, node), mod.mode)


PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def pad_layer(b, name, x, out, torch_pads, mode):
    """torch's pad list (last dimension first, (before, after) pairs) as rsim's: every begin, then every end."""
    rank, k = len(out), len(torch_pads) // 2
    begins, ends = [0] * rank, [0] * rank
    for i in range(k):
        begins[rank - 1 - i], ends[rank - 1 - i] = int(torch_pads[2 * i]), int(torch_pads[2 * i + 1])
    if mode not in PAD_MODES:
        raise Unsupported("mode %s" % mode)
    return b.layer(name, "pad", [x], out, pads=begins + ends, mode=None if mode == "constant" else PAD_MODES[mode])


def pad_module(b, name, node, mod):
    nn = _nn()
    mode = ("reflect" if isinstance(mod, (nn.ReflectionPad1d, nn.ReflectionPad2d)) else
            "replicate" if isinstance(mod, (nn.ReplicationPad1d, nn.ReplicationPad2d, nn.ReplicationPad3d)) else
            "constant")
    return pad_layer(b, name, x_ref(b, node), out_shape(b, node), list(mod.padding), mode)


def identity(b, name, node, mod):
    return b.layer(name, "identity", [x_ref(b, node)], out_shape(b, node))


# ------------------------------------------------------------ attention and transformer layers


def _linear_shape(s, out):
    return tuple(s[:-1]) + (out,)


def attention_block(b, prefix, mod, q, k, v, need_weights=False, causal=False):
    """nn.MultiheadAttention on references q, k, v: the input projections (one packed in_proj and a split
    for self-attention), the attention, out_proj; transposes around it when batch_first is false."""
    E, H = mod.embed_dim, mod.num_heads
    qs = b.shapes[q]
    if len(qs) == 2:
        raise Unsupported("unbatched (L, E) input")
    if getattr(mod, "add_zero_attn", False):
        b.note("%s: add_zero_attn's extra key not counted" % prefix)
    distinct = [q] + [r for r in (k, v) if r != q]
    if not mod.batch_first:
        moved = {}
        for r in distinct:
            s = b.shapes[r]
            moved[r] = b.layer(b.sub(prefix, "input_t"), "transpose", [r], (s[1], s[0]) + tuple(s[2:]), dims=[0, 1])
        q, k, v = moved[q], moved[k], moved[v]
        qs = b.shapes[q]
    if q == k == v and mod._qkv_same_embed_dim:
        proj = b.layer(b.sub(prefix, "in_proj"), "linear", [q], _linear_shape(qs, 3 * E), out_features=3 * E,
                       bias=mod.in_proj_bias is not None)
        b.owns(proj, [mod.in_proj_weight, mod.in_proj_bias])
        q, k, v = b.multi(b.sub(prefix, "qkv"), "split", [proj], [_linear_shape(qs, E)] * 3, axis=len(qs) - 1,
                          sections=3)
    else:
        refs = []
        for part, r in (("q_proj", q), ("k_proj", k), ("v_proj", v)):
            refs.append(b.layer(b.sub(prefix, part), "linear", [r], _linear_shape(b.shapes[r], E), out_features=E,
                                bias=mod.in_proj_bias is not None))
        if mod._qkv_same_embed_dim:
            tensors = [mod.in_proj_weight, mod.in_proj_bias]
        else:
            tensors = [mod.q_proj_weight, mod.k_proj_weight, mod.v_proj_weight, mod.in_proj_bias]
        b.owns_group(refs, tensors)
        q, k, v = refs
    for part in ("bias_k", "bias_v"):
        t = getattr(mod, part, None)
        if t is not None:
            b.note("%s: add_bias_kv's extra key and value counted as parameters only" % prefix)
            b.owns(b.constant(b.sub(prefix, part), tuple(t.shape), params=id(t) not in b.seen), [])
            b.seen.add(id(t))
    att = b.layer(b.sub(prefix, "attention"), "attention", [q, k, v], _linear_shape(b.shapes[q], E), heads=H,
                  causal=True if causal else None, implementation="naive" if need_weights else None)
    out = b.layer(b.sub(prefix, "out_proj"), "linear", [att], b.shapes[att], out_features=E,
                  bias=mod.out_proj.bias is not None)
    b.owns(out, [mod.out_proj.weight, mod.out_proj.bias])
    if not mod.batch_first:
        s = b.shapes[out]
        out = b.layer(b.sub(prefix, "output_t"), "transpose", [out], (s[1], s[0]) + tuple(s[2:]), dims=[0, 1])
    return out


def multihead_attention(b, name, node, mod):
    q = arg(node, 0, "query")
    k, v = arg(node, 1, "key", q), arg(node, 2, "value", q)
    need_weights = b.value(arg(node, 4, "need_weights", True))
    if b.value(arg(node, 3, "key_padding_mask")) is not None or b.value(arg(node, 5, "attn_mask")) is not None:
        b.note("%s: attention masks' adds not counted" % b.prefix(node))
    causal = b.value(arg(node, 7, "is_causal", False))
    out = attention_block(b, b.prefix(node), mod, b.ref(q), b.ref(k), b.ref(v), bool(need_weights), bool(causal))
    return (out, None)


def _activation_op(act):
    nn, F = _nn(), _F()
    if act is F.relu or isinstance(act, nn.ReLU):
        return "relu"
    if act is F.gelu or isinstance(act, nn.GELU):
        return "gelu"
    raise Unsupported("activation %r" % (act,))


def encoder_layer_block(b, prefix, mod, x, causal=False):
    """nn.TransformerEncoderLayer: self-attention and the feed-forward net, each with its residual add,
    the norms before (norm_first) or after them."""
    act = _activation_op(mod.activation)
    s = b.shapes[x]

    def add(part, a, c):
        return b.layer(b.sub(prefix, part), "add", [a, c], s)

    def ff(h):
        h = b.layer(b.sub(prefix, "linear1"), "linear", [h], _linear_shape(s, mod.linear1.out_features),
                    out_features=mod.linear1.out_features, bias=mod.linear1.bias is not None)
        b.owns(h, [mod.linear1.weight, mod.linear1.bias])
        h = b.layer(b.sub(prefix, "activation"), act, [h], b.shapes[h])
        h = b.layer(b.sub(prefix, "linear2"), "linear", [h], s, out_features=mod.linear2.out_features,
                    bias=mod.linear2.bias is not None)
        b.owns(h, [mod.linear2.weight, mod.linear2.bias])
        return h

    def sa(h):
        return attention_block(b, join(prefix, "self_attn"), mod.self_attn, h, h, h, causal=causal)

    norm1, norm2 = b.sub(prefix, "norm1"), b.sub(prefix, "norm2")
    if mod.norm_first:
        x = add("residual1", x, sa(layernorm_layer(b, norm1, x, s, mod.norm1)))
        return add("residual2", x, ff(layernorm_layer(b, norm2, x, s, mod.norm2)))
    x = layernorm_layer(b, norm1, add("residual1", x, sa(x)), s, mod.norm1)
    return layernorm_layer(b, norm2, add("residual2", x, ff(x)), s, mod.norm2)


def _causal(b, node):
    """forward(src, mask or src_mask, src_key_padding_mask, is_causal) of an encoder or encoder layer."""
    masks = [b.value(arg(node, 1, "mask", node.kwargs.get("src_mask"))), b.value(arg(node, 2, "src_key_padding_mask"))]
    if any(m is not None for m in masks):
        b.note("%s: attention masks' adds not counted" % (b.prefix(node) or "the encoder"))
    return bool(b.value(arg(node, 3, "is_causal", False)))


def encoder_layer(b, name, node, mod):
    return encoder_layer_block(b, b.prefix(node), mod, x_ref(b, node), _causal(b, node))


def encoder(b, name, node, mod):
    prefix, x = b.prefix(node), x_ref(b, node)
    causal = _causal(b, node)
    for i, layer in enumerate(mod.layers):
        if not isinstance(layer, _nn().TransformerEncoderLayer):
            raise Unsupported("layer %d is a %s" % (i, type(layer).__name__))
        x = encoder_layer_block(b, join(prefix, "layers.%d" % i), layer, x, causal)
    if mod.norm is not None:
        if not isinstance(mod.norm, _nn().LayerNorm):
            raise Unsupported("norm %s" % type(mod.norm).__name__)
        x = layernorm_layer(b, b.sub(prefix, "norm"), x, b.shapes[x], mod.norm)
    return x


# ------------------------------------------------------------ the table


def _nn():
    import torch.nn as nn
    return nn


def _F():
    import torch.nn.functional as F
    return F


_TABLE = None


def table():
    """[(module class, mapper)], most specific first."""
    global _TABLE
    if _TABLE is None:
        nn = _nn()
        t = [(nn.TransformerEncoder, encoder), (nn.TransformerEncoderLayer, encoder_layer),
             (nn.MultiheadAttention, multihead_attention),
             (nn.Conv1d, conv), (nn.Conv2d, conv), (nn.Conv3d, conv),
             (nn.ConvTranspose1d, conv_transpose), (nn.ConvTranspose2d, conv_transpose), (nn.ConvTranspose3d, conv_transpose),
             (nn.Linear, linear), (nn.BatchNorm1d, batchnorm), (nn.BatchNorm2d, batchnorm), (nn.BatchNorm3d, batchnorm),
             (nn.InstanceNorm1d, instance_norm), (nn.InstanceNorm2d, instance_norm), (nn.InstanceNorm3d, instance_norm),
             (nn.GroupNorm, instance_norm), (nn.LayerNorm, layernorm), (nn.Embedding, embedding),
             (nn.LocalResponseNorm, lrn), (nn.PReLU, prelu), (nn.ReLU6, simple("relu6")), (nn.Hardtanh, hardtanh),
             (nn.LeakyReLU, leaky_relu), (nn.Softmax, softmax), (nn.LogSoftmax, softmax), (nn.Flatten, flatten),
             (nn.Unflatten, view), (nn.PixelShuffle, copy_view), (nn.PixelUnshuffle, copy_view),
             (nn.MaxPool1d, max_pool), (nn.MaxPool2d, max_pool), (nn.MaxPool3d, max_pool),
             (nn.AvgPool1d, avg_pool), (nn.AvgPool2d, avg_pool), (nn.AvgPool3d, avg_pool),
             (nn.AdaptiveAvgPool2d, adaptive_avg_pool), (nn.Upsample, upsample),
             (nn.ZeroPad2d, pad_module), (nn.ConstantPad1d, pad_module), (nn.ConstantPad2d, pad_module),
             (nn.ConstantPad3d, pad_module), (nn.ReflectionPad1d, pad_module), (nn.ReflectionPad2d, pad_module),
             (nn.ReplicationPad1d, pad_module), (nn.ReplicationPad2d, pad_module), (nn.ReplicationPad3d, pad_module),
             (nn.Identity, identity), (nn.Dropout, identity), (nn.Dropout1d if hasattr(nn, "Dropout1d") else nn.Dropout, identity),
             (nn.Dropout2d, identity), (nn.Dropout3d, identity), (nn.AlphaDropout, identity)]
        for cls, op in (("ReLU", "relu"), ("GELU", "gelu"), ("SiLU", "silu"), ("Sigmoid", "sigmoid"), ("Tanh", "tanh"),
                        ("Hardswish", "hardswish"), ("Hardsigmoid", "hardsigmoid"), ("ELU", "elu"), ("SELU", "selu"),
                        ("Mish", "mish"), ("Softplus", "softplus")):
            t.append((getattr(nn, cls), simple(op)))
        if hasattr(nn, "RMSNorm"):  # torch 2.4
            t.append((nn.RMSNorm, rmsnorm))
        _TABLE = t
    return _TABLE


def module_mapper(mod):
    for cls, fn in table():
        if type(mod) is cls:
            return fn
    for cls, fn in table():
        if isinstance(mod, cls):
            return fn
    return None
