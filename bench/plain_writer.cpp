// The yardstick of bench/e2e.py: a plain C++ program that does the work `rsim run --no-plots`
// does for the bench's scenario — a chain of 3×3 convolutions (stride 1, padding 1, with bias,
// fp32) on one platform (rtx3080), swept over channel counts — and nothing more general: no
// scenario model, no graph, no operator registry. It computes every layer's numbers (MACs,
// executed MACs, FLOPs, params, bytes, the theoretical and derated roofline, kernel times with the
// platform's launch overhead) and the network totals, and streams the same four files rsim writes,
// with rsim's columns, keys and number text (std::to_chars, shortest round-trip; integral values
// below 1e15 as integers): results.csv, kernels.csv, summary.csv and results.json. For the bench's
// scenario the files are byte-identical to rsim's (bench/e2e.py checks it).
//
// Hard-coded for that scenario: the names (scenario e2e, network convnet, layers conv0…, sweep
// variable c), the platform's texts and its other roofs (copied from hardware/rtx3080.yaml) and
// the fixed texts of results.json (its header conventions, copied from rsim's output). Not cached:
// each number is computed and formatted per layer and per point, as a plain writer would.
// Usage: plain_writer POINTS LAYERS C0 H W PEAK BW LAUNCH_US SCENARIO OUTDIR
//   PEAK in FLOP/s, BW in byte/s; LAUNCH_US: the platform's launch_overhead in µs (converted with
//   × 1e-6, as rsim converts "5 us"); SCENARIO: the scenario file, hashed (FNV-1a 64) and named in
//   results.json as given.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

void num(std::string& o, double v) {
  char b[40];
  char* e = (std::floor(v) == v && std::fabs(v) < 1e15) ? std::to_chars(b, b + 40, static_cast<long long>(v)).ptr : std::to_chars(b, b + 40, v).ptr;
  o.append(b, e);
}

void num(std::string& o, long v) {
  char b[24];
  o.append(b, std::to_chars(b, b + 24, v).ptr);
}

// the output taps of a 3-wide window (stride 1, padding 1) that fall inside an input of n
double taps_inside(long n) {
  double t = 0;
  for (long o = 0; o < n; ++o)
    for (long j = 0; j < 3; ++j) t += o - 1 + j >= 0 && o - 1 + j < n;
  return t;
}

struct Out {
  std::FILE* f;
  std::string b;
  void flush() {
    if (!b.empty() && std::fwrite(b.data(), 1, b.size(), f) != b.size()) std::exit(1);
    b.clear();
  }
};

const char* kJsonHead1 = "{\"rsim_version\":\"0.1.0\",\"scenario\":{\"name\":\"e2e\",\"path\":\"";
const char* kJsonHead2 =
    "\",\"description\":\"\"},\"conventions\":{\"flops\":\"FLOPs = flops_per_mac × MACs for multiply-accumulate operators, plus each "
    "operator's stated per-element FLOPs (`rsim ops NAME`)\",\"bytes\":\"memory_model of each point: weights+outputs, or "
    "inputs+weights+outputs; per-tensor bytes are given so either can be recomputed\",\"intensity\":\"flops / bytes in FLOP/byte; null "
    "when bytes = 0 and flops > 0 (infinite intensity)\",\"time\":\"time_s = max(flops / peak, bytes / bandwidth) per layer, alone; "
    "network time_s: the kernels (a layer, or a fused group: see kernels.csv), each taking max(sum of compute times, sum of memory times) "
    "of its layers, issued under settings.execution: fused = their sum plus runtime.launch_overhead per kernel; graph = their sum plus "
    "runtime.graph_gap between kernels and one launch_overhead; eager = the end of the last kernel when the host issues kernel i after its "
    "own host_overhead and the ones before\",\"units\":\"SI: FLOP, byte, second; rates per second\",\"precision\":"
    "\"activations in dtype; matrix weights in weights_dtype with one fp16 scale per quant_group weights when int8/int4/fp8; the KV "
    "cache in kv_dtype; the compute roof is the one of compute_dtype (default dtype: weights are dequantized to the activation "
    "precision)\",\"kv_cache\":\"KV-cache reads (kv_read_bytes) and a layer's internal scratch traffic count under both memory "
    "models\",\"llm\":\"tokens = batch × new tokens of the step; tokens_per_s = tokens / time; prefill: time to first token = time; "
    "decode: time per output token = time; memory footprint = resident weights + KV cache + the largest activations of one "
    "layer\"},\"sweep_variables\":[\"c\"],\"points\":[";

