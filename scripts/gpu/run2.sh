#!/bin/bash
# The second call on the lent H200 (2026-11-27): read-kernel variants, the torchvision networks at
# batch 1, 8, 32, 128, and the every-op plan (rsim plan scripts/gpu/every_op.yaml -o .gpu/plan_every.json).
set -u
O=$OUT/gpu2; mkdir -p $O
export PYTHONUNBUFFERED=1
timeout 90 python3 scripts/gpu/read_variants.py 2>&1 | tee $O/read_variants.txt
timeout 150 python3 scripts/gpu/torchvision_networks.py --device cuda:0 -o $O/tv --batches 1,8,32,128 > $O/tv.log 2>&1; echo tv rc=$?
tail -3 $O/tv.log
timeout 60 env PYTHONPATH=$PWD/python python3 -m rsim_torch measure .gpu/plan_every.json --device cuda:0 --reps 5 -o $O/every > $O/every.log 2>&1; echo every rc=$?
tail -3 $O/every.log
grep -c "not run\|torch computed" $O/every/measured.csv
tar czf $OUT/gpu2.tgz -C $OUT gpu2
