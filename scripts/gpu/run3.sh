#!/bin/bash
# The third call on the lent H200 (2026-11-27): rsim_torch probe with the row-wise read kernel, and
# ResNet-50's layers one by one, eager and in a CUDA graph (rsim plan scripts/gpu/resnet50_layers.yaml
# -o .gpu/plan_r50.json).
set -u
O=$OUT/gpu3; mkdir -p $O/probe
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/python
timeout 60 python3 -m rsim_torch probe --device cuda:0 -o $O/probe/h200_probe.yaml --json $O/probe/probe.json --name h200_probe > $O/probe.log 2>&1; echo probe rc=$?
tail -4 $O/probe.log
timeout 200 python3 -m rsim_torch measure .gpu/plan_r50.json --device cuda:0 --reps 10 -o $O/r50 > $O/r50.log 2>&1; echo r50 rc=$?
tail -3 $O/r50.log
tar czf $OUT/gpu3.tgz -C $OUT gpu3
