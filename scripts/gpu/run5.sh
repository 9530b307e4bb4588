#!/bin/bash
# Prepared for a lent H200 (none was lent when it was written, 2026-11-27): everything a same-card calibration check
# needs, from one machine in one call — ResNet-50's layers one by one, eager and in a CUDA graph
# (rsim plan scripts/gpu/resnet50_layers.yaml -o .gpu/plan_r50.json), then the torchvision networks
# (ResNet-50, whose whole-network times the calibration takes, and the three held-out ones) at batch
# 1, 8, 32 and 128. Each step bounded by its own timeout and packed at once into $OUT/gpu5.tgz.
set -u
O=${OUT:-/tmp/gpu_out}
W=$O/gpu5
mkdir -p "$W"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
ARCHIVE=$O/gpu5.tgz
. "$(dirname "$0")/steps.sh"
{ nvidia-smi; python3 -c "import torch, torchvision; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'torchvision', torchvision.__version__)"; } >"$W/nvidia-smi.txt" 2>&1
tail -n 1 "$W/nvidia-smi.txt"
step r50_layers 150 python3 -m rsim_torch measure .gpu/plan_r50.json --device cuda:0 --reps 10 -o "$W/r50"
step torchvision 200 python3 scripts/gpu/torchvision_networks.py --device cuda:0 -o "$W/tv" --batches 1,8,32,128
cut -d, -f1,5,7 "$W/tv/measured_networks.csv" 2>/dev/null | head -70
