"""rsim_torch.trace(): a PyTorch module as an rsim network, through torch.fx.

    net = rsim_torch.trace(torchvision.models.resnet18(), torch.randn(1, 3, 224, 224), name="resnet18")
    rsim.run(scenario={"name": "s", "platforms": ["h100_sxm"], "networks": [net]})
    open("models/resnet18.yaml", "w").write(net.to_yaml())     # a zoo file: networks: [{model: resnet18}]

torch.fx.symbolic_trace records the forward pass (torch.nn modules stay whole, as leaves), ShapeProp runs
it once on the example inputs for every node's shapes, and each node becomes rsim layers named after the
module's own paths (`layer1.0.conv1`; a function inside a module: `layer1.0.add`). Every parameter is
counted once, so the network's params equal sum(p.numel() for p in module.parameters()). A node rsim has
no operator for becomes a placeholder (a `constant` of its output's shape, its parameters kept), is listed
in `net.unsupported` and the network's `ignored:` (summary.csv's ignored_ops) and warned about: never a
silent zero. Needs torch 1.13 or newer; nothing of rsim itself.
"""
import json
import operator
import re
import traceback
import warnings

from . import trace_nn, trace_ops

__all__ = ["trace", "TraceError", "Network"]


class TraceError(RuntimeError):
    """The module cannot be traced by torch.fx (data-dependent control flow, ...) or run on the inputs."""


class Network(dict):
    """An rsim network (the dict a scenario's `networks:` entry holds), with what the trace left out.

    unsupported: [{"layer", "op", "params"}] for every node rsim has no operator for (costed as nothing,
    also in the network's `ignored:`); notes: approximations made; unused: parameters forward never used
    (kept as `constant` layers so the parameter count still matches)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.unsupported, self.notes, self.unused = [], [], []

    def to_yaml(self):
        """The network as YAML: a zoo model file (models/NAME.yaml), or an entry of `networks:`."""
        return _yaml_map(self)

    def scenario(self, platforms, **keys):
        """A whole scenario holding this network, for rsim.run(scenario=...): platforms and other top-level keys."""
        out = {"name": self["name"], "platforms": list(platforms), "networks": [dict(self)]}
        out.update(keys)
        return out


def trace(module, example_inputs, name=None):
    """Trace `module` on `example_inputs` (a tensor or a tuple of them) into an rsim network (a Network dict).

    Raises TraceError naming the module when torch.fx cannot trace it (data-dependent control flow: then
    export it with torch.onnx.export and give rsim the .onnx file) or when it fails on the inputs."""
    import torch
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    label = name or type(module).__name__
    gm, strip = _symbolic_trace(module, label)
    states = [(m, m.training) for m in module.modules()]
    module.eval()
    try:
        with torch.no_grad():
            _ValueProp(gm).propagate(*example_inputs)
    except Exception as e:
        text = str(e).split("\n\nWhile executing")[0]  # fx's Interpreter adds the node and its traceback
        raise TraceError("rsim_torch.trace: %s (%s) failed on the example inputs: %s: %s"
                         % (label, type(module).__name__, type(e).__name__, text)) from e
    finally:
        for m, training in states:
            m.training = training
    b = _Builder(gm, module, strip, label)
    b.walk()
    return b.finish(_dtype_name(module, example_inputs))


# ---------------------------------------------------------------- tracing


def _tracer_class():
    import torch.fx as fx

    class Tracer(fx.Tracer):
        """fx's tracer (torch.nn modules as leaves), remembering which module each node was made in."""

        def __init__(self):
            super().__init__()
            self.scope = []

        def is_leaf_module(self, m, qualname):
            return trace_ops.known_module(m) or super().is_leaf_module(m, qualname)

        def call_module(self, m, forward, args, kwargs):
            self.scope.append(self.path_of_module(m))
            try:
                return super().call_module(m, forward, args, kwargs)
            finally:
                self.scope.pop()

        def create_node(self, *args, **kw):
            node = super().create_node(*args, **kw)
            node.meta["rsim_scope"] = self.scope[-1] if self.scope else ""
            return node

    return Tracer


