// Reference networks for the tests, written out from the papers' and torchvision's architectures
// and independent of rsim: no model file, no operator table, no pass is used here. Every layer's
// MACs, FLOPs and the elements it reads and writes come from the textbook formulas below, so a
// total derived here and the same total from rsim can only agree if both are right.
//
//   conv (k×k, stride s, padding p, g groups): Ho = (H + 2p − k)/s + 1;
//        MACs = N·Cout·Ho·Wo·(Cin/g)·k²; FLOPs = 2·MACs; weights = Cout·(Cin/g)·k² (+ Cout bias)
//   batch norm: 2 FLOPs per element (x·scale + shift); reads 4·C constants (γ, β, mean, var)
//   ReLU 1 FLOP per element, ReLU6 2 (min and max), add 1 (reads both operands)
//   max pool: k² compares per output; global average pool: one FLOP per input element
//   linear: MACs = N·in·out (bias folded into the accumulator); weights = in·out + out
//   flatten, dropout: views, nothing read or written
//
// Fusion (what `optimize: all` does to these networks): a conv, its BN, its activation and a
// residual add become one kernel. The kernel reads the conv's input, its weights, the BN shift
// folded into a bias (C values) and the residual; it writes only the last output. BN's FLOPs
// vanish (folded into the weights); ReLU's and the add's stay.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

namespace rsim::test::ref {

struct Tensor {
  double n, c, h, w;
  double elems() const { return n * c * h * w; }
};

// One layer, or one fused kernel: activation elements read, weight elements read, elements written.
struct Work {
  std::string op;  // conv, bn, relu, relu6, add, maxpool, gap, linear
  std::string name;
  double macs = 0, other_flops = 0, in = 0, weights = 0, out = 0;
  double flops(double flops_per_mac = 2) const { return flops_per_mac * macs + other_flops; }
  double bytes(bool weights_outputs_only = false, double elem_bytes = 4) const {
    return elem_bytes * ((weights_outputs_only ? 0 : in) + weights + out);
  }
  // the roofline bound time: the slower of compute and memory
  double time(double peak, double bandwidth) const { return std::max(flops() / peak, bytes() / bandwidth); }
};

struct Net {
  std::vector<Work> layers;   // as written: one kernel per layer
  std::vector<Work> kernels;  // after fusion

  Tensor conv(const std::string& name, Tensor x, double cout, double k, double s, double p, double groups = 1, bool bias = false) {
    Tensor y{x.n, cout, (x.h + 2 * p - k) / s + 1, (x.w + 2 * p - k) / s + 1};
    y.h = static_cast<double>(static_cast<long long>(y.h));  // floor
    y.w = static_cast<double>(static_cast<long long>(y.w));
    Work l{"conv", name};
    l.macs = y.elems() * (x.c / groups) * k * k;
    l.in = x.elems();
    l.weights = cout * (x.c / groups) * k * k + (bias ? cout : 0);
    l.out = y.elems();
    layers.push_back(l);
    kernels.push_back(l);
    conv_bias_ = bias;
    return y;
  }
  // follows a conv: fused, its shift becomes the conv's bias (unless it had one)
  Tensor bn(const std::string& name, Tensor x) {
    Work l{"bn", name};
    l.other_flops = 2 * x.elems();
    l.in = l.out = x.elems();
    l.weights = 4 * x.c;
    layers.push_back(l);
    if (!conv_bias_) kernels.back().weights += x.c;
    return x;
  }
  Tensor act(const std::string& name, Tensor x, bool relu6 = false) {
    Work l{relu6 ? "relu6" : "relu", name};
    l.other_flops = (relu6 ? 2 : 1) * x.elems();
    l.in = l.out = x.elems();
    layers.push_back(l);
    kernels.back().other_flops += l.other_flops;
    return x;
  }
  // x + residual, fused into the kernel that produced x: that kernel also reads the residual
  Tensor add(const std::string& name, Tensor x) {
    Work l{"add", name};
    l.other_flops = x.elems();
    l.in = 2 * x.elems();
    l.out = x.elems();
    layers.push_back(l);
    kernels.back().other_flops += x.elems();
    kernels.back().in += x.elems();
    return x;
  }
  Tensor maxpool(const std::string& name, Tensor x, double k, double s, double p) {
    Tensor y{x.n, x.c, static_cast<double>(static_cast<long long>((x.h + 2 * p - k) / s)) + 1,
             static_cast<double>(static_cast<long long>((x.w + 2 * p - k) / s)) + 1};
    Work l{"maxpool", name};
    l.other_flops = y.elems() * k * k;
    l.in = x.elems();
    l.out = y.elems();
    own(l);
    return y;
  }
  // global average pooling (also VGG's adaptive pool to 7×7 of a 7×7 input: one FLOP per input)
  Tensor gap(const std::string& name, Tensor x, double out_hw = 1) {
    Tensor y{x.n, x.c, out_hw, out_hw};
    Work l{"gap", name};
    l.other_flops = x.elems();
    l.in = x.elems();
    l.out = y.elems();
    own(l);
    return y;
  }
  // features = everything but the batch (the flatten before it moves nothing)
  Tensor linear(const std::string& name, Tensor x, double out_features) {
    double in_f = x.c * x.h * x.w;
    Work l{"linear", name};
    l.macs = x.n * in_f * out_features;
    l.in = x.elems();
    l.weights = in_f * out_features + out_features;
    l.out = x.n * out_features;
    own(l);
    return {x.n, out_features, 1, 1};
  }
  // a ReLU after a linear (its fusion into the GEMM kernel is not modelled here: layers only)
  Tensor relu_alone(const std::string& name, Tensor x) {
    Work l{"relu", name};
    l.other_flops = x.elems();
    l.in = l.out = x.elems();
    own(l);
    return x;
  }

