#!/usr/bin/env bash
# A sweep as a Slurm array job (docs/cluster.md): each task evaluates one shard of the sweep, the
# last step merges them. Submit from a clone (the scenario and build/rsim on a shared file system):
#   jid=$(sbatch --parsable --array=0-15 docs/examples/slurm_sweep.sh scenarios/study_batch.yaml)
#   sbatch --dependency=afterok:$jid --wrap "build/rsim merge out/study_batch out/study_batch-shards/*"
#SBATCH --job-name=rsim-sweep
#SBATCH --cpus-per-task=1
#SBATCH --time=01:00:00
#SBATCH --output=rsim-sweep-%A_%a.log
set -euo pipefail
scenario=${1:?usage: sbatch --array=0-N slurm_sweep.sh SCENARIO.yaml [rsim run options]}
shift
name=$(basename "$scenario" .yaml)
# --shard slurm: K = SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN, N = SLURM_ARRAY_TASK_COUNT
exec build/rsim run "$scenario" --shard slurm --jobs "${SLURM_CPUS_PER_TASK:-1}" --quiet \
  --out "out/$name-shards/$SLURM_ARRAY_TASK_ID" "$@"