// the scenario's FNV-1a 64 hash, as results.json names it, in hex; false if the file cannot be read
bool scenario_hash(const std::string& scen, char (&hex)[17]) {
  std::uint64_t hash = 1469598103934665603ULL;
  if (std::FILE* sf = std::fopen(scen.c_str(), "rb")) {
    for (int ch; (ch = std::fgetc(sf)) != EOF;) hash = (hash ^ static_cast<unsigned char>(ch)) * 1099511628211ULL;
    std::fclose(sf);
  } else {
    return false;
  }
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return true;
}

// the files' heads: the CSV header lines and results.json up to its points
void write_heads(Out& csv, Out& sum, Out& ker, Out& js, const std::string& scen, const char* hex) {
  csv.b =
      "point,c,platform,network,layer,op,dtype,compute_dtype,weights_dtype,kv_dtype,input_shape,output_shape,macs,flops,macs_executed,"
      "flops_executed,mac_count,params,weight_bytes,input_bytes,output_bytes,kv_read_bytes,kv_write_bytes,scratch_bytes,bytes,intensity,"
      "mac_intensity,compute_roof,memory_level,peak_flops_per_s,bandwidth_bytes_per_s,attainable_flops_per_s,time_s,bound,"
      "derated_peak_flops_per_s,derated_bandwidth_bytes_per_s,derated_attainable_flops_per_s,derated_time_s,derated_bound,kernel,"
      "efficiency_compute,efficiency_bandwidth,flops_per_mac,memory_model\n";
  sum.b =
      "point,c,platform,network,dtype,layers,kernels,macs,flops,params,bytes,intensity,time_s,achieved_flops_per_s,memory_bound_layers,"
      "compute_bound_layers,derated_time_s,derated_achieved_flops_per_s,derated_memory_bound_layers,derated_compute_bound_layers,batch,"
      "derated_time_per_sample_s,flops_per_mac,memory_model,active_params,phase,tokens,tokens_per_s,derated_tokens_per_s,"
      "time_to_first_token_s,derated_time_to_first_token_s,time_per_output_token_s,derated_time_per_output_token_s,"
      "weight_footprint_bytes,kv_cache_bytes,activation_bytes,memory_footprint_bytes,memory_size_bytes,fits_in_memory,execution\n";
  ker.b =
      "point,c,platform,network,kernel,layers,layer_names,flops,bytes,intensity,compute_time_s,memory_time_s,launch_overhead_s,time_s,"
      "bound,derated_compute_time_s,derated_memory_time_s,derated_launch_overhead_s,derated_time_s,derated_bound\n";
  js.b = kJsonHead1;
  js.b += scen, js.b += "\",\"hash\":\"fnv1a64:", js.b += hex, js.b += kJsonHead2;
}

// A point's output: its index and channel count, the input size, the platform's figures, the four
// files and the texts reused from point to point (by reference), and the network totals summed
// over its layers
struct PointWriter {
  const long p, c, h, w;
  const double peak, bw, launch, graph_gap, host_overhead, mem_size, fp16_peak, int8_peak;
  Out &csv, &sum, &ker, &js;
  std::string &jl, &shape, &name, &lead;
  double s_macs = 0, s_flops = 0, s_params = 0, s_bytes = 0, s_wfoot = 0, s_act = 0, s_time = 0, s_dtime = 0, s_layers = 0;
  int s_mem = 0, s_comp = 0, s_dmem = 0, s_dcomp = 0;