  // totals over the layers as written
  double flops(double flops_per_mac = 2) const { return sum(layers, [&](const Work& w) { return w.flops(flops_per_mac); }); }
  double macs() const { return sum(layers, [](const Work& w) { return w.macs; }); }
  double bytes(bool weights_outputs_only = false) const { return sum(layers, [&](const Work& w) { return w.bytes(weights_outputs_only); }); }
  double time(double peak, double bandwidth, double launch = 0) const { return time_of(layers, peak, bandwidth, launch); }
  // totals over the fused kernels
  double fused_bytes() const { return sum(kernels, [](const Work& w) { return w.bytes(); }); }
  double fused_time(double peak, double bandwidth, double launch = 0) const { return time_of(kernels, peak, bandwidth, launch); }

  template <class F>
  static double sum(const std::vector<Work>& v, F f) {
    double s = 0;
    for (const Work& w : v) s += f(w);
    return s;
  }
  static double time_of(const std::vector<Work>& v, double peak, double bandwidth, double launch) {
    return sum(v, [&](const Work& w) { return w.time(peak, bandwidth) + launch; });
  }

 private:
  bool conv_bias_ = false;
  void own(const Work& l) {
    layers.push_back(l);
    kernels.push_back(l);
  }
};

// ResNet-50 v1.5 (torchvision; He et al. 2016 with the stride on the 3×3 conv): a 7×7 stem, then
// bottlenecks of 1×1 (width), 3×3 (width), 1×1 (4·width) in stages of 3, 4, 6, 3 blocks; the first
// block of each stage has a 1×1 projection shortcut (conv + BN).
inline Net resnet50(double batch = 1) {
  Net net;
  Tensor x{batch, 3, 224, 224};
  x = net.conv("conv1", x, 64, 7, 2, 3);
  x = net.bn("bn1", x);
  x = net.act("relu", x);
  x = net.maxpool("maxpool", x, 3, 2, 1);
  struct Stage {
    double width, blocks, stride;
  };
  int si = 1;
  for (Stage st : {Stage{64, 3, 1}, Stage{128, 4, 2}, Stage{256, 6, 2}, Stage{512, 3, 2}}) {
    for (int b = 0; b < st.blocks; ++b) {
      std::string p = "layer" + std::to_string(si) + "." + std::to_string(b) + ".";
      double s = b == 0 ? st.stride : 1;
      if (b == 0) net.bn(p + "down_bn", net.conv(p + "down", x, 4 * st.width, 1, s, 0));
      Tensor y = net.act(p + "relu1", net.bn(p + "bn1", net.conv(p + "conv1", x, st.width, 1, 1, 0)));
      y = net.act(p + "relu2", net.bn(p + "bn2", net.conv(p + "conv2", y, st.width, 3, s, 1)));
      y = net.bn(p + "bn3", net.conv(p + "conv3", y, 4 * st.width, 1, 1, 0));
      x = net.act(p + "relu", net.add(p + "add", y));
    }
    ++si;
  }
  x = net.gap("avgpool", x);
  net.linear("fc", x, 1000);
  return net;
}

// MobileNet V2 1.0 (Sandler et al. 2018, torchvision): stem 3×3/2 to 32; inverted residuals
// (expansion t, output c, repeats n, stride s) = (1,16,1,1) (6,24,2,2) (6,32,3,2) (6,64,4,2)
// (6,96,3,1) (6,160,3,2) (6,320,1,1); a residual add where stride is 1 and channels match (every
// repeat after the first); 1×1 to 1280; pool; dropout; linear to 1000. ReLU6 everywhere.
inline Net mobilenet_v2(double batch = 1) {
  Net net;
  Tensor x{batch, 3, 224, 224};
  x = net.act("relu1", net.bn("bn1", net.conv("conv1", x, 32, 3, 2, 1)), true);
  struct Cfg {
    double t, c, n, s;
  };
  int si = 1;
  for (Cfg g : {Cfg{1, 16, 1, 1}, Cfg{6, 24, 2, 2}, Cfg{6, 32, 3, 2}, Cfg{6, 64, 4, 2}, Cfg{6, 96, 3, 1}, Cfg{6, 160, 3, 2}, Cfg{6, 320, 1, 1}}) {
    for (int b = 0; b < g.n; ++b) {
      std::string p = "stage" + std::to_string(si) + "." + std::to_string(b) + ".";
      Tensor y = x;
      if (g.t > 1) y = net.act(p + "expand_relu", net.bn(p + "expand_bn", net.conv(p + "expand", y, x.c * g.t, 1, 1, 0)), true);
      y = net.act(p + "dw_relu", net.bn(p + "dw_bn", net.conv(p + "dw", y, y.c, 3, b == 0 ? g.s : 1, 1, y.c)), true);
      y = net.bn(p + "project_bn", net.conv(p + "project", y, g.c, 1, 1, 0));
      if (b > 0) y = net.add(p + "add", y);
      x = y;
    }
    ++si;
  }
  x = net.act("relu_last", net.bn("bn_last", net.conv("conv_last", x, 1280, 1, 1, 0)), true);
  x = net.gap("avgpool", x);
  net.linear("fc", x, 1000);
  return net;
}

// VGG-16 (Simonyan & Zisserman 2015, configuration D, torchvision: biases, no BN): 3×3 convs of
// 64, 64 | 128, 128 | 256 ×3 | 512 ×3 | 512 ×3 with ReLU, a 2×2/2 max pool after each group, an
// adaptive average pool to 7×7 (a 7×7 input: one FLOP per element), then 25088 → 4096 → 4096 → 1000
// with ReLU (and dropout, a view) between.
inline Net vgg16(double batch = 1) {
  Net net;
  Tensor x{batch, 3, 224, 224};
  int g = 1;
  for (std::vector<double> group : {std::vector<double>{64, 64}, {128, 128}, {256, 256, 256}, {512, 512, 512}, {512, 512, 512}}) {
    int i = 0;
    for (double c : group) {
      std::string p = "stage" + std::to_string(g) + "." + std::to_string(i++) + ".";
      x = net.act(p + "relu", net.conv(p + "conv", x, c, 3, 1, 1, 1, true));
    }
    x = net.maxpool("pool" + std::to_string(g++), x, 2, 2, 0);
  }
  x = net.gap("avgpool", x, 7);
  x = net.relu_alone("relu1", net.linear("fc1", x, 4096));
  x = net.relu_alone("relu2", net.linear("fc2", x, 4096));
  net.linear("fc3", x, 1000);
  return net;
}

// MobileNet V1 1.0-224 (Howard et al. 2017, table 1): 3×3/2 conv to 32, then 13 depthwise-
// separable blocks (3×3 depthwise + BN + ReLU, 1×1 pointwise + BN + ReLU) of 64, 128 ×2, 256 ×2,
// 512 ×6, 1024 ×2 channels, the first of each group with stride 2 (but the first block); pool;
// linear to 1000.
inline Net mobilenet_v1(double batch = 1) {
  Net net;
  Tensor x{batch, 3, 224, 224};
  x = net.act("relu1", net.bn("bn1", net.conv("conv1", x, 32, 3, 2, 1)));
  struct Cfg {
    double c, n, s;
  };
  int si = 1;
  for (Cfg g : {Cfg{64, 1, 1}, Cfg{128, 2, 2}, Cfg{256, 2, 2}, Cfg{512, 6, 2}, Cfg{1024, 2, 2}}) {
    for (int b = 0; b < g.n; ++b) {
      std::string p = "stage" + std::to_string(si) + "." + std::to_string(b) + ".";
      x = net.act(p + "dw_relu", net.bn(p + "dw_bn", net.conv(p + "dw", x, x.c, 3, b == 0 ? g.s : 1, 1, x.c)));
      x = net.act(p + "pw_relu", net.bn(p + "pw_bn", net.conv(p + "pw", x, g.c, 1, 1, 0)));
    }
    ++si;
  }
  x = net.gap("avgpool", x);
  net.linear("fc", x, 1000);
  return net;
}

}  // namespace rsim::test::ref