def _symbolic_trace(module, label):
    """fx's graph of module; a module that is itself a leaf (nn.TransformerEncoder, nn.Conv2d) is traced as the
    one call of a wrapper whose child is named `root` (stripped from the names again)."""
    import torch
    import torch.fx as fx
    root, strip = module, ""
    if (trace_ops.known_module(module) or type(module).__module__.startswith("torch.nn")) \
            and not isinstance(module, torch.nn.Sequential):
        root = _wrapper_class(module)()
        root.add_module("root", module)
        strip = "root"
    tracer = _tracer_class()()
    try:
        with _unpacking_fixed():
            graph = tracer.trace(root)
    except fx.proxy.TraceError as e:
        raise TraceError(_control_flow_message(module, label, e)) from e
    except Exception as e:
        raise TraceError(_control_flow_message(module, label, e, control_flow=False)) from e
    return fx.GraphModule(root, graph), strip


class _unpacking_fixed(object):
    """torch 1.13's Proxy.__iter__ finds the unpacking instruction at f_lasti // 2, which Python 3.11's inline
    caches break (`a, b = self.mha(x, x, x)` fails with an IndexError); torch 2 searches by offset. While
    tracing, on torch 1.x under Python 3.11+, Proxy.__iter__ is torch 2's."""

    def __enter__(self):
        import sys
        import torch
        from torch.fx import proxy
        self.saved = None
        if sys.version_info >= (3, 11) and torch.__version__.split(".")[0] in ("0", "1"):
            self.saved = proxy.Proxy.__iter__
            proxy.Proxy.__iter__ = _proxy_iter
        return self

    def __exit__(self, *exc):
        from torch.fx import proxy
        if self.saved is not None:
            proxy.Proxy.__iter__ = self.saved
        return False


def _proxy_iter(self):
    import dis
    import inspect
    frame = inspect.currentframe().f_back
    for inst in dis.get_instructions(frame.f_code):
        if inst.offset == frame.f_lasti:
            if inst.opname == "UNPACK_SEQUENCE":
                return (self[i] for i in range(inst.argval))
            break
    return self.tracer.iter(self)


def _wrapper_class(module):
    """An nn.Module class whose forward takes the wrapped module's positional arguments (fx reads
    type(root).forward's signature for the placeholders) and calls self.root with them."""
    import inspect
    import torch
    params = list(inspect.signature(module.forward).parameters.values())
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    defaults = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
    args = ", ".join(n + ("=_d[%r]" % n if n in defaults else "") for n in names)
    scope = {"_d": defaults}
    exec("def forward(self, %s):\n    return self.root(%s)\n" % (args, ", ".join(names)), scope)
    return type("Traced" + type(module).__name__, (torch.nn.Module,), {"forward": scope["forward"]})


def _control_flow_message(module, label, e, control_flow=True):
    where = ""
    for frame in reversed(traceback.extract_tb(e.__traceback__)):
        if "/torch/" not in frame.filename.replace("\\", "/"):
            where = " at %s:%d (%s: %s)" % (frame.filename, frame.lineno, frame.name, (frame.line or "").strip())
            break
    if not control_flow:
        why = "torch.fx could not trace its forward"
    elif "iterated" in str(e):
        why = ("its forward iterates over a traced value (unpacking one, as `B, S, D = x.shape` or "
               "`q, k, v = t.chunk(3)`, is iterating: index it instead, x.shape[0], parts[0])")
    else:
        why = "its forward has data-dependent control flow"
    return ("rsim_torch.trace: %s (%s) cannot be traced: %s%s: %s: %s\n"
            "Use the ONNX path instead, which runs the model once on the inputs: "
            "torch.onnx.export(model, example_inputs, '%s.onnx', opset_version=17), then "
            "`rsim estimate %s.onnx --platform P` or a network {onnx: %s.onnx} in a scenario (docs/onnx.md)."
            % (label, type(module).__name__, why, where, type(e).__name__, e, label, label, label))


