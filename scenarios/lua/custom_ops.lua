-- Operators rsim does not know, defined without recompiling (see scripting/README.md).

-- swish with a learnable-free β: y = x · sigmoid(β·x).
-- Per element: β·x (1), sigmoid (4: negate, exp, add, divide), multiply (1) = 6 FLOPs.
rsim.op {
  name = "swish_beta",
  summary = "x · sigmoid(β·x), elementwise",
  formula = "FLOPs = 6 per element (scale 1, sigmoid 4, multiply 1); MACs = 0; params = 0",
  attrs = { beta = { type = "number", default = 1.0, doc = "slope β" } },
  cost = function(inputs, outputs, attrs, dtype)
    return { macs = 0, flops = 6 * rsim.numel(outputs[1]), params = 0 }
  end,
}

-- A fused conv + batchnorm + ReLU, composed from the built-in conv2d rule. The fused kernel reads
-- the input and the weights once and writes only the final output: the conv's and the BN's
-- intermediate tensors never reach memory. BN folds into the conv's weights and bias (no extra
-- work at inference); the ReLU costs 1 FLOP per output element.
rsim.op {
  name = "conv_bn_relu",
  summary = "fused conv2d + batchnorm (folded) + ReLU: one kernel, no intermediates in memory",
  formula = "conv2d's MACs; FLOPs = 2·MACs + 1 per output element (ReLU); params = conv's + 2·Cout (BN γ, β)",
  attrs = {
    out_channels = { type = "int", doc = "output channels" },
    kernel = { type = "pair", doc = "kernel size" },
    stride = { type = "pair", default = 1, doc = "stride" },
    padding = { type = "padding", default = 0, doc = "padding: a number, a pair, same or valid" },
    groups = { type = "int", default = 1, doc = "channel groups" },
  },
  infer = function(inputs, attrs)
    local c = rsim.cost.conv2d { input = inputs[1], out_channels = attrs.out_channels, kernel = attrs.kernel,
                                 stride = attrs.stride, padding = attrs.padding, groups = attrs.groups, bias = false }
    return c.outputs
  end,
  cost = function(inputs, outputs, attrs, dtype)
    local c = rsim.cost.conv2d { input = inputs[1], out_channels = attrs.out_channels, kernel = attrs.kernel,
                                 stride = attrs.stride, padding = attrs.padding, groups = attrs.groups, bias = false }
    local cout = outputs[1][2]
    return { macs = c.macs, flops = rsim.numel(outputs[1]), params = c.params + 2 * cout, weights = c.weights + cout }
  end,
}

-- Single-head self-attention over x: (B, T, D) with projections folded away: scores = x·xᵀ/√D,
-- softmax over T, then scores·x. Two batched matmuls of B·T·T·D MACs each; softmax 5 FLOPs and a
-- scale 1 FLOP per score. The T×T scores are written and read once (unfused).
rsim.op {
  name = "self_attention",
  summary = "softmax(x·xᵀ/√D)·x over (B, T, D), unfused: the T×T scores go through memory",
  formula = "MACs = 2·B·T·T·D; FLOPs = 2·MACs + 6·B·T·T; bytes: x read twice, scores written and read, output written",
  inputs = 1,
  cost = function(inputs, outputs, attrs, dtype)
    local x = inputs[1]
    local b, t, d = x[1], x[2], x[3]
    local size = ({ fp64 = 8, fp32 = 4, tf32 = 4, bf16 = 2, fp16 = 2, fp8 = 1, int8 = 1, int4 = 0.5 })[dtype]
    local scores = b * t * t
    return {
      macs = 2 * b * t * t * d,
      flops = 6 * scores,
      params = 0,
      input_bytes = { 2 * b * t * d * size + scores * size },  -- x twice, the scores back in
      output_bytes = { b * t * d * size + scores * size },     -- the result, the scores out
    }
  end,
}
