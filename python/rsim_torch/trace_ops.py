"""rsim_torch.trace(): torch functions and Tensor methods (fx call_function / call_method nodes) as rsim layers.

Mappers are fn(b, name, node, mod) as in trace_nn; lookup(node, mod) picks one (None: unsupported) and
names what the node is (`GroupNorm`, `torch.cumprod`, `Tensor.scatter_`) for the unsupported list.
"""
import operator

from . import trace_nn
from .trace_nn import Unsupported, arg, out_shape, pair

UNARY = {"relu": "relu", "relu_": "relu", "relu6": "relu6", "gelu": "gelu", "silu": "silu", "sigmoid": "sigmoid",
         "sigmoid_": "sigmoid", "tanh": "tanh", "tanh_": "tanh", "hardswish": "hardswish", "hardsigmoid": "hardsigmoid",
         "elu": "elu", "selu": "selu", "mish": "mish", "softplus": "softplus", "exp": "exp", "log": "log",
         "sqrt": "sqrt", "abs": "abs", "neg": "neg", "sin": "sin", "cos": "cos", "erf": "erf", "floor": "floor",
         "ceil": "ceil", "round": "round", "sign": "sign", "reciprocal": "reciprocal", "logical_not": "logical_not",
         "clamp": "clip", "clip": "clip", "clamp_": "clip", "hardtanh": "clip", "neg_": "neg", "exp_": "exp"}
BINARY = {"add": "add", "add_": "add", "iadd": "add", "sub": "sub", "sub_": "sub", "isub": "sub", "subtract": "sub",
          "mul": "mul", "mul_": "mul", "imul": "mul", "multiply": "mul", "truediv": "div", "div": "div",
          "div_": "div", "itruediv": "div", "divide": "div", "true_divide": "div", "pow": "pow", "ipow": "pow",
          "eq": "equal", "gt": "greater", "ge": "greater_equal", "lt": "less", "le": "less_equal",
          "and_": "logical_and", "or_": "logical_or", "xor": "logical_xor", "logical_and": "logical_and",
          "logical_or": "logical_or", "logical_xor": "logical_xor", "maximum": "max", "minimum": "min",
          "remainder": "mod", "mod": "mod", "fmod": "mod"}
REDUCE = {"mean": "reduce_mean", "sum": "reduce_sum", "amax": "reduce_max", "amin": "reduce_min",
          "prod": "reduce_prod", "logsumexp": "reduce_log_sum_exp"}
ALIAS = {"contiguous", "to", "float", "half", "bfloat16", "double", "type", "type_as", "detach", "clone",
         "requires_grad_", "dropout", "dropout_", "alpha_dropout", "feature_alpha_dropout", "dropout1d",
         "dropout2d", "dropout3d", "cpu", "cuda"}
VIEW = {"view", "reshape", "unsqueeze", "squeeze", "unflatten", "view_as", "reshape_as", "unsqueeze_", "squeeze_"}
CREATE = {"zeros", "ones", "full", "empty", "arange", "rand", "randn", "randint", "zeros_like", "ones_like",
          "full_like", "empty_like", "rand_like", "randn_like", "tensor", "eye", "linspace", "new_zeros",
          "new_ones", "new_full", "new_empty", "new_tensor", "triu", "tril"}


def _x(b, node):
    return b.ref(node.args[0])


def unary(b, name, node, mod):
    op = UNARY[_name(node)]
    if op == "clip" and _name(node) in ("clamp", "clip", "clamp_"):
        lo, hi = b.value(arg(node, 1, "min")), b.value(arg(node, 2, "max"))
        if (lo, hi) == (0, 6):
            op = "relu6"
        elif hi is None and lo == 0:
            op = "relu"
    if op == "clip" and _name(node) == "hardtanh":
        lo, hi = b.value(arg(node, 1, "min_val", -1.0)), b.value(arg(node, 2, "max_val", 1.0))
        op = "relu6" if (lo, hi) == (0, 6) else "clip"
    return b.layer(name, op, [_x(b, node)], out_shape(b, node))