def _value_prop_class():
    import torch
    from torch.fx import Interpreter
    from torch.fx.node import map_aggregate
    from torch.fx.passes.shape_prop import ShapeProp

    try:
        from torch.fx.passes.shape_prop import _extract_tensor_metadata as extract
    except ImportError:  # pragma: no cover (a torch without it: ShapeProp's own run_node)
        extract = None

    class ValueProp(ShapeProp):
        """ShapeProp that also keeps the small non-tensor values (sizes, slices, ints) nodes compute, and
        lets the module's own error through (ShapeProp's run_node prints its traceback and raises another)."""

        def run_node(self, n):
            if extract is None:
                result = super().run_node(n)
            else:
                result = Interpreter.run_node(self, n)
                found = []

                def meta(obj):
                    if isinstance(obj, torch.Tensor):
                        found.append(obj)
                        return extract(obj)
                    return obj
                tensor_meta = map_aggregate(result, meta)
                if found:
                    n.meta["tensor_meta"] = tensor_meta
                n.meta["type"] = type(result)
            if not isinstance(result, torch.Tensor) and _small(result):
                n.meta["rsim_value"] = result
            return result

    return ValueProp


def _ValueProp(gm):
    return _value_prop_class()(gm)


def _small(v, depth=0):
    if v is None or isinstance(v, (bool, int, float, str, slice, type(Ellipsis))):
        return True
    if isinstance(v, (tuple, list)) and depth < 3 and len(v) < 64:
        return all(_small(x, depth + 1) for x in v)
    return type(v).__name__ in ("dtype", "device", "Size")


def _dtype_name(module, inputs):
    import torch
    names = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp64"}
    for t in list(module.parameters()) + [x for x in inputs if isinstance(x, torch.Tensor)]:
        if t.dtype in names:
            return names[t.dtype]
    return "fp32"


# ---------------------------------------------------------------- building the network


Unsupported = trace_nn.Unsupported


