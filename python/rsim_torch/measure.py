"""`measure`: every layer of a plan, and every network as a forward pass, timed on a device.

Writes measured.csv (the plan's predicted columns, rsim's results.csv layout, then the measured
ones) and measured_networks.csv (one row per point, network and execution mode), the files
`rsim calibrate` reads.
"""

import csv
import json
import math
import os
import statistics
import sys
import tempfile

import torch

from . import ops
from .device import BYTES, Unsupported, device_name, free_bytes, layout, modes_of, set_math, synchronize, time_calls, time_graph

RESULT_COLUMNS = [
    "point", "platform", "network", "layer", "op", "dtype", "compute_dtype", "weights_dtype", "kv_dtype", "input_shape", "output_shape",
    "macs", "flops", "macs_executed", "flops_executed", "mac_count", "params", "weight_bytes", "input_bytes", "output_bytes", "kv_read_bytes",
    "kv_write_bytes", "scratch_bytes", "bytes", "intensity", "mac_intensity", "compute_roof", "memory_level", "peak_flops_per_s",
    "bandwidth_bytes_per_s", "attainable_flops_per_s", "time_s", "bound", "derated_peak_flops_per_s", "derated_bandwidth_bytes_per_s",
    "derated_attainable_flops_per_s", "derated_time_s", "derated_bound", "kernel", "efficiency_compute", "efficiency_bandwidth", "flops_per_mac",
    "memory_model", "comm_bytes", "comm_time_s", "collective",
]
MEASURED_COLUMNS = [
    "measured_time_s", "measured_min_s", "measured_max_s", "measured_reps", "measured_flops_per_s", "measured_bytes_per_s", "measured_over_bound",
    "measured_primitive", "measured_impl", "measured_note", "channels_per_group", "measured_execution", "beats_bound",
]
NETWORK_COLUMNS = ["point", "network", "model", "batch", "dtype", "execution", "measured_time_s", "measured_min_s", "measured_reps", "measured_note"]


class PlanError(Exception):
    pass


def load_plan(path):
    try:
        with open(path) as f:
            plan = json.load(f)
    except (OSError, ValueError) as e:
        raise PlanError("%s: not a plan file (%s); write one with `rsim plan SCENARIO -o plan.json`" % (path, e))
    if not isinstance(plan, dict) or plan.get("rsim_plan") != 1 or not isinstance(plan.get("points"), list):
        raise PlanError("%s: not an rsim plan of version 1 (no \"rsim_plan\": 1); write one with `rsim plan SCENARIO -o plan.json`" % path)
    return plan


def _shape_text(shapes):
    """Shapes as rsim's results.csv writes them: dims joined by x, tensors by ; and a 0-d tensor as scalar
    (rsim calibrate matches measured_layers by this text)."""
    return ";".join("x".join(str(d) for d in s) if len(s) else "scalar" for s in shapes)