def rsqrt(b, name, node, mod):
    s = out_shape(b, node)
    r = b.layer(name, "sqrt", [_x(b, node)], s)
    return b.layer(b.unique(name + ".reciprocal"), "reciprocal", [r], s)


def leaky_relu(b, name, node, mod):
    slope = b.value(arg(node, 1, "negative_slope", 0.01))
    return b.layer(name, "leaky_relu", [_x(b, node)], out_shape(b, node), negative_slope=float(slope))


def binary(b, name, node, mod):
    nm = _name(node)
    a, c = arg(node, 0, "input"), arg(node, 1, "other")
    if nm in ("max", "min"):
        if not b.is_tensor(c):
            return reduce(b, name, node, mod)
        op = nm
    else:
        op = BINARY[nm]
    if not (b.is_tensor(a) or b.is_tensor(c)):
        raise Unsupported("no tensor operand")
    return b.layer(name, op, [b.operand(a, name), b.operand(c, name)], out_shape(b, node))


def rsub(b, name, node, mod):
    a, c = arg(node, 0, "input"), arg(node, 1, "other")
    return b.layer(name, "sub", [b.operand(c, name), b.operand(a, name)], out_shape(b, node))


def matmul(b, name, node, mod):
    a, c = arg(node, 0, "input"), arg(node, 1, "other", arg(node, 1, "mat2"))
    if len(b.shapes[b.ref(a)]) < 2 or len(b.shapes[b.ref(c)]) < 2:
        raise Unsupported("a 1-D operand")
    return b.layer(name, "matmul", [b.ref(a), b.ref(c)], out_shape(b, node))


def addmm(b, name, node, mod):
    bias, m1, m2 = arg(node, 0, "input"), arg(node, 1, "mat1"), arg(node, 2, "mat2")
    return b.layer(name, "gemm", [b.ref(m1), b.ref(m2), b.operand(bias, name)], out_shape(b, node))


def einsum(b, name, node, mod):
    eq = b.value(node.args[0])
    ops = node.args[1:]
    if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
        ops = ops[0]
    return b.layer(name, "einsum", [b.ref(o) for o in ops], out_shape(b, node), equation=str(eq).replace(" ", ""))


def softmax(b, name, node, mod):
    dim = b.value(arg(node, 1, "dim"))
    op = "log_softmax" if _name(node) == "log_softmax" else "softmax"
    return b.layer(name, op, [_x(b, node)], out_shape(b, node), axis=-1 if dim is None else int(dim))


def reduce(b, name, node, mod):
    nm = _name(node)
    op = {"max": "reduce_max", "min": "reduce_min"}.get(nm) or REDUCE[nm]
    dim = b.value(arg(node, 1, "dim"))
    keep = bool(b.value(arg(node, 2, "keepdim", False)))
    if nm in ("max", "min") and dim is not None:
        raise Unsupported("over a dim (values and indices)")
    axes = None if dim is None else [int(d) for d in (dim if isinstance(dim, (list, tuple)) else [dim])]
    return b.layer(name, op, [_x(b, node)], out_shape(b, node), axes=axes, keepdims=keep)


def norm(b, name, node, mod):
    p = b.value(arg(node, 1, "p", 2))
    if p not in (2, "fro", 2.0, None):
        raise Unsupported("p=%r" % (p,))
    dim = b.value(arg(node, 2, "dim"))
    axes = None if dim is None else [int(d) for d in (dim if isinstance(dim, (list, tuple)) else [dim])]
    keep = bool(b.value(arg(node, 3, "keepdim", False)))
    return b.layer(name, "reduce_l2", [_x(b, node)], out_shape(b, node), axes=axes, keepdims=keep)


