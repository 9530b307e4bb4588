#!/bin/bash
# One call on a lent GPU machine (PyTorch there, no rsim build): the held-out torchvision networks,
# rsim_torch probe, and rsim_torch measure of plans written here by `rsim plan` (PLANS, default
# .gpu/). Every step is bounded by its own timeout and its output packed at once into
# $OUT/gpu.tgz, so a step that fails or runs over leaves the others' data.
#   rsim plan scripts/gpu/heldout_cnn.yaml -o .gpu/plan_cnn.json
#   rsim plan scripts/gpu/heldout_llm.yaml -o .gpu/plan_llm.json
#   OUT=/tmp/o scripts/gpu/run_device.sh
set -u
O=${OUT:-/tmp/gpu_out}
W=$O/gpu
PLANS=${PLANS:-.gpu}
mkdir -p "$W"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
ARCHIVE=$O/gpu.tgz
. "$(dirname "$0")/steps.sh"
{ nvidia-smi; python3 -c "import torch, torchvision; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'torchvision', torchvision.__version__)"; } >"$W/env.txt" 2>&1
head -n 12 "$W/env.txt"; tail -n 1 "$W/env.txt"
step torchvision 120 python3 scripts/gpu/torchvision_networks.py --device cuda:0 -o "$W/torchvision" --batches 1,32
mkdir -p "$W/probe"
step probe 70 python3 -m rsim_torch probe --device cuda:0 -o "$W/probe/h200_probe.yaml" --json "$W/probe/probe.json" --name h200_probe
step measure_cnn 180 python3 -m rsim_torch measure "$PLANS/plan_cnn.json" --device cuda:0 --reps 10 -o "$W/cnn"
step measure_llm 90 python3 -m rsim_torch measure "$PLANS/plan_llm.json" --device cuda:0 --reps 10 -o "$W/llm"
cat "$W/torchvision/measured_networks.csv" 2>/dev/null | cut -d, -f1,5,6,7 | column -t -s, | head -40