  // layer l (its input: cin channels, then the layer's output): its row in results.csv and
  // kernels.csv, its object in the point's layers of results.json, its share of the totals
  void layer(long l, long& cin) {
    // per layer, as any network's layers would be: shape inference, work, bytes, roofline
    const long cout = c, ho = (h + 2 - 3) / 1 + 1, wo = (w + 2 - 3) / 1 + 1;
    const double out_elems = 1.0 * static_cast<double>(cout) * static_cast<double>(ho) * static_cast<double>(wo);
    const double in_elems = 1.0 * static_cast<double>(cin) * static_cast<double>(h) * static_cast<double>(w);
    const double macs = out_elems * static_cast<double>(cin) * 9;
    const double macs_x = 1.0 * static_cast<double>(cout) * static_cast<double>(cin) * taps_inside(h) * taps_inside(w);
    const double flops = 2 * macs, flops_x = 2 * macs_x;
    const double params = 9 * static_cast<double>(cin) * static_cast<double>(cout) + static_cast<double>(cout);
    const double wb = params * 4, ib = in_elems * 4, ob = out_elems * 4, bytes = wb + ob + ib;
    const double inten = flops / bytes, mac_inten = macs / bytes;
    const double att = std::min(peak, bw * inten), ct = flops / peak, mt = bytes / bw, t = std::max(ct, mt);
    const char* bound = mt >= ct ? "memory" : "compute";
    shape.clear(), shape += "1x", num(shape, cout), shape += 'x', num(shape, ho), shape += 'x', num(shape, wo);
    name.clear(), name += "conv", num(name, l);
    cin = cout;

    std::string& a = csv.b;
    a += lead, a += ",rtx3080,convnet,", a += name, a += ",conv2d,fp32,fp32,fp32,,", a += shape, a += ',', a += shape;
    for (double v : {macs, flops, macs_x, flops_x}) a += ',', num(a, v);
    a += ",conventional";
    for (double v : {params, wb, ib, ob, 0.0, 0.0, 0.0, bytes, inten, mac_inten}) a += ',', num(a, v);
    a += ",fp32 CUDA cores,GDDR6X";
    for (int k = 0; k < 2; ++k) {  // theoretical, derated (no derating on this platform: efficiency 1)
      for (double v : {peak, bw, att, t}) a += ',', num(a, v);
      a += ',', a += bound;
    }
    a += ',', a += name, a += ',', num(a, 1.0), a += ',', num(a, 1.0), a += ',', num(a, 2.0), a += ",inputs+weights+outputs\n";

    std::string& k = ker.b;  // one kernel per layer (nothing fused)
    k += lead, k += ",rtx3080,convnet,", k += name, k += ',', num(k, 1.0), k += ',', k += name;
    for (double v : {flops, bytes, inten, ct, mt, launch, std::max(ct, mt) + launch}) k += ',', num(k, v);
    k += ',', k += bound;
    for (double v : {ct, mt, launch, std::max(ct, mt) + launch}) k += ',', num(k, v);
    k += ',', k += bound, k += '\n';

    if (l) jl += ',';
    jl += "{\"platform\":\"rtx3080\",\"network\":\"convnet\",\"layer\":\"", jl += name;
    jl += "\",\"op\":\"conv2d\",\"dtype\":\"fp32\",\"compute_dtype\":\"fp32\",\"weights_dtype\":\"fp32\",\"input_shape\":\"", jl += shape;
    jl += "\",\"output_shape\":\"", jl += shape, jl += "\",\"macs\":", num(jl, macs), jl += ",\"flops\":", num(jl, flops);
    jl += ",\"params\":", num(jl, params), jl += ",\"weight_bytes\":", num(jl, wb);
    jl += ",\"input_bytes\":[", num(jl, ib), jl += "],\"output_bytes\":[", num(jl, ob), jl += "],\"quant_scale_bytes\":", num(jl, 0.0);
    jl += ",\"kv_read_bytes\":", num(jl, 0.0), jl += ",\"kv_write_bytes\":", num(jl, 0.0), jl += ",\"scratch_bytes\":", num(jl, 0.0);
    jl += ",\"resident_weight_bytes\":", num(jl, wb), jl += ",\"kv_cache_bytes\":", num(jl, 0.0);
    jl += ",\"bytes\":", num(jl, bytes), jl += ",\"intensity\":", num(jl, inten);
    jl += ",\"kernel\":\"", jl += name, jl += "\",\"compute_roof\":\"fp32 CUDA cores\",\"memory_level\":\"GDDR6X\"";
    for (const char* roof : {",\"theoretical\":{\"peak_flops_per_s\":", ",\"derated\":{\"peak_flops_per_s\":"}) {
      jl += roof, num(jl, peak), jl += ",\"bandwidth_bytes_per_s\":", num(jl, bw), jl += ",\"attainable_flops_per_s\":", num(jl, att);
      jl += ",\"compute_time_s\":", num(jl, ct), jl += ",\"memory_time_s\":", num(jl, mt), jl += ",\"time_s\":", num(jl, t);
      jl += ",\"bound\":\"", jl += bound, jl += "\"}";
    }
    jl += ",\"efficiency\":{\"compute\":", num(jl, 1.0), jl += ",\"bandwidth\":", num(jl, 1.0), jl += "}}";

    s_layers += 1, s_macs += macs, s_flops += flops, s_params += params, s_wfoot += wb, s_act = std::max(s_act, ib + ob);
    s_bytes += bytes;
    s_mem += bound[0] == 'm', s_comp += bound[0] == 'c', s_dmem += bound[0] == 'm', s_dcomp += bound[0] == 'c';
    s_time += std::max(ct, mt) + launch, s_dtime += std::max(ct, mt) + launch;
  }