def argmax(b, name, node, mod):
    dim = b.value(arg(node, 1, "dim"))
    if dim is None:
        raise Unsupported("over every element")
    keep = bool(b.value(arg(node, 2, "keepdim", False)))
    return b.layer(name, _name(node), [_x(b, node)], out_shape(b, node), axis=int(dim), keepdims=keep)


def cumsum(b, name, node, mod):
    return b.layer(name, "cumsum", [_x(b, node)], out_shape(b, node), axis=int(b.value(arg(node, 1, "dim"))))


def alias(b, name, node, mod):
    b.names.discard(name)
    return _x(b, node)


def view(b, name, node, mod):
    s = out_shape(b, node)
    return b.layer(name, "reshape", [_x(b, node)], s, shape=list(s))


def flatten(b, name, node, mod):
    start, end = b.value(arg(node, 1, "start_dim", 0)), b.value(arg(node, 2, "end_dim", -1))
    return b.layer(name, "flatten", [_x(b, node)], out_shape(b, node), start_dim=int(start), end_dim=int(end))


def permute(b, name, node, mod):
    dims = b.value(list(node.args[1:]) or node.kwargs.get("dims"))
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    return b.layer(name, "permute", [_x(b, node)], out_shape(b, node), dims=[int(d) for d in dims])


def transpose(b, name, node, mod):
    if _name(node) in ("t", "T"):
        dims = [0, 1]
    else:
        dims = [int(b.value(arg(node, 1, "dim0"))), int(b.value(arg(node, 2, "dim1")))]
    return b.layer(name, "transpose", [_x(b, node)], out_shape(b, node), dims=dims)


def get_attr_call(b, name, node, mod):
    """builtins.getattr(x, 'T') and the like, on a tensor."""
    what = b.value(node.args[1])
    if what in ("T", "mT") and len(b.shapes[_x(b, node)]) == 2:
        return b.layer(name, "transpose", [_x(b, node)], out_shape(b, node), dims=[0, 1])
    raise Unsupported("attribute %s" % what)


def concat(b, name, node, mod):
    tensors = arg(node, 0, "tensors")
    dim = int(b.value(arg(node, 1, "dim", 0)))
    refs = [b.ref(t) for t in tensors]
    if len(refs) == 1:
        return b.layer(name, "identity", refs, out_shape(b, node))
    return b.layer(name, "concat", refs, out_shape(b, node), axis=dim)


def stack(b, name, node, mod):
    tensors = arg(node, 0, "tensors")
    refs = [b.ref(t) for t in tensors]
    s = out_shape(b, node)
    first = b.shapes[refs[0]]
    joined = (first[0] * len(refs),) + tuple(first[1:]) if first else (len(refs),)
    r = b.layer(name, "concat", refs, joined, axis=0) if len(refs) > 1 else refs[0]
    return b.layer(b.unique(name + ".view"), "reshape", [r], s, shape=list(s))


def split(b, name, node, mod):
    """split, chunk and unbind: one split layer (a copy of each part); unbind's parts lose their axis (a view)."""
    shapes = b.meta_shapes(node)
    x = _x(b, node)
    nm = _name(node)
    dim = int(b.value(arg(node, 2 if nm != "unbind" else 1, "dim", 0)))
    if nm == "unbind":
        dim = int(b.value(arg(node, 1, "dim", 0)))
    in_shape = b.shapes[x]
    axis = dim % len(in_shape)
    if len(shapes) == 1:
        return (b.layer(name, "identity", [x], shapes[0]),)
    if nm == "unbind":
        parts = [tuple(in_shape[:axis]) + (1,) + tuple(in_shape[axis + 1:])] * len(shapes)
    else:
        parts = list(shapes)
    refs = b.multi(name, "split", [x], parts, axis=axis, sizes=[p[axis] for p in parts])
    if nm == "unbind":
        refs = tuple(b.layer(b.unique("%s.%d" % (name, k)), "reshape", [r], s, shape=list(s))
                     for k, (r, s) in enumerate(zip(refs, shapes)))
    return refs


