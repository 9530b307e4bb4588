-- An efficiency model and an energy metric (see scripting/README.md).

-- Depthwise convolutions use the FMA units poorly: one input channel per output channel leaves
-- little reuse in registers. Assume they reach 30 % of the compute roof; small GEMM-like layers
-- (under 10 MFLOP) 60 %; everything else the platform's derated roof. Bandwidth is unchanged.
rsim.efficiency(function(layer, platform)
  if layer.op == "depthwise_conv2d" or (layer.op == "conv2d" and layer.attrs.groups and layer.attrs.groups > 1
      and layer.attrs.groups == layer.inputs[1][2]) then
    return { compute = 0.3, bandwidth = 1.0 }
  end
  if (layer.op == "conv2d" or layer.op == "linear" or layer.op == "matmul") and layer.flops < 1e7 then
    return { compute = 0.6, bandwidth = 1.0 }
  end
  return { compute = 1.0, bandwidth = 1.0 }
end)

-- Energy per layer: 1 pJ per FLOP plus 20 pJ per DRAM byte (orders of magnitude in the style of
-- Horowitz, ISSCC 2014; set your own).
local PJ_PER_FLOP, PJ_PER_BYTE = 1.0, 20.0
rsim.metric("energy_j", function(row)
  return (row.flops * PJ_PER_FLOP + row.bytes * PJ_PER_BYTE) * 1e-12
end)

-- Time if the layer reached 70 % of its attainable performance.
rsim.metric("time_at_70pct_s", function(row)
  return row.derated_time_s / 0.7
end)