  // the point's row in summary.csv and its object in results.json (settings, platform, summary, layers)
  void totals() {
    const double s_inten = s_flops / s_bytes, s_ach = s_flops / s_time, s_dach = s_flops / s_dtime, s_foot = s_wfoot + 0 + s_act;
    const double batch = 1;

    std::string& s = sum.b;
    s += lead, s += ",rtx3080,convnet,fp32";
    for (double v : {s_layers, s_layers, s_macs, s_flops, s_params, s_bytes, s_inten, s_time, s_ach}) s += ',', num(s, v);
    for (int v : {s_mem, s_comp}) s += ',', num(s, static_cast<double>(v));
    s += ',', num(s, s_dtime), s += ',', num(s, s_dach);
    for (int v : {s_dmem, s_dcomp}) s += ',', num(s, static_cast<double>(v));
    s += ',', num(s, batch), s += ',', num(s, s_dtime / batch), s += ',', num(s, 2.0), s += ",inputs+weights+outputs,", num(s, s_params);
    s += ",,,,,,,,";  // no phase: no LLM totals
    for (double v : {s_wfoot, 0.0, s_act, s_foot, mem_size}) s += ',', num(s, v);
    s += s_foot <= mem_size ? ",true,fused\n" : ",false,fused\n";

    std::string& j = js.b;
    if (p) j += ',';
    j += "{\"index\":", num(j, static_cast<double>(p)), j += ",\"bindings\":{\"c\":\"", num(j, c);
    j += "\"},\"settings\":{\"dtype\":\"fp32\",\"memory_model\":\"inputs+weights+outputs\",\"flops_per_mac\":", num(j, 2.0);
    j += ",\"memory_level\":\"(first level of each platform)\",\"weights_dtype\":\"fp32\",\"kv_dtype\":\"fp32\",\"compute_dtype\":\"fp32\","
         "\"quant_group\":";
    num(j, 0.0);
    j += ",\"execution\":\"fused\"";
    // the platform in full at the first point, by reference at the others
    if (p) {
      j += "},\"platforms\":[{\"name\":\"rtx3080\",\"as_in_point\":0}],\"summary\":[{\"platform\":\"rtx3080\",\"network\":\"convnet\"";
    } else {
      j += "},\"platforms\":[{\"name\":\"rtx3080\",\"title\":\"NVIDIA GeForce RTX 3080 (Ampere)\",\"source\":\"seed 000 (NVIDIA Ampere GA102 "
           "whitepaper figures)\",\"compute\":[{\"name\":\"fp32 CUDA cores\",\"dtypes\":[\"fp32\"],\"peak_flops_per_s\":";
      num(j, peak), j += ",\"derivation\":\"given: 29.8 TFLOP/s\",\"derated_peak_flops_per_s\":", num(j, peak);
      j += ",\"derated_derivation\":\"no derating: same as theoretical\"},{\"name\":\"fp16 tensor cores\",\"dtypes\":[\"fp16\"],"
           "\"peak_flops_per_s\":";
      num(j, fp16_peak), j += ",\"derivation\":\"given: 119 TFLOP/s\",\"derated_peak_flops_per_s\":", num(j, fp16_peak);
      j += ",\"derated_derivation\":\"no derating: same as theoretical\"},{\"name\":\"int8 tensor cores\",\"dtypes\":[\"int8\"],"
           "\"peak_flops_per_s\":";
      num(j, int8_peak), j += ",\"derivation\":\"given: 238 TOP/s\",\"derated_peak_flops_per_s\":", num(j, int8_peak);
      j += ",\"derated_derivation\":\"no derating: same as theoretical\"}],\"memory\":[{\"name\":\"GDDR6X\",\"bandwidth_bytes_per_s\":";
      num(j, bw), j += ",\"derivation\":\"given: 760.32 GB/s\",\"derated_bandwidth_bytes_per_s\":", num(j, bw);
      j += ",\"derated_derivation\":\"no derating: same as theoretical\",\"size_bytes\":", num(j, mem_size);
      j += "}],\"runtime\":{\"launch_overhead_s\":", num(j, launch), j += ",\"graph_gap_s\":", num(j, graph_gap), j += ",\"host_overhead_s\":";
      num(j, host_overhead), j += "}}],\"summary\":[{\"platform\":\"rtx3080\",\"network\":\"convnet\"";
    }
    j += ",\"execution\":\"fused\"";
    const std::string_view keys[] = {"layers", "kernels", "macs", "flops", "params", "bytes", "intensity", "time_s", "achieved_flops_per_s",
                                     "memory_bound_layers", "compute_bound_layers", "derated_time_s", "derated_achieved_flops_per_s",
                                     "derated_memory_bound_layers", "derated_compute_bound_layers", "batch", "derated_time_per_sample_s",
                                     "active_params"};
    const double vals[] = {s_layers, s_layers, s_macs, s_flops, s_params, s_bytes, s_inten, s_time, s_ach, static_cast<double>(s_mem),
                           static_cast<double>(s_comp), s_dtime, s_dach, static_cast<double>(s_dmem), static_cast<double>(s_dcomp),
                           batch, s_dtime / batch, s_params};
    for (size_t i = 0; i < std::size(keys); ++i) j += ",\"", j += keys[i], j += "\":", num(j, vals[i]);
    j += ",\"memory_footprint\":{\"weight_bytes\":", num(j, s_wfoot), j += ",\"kv_cache_bytes\":", num(j, 0.0);
    j += ",\"activation_bytes\":", num(j, s_act), j += ",\"total_bytes\":", num(j, s_foot), j += ",\"memory_size_bytes\":", num(j, mem_size);
    j += ",\"memory\":\"GDDR6X\",\"fits\":", j += s_foot <= mem_size ? "true" : "false";
    j += "}}],\"layers\":[", j += jl, j += "]}";
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 11) {
    std::fputs("usage: plain_writer POINTS LAYERS C0 H W PEAK BW LAUNCH_US SCENARIO OUTDIR\n", stderr);
    return 2;
  }
  long points = std::atol(argv[1]), layers = std::atol(argv[2]), c0 = std::atol(argv[3]), h = std::atol(argv[4]), w = std::atol(argv[5]);
  double peak = std::atof(argv[6]), bw = std::atof(argv[7]), launch = std::atof(argv[8]) * 1e-6;
  // rtx3080's runtime.graph_gap and host_overhead (hardware/rtx3080.yaml), converted as rsim converts "4.83 us"
  const double graph_gap = 4.83 * 1e-6, host_overhead = 20.3 * 1e-6;
  const double mem_size = 10 * 1073741824.0;  // rtx3080: 10 GiB of GDDR6X
  const double fp16_peak = 119 * 1e12, int8_peak = 238 * 1e12;
  std::string scen = argv[9], dir = argv[10];

