#include "engine/model/keys.hpp"

#include <stdexcept>

namespace rsim::keys {

namespace {

Type mk(T t) {
  Type x;
  x.t = t;
  return x;
}
Type str() { return Type(); }
Type num(double lo = 0, double hi = 0) {
  Type t = mk(T::Number);
  t.min = lo;
  t.max = hi;
  return t;
}
Type integer(double lo = 0, double hi = 0) {
  Type t = mk(T::Integer);
  t.min = lo;
  t.max = hi;
  return t;
}
Type boolean() { return mk(T::Bool); }
Type fraction() { return mk(T::Fraction); }
Type qty(Dim d) {
  Type t = mk(T::Quantity);
  t.dim = d;
  return t;
}
Type choice(std::vector<std::string> c) {
  Type t = mk(T::Enum);
  t.choices = std::move(c);
  return t;
}
Type choice_from(std::string from) {
  Type t = mk(T::Enum);
  t.choices_from = std::move(from);
  return t;
}
Type map_of(std::string ref) {
  Type t = mk(T::Map);
  t.ref = std::move(ref);
  return t;
}
Type list_of(std::string ref) {
  Type t = mk(T::List);
  t.ref = std::move(ref);
  return t;
}
Type def(std::string ref) {
  Type t = mk(T::Def);
  t.ref = std::move(ref);
  return t;
}
Type one_or_list(Type item) {
  item.item = item.t;
  item.t = T::OneOrList;
  return item;
}

const std::vector<std::string> kScales = {"auto", "linear", "log"};

}  // namespace

const std::vector<std::string>& plot_kinds() {
  static const std::vector<std::string> k = {"roofline", "trend", "layers", "heatmap", "compare", "serving_curve", "timeline", "latency_cdf"};
  return k;
}

namespace {

// The platform file's tables (platform, its figures, kernel models, calibration, derating)
std::vector<MapDef> platform_maps() {
  return {
      {"platform", "A hardware platform: compute roofs and memory levels",
       {
           {"name", str(), true, "Platform name (the platform column of the results)."},
           {"base", str(), false, "Start from this catalog platform and replace the keys given here (derate merges key by key)."},
           {"title", str(), false, "Full product name."},
           {"kind", str(), false, "gpu, cpu, soc, ..."},
           {"source", str(), false, "Where the figures come from (datasheet, paper)."},
           {"notes", str(), false, "Free text."},
           {"runtime", map_of("runtime"), false, "How kernels are launched: launch_overhead, graph_gap, host_overhead (settings.execution picks the rule)."},
           {"interconnect", list_of("interconnect_level"), false, "Links between GPUs, from the smallest group (NVLink in a node) to the largest (InfiniBand): collectives of parallel: run on them."},
           {"derate", map_of("derate"), false, "Platform-wide derating of every roof."},
           {"compute", list_of("compute_roof"), true, "Compute roofs, one per precision group."},
           {"memory", list_of("memory_level"), true, "Memory levels; the first is the default of rooflines (settings.memory_level picks another)."},
           {"scale", map_of("scale"), false, "What-if factors on every roof, theoretical and derated, e.g. {compute: 2, bandwidth: 1.5}."},
           {"algorithms", map_of("algorithms"), false, "The algorithms the platform's libraries run where they differ from the conventional count, e.g. {conv3x3: {fp32: winograd_f4x4}}: the roofline bounds their executed work."},
           {"calibration", list_of("calibration_rule"), false, "Efficiency per op class fitted by `rsim calibrate` (applied to derated roofs)."},
           {"contention", map_of("contention"), false, "Time sharing of the measured core, fitted by `rsim calibrate` (applied to compute-bound layers)."},
           {"measured_layers", list_of("measured_layer"), false, "Layer shapes `rsim calibrate` timed whose class laws missed them by more than 10 %: a layer of the same op, roof, shapes and MACs takes its law's time × factor."},
           {"sm_count", integer(1, 100000), false, "Streaming multiprocessors (compute units): the GEMM kernel model's tiles run in waves over them (datasheet)."},
           {"boost_clock", qty(Dim::Frequency), false, "The GPU's boost clock (datasheet), e.g. '1.98 GHz'."},
           {"l2", map_of("l2"), false, "The last-level on-chip cache: {size, bandwidth, basis, source}."},
           {"kernel_model", map_of("kernel_model"), false, "GPU kernel cost models: GEMM tiling over the SMs, context attention, memory-bound kernels and collectives, fitted by `rsim calibrate --ops` (docs/kernel-models.md); the layer's derated time, never below its roofline bound."},
       }},
      {"l2", "A GPU's L2 cache",
       {
           {"size", qty(Dim::Bytes), true, "Size, e.g. '50 MiB'."},
           {"bandwidth", qty(Dim::ByteRate), false, "Read bandwidth (often unpublished: say basis: assumption)."},
           {"basis", def("basis"), false, "What the bandwidth rests on."},
           {"source", str(), false, "Where the figures come from."},
       }},
      {"kernel_model", "GPU kernel cost models (docs/kernel-models.md): parameters per op family, stated or carried from another platform",
       {
           {"from", str(), false, "A catalog platform whose fitted parameters this platform takes, applied to its own datasheet figures (instead of gemm/memory)."},
           {"source", str(), false, "Where the parameters come from (rsim calibrate writes the data it fitted)."},
           {"basis", def("basis"), false, "What the parameters rest on (calibrated, assumption)."},
           {"gemm", map_of("kernel_gemm"), false, "GEMM-like layers (linear, matmul, dense and grouped convolutions): parameters per compute dtype."},
           {"memory", map_of("kernel_memory"), false, "Memory-bound layers (every other layer that moves bytes): {bandwidth_efficiency, floor, ops}."},
           {"attention", map_of("kernel_attention"), false, "Context attention (flash, a prefill's queries): query tiles over key blocks, parameters per compute dtype."},
           {"decode_attention", map_of("kernel_decode"), false, "Decode attention (one query per sequence over its KV cache): TensorRT-LLM's XQA and masked-MHA kernels, parameters per KV-cache dtype."},
           {"collective", map_of("kernel_collective"), false, "Collectives between GPUs, per kind (a kind without its own takes all_reduce's), on the platform's interconnect levels."},
       }},
      {"kernel_collective", "The collective model's parameters per kind: floor + step · (n − 1) + min(bus bytes / (bandwidth · bandwidth_efficiency), bus bytes / (bandwidth · bulk_efficiency) + bulk_latency)",
       {
           {"all_reduce", map_of("collective_params"), false, "All-reduce (bus bytes 2(n − 1)/n · bytes)."},
           {"all_gather", map_of("collective_params"), false, "All-gather (bus bytes (n − 1)/n · the whole tensor)."},
           {"reduce_scatter", map_of("collective_params"), false, "Reduce-scatter (bus bytes (n − 1)/n · the whole tensor)."},
           {"all_to_all", map_of("collective_params"), false, "All-to-all (bus bytes (n − 1)/n · what each GPU sends)."},
           {"custom_all_reduce", map_of("collective_params"), false,
            "The inference runtime's own all-reduce within the platform's first interconnect level (TensorRT-LLM's one-shot/two-shot, vLLM's custom all-reduce; bus bytes 2(n − 1)/n · bytes): an all-reduce there takes the faster of it and all_reduce. No fallback to all_reduce's parameters."},
       }},
      {"collective_params", "One kind of collective: floor + step · (n − 1) + min(bus bytes / (bandwidth · bandwidth_efficiency), bus bytes / (bandwidth · bulk_efficiency) + bulk_latency)",
       {
           {"floor", qty(Dim::Time), true, "Time of any such collective, e.g. '5 us'."},
           {"step", qty(Dim::Time), true, "Time per further GPU, e.g. '1.7 us'."},
           {"bandwidth_efficiency", num(), true, "Share of the link's bandwidth (each way) the bus bytes move at, in (0, 1]."},
           {"bulk_efficiency", num(), false, "Share of the link's bandwidth of the bulk protocol large messages switch to, in (0, 2] (above 1: in-switch reduction, NVLink SHARP; default: none)."},
           {"bulk_latency", qty(Dim::Time), false, "The bulk protocol's start-up time."},
       }},
      {"kernel_gemm", "The GEMM model's parameters per compute dtype (a dtype missing takes those of a dtype on its roof)",
       {
           {"fp64", map_of("gemm_params"), false, "fp64 GEMMs."},
           {"fp32", map_of("gemm_params"), false, "fp32 GEMMs."},
           {"tf32", map_of("gemm_params"), false, "tf32 GEMMs."},
           {"bf16", map_of("gemm_params"), false, "bf16 GEMMs."},
           {"fp16", map_of("gemm_params"), false, "fp16 GEMMs."},
           {"fp8", map_of("gemm_params"), false, "fp8 GEMMs (activations quantized on the fly: prologue_bytes)."},
           {"fp8_block", map_of("gemm_params"), false, "fp8 GEMMs with block scales (weights fp8 with a quant_group: DeepSeek-style 128-element scale blocks), else fp8's."},
           {"int8", map_of("gemm_params"), false, "int8 GEMMs."},
           {"int4", map_of("gemm_params"), false, "int4 GEMMs."},
       }},
      {"gemm_params", "A GEMM's time: tiles in waves over the SMs, max(compute, memory) + floor + waves · wave (docs/kernel-models.md)",
       {
           {"compute_efficiency", num(), true, "Share of an SM's tensor-core peak in the K loop, in (0, 1]."},
           {"pipeline_fill", num(), true, "K steps (of 64 elements) before a tile's first result, 0 to 1000."},
           {"bandwidth_efficiency", num(), true, "Share of the memory bandwidth a GEMM streams at, in (0, 1]."},
           {"sm_bandwidth", num(), true, "The bandwidth one CTA pulls, in shares of bandwidth / sm_count (fewer tiles than SMs pull less than the whole)."},
           {"floor", qty(Dim::Time), true, "Time per kernel beyond its compute or memory path (its start and tail), e.g. '2.7 us'."},
           {"wave", qty(Dim::Time), false, "Time per wave of tiles (default 0)."},
           {"prologue_bytes", num(), false, "Bytes per activation element of the kernel converting the activations when the math runs in a narrower dtype (fp8's dynamic quantization; default 0: none)."},
           {"prologue_floor", qty(Dim::Time), false, "That conversion kernel's floor."},
       }},
      {"kernel_attention", "The context-attention model's parameters per compute dtype (a dtype missing takes those of a dtype on its roof)",
       {
           {"bf16", map_of("attention_params"), false, "bf16 attention."},
           {"fp16", map_of("attention_params"), false, "fp16 attention."},
           {"fp8", map_of("attention_params"), false, "fp8 attention (TensorRT-LLM's with an fp8 KV cache)."},
       }},
      {"attention_params", "A context attention's time: floor + max(max(tiles' work / SMs, the costliest tile), bytes / (bandwidth · bandwidth_efficiency)) (docs/kernel-models.md)",
       {
           {"compute_efficiency", num(), true, "Share of an SM's tensor-core peak in a key block's two MMAs, in (0, 1]."},
           {"bandwidth_efficiency", num(), true, "Share of the memory bandwidth, in (0, 1]."},
           {"score", qty(Dim::Time), true, "Per score of a block, on one SM (the softmax), e.g. '0.001 ns'."},
           {"mask", qty(Dim::Time), true, "More per score of a block with masked scores (the causal diagonal, a window's edge), on one SM."},
           {"block", qty(Dim::Time), true, "Per key block a query tile visits."},
           {"tile", qty(Dim::Time), true, "Per query tile (a CTA's start)."},
           {"floor", qty(Dim::Time), true, "Per kernel, e.g. '12 us'."},
       }},
      {"kernel_decode", "The decode-attention model's parameters per KV-cache dtype (fp16 takes bf16's)",
       {
           {"bf16", map_of("decode_params"), false, "A bf16 KV cache."},
           {"fp16", map_of("decode_params"), false, "An fp16 KV cache."},
           {"fp8", map_of("decode_params"), false, "An fp8 KV cache."},
       }},
      {"decode_params", "A decode attention's time: floor + multi_block (a split history) + the XQA or masked-MHA kernel's, its CTAs' path and the bytes joined in a 3-norm (docs/kernel-models.md)",
       {
           {"floor", qty(Dim::Time), true, "Per kernel, e.g. '3.5 us'."},
           {"bandwidth_efficiency", num(), true, "Share of the memory bandwidth for the bytes past the L2, in (0, 1]."},
           {"cta_cycles", num(), true, "XQA: cycles per wave of CTAs."},
           {"group_cycles", num(), true, "XQA: cycles per wave, per query head of a group and head-dim element."},
           {"cta_bytes_per_cycle", num(), true, "XQA: the KV bytes one CTA streams per cycle."},
           {"mmha_cta_cycles", num(), true, "Masked MHA: cycles per wave of CTAs."},
           {"mmha_token_cycles", num(), true, "Masked MHA: cycles per token and head-dim element (rounded up to 64/128/256) of a CTA."},
           {"multi_block", qty(Dim::Time), true, "A split history's extra cost (the partial results' reduction)."},
           {"l2_bytes_per_cycle", num(), true, "Bytes per cycle per SM the L2 serves (the first half of the L2 holds KV across a CUDA graph's replays)."},
           {"append", qty(Dim::Time), true, "The separate RoPE / KV-append kernel where one runs (a 16-bit cache; fp8's head dim 64)."},
       }},
      {"kernel_memory", "A memory-bound kernel's time: max(FLOPs / peak, bytes / (bandwidth · efficiency)) + floor (efficiency: the operator's own under ops, else bandwidth_efficiency)",
       {
           {"bandwidth_efficiency", num(), true, "Share of the memory bandwidth, in (0, 1]."},
           {"floor", qty(Dim::Time), true, "Time per kernel beyond its bytes, e.g. '2 us'."},
           {"ops", def("args"), false, "Per built-in operator, its own share of the bandwidth in (0, 1], e.g. {batchnorm: 0.55, max_pool2d: 0.2}; an operator not named takes bandwidth_efficiency."},
       }},
  };
}

// The platform file's other tables: runtime, calibration, roofs, memory levels, links, derating
std::vector<MapDef> platform_roof_maps() {
  return {
      {"runtime", "Launch costs of the platform's runtime, per execution mode (settings.execution)",
       {
           {"launch_overhead", qty(Dim::Time), false, "Added per kernel under execution: fused, once per network under graph (0 to 1 s; default 0)."},
           {"graph_gap", qty(Dim::Time), false, "Between consecutive kernels of one CUDA graph (execution: graph needs it)."},
           {"host_overhead", qty(Dim::Time), false, "Host time to issue one kernel in eager mode (execution: eager needs it)."},
           {"source", str(), false, "Where the times come from (a measurement, or 'assumption')."},
           {"basis", def("basis"), false, "What the times rest on, one for all or per figure, e.g. {launch_overhead: assumption, graph_gap: measured}."},
       }},
      {"calibration_rule", "An efficiency model for a class of operators: efficiency = a · x^b · g^c (g: channels per group)",
       {
           {"class", str(), true, "Op class, e.g. conv."},
           {"ops", one_or_list(str()), true, "Operators of the class."},
           {"roof", str(), false, "The compute roof whose layers the rule covers (default: every roof)."},
           {"host_overhead", qty(Dim::Time), false, "Host time to issue one kernel of the class in eager mode (default: runtime.host_overhead)."},
           {"extrapolated", def("extrapolated"), false, "true: the laws were transferred from the roof's other classes, not fitted on layers of this class; compute or bandwidth: that law alone was (the class's layers were all on the other side of the ridge) (rsim calibrate)."},
           {"range", def("law_range"), false, "The layers the laws were fitted on: {compute_x: [lo, hi], bandwidth_x: [lo, hi], channels_per_group: [lo, hi], outputs: [lo, hi]}; beyond it a law keeps its value at the nearer end (rsim calibrate)."},
           {"error_band", one_or_list(num()), false, "[lo, hi]: measured / predicted at the 10th and 90th percentile of the class's held-out errors (rsim calibrate's cross-validation); a run adds derated_time_lo_s and derated_time_hi_s from it."},
           {"occupancy", one_or_list(num()), false, "[d, saturation]: compute efficiency × min(1, the layer's output elements / saturation)^d — a GPU kernel with few outputs leaves multiprocessors idle (rsim calibrate fits it on GPU data)."},
           {"compute", one_or_list(num()), true, "[a, b] or [a, b, c] for compute efficiency, x = MACs (FLOPs without MACs), g = input channels per group."},
           {"bandwidth", one_or_list(num()), true, "[a, b] or [a, b, c] for bandwidth efficiency, x = bytes moved, g = input channels per group."},
           {"bandwidth_by_level", def("level_laws"), false, "Bandwidth efficiency per memory level, e.g. {L2: [a, b], L3: [a, b, c]}: a layer bounded on a listed level takes its law instead of bandwidth."},
       }},
      {"measured_layer", "A layer shape timed by rsim calibrate: a layer of the same operator, compute roof, input and output shapes and MACs runs at its law's time × factor",
       {
           {"op", str(), true, "Operator, e.g. conv2d."},
           {"roof", str(), true, "The compute roof the layer ran on, e.g. 'fp32 CUDA cores'."},
           {"input", str(), true, "Input shapes as results.csv writes them, e.g. 32x128x28x28 (several joined by ';')."},
           {"output", str(), true, "Output shapes as results.csv writes them."},
           {"macs", num(), true, "The layer's MACs (the macs column; conventional count)."},
           {"factor", num(), true, "Measured time over the class law's, in (0, 1000]: the layer's efficiencies are divided by it (at most 1)."},
           {"from", str(), false, "The measured layer it came from (network/layer) and how many layers of the shape were timed."},
       }},
      {"contention", "Time sharing of a core: a compute-bound layer of derated time t takes t · (1 + (slowdown − 1) / (1 + (onset_s / t)^8))",
       {
           {"onset_s", num(), true, "Time in seconds (0 to 1000, exclusive of 0) around which layers start to wait for other work's time slices."},
           {"slowdown", num(), true, "Factor on a layer much longer than onset_s (at least 1; 1 = a core of its own)."},
       }},
      {"algorithms", "Algorithms a platform's libraries run (each: one name, or a map from precision to name)",
       {
           {"conv3x3", def("algorithm_conv3x3"), false, "3×3 stride-1 dense convolutions: direct (default), winograd_f2x2 or winograd_f4x4 (F(m×m, 3×3): (m+2)² multiplications per m×m output tile and channel pair)."},
           {"conv1x1_strided", def("algorithm_conv1x1_strided"), false, "1×1 convolutions with stride > 1: full (default: the whole input read) or touched_input (only the 1/(sh·sw) of its pixels it uses)."},
       }},
      {"scale", "Factors applied to every roof of a platform",
       {
           {"compute", num(), false, "Factor on every compute roof (positive, at most 1e6)."},
           {"bandwidth", num(), false, "Factor on every memory level's bandwidth (positive, at most 1e6)."},
       }},
      {"compute_roof", "A compute roof: peak given or derived",
       {
           {"name", str(), true, "Roof name, e.g. 'fp32 CUDA cores'."},
           {"dtypes", one_or_list(choice_from("dtype")), true, "Precisions this roof serves."},
           {"peak", qty(Dim::FlopRate), false, "Peak rate, e.g. '29.8 TFLOP/s' (or derive)."},
           {"derive", map_of("compute_derive"), false, "Peak from units × clock × FLOP per cycle (or peak)."},
           {"vector_clock", qty(Dim::Frequency), false, "Lower clock under this roof's instructions (e.g. AVX-512); needs derive."},
           {"efficiency", fraction(), false, "Achievable fraction of the peak, in (0, 1]."},
           {"measured", qty(Dim::FlopRate), false, "Measured peak (the derated roof; instead of vector_clock and efficiency), e.g. from `rsim probe`."},
           {"measured_by", str(), false, "How the measured figure was obtained (tool, kernel, date)."},
           {"basis", def("basis"), false, "What the roof's figures rest on: datasheet, assumption, measured, calibrated or carried; one for all, or per figure, e.g. {peak: datasheet, efficiency: assumption}."},
       }},
      {"compute_derive", "Peak compute = units × clock × FLOP per cycle",
       {
           {"units", num(), true, "Cores, SMs or compute units."},
           {"clock", qty(Dim::Frequency), true, "Clock, e.g. '1.71 GHz'."},
           {"lanes", num(), false, "SIMD lanes per pipe (default 1)."},
           {"fma_pipes", num(), false, "FMA pipes per unit (2 FLOPs each per lane)."},
           {"add_pipes", num(), false, "Add pipes per unit."},
           {"mul_pipes", num(), false, "Multiply pipes per unit."},
           {"flops_per_cycle", num(), false, "FLOP per cycle per unit (instead of lanes and pipes)."},
       }},
      {"memory_level", "A memory level: bandwidth given or derived",
       {
           {"name", str(), true, "Level name, e.g. 'GDDR6X' or 'L2'."},
           {"bandwidth", qty(Dim::ByteRate), false, "Bandwidth, e.g. '760.32 GB/s' (or derive)."},
           {"derive", map_of("memory_derive"), false, "Bandwidth from transfer rate × bus width × channels × sockets (or bandwidth)."},
           {"fraction", fraction(), false, "Achievable fraction of the bandwidth, in (0, 1]."},
           {"measured", qty(Dim::ByteRate), false, "Measured bandwidth (instead of fraction)."},
           {"measured_by", str(), false, "How the measured figure was obtained (tool, kernel, date)."},
           {"size", qty(Dim::Bytes), false, "Capacity, e.g. '10 GiB'."},
           {"size_source", choice({"sysfs", "cpuid", "sysconf", "curve", "datasheet"}), false, "How the size was found (rsim probe): the OS (sysfs), CPUID, sysconf, or the bandwidth curve's plateau; datasheet for a catalog figure."},
           {"basis", def("basis"), false, "What the level's figures rest on: datasheet, assumption, measured, calibrated or carried; one for all, or per figure, e.g. {bandwidth: datasheet, fraction: assumption, size: datasheet}."},
       }},
      {"interconnect_level", "A link between GPUs: a collective among n GPUs runs on the first level connecting at least n",
       {
           {"name", str(), true, "Level name, e.g. 'NVLink 4' or 'InfiniBand NDR'."},
           {"bandwidth", qty(Dim::ByteRate), true, "What one GPU sends at once, each way, e.g. '450 GB/s' (NVLink 4: 900 GB/s both ways)."},
           {"latency", qty(Dim::Time), true, "Time per message (one step of a ring or tree), e.g. '2 us'."},
           {"gpus", integer(2, 1e6), true, "GPUs this level connects (per node for NVLink)."},
           {"source", str(), false, "Where the figures come from."},
           {"basis", def("basis"), false, "What the figures rest on, one for both or per figure, e.g. {bandwidth: datasheet, latency: assumption}."},
       }},
      {"parallel", "How a network is split over GPUs: tensor, pipeline, expert and data parallelism",
       {
           {"tensor", integer(1, 4096), false, "Tensor-parallel GPUs T (default 1): layers marked `shard:` hold 1/T of their weights and work; row-parallel layers all-reduce their output."},
           {"pipeline", integer(1, 4096), false, "Pipeline stages P (default 1): contiguous runs of layers balanced by parameters, one stage per group of T GPUs; each stage sends the activations later stages read to the next."},
           {"micro_batches", integer(1, 1000000), false, "Micro-batches m a pipeline step runs (default 1), each the network's batch: a step takes the sum of the stage times plus (m - 1) times the slowest; the bubble is (P - 1) / (m + P - 1) for equal stages."},
           {"expert", integer(1, 4096), false, "Expert-parallel GPUs E (default 1): a mixture's experts are spread over E data-parallel replicas (data defaults to E and must be a multiple of it); each routed token goes to its experts and back (all-to-all)."},
           {"data", integer(1, 1000000), false, "Data-parallel replicas D (default 1, or expert): each runs the network's batch; no collective in inference. GPUs in all: tensor x pipeline x data."},
           {"overlap", choice({"none", "full"}), false, "Communication overlapped with compute: none (default: each collective waits for its layer and the next waits for it) or full (the network takes the larger of its compute and its communication)."},
       }},
      {"memory_derive", "Bandwidth = transfer rate × bus width / 8 × channels × sockets",
       {
           {"transfer_rate", qty(Dim::TransferRate), false, "Transfers per second per pin, e.g. '2400 MT/s' (or clock and data_rate)."},
           {"clock", qty(Dim::Frequency), false, "Memory clock (with data_rate)."},
           {"data_rate", num(), false, "Transfers per clock (2 for DDR)."},
           {"bus_width", qty(Dim::Bits), true, "Bus width per channel, e.g. '64 bit'."},
           {"channels", num(), false, "Channels per socket (default 1)."},
           {"sockets", num(), false, "Sockets (default 1)."},
       }},
      {"derate", "Platform-wide derating (wins over each roof's own)",
       {
           {"vector_clock", qty(Dim::Frequency), false, "Clock of every derived compute roof under load."},
           {"compute_efficiency", fraction(), false, "Achievable fraction of every compute roof."},
           {"bandwidth_fraction", fraction(), false, "Achievable fraction of every memory level's bandwidth."},
           {"basis", def("basis"), false, "What the factors rest on, one for all or per factor, e.g. {bandwidth_fraction: assumption}."},
       }},
  };
}

// The keys every plot takes (plot.KIND adds its own)
std::vector<Key> plot_common_keys() {
  return {
      {"kind", choice(plot_kinds()), true,
       "The chart: roofline, trend (a column against a sweep variable), layers (one bar per layer), heatmap (two sweep variables) or compare (each network's time per platform, in its parts)."},
      {"name", str(), false, "File name of the figure (without extension); default from the kind."},
      {"title", str(), false, "Title drawn above the chart."},
      {"network", one_or_list(str()), false, "Only these networks (default: every network; layers and heatmap: the first), a name or a list; layers, heatmap and compare draw a figure each."},
      {"platforms", one_or_list(str()), false, "Only these platforms (default: every platform of the scenario); the base name of a what-if entry selects its variants."},
      {"formats", one_or_list(choice({"png", "svg", "pdf"})), false, "Figure formats (default: those of `rsim run --format`)."},
      {"style", choice({"screen", "paper", "paper-wide", "slides"}), false, "Print style: screen (9 x 6 in, default), paper (88 x 66 mm), paper-wide (180 x 80 mm), slides (16:9)."},
      {"width", str(), false, "Canvas width: '88 mm', '3.5 in', '2.5 cm', '250 pt', '1600 px' or a number of points (1 in to 6000 pt)."},
      {"height", str(), false, "Canvas height, as width."},
      {"font_size", str(), false, "Tick text size, e.g. '8 pt' (6 to 40); titles and labels follow it."},
      {"dpi", num(36, 600), false, "PNG resolution (36 to 600; default 150, 300 for paper styles)."},
      {"subtitle", choice({"full", "short", "none"}), false,
       "The line under the title: full (default: platforms, network, dtype, conventions, notes), short (its first part, the execution and launch "
       "overheads, and what marks mean), none."},
  };
}

// serving: and its parts (docs/serving.md)
std::vector<MapDef> serving_maps() {
  return {
      {"serving", "A request-level simulation of an inference engine serving the scenario's language models",
       {
           {"workload", map_of("serving.workload"), true, "The requests: a trace file, or synthetic arrivals and lengths (an open loop at a rate, or a closed loop at a concurrency)."},
           {"engine", map_of("serving.engine"), false, "The engine's scheduler, limits and KV cache (vLLM's defaults)."},
           {"slo", map_of("serving.slo"), false, "Latency targets: goodput counts the requests that meet both."},
           {"deployment", map_of("serving.deployment"), false, "Engines behind a router (data-parallel replicas), or disaggregated prefill and decode pools with the KV cache moved between them."},
       }},
      {"serving.deployment", "The engines a workload is spread over",
       {
           {"replicas", integer(1, 1e5), false, "Data-parallel copies of the engine (default 1), each with the network's own parallel: GPUs."},
           {"router", choice({"least_loaded", "round_robin"}), false, "Which engine a request goes to: least_loaded (default: the fewest unfinished requests, the lowest index on a tie) or round_robin (in arrival order)."},
           {"disaggregated", map_of("serving.disaggregated"), false, "Prefill and decode on separate engines: a prefill engine computes the prompt, its KV cache moves to a decode engine, which computes the prompt's last token again and decodes (vLLM's KV connectors). Replaces replicas."},
       }},
      {"serving.disaggregated", "Disaggregated prefill and decode",
       {
           {"prefill", map_of("serving.pool"), false, "The prefill pool (default 1 engine)."},
           {"decode", map_of("serving.pool"), false, "The decode pool (default 1 engine)."},
           {"link", str(), false, "The platform's interconnect level the KV cache moves over, by name (default: its last level, between nodes)."},
           {"bandwidth", qty(Dim::ByteRate), false, "The KV transfer's bandwidth per GPU instead of a link's (e.g. '50 GB/s')."},
           {"latency", qty(Dim::Time), false, "The KV transfer's latency per request instead of a link's (e.g. '5 us')."},
       }},
      {"serving.pool", "A pool of engines",
       {
           {"replicas", integer(1, 1e5), false, "Engines in the pool (default 1)."},
       }},
      {"serving.workload", "The requests an engine is sent",
       {
           {"trace", str(), false, "A trace file (relative to the scenario): JSONL with arrival_time_ns, input_toks, output_toks and optional input_tok_ids (vLLM's benchmark traces); a CSV with arrival_s, prompt_tokens, output_tokens; or the Azure LLM inference trace (TIMESTAMP, ContextTokens, GeneratedTokens)."},
           {"requests", integer(1, 1e7), false, "Synthetic: how many requests."},
           {"arrivals", map_of("serving.arrivals"), false, "Synthetic: when requests arrive (an open loop)."},
           {"prompt", map_of("serving.lengths"), false, "Synthetic: the prompts' token counts."},
           {"output", map_of("serving.lengths"), false, "Synthetic: the output token counts (each at least 1)."},
           {"concurrency", integer(1, 1e6), false, "A closed loop: at most this many requests in flight, the next sent when one finishes (vllm bench serve --max-concurrency); at most `requests`."},
           {"shared_prefix", map_of("serving.shared_prefix"), false, "Synthetic prompts that start with one of a few system prompts (prefix caching can reuse them)."},
           {"seed", integer(0, 9007199254740992.0), false, "The generator's seed (default 1): the same seed, the same requests."},
       }},
      {"serving.arrivals", "Arrival process of an open loop",
       {
           {"process", choice({"poisson", "gamma", "constant", "burst"}), false, "poisson (default), gamma (gaps with coefficient of variation cv), constant, or burst (every request at 0, the offline benchmarks' case)."},
           {"rate", str(), false, "Requests per second, e.g. 10 or '10/s' (not for burst)."},
           {"cv", num(0, 100), false, "gamma: the gaps' coefficient of variation (1 = Poisson)."},
       }},
      {"serving.lengths", "A distribution of token counts",
       {
           {"dist", choice({"fixed", "uniform", "normal", "lognormal"}), false, "fixed (default: exactly mean), uniform (min to max), normal or lognormal (mean and cv, then truncated to [min, max])."},
           {"mean", num(1, 1e9), false, "Mean tokens."},
           {"cv", num(0, 100), false, "normal, lognormal: standard deviation over mean (default 1)."},
           {"min", integer(1, 1e9), false, "Fewest tokens (default 1)."},
           {"max", integer(1, 1e9), false, "Most tokens (default: no bound)."},
       }},
      {"serving.shared_prefix", "System prompts shared by synthetic requests",
       {
           {"tokens", integer(1, 1e9), true, "Tokens of each system prompt (added before each prompt's own)."},
           {"groups", integer(1, 1e6), false, "How many different system prompts (default 1); each request draws one."},
       }},
      {"serving.engine", "The inference engine: scheduler, limits, KV cache (vLLM's defaults)",
       {
           {"scheduler", choice({"vllm", "static"}), false, "vllm (default: continuous batching as vLLM v1 — decodes first, then prefill chunks within the token budget, FCFS) or static (a batch at a time, today's request: for comparison)."},
           {"max_num_seqs", integer(1, 1e6), false, "Sequences in one iteration (default 256)."},
           {"max_num_batched_tokens", integer(1, 1e8), false, "Tokens in one iteration (default 2048)."},
           {"chunked_prefill", boolean(), false, "Split prompts over iterations within the token budget (default true)."},
           {"block_size", integer(1, 1e6), false, "Tokens per KV-cache block (default 16)."},
           {"kv_blocks", integer(1, 1e12), false, "KV-cache blocks per engine (default: from gpu_memory_utilization and the platform's memory)."},
           {"gpu_memory_utilization", num(0, 1), false, "Share of each GPU's memory the engine takes (default 0.9): blocks = ⌊(share × memory − weights − activations of a max_num_batched_tokens batch) / (block_size × KV bytes per token)⌋."},
           {"prefix_caching", boolean(), false, "Reuse cached prompt blocks by content hash (default false)."},
           {"preemption", choice({"recompute"}), false, "When the KV cache is full: recompute (default, as vLLM): the latest admitted sequence is evicted and computed again later."},
           {"prefill_execution", choice({"fused", "graph", "eager", "ideal"}), false, "The execution mode of an iteration that holds prefill tokens (default: settings.execution)."},
           {"decode_execution", choice({"fused", "graph", "eager", "ideal"}), false, "The execution mode of a decode-only iteration (default graph, as vLLM's CUDA graphs)."},
       }},
      {"serving.slo", "Latency targets",
       {
           {"ttft", qty(Dim::Time), false, "Time to first token, e.g. '2 s'."},
           {"tpot", qty(Dim::Time), false, "Time per output token, e.g. '50 ms'."},
       }},
  };
}

// A network and what it is written of: layers, blocks, zoo models, requests, ONNX files
std::vector<MapDef> network_maps() {
  return {
      {"network", "A network: its input and its layers",
       {
           {"name", str(), true, "Network name (the network column of the results)."},
           {"description", str(), false, "What the network is."},
           {"params", def("params"), false, "A model's parameters with their defaults (~ = required), set with args: where it is used."},
           {"dtype", choice_from("dtype"), false, "Precision of this network's tensors (default: settings.dtype)."},
           {"file_dtype", str(), false, "The precision the model's file stores (a Hugging Face config's torch_dtype): used when neither the network nor settings give a dtype; \"\" = none."},
           {"weights_dtype", choice_from("dtype"), false, "Precision of the weights (weight-only quantization), e.g. int4."},
           {"embedding_dtype", choice_from("dtype"), false, "Precision of embedding tables and the LM head (int4 checkpoints keep them in bf16); default: weights_dtype."},
           {"kv_dtype", choice_from("dtype"), false, "Precision of the KV cache."},
           {"compute_dtype", choice_from("dtype"), false, "Precision of the arithmetic (which compute roof)."},
           {"quant_group", integer(0, 1e9), false, "Quantization group size (0: no scales), e.g. 128."},
           {"input", def("shape"), false, "The input tensor's shape, e.g. [1, 3, 224, 224]."},
           {"inputs", def("named_shapes"), false, "Named input tensors: {x: [1, 3, 224, 224], ...} (instead of input)."},
           {"phase", choice({"prefill", "decode"}), false, "For language models: prefill (the prompt) or decode (one new token per sequence)."},
           {"parallel", map_of("parallel"), false, "How this network is split over GPUs: {tensor: T, pipeline: P, micro_batches: m, expert: E, data: D, overlap: none | full} (default: settings.parallel)."},
           {"blocks", def("blocks"), false, "Parametrized groups of layers, used by `block: NAME` in layers."},
           {"layers", list_of("layer_item"), true, "The layers in order: each takes the previous one's output unless `inputs` says otherwise."},
           {"ignored", def("args"), false, "Operators of the source model left out (ONNX nodes mapped to ignore): {OpType: nodes}, listed in the summary and report."},
       }},
      {"block", "A block definition: parameters and layers",
       {
           {"params", def("params"), false, "Parameters with defaults (~ = required), available as ${name} in the layers."},
           {"layers", list_of("layer_item"), true, "The block's layers; `input` names the block's input."},
       }},
      {"block_use", "A use of a block",
       {
           {"block", str(), true, "The block's name (under the network's blocks)."},
           {"name", str(), false, "Prefix of the layer names (NAME.layer); default the block's name and a counter."},
           {"repeat", integer(1, 1e6), false, "Repeat the block this many times in a chain (${repeat_index} counts from 0)."},
           {"args", def("args"), false, "Values of the block's parameters."},
           {"inputs", one_or_list(str()), false, "Input tensors: earlier layer names (NAME:K for output K), default the previous layer."},
           {"when", boolean(), false, "Keep the block only where this holds, e.g. \"${repeat_index == 0}\"."},
       }},
      {"layer", "A layer: an operator and its attributes (see `rsim ops NAME`)",
       {
           {"name", str(), false, "Layer name (default: the operator and a counter)."},
           {"op", str(), true, "The operator (`rsim ops` lists them; plugins add more)."},
           {"inputs", one_or_list(str()), false, "Input tensors: earlier layer names (NAME:K for output K), default the previous layer."},
           {"dtype", choice_from("dtype"), false, "Precision of this layer's tensors."},
           {"when", boolean(), false, "Keep the layer only where this holds, e.g. \"${groups > 1}\"."},
           {"weights_dtype", choice_from("dtype"), false, "Precision of the weights (weight-only quantization), e.g. int4."},
           {"embedding_dtype", choice_from("dtype"), false, "Precision of embedding tables and the LM head (int4 checkpoints keep them in bf16); default: weights_dtype."},
           {"kv_dtype", choice_from("dtype"), false, "Precision of the KV cache."},
           {"compute_dtype", choice_from("dtype"), false, "Precision of the arithmetic (which compute roof)."},
           {"quant_group", integer(0, 1e9), false, "Quantization group size (0: no scales), e.g. 128."},
           {"tied_weights", boolean(), false, "The layer reuses another layer's weights (counted once)."},
           {"shared_params", integer(0, 1e15), false, "Elements of its weights that another layer already counts (partly shared weights, counted once)."},
           {"file_dtype", str(), false, "The element type the model's file gives this layer (an imported ONNX tensor's): used when neither the layer, the network nor settings give a dtype."},
           {"vocab_weights", boolean(), false, "Its weights are a vocabulary table (the LM head): embedding_dtype applies to them."},
           {"shard", choice({"column", "row", "mlp", "partial", "reduce", "vocab", "none", "auto"}), false, "Under tensor parallelism: column (output features split), row (input features split; its output all-reduced), mlp (a whole MLP or mixture split inside; output all-reduced), partial (split as row or mlp, its output left a partial sum), reduce (an elementwise layer summing partial sums: its output all-reduced), vocab (an embedding or LM head split by vocabulary, ceil(vocab / T) rows per GPU: the embedding's output all-reduced, the head's logits all-gathered), none (replicated), auto (default: split like its first split input, else replicated)."},
           {"shard_units", integer(1, 1e9), false, "What a column split divides (heads): with T GPUs each holds ceil(units / T) of them (KV heads fewer than T are replicated)."},
       }},
      {"model_use", "A network from the model zoo",
       {
           {"model", str(), true, "The model's name: a file models/NAME.yaml beside the scenario, in $RSIM_MODELS or in the zoo."},
           {"name", str(), false, "Network name (default the model's), to tell two configurations apart."},
           {"description", str(), false, "What this configuration is (a zoo file that configures another model)."},
           {"args", def("args"), false, "Values of the model's params, e.g. {batch: 8, size: 224}."},
           {"parallel", map_of("parallel"), false, "How this network is split over GPUs: {tensor: T, pipeline: P, micro_batches: m, expert: E, data: D, overlap: none | full} (default: settings.parallel)."},
           {"request", map_of("request"), false, "A language model serving one request (per sequence of the batch): {prompt: N, generate: M} gives time to first token, time per output token and end-to-end latency in one summary row."},
       }},
      {"request", "A request: the prefill of a prompt, then decode steps at a growing context",
       {
           {"prompt", integer(1, 1e7), true, "Prompt tokens N: the prefill (time to first token)."},
           {"generate", integer(1, 1e6), true, "Generated tokens M: decode steps at contexts N … N+M−1 (time per output token: their mean)."},
           {"paged_kv", map_of("paged_kv"), false, "Count the KV cache in pages: {block: 16} (off by default: exact tokens)."},
           {"prefill_execution", choice({"fused", "graph", "eager", "ideal"}), false, "The prefill's execution mode (default settings.execution; settings.execution: ideal overrides it)."},
           {"decode_execution", choice({"fused", "graph", "eager", "ideal"}), false, "The decode steps' execution mode (default settings.execution; settings.execution: ideal overrides it), e.g. graph: serving engines replay decode steps from CUDA graphs."},
           {"batching", choice({"static", "continuous"}), false, "static (default): the batch's prompts prefilled together, then M decode steps together; continuous: the steady state of B sequences at contexts spread over N … N+M−1, each step decoding one token for every sequence and prefilling the B/M prompts that replace the finished requests."},
       }},
      {"paged_kv", "A paged KV cache (vLLM-style): each sequence holds whole pages",
       {
           {"block", integer(1, 1e6), true, "Tokens a page, e.g. 16."},
       }},
      {"onnx_use", "A network imported from an ONNX file",
       {
           {"onnx", str(), true, "The .onnx file, relative to the scenario."},
           {"name", str(), false, "Network name (default the file's stem)."},
           {"description", str(), false, "What the network is."},
           {"inputs", def("named_shapes"), false, "Shapes of the model's inputs, e.g. {input: [1, 3, 224, 224]}."},
           {"dims", def("args"), false, "Sizes of symbolic dimensions, e.g. {batch: 1, seq: 128}."},
           {"onnx_ops", def("args"), false, "ONNX op types mapped to operators (or ignore), e.g. {MyOp: my_lua_op}."},
           {"onnx_recompose", boolean(), false, "Decomposed operators (LayerNorm before opset 17, GELU's Erf and tanh forms, SiLU, HardSwish, MatMul + bias Add) as one layer each (default true); false keeps one layer per node."},
           {"dtype", choice_from("dtype"), false, "Precision of the network's tensors."},
       }},
  };
}

// plot.KIND: each chart's own keys after the common ones
std::vector<MapDef> plot_maps() {
  const std::vector<Key> plot_common = plot_common_keys();
  auto plot = [&](std::string kind, std::string title, std::vector<Key> own) {
    MapDef m{"plot." + kind, std::move(title), plot_common};
    m.keys.insert(m.keys.end(), own.begin(), own.end());
    return m;
  };
  return {
      plot("roofline", "A roofline chart per platform",
           {
               {"points", choice({"layers", "networks"}), false, "One point per layer (default) or per network."},
               {"color", choice({"bound", "network", "point", "op", "platform"}), false, "What the colours tell apart."},
               {"marker", choice({"op", "network", "point", "platform"}), false, "What the marker shapes tell apart."},
               {"labels", choice({"auto", "all", "none"}), false, "Which points get a label."},
               {"roofs", choice({"theoretical", "derated", "both"}), false, "Which roofs are drawn."},
               {"intensity", choice({"memory", "interconnect"}), false, "The x axis: FLOPs per byte of memory (default), or per byte over the interconnect (the platform's links as roofs; layers and networks that communicate: tensor, expert or pipeline parallelism)."},
               {"overlay", boolean(), false, "All platforms in one chart."},
               {"xlim", def("axis_limits"), false, "[lo, hi]: the intensity axis's range, in FLOP/byte (default: every point and ridge)."},
               {"ylim", def("axis_limits"), false, "[lo, hi]: the performance axis's range, in FLOP/s (default: from the roofs and points)."},
           }),
      plot("trend", "A column against a sweep variable",
           {
               {"x", str(), true, "A sweep variable, or layer, output_size or out_channels."},
               {"y", choice_from("plot_column"), false, "A results column (default intensity)."},
               {"series", str(), false, "One line per: auto, platform, network, layer or a sweep variable's values."},
               {"layer", str(), false, "Only this layer."},
               {"op", str(), false, "Only layers of this operator."},
               {"xscale", choice(kScales), false, "Axis scale."},
               {"yscale", choice(kScales), false, "Axis scale."},
               {"point", integer(0, 0), false, "The sweep point (for x: layer)."},
               {"xlim", def("axis_limits"), false, "[lo, hi]: the x axis's range, in the sweep variable's values."},
               {"ylim", def("axis_limits"), false, "[lo, hi]: the y axis's range, in the column's base unit (s, FLOP/s, bytes, ...)."},
           }),
      plot("layers", "One bar per layer",
           {
               {"metric", choice({"time_s", "flops", "macs", "bytes", "intensity", "params"}), false, "The bar length."},
               {"xscale", choice(kScales), false, "Axis scale."},
               {"point", integer(0, 0), false, "The sweep point shown."},
           }),
      plot("compare", "Each network's time per platform (or what-if variant) as a bar of its parts: work by bound, overhead, exposed communication, bubble",
           {
               {"baseline", str(), false, "A platform of the figure: every network's times over its time there, the speedup (baseline time / time) written after each bar."},
               {"point", integer(0, 0), false, "The sweep point shown (default 0)."},
               {"roofs", choice({"derated", "theoretical"}), false, "The times on the derated roofs (default) or the theoretical ones."},
           }),
      plot("serving_curve", "A serving.csv column (a latency percentile, goodput) against a swept variable (the arrival rate): a line per platform, the SLO dashed",
           {
               {"x", str(), true, "A sweep variable, e.g. the arrival rate."},
               {"y", choice({"requests_per_s", "input_tokens_per_s", "output_tokens_per_s", "ttft_mean_s", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "tpot_mean_s",
                             "tpot_p50_s", "tpot_p90_s", "tpot_p99_s", "itl_mean_s", "itl_p50_s", "itl_p90_s", "itl_p99_s", "e2e_mean_s", "e2e_p50_s", "e2e_p90_s",
                             "e2e_p99_s", "goodput_requests_per_s", "slo_attainment", "mean_running", "max_running", "mean_kv_usage", "preemptions", "prefix_hit_rate"}),
                false, "A serving.csv column (default ttft_p99_s)."},
               {"xscale", choice(kScales), false, "Axis scale."},
               {"yscale", choice(kScales), false, "Axis scale."},
           }),
      plot("latency_cdf", "The distribution of a served latency: the share of requests (token gaps, for itl) at or below each time, a line per served run, the SLO dashed",
           {
               {"y", choice({"ttft", "tpot", "e2e", "itl"}), false, "ttft (default), tpot, e2e (per request) or itl (every gap between tokens)."},
               {"point", integer(0, 0), false, "Only this sweep point (default: every point, a line each)."},
               {"xscale", choice(kScales), false, "The latency axis' scale (default auto: log when the times span more than 20×)."},
           }),
      plot("timeline", "A served run second by second: running and waiting requests, or the KV cache's use (timeline.csv)",
           {
               {"y", choice({"requests", "kv_usage", "tokens"}), false, "requests (default: running and waiting), kv_usage (the share of the blocks in use) or tokens (prompt and output tokens a second)."},
               {"point", integer(0, 0), false, "The sweep point shown (default 0)."},
           }),
      plot("heatmap", "A column over two sweep variables",
           {
               {"x", str(), true, "A sweep variable for the columns."},
               {"y", str(), true, "A sweep variable for the rows."},
               {"value", choice_from("plot_column"), false, "A results column (default time_s)."},
               {"color_scale", def("color_scale"), false,
                "auto (each heatmap its own range), shared (one range over every heatmap this entry draws), or [lo, hi] in the column's base unit "
                "(to share a scale between entries)."},
           }),
  };
}

std::vector<MapDef> build() {
  const std::vector<Key> plot_common = plot_common_keys();
  std::vector<Key> figure_keys(plot_common.begin() + 6, plot_common.begin() + 11);  // style, width, height, font_size, dpi
  std::vector<MapDef> v = {
      {"scenario", "An rsim scenario: networks evaluated on platforms over a sweep",
       {
           {"name", str(), true, "Scenario name, also the output folder out/NAME/ (letters, digits, '-', '_', '.')."},
           {"description", str(), false, "One line on what the scenario shows."},
           {"settings", map_of("settings"), false, "Precision, memory-traffic model and FLOP convention."},
           {"vars", def("vars"), false, "Named values usable as ${name} anywhere below; `--set name=value` replaces one."},
           {"sweep", map_of("sweep"), false, "Variables to sweep: one point per combination (grid) or per position (zip)."},
           {"platforms", list_of("platform_ref"), true, "Catalog names (`rsim hw list`) or inline platforms (optionally `base: NAME`)."},
           {"networks", list_of("network_item"), true, "Networks: layers written out, or `model: NAME` from the zoo."},
           {"plots", list_of("plot"), false, "Figures to draw (default: a roofline per platform and a trend chart)."},
           {"passes", def("passes"), false, "Graph passes (fusion, eliminations): each network is also evaluated optimized. `all`, `none` or a list."},
           {"optimize", def("passes"), false, "Same as passes (give one of the two)."},
           {"plugins", one_or_list(str()), false, "Lua files (relative to the scenario) defining operators, an efficiency model or metrics."},
           {"lua", str(), false, "Inline Lua code, run after the plugins (lua: |)."},
           {"limits", map_of("limits"), false, "Sandbox limits of the Lua scripts."},
           {"serving", map_of("serving"), false,
            "Serve every language model of the scenario under load: a request-level simulation of an inference engine (arrivals, continuous batching, chunked prefill, KV-cache capacity, prefix caching) on every platform at every point; writes requests.csv, serving.csv and timeline.csv (docs/serving.md)."},
       }},
  };
  for (MapDef& m : serving_maps()) v.push_back(std::move(m));
  std::vector<MapDef> more = {
      {"settings", "Evaluation settings",
       {
           {"dtype", choice_from("dtype"), false, "Precision of every tensor unless a network or layer says otherwise (default fp32)."},
           {"memory_model", choice({"inputs+weights+outputs", "weights+outputs"}), false, "Which tensors count as memory traffic (default inputs+weights+outputs)."},
           {"flops_per_mac", choice({"1", "2"}), false, "FLOPs per multiply-accumulate: 2 (default) or 1 (report MACs as FLOPs)."},
           {"memory_level", str(), false, "The platforms' memory level rooflines use (default: each platform's first; auto: the smallest level holding each layer's working set)."},
           {"mac_count", choice({"conventional", "executed"}), false, "Work the roofline bounds: conventional MACs (default) or executed (convolution taps on padding skipped)."},
           {"weights_dtype", choice_from("dtype"), false, "Precision of the weights (weight-only quantization), e.g. int4."},
           {"embedding_dtype", choice_from("dtype"), false, "Precision of embedding tables and the LM head (int4 checkpoints keep them in bf16); default: weights_dtype."},
           {"kv_dtype", choice_from("dtype"), false, "Precision of the KV cache."},
           {"compute_dtype", choice_from("dtype"), false, "Precision of the arithmetic (which compute roof)."},
           {"quant_group", integer(0, 1e9), false, "Quantization group size (0: no scales), e.g. 128."},
           {"execution", choice({"fused", "graph", "eager", "ideal"}), false, "How kernels are issued: fused (default: each kernel plus runtime.launch_overhead), graph (one CUDA graph: runtime.graph_gap between kernels), eager (host-issued: runtime.host_overhead per kernel) or ideal (the kernels' roofline times alone, no overhead; needs no runtime)."},
           {"parallel", map_of("parallel"), false, "How every network is split over GPUs: {tensor: T, pipeline: P, micro_batches: m, expert: E, data: D, overlap: none | full} (a network's own parallel: wins)."},
           {"figures", map_of("figures"), false, "Defaults for every figure: style, width, height, font_size, dpi."},
       }},
      {"figures", "Figure defaults (a plot's own keys win)", figure_keys},
      {"sweep", "The sweep: grid variables multiply, zip variables advance together",
       {
           {"grid", def("sweep_vars"), false, "Variables whose values combine as a cartesian product, the last varying fastest."},
           {"zip", def("sweep_vars"), false, "Variables of equal length that advance together (one dimension)."},
           {"max_points", num(1, 0), false, "Refuse sweeps with more points than this (default 1000000)."},
       }},
      {"range", "A range of values (from, to and exactly one of step, factor or count) or a list of values, with a label and unit for figures",
       {
           {"from", num(), false, "First value (with to and one of step, factor, count)."},
           {"to", num(), false, "Last value (included when the steps reach it)."},
           {"step", num(), false, "Linear step."},
           {"factor", num(), false, "Geometric factor (from and to positive)."},
           {"count", integer(1, 1e7), false, "Number of evenly spaced values."},
           {"values", def("values"), false, "The values as a list (instead of a range), to give them a label and unit."},
           {"label", str(), false, "How figures name the variable, e.g. 'Vector clock'."},
           {"unit", str(), false, "The variable's unit in figures, e.g. 'GHz' (\"Vector clock [GHz]\")."},
       }},
      {"limits", "Sandbox limits of Lua scripts",
       {
           {"instructions", num(1e3, 1e10), false, "Lua instructions per call into a script (default 10000000)."},
           {"memory", qty(Dim::Bytes), false, "Memory per Lua state, 1 MiB to 4 GiB (default 64 MiB)."},
       }},
  };
  for (MapDef& m : more) v.push_back(std::move(m));
  for (MapDef& m : network_maps()) v.push_back(std::move(m));
  for (MapDef& m : plot_maps()) v.push_back(std::move(m));
  return v;
}

std::vector<MapDef> all_maps() {
  std::vector<MapDef> v = build();
  for (auto& m : platform_maps()) v.push_back(std::move(m));
  for (auto& m : platform_roof_maps()) v.push_back(std::move(m));
  return v;
}

}  // namespace

const Key* MapDef::find(std::string_view key) const {
  for (const auto& k : keys)
    if (k.name == key) return &k;
  return nullptr;
}

std::vector<std::string> MapDef::names() const {
  std::vector<std::string> n;
  for (const auto& k : keys) n.push_back(k.name);
  return n;
}

const std::vector<MapDef>& all() {
  static const std::vector<MapDef> v = all_maps();
  return v;
}

const MapDef& map(std::string_view name) {
  for (const auto& m : all())
    if (m.name == name) return m;
  throw std::logic_error("rsim: no key table '" + std::string(name) + "'");
}

}  // namespace rsim::keys