def _num(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    return str(v)


def _elements(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def network_bytes(net):
    """What a forward pass of the network holds at most: every weight, and every layer's output
    (the forward keeps each output until the pass ends)."""
    total = 0
    for L in net["layers"]:
        p = L["predicted"][0] if L["predicted"] else {}
        total += p.get("params", 0) * BYTES.get(L.get("weights_dtype", "fp32"), 4)
        total += sum(_elements(s) for s in L["output_shapes"]) * BYTES.get(L["dtype"], 4)
    for i in net["inputs"]:
        total += _elements(i["shape"]) * BYTES.get(i["dtype"], 4)
    return total


def check_memory(plan, dev):
    free = free_bytes(dev)
    for pt in plan["points"]:
        for net in pt["networks"]:
            need = network_bytes(net)
            if need > 0.8 * free:
                raise PlanError("network '%s' (point %d) needs about %.2f GiB on %s, which has %.2f GiB free: nothing was allocated; "
                                "lower its batch or sequence" % (net["name"], pt["index"], need / 2**30, dev, free / 2**30))


def _value(vals, ref):
    if ref in vals:
        return vals[ref]
    raise Unsupported("input '%s' is not produced by an earlier layer" % ref)


def forward_fn(net, built, inputs):
    """The network as a forward pass: each layer in order on the outputs of the layers it reads,
    each output dropped after the last layer that reads it (as a model's forward frees them)."""
    layers = net["layers"]
    last_use = {}
    for i, L in enumerate(layers):
        for r in L["inputs"]:
            last_use[r] = i
    final = layers[-1]["name"] if layers else None
    drop = [[r for r in set(L["inputs"]) if last_use.get(r) == i and r != final] for i, L in enumerate(layers)]

    def forward():
        vals = dict(inputs)
        out = None
        for i, (L, b) in enumerate(zip(layers, built)):
            res = b.fn([_value(vals, r) for r in L["inputs"]])
            for r in drop[i]:
                vals.pop(r, None)
            vals[L["name"]] = res[0]
            for k in range(1, len(res)):
                vals["%s:%d" % (L["name"], k)] = res[k]
            out = res[0]
        return out

    return forward


def _layer_key(L):
    return json.dumps([L["op"], L["attrs"], L["input_shapes"], L["dtype"], L["compute_dtype"], L["weights_dtype"], L["kv_dtype"], L.get("view")],
                      sort_keys=True)


def _stats(times):
    return statistics.median(times), min(times), max(times)


def measure(plan, dev, modes, reps, outdir, log=sys.stderr, layers=True, networks=True):
    check_memory(plan, dev)
    torch.manual_seed(0)
    impl_text = "PyTorch %s on %s, %s" % (torch.__version__, device_name(dev),
                                         "CUDA events around each call, fp16/bf16 activations channels-last" if dev.type == "cuda"
                                         else "wall clock around each call")
    layer_rows, net_rows = [], []
    var_names = []
    for pt in plan["points"]:
        for k in pt["bindings"]:
            if k not in var_names:
                var_names.append(k)
    for pt in plan["points"]:
        set_math(pt["settings"]["dtype"])
        for net in pt["networks"]:
            built, why = [], ""
            for L in net["layers"]:
                try:
                    built.append(ops.build(L, dev))
                except Exception as e:
                    built.append(None)
                    why = why or "layer %s (%s): %s" % (L["name"], L["op"], e)
            # each layer alone (layers doing the same work are timed once)
            done = {}
            for mode in modes:
                for L, b in zip(net["layers"], built):
                    key = (_layer_key(L), mode)
                    if key not in done and layers:
                        done[key] = time_layer(L, b, dev, mode, reps)
                    res = done.get(key, (None, "layers not timed (--what networks)"))
                    layer_rows.append((pt, net, L, mode, res))
                if not networks:
                    continue
                if why:
                    net_rows.append((pt, net, mode, None, "not run: " + why))
                    continue
                try:
                    inputs = {}
                    for i in net["inputs"]:
                        if i["dtype"] == "int64":
                            vocab = next((int(L["attrs"].get("vocab", 2)) for L in net["layers"] if L["op"] == "embedding"), 2)
                            inputs[i["name"]] = torch.randint(0, vocab, tuple(i["shape"]), device=dev)
                        else:
                            inputs[i["name"]] = layout(torch.randn(tuple(i["shape"]), device=dev).to(ops.torch_dtype(i["dtype"])), dev)
                    fwd = forward_fn(net, built, inputs)
                    with torch.no_grad():
                        times = time_graph(dev, fwd, reps) if mode == "graph" else time_calls(dev, fwd, reps)
                    note = ("the plan's layers as one forward pass in one CUDA graph, replayed" if mode == "graph" else
                            "the plan's layers as one forward pass, eager")
                    net_rows.append((pt, net, mode, times, note))
                except Exception as e:  # (any failure of one network is its row's note, never the end of the run)
                    net_rows.append((pt, net, mode, None, "not run: %s" % (str(e).splitlines() or [type(e).__name__])[0]))
                print("rsim_torch: %s %s: %s" % (net["name"], mode, "%.4g ms (median)" % (statistics.median(net_rows[-1][3]) * 1e3)
                                                  if net_rows[-1][3] else net_rows[-1][4]), file=log)
                synchronize(dev)
    write_measured(outdir, var_names, layer_rows, impl_text)
    write_networks(outdir, var_names, net_rows)
    return layer_rows, net_rows


def time_layer(L, b, dev, mode, reps):
    """(times, note) of one layer alone; times None with the reason when it cannot run."""
    if b is None:
        return None, "not run: no torch builder (see the network's note)"
    if L.get("view") or not L.get("kernel"):
        return None, "a view: moves no data, runs no kernel"
    try:
        inputs = ops.input_tensors(L, dev)
        note = b.note
        with torch.no_grad():
            got = [list(t.shape) for t in b.fn(inputs)]
            if got != [list(s) for s in L["output_shapes"]]:  # torch and rsim disagree: say so beside the time
                note = "; ".join(x for x in (note, "torch computed output %s, rsim %s" % (_shape_text(got), _shape_text(L["output_shapes"]))) if x)
            fn = lambda: b.fn(inputs)  # noqa: E731
            times = time_graph(dev, fn, reps) if mode == "graph" else time_calls(dev, fn, reps)
        return times, note
    except Exception as e:  # (a layer torch cannot build or run is a measured_note, never the end of the run)
        return None, "not run: %s" % (str(e).splitlines() or [type(e).__name__])[0]


def _sweep_header(var_names, columns):
    return ["sweep." + v if v in columns else v for v in var_names]


def _atomic_write(path, rows):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".rsim_torch.", dir=d)
    try:
        with os.fdopen(fd, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            for r in rows:
                w.writerow(r)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_measured(outdir, var_names, layer_rows, impl_text):
    header = RESULT_COLUMNS[:1] + _sweep_header(var_names, RESULT_COLUMNS) + RESULT_COLUMNS[1:] + MEASURED_COLUMNS
    rows = [header]
    for pt, net, L, mode, (times, note) in layer_rows:
        for p in L["predicted"]:
            r = [pt["index"]] + [pt["bindings"].get(v, "") for v in var_names]
            vals = {"platform": p["platform"], "network": net["name"], "layer": L["name"], "op": L["op"], "dtype": L["dtype"],
                    "compute_dtype": L["compute_dtype"], "weights_dtype": L["weights_dtype"], "kv_dtype": L["kv_dtype"],
                    "input_shape": _shape_text(L["input_shapes"]), "output_shape": _shape_text(L["output_shapes"]), "kernel": L["kernel"]}
            for c in RESULT_COLUMNS[1:]:
                r.append(_num(vals[c]) if c in vals else _num(p.get(c)))
            if times:
                med, lo, hi = _stats(times)
                bound = p.get("time_s") or 0
                r += [_num(med), _num(lo), _num(hi), len(times), _num(p["flops"] / med if med > 0 else 0), _num(p["bytes"] / med if med > 0 else 0),
                      _num(med / bound if bound > 0 else float("inf")), "", impl_text, note]
            else:
                r += ["", "", "", 0, "", "", "", "", impl_text, note]
            r.append(_num(L.get("channels_per_group", 0)))
            r.append(mode)
            r.append(("true" if _stats(times)[1] < (p.get("time_s") or 0) else "false") if times else "")
            rows.append(r)
    _atomic_write(os.path.join(outdir, "measured.csv"), rows)


def write_networks(outdir, var_names, net_rows):
    header = NETWORK_COLUMNS[:1] + _sweep_header(var_names, NETWORK_COLUMNS) + NETWORK_COLUMNS[1:]
    rows = [header]
    for pt, net, mode, times, note in net_rows:
        batch = net["inputs"][0]["shape"][0] if net["inputs"] and net["inputs"][0]["shape"] else 1
        r = [pt["index"]] + [pt["bindings"].get(v, "") for v in var_names]
        r += [net["name"], net["name"], batch, pt["settings"]["dtype"], mode]
        if times:
            med, lo, _hi = _stats(times)
            r += [_num(med), _num(lo), len(times), note]
        else:
            r += ["", "", 0, note]
        rows.append(r)
    _atomic_write(os.path.join(outdir, "measured_networks.csv"), rows)
