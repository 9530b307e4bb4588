"""Devices, precisions and timers: what differs between CUDA, CPU and MPS, and between torch 1.13 and 2.x."""

import time

import torch

# rsim's precisions as torch dtypes (tf32 is fp32 storage with TF32 math switched on)
DTYPES = {
    "fp64": torch.float64,
    "fp32": torch.float32,
    "tf32": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
    "int8": torch.int8,
}
if hasattr(torch, "float8_e4m3fn"):
    DTYPES["fp8"] = torch.float8_e4m3fn

BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int4": 0.5, "int64": 8}


class Unsupported(Exception):
    """A layer this device or torch version cannot run: becomes a row's measured_note."""


def parse_device(text):
    dev = torch.device(text)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("rsim_torch: error: --device %s: this torch has no CUDA device (torch.cuda.is_available() is False)" % text)
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise SystemExit("rsim_torch: error: --device %s: there are %d CUDA devices" % (text, torch.cuda.device_count()))
    elif dev.type == "mps":
        if not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
            raise SystemExit("rsim_torch: error: --device mps: this torch has no MPS device")
    elif dev.type != "cpu":
        raise SystemExit("rsim_torch: error: --device %s: use cuda[:N], cpu or mps" % text)
    return dev


def torch_dtype(name):
    if name not in DTYPES:
        raise Unsupported("precision %s has no torch dtype here (torch %s)" % (name, torch.__version__))
    return DTYPES[name]


def set_math(name):
    """TF32 on for tf32, off otherwise (fp32 means fp32 CUDA cores, as the shared H200 data)."""
    tf32 = name == "tf32"
    if hasattr(torch.backends, "cuda") and hasattr(torch.backends.cuda, "matmul"):
        torch.backends.cuda.matmul.allow_tf32 = tf32
    if hasattr(torch.backends, "cudnn"):
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cudnn.benchmark = True


def layout(t, dev):
    """A 4-D fp16/bf16 tensor on CUDA in channels-last memory order, as a half-precision CNN is run
    there (cuDNN's tensor-core convolutions work in NHWC; NCHW would add a transpose per layer)."""
    if dev.type == "cuda" and t.dim() == 4 and t.dtype in (torch.float16, torch.bfloat16):
        return t.contiguous(memory_format=torch.channels_last)
    return t


def synchronize(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    elif dev.type == "mps" and hasattr(torch, "mps") and hasattr(torch.mps, "synchronize"):
        torch.mps.synchronize()


def free_bytes(dev):
    """Memory the measurement may use on the device."""
    if dev.type == "cuda":
        free, _total = torch.cuda.mem_get_info(dev)
        return free
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 << 30


def device_name(dev):
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    if dev.type == "mps":
        return "Apple GPU (MPS)"
    name = "CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return name


def modes_of(dev):
    """Every execution mode the device supports: CUDA eager and graph; CPU and MPS eager."""
    return ["eager", "graph"] if dev.type == "cuda" else ["eager"]


def time_calls(dev, fn, reps, warmup=3):
    """Seconds of each of `reps` calls of fn, each timed alone: device events around one call on
    CUDA (the host's time to issue it included, as a model's eager forward pays it), the wall clock
    after a synchronize elsewhere."""
    for _ in range(warmup):
        fn()
    synchronize(dev)
    if dev.type == "cuda":
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        for start, end in events:
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize(dev)
        return [s.elapsed_time(e) * 1e-3 for s, e in events]
    out = []
    for _ in range(reps):
        synchronize(dev)
        t0 = time.perf_counter()
        fn()
        synchronize(dev)
        out.append(time.perf_counter() - t0)
    return out


def time_graph(dev, fn, reps, warmup=3):
    """Seconds of each replay of fn captured in one CUDA graph (no host time between its kernels)."""
    if dev.type != "cuda":
        raise Unsupported("a CUDA graph needs a CUDA device")
    stream = torch.cuda.Stream(dev)
    stream.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(stream):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream(dev).wait_stream(stream)
    torch.cuda.synchronize(dev)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return time_calls(dev, graph.replay, reps, warmup=2)
