#!/bin/bash
# A call on a lent H200 (2026-11-27, fourth machine): the torchvision networks at batch 1, 8, 32,
# 128 (ResNet-50 among them, to compare this card with ../shared/gpu/h200's), then batch 1 and 32
# once more in the same call, to see how much one machine's repeats move.
set -u
O=$OUT/gpu4; mkdir -p $O
export PYTHONUNBUFFERED=1
{ nvidia-smi; python3 -c "import torch, torchvision; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'torchvision', torchvision.__version__)"; } > $O/nvidia-smi.txt 2>&1
tail -n 1 $O/nvidia-smi.txt
timeout 170 python3 scripts/gpu/torchvision_networks.py --device cuda:0 -o $O/tv --batches 1,8,32,128 > $O/tv.log 2>&1; echo tv rc=$?
tar czf $OUT/gpu4.tgz -C $OUT gpu4
timeout 100 python3 scripts/gpu/torchvision_networks.py --device cuda:0 -o $O/tv_again --batches 1,32 > $O/tv_again.log 2>&1; echo tv_again rc=$?
tar czf $OUT/gpu4.tgz -C $OUT gpu4
cut -d, -f1,5,7 $O/tv/measured_networks.csv | head -70