class _Builder(object):
    def __init__(self, gm, module, strip, label):
        self.gm, self.module, self.strip, self.label = gm, module, strip, label
        self.layers, self.names, self.shapes, self.refs = [], set(), {}, {}
        self.inputs, self.seen, self.unsupported, self.notes = {}, set(), [], []
        self.unused = []

    # names -------------------------------------------------------------
    def unique(self, base):
        base = base or "layer"
        name, k = base, 0
        while name in self.names:
            k += 1
            name = "%s_%d" % (base, k)
        self.names.add(name)
        return name

    def path(self, target):
        if self.strip and (target == self.strip or target.startswith(self.strip + ".")):
            target = target[len(self.strip) + 1:]
        return target or self.label

    def node_name(self, node):
        if node.op == "call_module":
            return self.unique(self.path(node.target))
        scope = self.path(node.meta.get("rsim_scope", "")) if node.meta.get("rsim_scope") else ""
        base = re.sub(r"_\d+$", "", node.name)
        return self.unique(scope + "." + base if scope else base)

    # layers ------------------------------------------------------------
    def layer(self, name, op, inputs, oshape, **attrs):
        """Add a layer; returns its reference. `inputs` are references; attrs with None are left out."""
        d = {"name": name, "op": op}
        prev = self.layers[-1]["name"] if self.layers else None
        if list(inputs) != [prev] or prev is None:
            d["inputs"] = list(inputs)
        d.update((k, v) for k, v in attrs.items() if v is not None)
        self.layers.append(d)
        self.names.add(name)
        self.shapes[name] = tuple(oshape)
        return name

    def multi(self, name, op, inputs, shapes, **attrs):
        self.layer(name, op, inputs, shapes[0], **attrs)
        refs = tuple("%s:%d" % (name, k) for k in range(len(shapes)))
        for r, s in zip(refs, shapes):
            self.shapes[r] = tuple(s)
        return refs

    def prefix(self, node):
        """A module call's path for the layers it expands to ("" for the traced module itself)."""
        if self.strip and node.target == self.strip:
            return ""
        return self.path(node.target)

    def sub(self, prefix, part):
        return self.unique(prefix + "." + part if prefix else part)

    def constant(self, name, shape, params=False):
        return self.layer(name, "constant", [], shape, shape=list(shape), params=True if params else None)

    def owns(self, ref, tensors):
        """The layer `ref` counts these tensors as its parameters: mark what another layer already counts."""
        tensors = [t for t in tensors if t is not None]
        fresh = sum(t.numel() for t in tensors if id(t) not in self.seen)
        total = sum(t.numel() for t in tensors)
        self.seen.update(id(t) for t in tensors)
        d = self._layer_dict(ref)
        if total and fresh == 0:
            d["tied_weights"] = True
        elif fresh < total:
            d["shared_params"] = total - fresh

    def owns_group(self, refs, tensors):
        """Layers that together count these tensors (a packed q, k, v projection split in three)."""
        tensors = [t for t in tensors if t is not None]
        fresh = [t for t in tensors if id(t) not in self.seen]
        self.seen.update(id(t) for t in tensors)
        if tensors and not fresh:
            for r in refs:
                self._layer_dict(r)["tied_weights"] = True
        elif len(fresh) < len(tensors):
            self.note("%s: partly shared weights counted in full" % refs[0])

    def _layer_dict(self, ref):
        name = ref.split(":")[0]
        for d in reversed(self.layers):
            if d["name"] == name:
                return d
        raise KeyError(ref)

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)

    # fx nodes ------------------------------------------------------------
    def meta_shapes(self, node):
        m = node.meta.get("tensor_meta")
        if m is None:
            return None
        if hasattr(m, "shape"):
            return tuple(int(d) for d in m.shape)
        return [tuple(int(d) for d in x.shape) if hasattr(x, "shape") else None for x in _flat(m)]

    def is_tensor(self, a):
        import torch
        import torch.fx as fx
        if not isinstance(a, fx.Node):
            return isinstance(a, torch.Tensor)
        if a.op == "get_attr":
            return isinstance(self.attr(a.target), torch.Tensor)
        return hasattr(a.meta.get("tensor_meta"), "shape") or isinstance(self.refs.get(a), str)

    def attr(self, target):
        obj = self.gm
        for part in target.split("."):
            obj = getattr(obj, part)
        return obj

    def ref(self, a, name_hint="scalar"):
        """The reference of a tensor argument: a node's layer, a parameter or buffer as a constant, a number as a scalar."""
        import torch
        import torch.fx as fx
        if isinstance(a, fx.Node):
            if a in self.refs and self.refs[a] is not None:
                return self.refs[a]
            if a.op == "get_attr":
                t = self.attr(a.target)
                fresh = isinstance(t, torch.nn.Parameter) and id(t) not in self.seen
                self.seen.add(id(t))
                r = self.constant(self.unique(self.path(a.target)), tuple(t.shape), params=fresh)
                self.refs[a] = r
                return r
            raise Unsupported("input %s is not a tensor rsim has" % a.name)
        if isinstance(a, torch.Tensor):
            return self.constant(self.unique(name_hint), tuple(a.shape))
        if isinstance(a, (int, float, bool)):
            return self.constant(self.unique(name_hint), ())
        raise Unsupported("operand %r" % (a,))

    def operand(self, a, name):
        """A tensor argument's reference, or a scalar constant for a number (x * 0.5, x / math.sqrt(d))."""
        if self.is_tensor(a):
            return self.ref(a)
        v = self.value(a)
        if isinstance(v, (int, float, bool)):
            return self.constant(self.unique(name + ".scalar"), ())
        raise Unsupported("operand %r" % (v,))

    def value(self, a):
        """A non-tensor argument's value: nodes computed while tracing (sizes, ints) by their recorded value."""
        import torch.fx as fx
        if isinstance(a, fx.Node):
            if "rsim_value" in a.meta:
                return a.meta["rsim_value"]
            return a
        if isinstance(a, (list, tuple)):
            return type(a)(self.value(x) for x in a)
        if isinstance(a, slice):
            return slice(self.value(a.start), self.value(a.stop), self.value(a.step))
        return a

    def consume(self, a):
        """A parameter given to a function whose rsim layer counts it (F.linear's weight): no constant for it."""
        import torch.fx as fx
        if isinstance(a, fx.Node) and a.op == "get_attr":
            self.refs.setdefault(a, None)
            return self.attr(a.target)
        return None

    # the walk ------------------------------------------------------------
    def walk(self):
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                shape = self.meta_shapes(node)
                if isinstance(shape, tuple):
                    self.inputs[node.name] = list(shape)
                    self.names.add(node.name)
                    self.refs[node] = node.name
                    self.shapes[node.name] = shape
                continue
            if node.op in ("output", "get_attr"):
                continue
            shapes = self.meta_shapes(node)
            if shapes is None and not (node.op == "call_module" or node.target is operator.getitem):
                self.refs[node] = None  # size arithmetic and other non-tensor values: no layer
                continue
            self.visit(node, shapes)

    def visit(self, node, shapes):
        mod = self.gm.get_submodule(node.target) if node.op == "call_module" else None
        fn, what = trace_ops.lookup(node, mod)
        name = None
        try:
            if fn is None:
                raise Unsupported("")
            name = self.node_name(node) if fn is not trace_ops.getitem else None
            out = fn(self, name, node, mod)
        except Unsupported as e:
            name = name or self.node_name(node)
            out = self.placeholder(node, name, what + (" (%s)" % e if str(e) else ""), shapes, mod)
        self.refs[node] = out

    def placeholder(self, node, name, what, shapes, mod):
        fresh = [p for p in (mod.parameters() if mod is not None else []) if id(p) not in self.seen]
        self.seen.update(id(p) for p in fresh)
        n = sum(p.numel() for p in fresh)
        if shapes is None:
            out = None
        elif isinstance(shapes, tuple):
            out = self.constant(name, shapes)
        else:
            out = self._placeholders(name, node.meta.get("tensor_meta"))
        if n:
            self.constant(self.unique(name + ".params"), (n,), params=True)
        self.unsupported.append({"layer": name, "op": what, "params": n})
        return out

    def _placeholders(self, name, meta):
        """Constants shaped as a node's outputs, nested as its tuples are ((out, (h, c)) of an LSTM)."""
        if hasattr(meta, "shape"):
            return self.constant(self.unique(name), tuple(int(d) for d in meta.shape))
        if isinstance(meta, (tuple, list)):
            return tuple(self._placeholders("%s.%d" % (name, k), m) for k, m in enumerate(meta))
        return None

    def finish(self, dtype):
        for pname, p in self.module.named_parameters():
            if id(p) not in self.seen:
                self.seen.add(id(p))
                self.constant(self.unique(pname), tuple(p.shape), params=True)
                self.unused.append(pname)
        net = Network(name=self.label, file_dtype=dtype, inputs=self.inputs)
        if self.unsupported:
            counts = {}
            for u in self.unsupported:
                key = u["op"].split(" (")[0]
                counts[key] = counts.get(key, 0) + 1
            net["ignored"] = counts
        net["layers"] = self.layers
        net.unsupported, net.notes, net.unused = self.unsupported, self.notes, self.unused
        if self.unsupported:
            listed = ", ".join("%s (%s)" % (u["layer"], u["op"]) for u in self.unsupported[:12])
            more = "" if len(self.unsupported) <= 12 else ", and %d more" % (len(self.unsupported) - 12)
            warnings.warn("rsim_torch.trace(%s): %d operator(s) rsim does not know are left out of the counts "
                          "(their outputs kept as placeholders, their parameters counted): %s%s"
                          % (self.label, len(self.unsupported), listed, more), stacklevel=3)
        if self.unused:
            warnings.warn("rsim_torch.trace(%s): parameters forward never used, counted as constants: %s"
                          % (self.label, ", ".join(self.unused[:12])), stacklevel=3)
        return net


