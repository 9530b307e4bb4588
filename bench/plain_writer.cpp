// The yardstick of bench/e2e.py: a plain C++ program that computes the per-layer numbers of the
// bench's scenario (a chain of 3×3 convolutions, padding 1, with bias, fp32, on one platform, over
// a sweep of channel counts) and streams results.csv and results.json rows with std::to_chars —
// the work rsim's run does, without a scenario, a graph or any generality.
// Usage: plain_writer POINTS LAYERS C0 H W PEAK BW OUTDIR
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

static void num(std::string& o, double v) {
  char b[40];
  char* e = (std::floor(v) == v && std::fabs(v) < 1e15) ? std::to_chars(b, b + 40, static_cast<long long>(v)).ptr : std::to_chars(b, b + 40, v).ptr;
  o.append(b, e);
}

int main(int argc, char** argv) {
  if (argc != 9) return 2;
  long points = std::atol(argv[1]), layers = std::atol(argv[2]), c0 = std::atol(argv[3]), h = std::atol(argv[4]), w = std::atol(argv[5]);
  double peak = std::atof(argv[6]), bw = std::atof(argv[7]);
  std::string dir = argv[8];
  std::FILE* csv = std::fopen((dir + "/results.csv").c_str(), "wb");
  std::FILE* js = std::fopen((dir + "/results.json").c_str(), "wb");
  if (!csv || !js) return 1;
  std::string a = "point,c,platform,network,layer,op,dtype,input_shape,output_shape,macs,flops,params,weight_bytes,input_bytes,output_bytes,bytes,"
                  "intensity,mac_intensity,compute_roof,memory_level,peak_flops_per_s,bandwidth_bytes_per_s,attainable_flops_per_s,time_s,bound,"
                  "derated_peak_flops_per_s,derated_bandwidth_bytes_per_s,derated_attainable_flops_per_s,derated_time_s,derated_bound,kernel,"
                  "efficiency_compute,efficiency_bandwidth,flops_per_mac,memory_model\n";
  std::string b = "{\"points\":[";
  for (long p = 0; p < points; ++p) {
    long c = c0 + p;
    if (p) b += ',';
    b += "{\"index\":", num(b, static_cast<double>(p)), b += ",\"layers\":[";
    for (long l = 0; l < layers; ++l) {
      double hw = static_cast<double>(h * w), cin = static_cast<double>(c), cout = static_cast<double>(c);
      double macs = cout * cin * 9 * hw, flops = 2 * macs + cout * hw, params = cout * cin * 9 + cout;
      double wb = 4 * params, ib = 4 * cin * hw, ob = 4 * cout * hw, bytes = wb + ib + ob;
      double inten = flops / bytes, att = std::min(peak, inten * bw), t = std::max(flops / peak, bytes / bw);
      const char* bound = flops / peak >= bytes / bw ? "compute" : "memory";
      std::string shape_in = "1x" + std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
      std::string name = "conv" + std::to_string(l);
      num(a, static_cast<double>(p)), a += ',', num(a, cin);
      a += ",rtx3080,convnet,", a += name, a += ",conv2d,fp32,", a += shape_in, a += ',', a += shape_in;
      for (double v : {macs, flops, params, wb, ib, ob, bytes, inten, macs / bytes}) a += ',', num(a, v);
      a += ",fp32 CUDA cores,GDDR6X";
      for (int k = 0; k < 2; ++k) {
        for (double v : {peak, bw, att, t}) a += ',', num(a, v);
        a += ',', a += bound;
      }
      a += ',', a += name, a += ",1,1,2,inputs+weights+outputs\n";
      if (l) b += ',';
      b += "{\"platform\":\"rtx3080\",\"network\":\"convnet\",\"layer\":\"", b += name, b += "\",\"op\":\"conv2d\",\"dtype\":\"fp32\",\"input_shape\":\"";
      b += shape_in, b += "\",\"output_shape\":\"", b += shape_in, b += '"';
      const char* keys[] = {"macs", "flops", "params", "weight_bytes", "bytes", "intensity"};
      double vals[] = {macs, flops, params, wb, bytes, inten};
      for (int k = 0; k < 6; ++k) b += ",\"", b += keys[k], b += "\":", num(b, vals[k]);
      b += ",\"input_bytes\":[", num(b, ib), b += "],\"output_bytes\":[", num(b, ob), b += "]";
      for (const char* roof : {"theoretical", "derated"}) {
        b += ",\"", b += roof, b += "\":{";
        const char* rk[] = {"peak_flops_per_s", "bandwidth_bytes_per_s", "attainable_flops_per_s", "compute_time_s", "memory_time_s", "time_s"};
        double rv[] = {peak, bw, att, flops / peak, bytes / bw, t};
        for (int k = 0; k < 6; ++k) b += k ? ",\"" : "\"", b += rk[k], b += "\":", num(b, rv[k]);
        b += ",\"bound\":\"", b += bound, b += "\"}";
      }
      b += ",\"efficiency\":{\"compute\":1,\"bandwidth\":1}}";
    }
    b += "]}";
    if (a.size() > (1 << 20)) std::fwrite(a.data(), 1, a.size(), csv), a.clear();
    if (b.size() > (1 << 20)) std::fwrite(b.data(), 1, b.size(), js), b.clear();
  }
  b += "]}\n";
  std::fwrite(a.data(), 1, a.size(), csv);
  std::fwrite(b.data(), 1, b.size(), js);
  return (std::fclose(csv) | std::fclose(js)) ? 1 : 0;
}