  // the scenario's FNV-1a 64 hash, as results.json names it
  char hex[17];
  if (!scenario_hash(scen, hex)) return 1;

  Out csv{std::fopen((dir + "/results.csv").c_str(), "wb"), {}}, sum{std::fopen((dir + "/summary.csv").c_str(), "wb"), {}},
      ker{std::fopen((dir + "/kernels.csv").c_str(), "wb"), {}}, js{std::fopen((dir + "/results.json").c_str(), "wb"), {}};
  if (!csv.f || !sum.f || !ker.f || !js.f) return 1;
  write_heads(csv, sum, ker, js, scen, hex);

  std::string jl;  // a point's layer objects: results.json gives its summary first
  std::string shape, name, lead;
  for (long p = 0; p < points; ++p) {
    const long c = c0 + p;
    lead.clear(), num(lead, p), lead += ',', num(lead, c);
    jl.clear();
    PointWriter pw{p, c, h, w, peak, bw, launch, graph_gap, host_overhead, mem_size, fp16_peak, int8_peak, csv, sum, ker, js, jl, shape, name, lead};
    long cin = c;  // every layer maps c channels to c channels at H × W
    for (long l = 0; l < layers; ++l) pw.layer(l, cin);
    pw.totals();

    for (Out* o : {&csv, &sum, &ker, &js})
      if (o->b.size() > (1 << 20)) o->flush();
  }
  js.b += "]}\n";
  int bad = 0;
  for (Out* o : {&csv, &sum, &ker, &js}) o->flush(), bad |= std::fclose(o->f);
  return bad ? 1 : 0;
}
