// The price of one iteration of a served LLM: rsim's own cost of that exact batch on the platform
// (its prefill chunks and decodes), from the engine's evaluation of the network — not a fitted
// curve. A batch of T tokens is split as an inference engine runs it:
//   - the token-wise layers (projections, MLPs, norms, embedding, their all-reduces) run once over
//     all T tokens: the network's prefill of T tokens on one sequence, less its attention and LM head;
//   - attention (and the KV cache's append) runs per sequence: q new tokens after k cached ones,
//     its compute and memory times summed over the batch's sequences layer by layer (one varlen
//     kernel per layer), the larger of the two taken; the decodes' attention likewise, or, where the
//     platform has a decode-attention kernel model, as one decode kernel per layer over the batch's
//     decodes at their mean and longest context (its floor and split priced once, not per sequence);
//   - the LM head runs on one token per sequence that samples (a decode, a prompt's last chunk);
//   - the execution mode's overhead (launches, graph gaps, the host) once per iteration: the
//     prefill network's in the prefill mode when the batch holds prefill tokens, else the decode
//     network's (a decode-only batch is priced as the decode step of that many sequences).
// Each part is priced from a few engine evaluations and kept: the token-wise layers' compute,
// memory and communication times are affine in T (two evaluations per mode); a prefill chunk's
// attention is of the form α·q·k + β·q² + γ·q + δ·k + ε (five evaluations, q ≥ 2), a decode's
// affine in k (two); the LM head affine in the sequences sampling (two evaluations).
// What is not affine (a mixture's experts touched, a calibrated efficiency curve, a sliding window
// that caps k) is priced at the affine model's two ends: the docs name it.
#pragma once
#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/eval/evaluate.hpp"
#include "serving/simulate.hpp"

namespace rsim::serving {

class BatchPricer {
 public:
  // `network` and `platform` are entries of `base` (the scenario being served), `point` its sweep
  // point; the modes are execution names ("" = the scenario's). Throws ConfigError.
  BatchPricer(PointEvaluator& ev, const Scenario& base, const Point& point, const CNode& network, const CNode& platform, const std::string& prefill_execution,
              const std::string& decode_execution);
  double cost(const std::vector<Work>& prefill, const std::vector<Work>& decode);
  // a batch of decodes only, from their count, the sum of their contexts and the longest: the same
  // price as cost() of those decodes, to the bit
  double decode_cost(long long n, long long context_sum, long long context_max);
  StepCost step_cost() {
    return [this](const std::vector<Work>& p, const std::vector<Work>& d) { return cost(p, d); };
  }
  DecodeCost decode_step_cost() {
    return [this](long long n, long long sum, long long max) { return decode_cost(n, sum, max); };
  }

  // One GPU's figures for the KV cache's size (from a one-token decode and a prefill of
  // `workspace_tokens` tokens): weights, KV bytes per token, memory size, activations
  double weights_bytes() const { return weights_; }
  double kv_bytes_per_token() const { return kv_per_token_; }
  double memory_bytes() const { return memory_; }  // 0: the platform states no memory size
  double activation_bytes(long long tokens);
  double gpus() const { return gpus_; }
  // the platform's interconnect levels, fastest first (a disaggregated deployment's KV transfer)
  const std::vector<InterconnectLevel>& links() const { return links_; }
  const std::string& network_name() const { return network_name_; }
  const std::string& platform_name() const { return platform_name_; }
  long long evaluations() const { return evaluations_; }

 private:
  // A group of identical rows: each one's compute, memory and other time at two x, as x0, x1
  struct Affine {
    double c0 = 0, c1 = 0, m0 = 0, m1 = 0, o0 = 0, o1 = 0;  // at x0 and x1: compute, memory, the rest (communication)
    double count = 1;
  };
  struct Model {  // Σ over rows of max(compute, memory) + other, each affine in x between x0 and x1
    double x0 = 0, x1 = 1;
    std::vector<Affine> rows;
    double base0 = 0, base1 = 0;  // what is not a row's (the mode's overhead), at x0 and x1
    double at(double x) const;
  };
  PointEvaluator& ev_;
  Point point_;
  std::unique_ptr<Scenario> sc_[2];  // the served network alone: a prefill in prefill_execution, a decode step in decode_execution
  Model tokens_[2];
  bool tokens_ready_[2] = {false, false};
  // attention's rows: each one's compute, memory and other time as α·q·k + β·q² + γ·q + δ·k + ε
  // (q new tokens after k cached: causal scores q·k + q(q+1)/2, reads and writes linear in both)
  struct Poly {
    double a = 0, b = 0, g = 0, d = 0, e = 0;
    double at(double q, double k) const { return a * q * k + b * q * q + g * q + d * k + e; }
  };
  // a decode's (one query after k cached): compute, memory, other and the theoretical roofs'
  // compute and memory times, each c0 + c1·k per sequence; or, on a platform with a decode-attention
  // model, one kernel for the batch's decodes at their mean and longest context (kernel_model.hpp)
  struct DecodeLine {
    std::array<double, 5> at0{}, slope{};  // compute, memory, other, theoretical compute, theoretical memory
    bool modelled = false;
    DecodeShape shape;
    const DecodeAttentionParams* params = nullptr;
    DecodeFigures figures;
  };
  struct AttentionRow {
    Poly c, m, o;  // a prefill chunk's (q ≥ 2)
    DecodeLine decode;
  };
  std::shared_ptr<const Platform> platform_;  // (the decode model's parameters and figures)
  std::vector<AttentionRow> attention_;
  bool attention_ready_ = false;
  Affine lm_;  // the LM head's times at 1 and 256 sampling sequences
  bool lm_ready_ = false;
  std::map<long long, double> activations_;
  double weights_ = 0, kv_per_token_ = 0, memory_ = 0, gpus_ = 1;
  std::vector<InterconnectLevel> links_;
  std::string network_name_, platform_name_;
  long long evaluations_ = 0;

  const PointResult& run(int mode, long long batch, long long seq, long long context);
  const Model& token_model(int mode);
  void attention_model();
  double lm_head(long long n);
  // the prefill chunks' sums (Σ q·k, Σ q², Σ q, Σ k, their count) and the decodes' (count, Σ k,
  // the longest k): cost() and decode_cost() price through it
  struct Sums {
    double tokens = 0, sqk = 0, sqq = 0, sq = 0, sk = 0, n = 0, nd = 0, dk = 0, kmax = 0;
    long long sampling = 0;
    bool prefill = false;
  };
  double price(const Sums& b);
};

// Whether a row is priced per sequence (attention and the KV cache), not over the batch's tokens
bool per_sequence_op(const std::string& op);

}  // namespace rsim::serving
