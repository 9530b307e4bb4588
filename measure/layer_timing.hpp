// Runs one layer of a network for real on this CPU (oneDNN) and times it. This header is free
// of oneDNN: without it the build still works and `available()` says what is missing.
#pragma once
#include <string>
#include <vector>

#include "engine/graph/graph.hpp"

namespace rsim::measure {

struct TimingOptions {
  int reps = 20;          // timed repetitions (after the warm-up)
  int warmup = 3;
  bool cold = false;      // flush the caches between repetitions (the flush is not timed)
  double flush_bytes = 0; // bytes written to flush; 0: 2 × the sum of the OS's cache sizes, at least 64 MiB
  double max_bytes = 0;   // a layer whose tensors need more is not run (0: half this machine's memory; --max-memory)
};

struct LayerTiming {
  bool ran = false;
  std::string why_not;          // when not run: the op, dtype or shape oneDNN cannot run here
  double median_s = 0, min_s = 0, max_s = 0;  // over the timed repetitions
  int reps = 0;
  std::string primitive;        // "convolution", "matmul", ...
  std::string impl;             // oneDNN's implementation name, e.g. "brg:avx2"
  std::vector<Shape> out_shapes;  // the destination shapes oneDNN computed (checked against rsim's)
};

// "oneDNN 2.6.3 (libdnnl), OpenMP threads: 2", or why there is no backend.
bool timing_available();
std::string timing_backend();

// Times `L` (its op, attributes, input shapes and dtype). Never throws for an unsupported layer:
// `why_not` says why it was not run. A layer that moves no data (a view) is not run.
LayerTiming time_layer(const Layer& L, const TimingOptions& opt);

// The padding oneDNN needs for a window of size k, stride s, dilation d that maps `in` to `out`
// (begin, end), as the engine's shape rule produced it (explicit or 'same'); end may be negative
// when the last rows are not reached.
std::pair<long long, long long> window_padding(long long in, long long out, long long k, long long s, long long d, long long begin_hint);

}  // namespace rsim::measure