def expand(b, name, node, mod):
    s = out_shape(b, node)
    return b.layer(name, "expand", [_x(b, node)], s, shape=list(s))


def repeat(b, name, node, mod):
    s = out_shape(b, node)
    x = _x(b, node)
    ins = b.shapes[x]
    if len(ins) < len(s):
        ins = (1,) * (len(s) - len(ins)) + tuple(ins)
        x = b.layer(b.unique(name + ".view"), "reshape", [x], ins, shape=list(ins))
    return b.layer(name, "tile", [x], s, repeats=[o // i for o, i in zip(s, ins)])


def create(b, name, node, mod):
    return b.constant(name, out_shape(b, node))


def where(b, name, node, mod):
    c, x, y = arg(node, 0, "condition"), arg(node, 1, "input"), arg(node, 2, "other")
    return b.layer(name, "where", [b.operand(c, name), b.operand(x, name), b.operand(y, name)], out_shape(b, node))


def masked_fill(b, name, node, mod):
    x, mask, v = arg(node, 0, "input"), arg(node, 1, "mask"), arg(node, 2, "value")
    return b.layer(name, "where", [b.ref(mask), b.operand(v, name), b.ref(x)], out_shape(b, node))


def getitem(b, name, node, mod):
    """x[k] of a tuple a module or split returned picks its reference; a tensor's x[...] slices it."""
    import torch.fx as fx
    src, idx = node.args[0], b.value(node.args[1])
    r = b.refs.get(src) if isinstance(src, fx.Node) else None
    if isinstance(r, tuple):
        if isinstance(idx, slice):
            return r[idx]
        pick = r[idx]
        if pick is None and b.meta_shapes(node) is not None:
            raise Unsupported("output %d of %s, which rsim does not model" % (idx, src.name))
        return pick
    if not b.is_tensor(src):
        return None
    return index(b, b.node_name(node), node, src, idx)


def index(b, name, node, src, idx):
    x = b.ref(src)
    shape = b.shapes[x]
    idx = idx if isinstance(idx, tuple) else (idx,)
    if any(not (i is None or i is Ellipsis or isinstance(i, (int, slice))) for i in idx):
        raise Unsupported("indexing with tensors")
    used = sum(1 for i in idx if isinstance(i, (int, slice)))
    full = []
    for i in idx:
        full.extend([slice(None)] * (len(shape) - used) if i is Ellipsis else [i])
    full += [slice(None)] * (len(shape) - sum(1 for i in full if i is not None))
    starts, ends, axes, steps, sliced, axis = [], [], [], [], list(shape), 0
    for i in full:
        if i is None:
            continue
        start, stop, step = (i % shape[axis], i % shape[axis] + 1, 1) if isinstance(i, int) else i.indices(shape[axis])
        if (start, stop, step) != (0, shape[axis], 1):
            starts.append(start), ends.append(stop), axes.append(axis), steps.append(step)
            sliced[axis] = len(range(start, stop, step))
        axis += 1
    out = out_shape(b, node)
    if axes:
        if len(axes) == 1:
            x = b.layer(name, "slice", [x], sliced, axis=axes[0], start=starts[0], end=ends[0],
                        step=steps[0] if steps[0] != 1 else None)
        else:
            x = b.layer(name, "slice_nd", [x], sliced, starts=starts, ends=ends, axes=axes,
                        steps=steps if any(s != 1 for s in steps) else None)
        if tuple(sliced) == out:
            return x
        name = b.unique(name + ".view")
    return b.layer(name, "reshape", [x], out, shape=list(out))


# ------------------------------------------------------------ functional forms of nn layers


def f_linear(b, name, node, mod):
    w, bias = arg(node, 1, "weight"), arg(node, 2, "bias")
    wt, bt = b.consume(w), b.consume(bias)
    if wt is None:
        raise Unsupported("a computed weight")
    r = b.layer(name, "linear", [_x(b, node)], out_shape(b, node), out_features=int(wt.shape[0]),
                bias=bias is not None)
    b.owns(r, [wt, bt])
    return r


def f_layer_norm(b, name, node, mod):
    shape = b.value(arg(node, 1, "normalized_shape"))
    w, bias = arg(node, 2, "weight"), arg(node, 3, "bias")
    wt, bt = b.consume(w), b.consume(bias)
    if (w is not None and wt is None) or (bias is not None and bt is None):
        raise Unsupported("a computed weight")
    if (w is None) != (bias is None):
        b.note("%s: layer_norm with only one of weight and bias: rsim counts 2·D parameters" % name)
    dims = len(shape) if isinstance(shape, (list, tuple)) else 1
    r = b.layer(name, "layernorm", [_x(b, node)], out_shape(b, node), dims=dims, affine=None if w is not None else False)
    b.owns(r, [wt, bt])
    return r


def f_embedding(b, name, node, mod):
    wt = b.consume(arg(node, 1, "weight"))
    if wt is None:
        raise Unsupported("a computed table")
    r = b.layer(name, "embedding", [_x(b, node)], out_shape(b, node), vocab=int(wt.shape[0]), dim=int(wt.shape[1]))
    b.owns(r, [wt])
    return r


def f_conv2d(b, name, node, mod):
    w, bias = arg(node, 1, "weight"), arg(node, 2, "bias")
    wt, bt = b.consume(w), b.consume(bias)
    if wt is None or wt.dim() != 4:
        raise Unsupported("a computed or non-2-D weight")
    v = lambda i, k, d: b.value(arg(node, i, k, d))  # noqa: E731
    r = b.layer(name, "conv2d", [_x(b, node)], out_shape(b, node), out_channels=int(wt.shape[0]),
                kernel=pair(list(wt.shape[2:])), stride=pair(v(3, "stride", 1)), padding=pair(v(4, "padding", 0)),
                dilation=pair(v(5, "dilation", 1)), groups=int(v(6, "groups", 1)), bias=bias is not None)
    b.owns(r, [wt, bt])
    return r


def f_pool(kind):
    def fn(b, name, node, mod):
        v = lambda i, k, d: b.value(arg(node, i, k, d))  # noqa: E731
        if kind == "max" and v(6, "return_indices", False):
            raise Unsupported("return_indices")
        ceil = v(5, "ceil_mode", False) if kind == "max" else v(4, "ceil_mode", False)
        dil = v(4, "dilation", 1) if kind == "max" else 1
        return trace_nn.pool(b, name, _x(b, node), out_shape(b, node), kind, v(1, "kernel_size", None),
                             v(2, "stride", None), v(3, "padding", 0), dil, ceil)
    return fn


def f_adaptive_avg(b, name, node, mod):
    return trace_nn.adaptive_avg(b, name, _x(b, node), out_shape(b, node))


def f_interpolate(b, name, node, mod):
    return trace_nn.resize(b, name, _x(b, node), out_shape(b, node), b.value(arg(node, 3, "mode", "nearest")))


def f_pad(b, name, node, mod):
    return trace_nn.pad_layer(b, name, _x(b, node), out_shape(b, node), b.value(arg(node, 1, "pad")),
                              b.value(arg(node, 2, "mode", "constant")))


def sdpa(b, name, node, mod):
    """F.scaled_dot_product_attention (torch 2): q (..., H, L, E) as rsim's (B, L, H·E), views either side."""
    q, k, v = (b.ref(arg(node, i, key)) for i, key in enumerate(("query", "key", "value")))
    qs, ks, vs = b.shapes[q], b.shapes[k], b.shapes[v]
    if len(qs) != 4 or ks[-1] != qs[-1] or vs[-1] != qs[-1]:
        raise Unsupported("shapes %s, %s, %s" % (qs, ks, vs))
    if arg(node, 3, "attn_mask") is not None:
        b.note("%s: the attention mask's add not counted" % name)
    flat = []
    for part, r, s in (("q", q, qs), ("k", k, ks), ("v", v, vs)):
        t = (s[0], s[2], s[1] * s[3])
        flat.append(b.layer(b.unique("%s.%s_view" % (name, part)), "reshape", [r], t, shape=list(t)))
    causal = bool(b.value(arg(node, 5, "is_causal", False)))
    att = b.layer(name, "attention", flat, (qs[0], qs[2], qs[1] * qs[3]), heads=qs[1], kv_heads=ks[1] if ks[1] != qs[1] else None,
                  head_dim=qs[3], causal=True if causal else None)
    s = out_shape(b, node)
    return b.layer(b.unique(name + ".view"), "reshape", [att], s, shape=list(s))


# ------------------------------------------------------------ lookup


def _name(node):
    t = node.target
    return t if isinstance(t, str) else getattr(t, "__name__", str(t))


_BY_NAME = None


def by_name():
    global _BY_NAME
    if _BY_NAME is None:
        t = {}
        t.update((n, unary) for n in UNARY)
        t.update((n, binary) for n in BINARY)
        t.update((n, reduce) for n in REDUCE)
        t.update((n, alias) for n in ALIAS)
        t.update((n, view) for n in VIEW)
        t.update((n, create) for n in CREATE)
        t.update({"max": binary, "min": binary, "rsub": rsub, "matmul": matmul, "bmm": matmul, "mm": matmul,
                  "addmm": addmm, "einsum": einsum, "softmax": softmax, "log_softmax": softmax, "norm": norm,
                  "argmax": argmax, "argmin": argmax, "cumsum": cumsum, "flatten": flatten, "permute": permute,
                  "transpose": transpose, "t": transpose, "cat": concat, "concat": concat, "stack": stack,
                  "split": split, "chunk": split, "unbind": split, "expand": expand, "expand_as": expand,
                  "repeat": repeat, "where": where, "masked_fill": masked_fill, "rsqrt": rsqrt,
                  "leaky_relu": leaky_relu, "linear": f_linear, "layer_norm": f_layer_norm, "embedding": f_embedding,
                  "conv2d": f_conv2d, "avg_pool2d": f_pool("avg"), "adaptive_avg_pool2d": f_adaptive_avg,
                  "interpolate": f_interpolate, "upsample": f_interpolate, "pad": f_pad,
                  "scaled_dot_product_attention": sdpa, "getattr": get_attr_call, "getitem": getitem})
        _BY_NAME = t
    return _BY_NAME


def _by_identity():
    import torch.nn.functional as F
    return {F.max_pool1d: f_pool("max"), F.max_pool2d: f_pool("max"), F.max_pool3d: f_pool("max")}


def _what(node):
    t = node.target
    if node.op == "call_method":
        return "Tensor." + t
    mod = getattr(t, "__module__", None) or ""
    short = {"torch.nn.functional": "F", "torch._C._nn": "F", "_operator": "operator", "torch.functional": "torch"}
    return "%s.%s" % (short.get(mod, mod), getattr(t, "__name__", str(t)))


def _torchish(t):
    mod = getattr(t, "__module__", None) or ""
    return mod.split(".")[0] in ("torch", "_operator", "operator") or t is getattr


def lookup(node, mod):
    """(mapper or None, what the node is)."""
    if node.op == "call_module":
        return trace_nn.module_mapper(mod), type(mod).__name__
    if node.op == "call_method":
        return by_name().get(node.target), _what(node)
    t = node.target
    if t is operator.getitem:
        return getitem, "getitem"
    ident = _by_identity()
    if t in ident:
        return ident[t], _what(node)
    if not _torchish(t):
        return None, _what(node)
    return by_name().get(getattr(t, "__name__", "")), _what(node)


def known_module(m):
    return trace_nn.module_mapper(m) is not None