def _flat(m):
    if hasattr(m, "shape"):  # a TensorMetadata (itself a named tuple)
        return [m]
    if isinstance(m, (tuple, list)):
        out = []
        for x in m:
            out.extend(_flat(x))
        return out
    if isinstance(m, dict):
        return _flat(list(m.values()))
    return [m]


# ---------------------------------------------------------------- YAML


_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*$")
_KEYWORDS = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"}


def _yaml_scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if v is None:
        return "null"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_yaml_scalar(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join("%s: %s" % (_yaml_scalar(k), _yaml_scalar(x)) for k, x in v.items()) + "}"
    s = str(v)
    if _PLAIN.match(s) and s.lower() not in _KEYWORDS:
        return s
    return json.dumps(s)


def _yaml_map(net):
    lines = ["# traced from PyTorch by rsim_torch.trace (torch.fx)"]
    for u in getattr(net, "unsupported", []):
        lines.append("# not counted (no rsim operator): %s: %s" % (u["layer"], u["op"]))
    for n in getattr(net, "notes", []):
        lines.append("# note: %s" % n)
    for k, v in net.items():
        if k == "layers":
            lines.append("layers:")
            lines.extend("  - " + _yaml_scalar(d) for d in v)
        else:
            lines.append("%s: %s" % (k, _yaml_scalar(v)))
    return "\n".join(lines) + "\n"
