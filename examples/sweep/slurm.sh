#!/usr/bin/env bash
# A sweep as a Slurm job array: one array task per shard, then a merge job that runs when
# every task has succeeded.
#
#   Submit (on a login node; OUT must be on a filesystem every node sees):
#     N=16 SPEC=examples/sweep/oversubscription.yaml OUT=/shared/sweeps/oversub \
#       examples/sweep/slurm.sh
#   or only the array, merging by hand afterwards:
#     sbatch --array=1-16 --export=ALL,SPEC=...,OUT=... examples/sweep/slurm.sh
#     myriad sweep /shared/sweeps/oversub --merge --out /shared/sweeps/oversub/merged.csv
#
# The array must be 1-N (task K runs shard K/N, N = SLURM_ARRAY_TASK_COUNT). A task that was
# preempted, timed out or failed resumes when rerun (`scontrol requeue` or sbatch again):
# rows already in its shard file are kept. MYRIAD names the binary (default: myriad on PATH).
#SBATCH --job-name=myriad-sweep
#SBATCH --array=1-16
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=4
#SBATCH --time=01:00:00
#SBATCH --requeue
#SBATCH --output=myriad-sweep-%A_%a.log
set -euo pipefail

SPEC=${SPEC:-examples/sweep/oversubscription.yaml}
OUT=${OUT:-sweep-out}
MYRIAD=${MYRIAD:-myriad}

if [ -z "${SLURM_ARRAY_TASK_ID:-}" ]; then
  # Not inside a job: submit the array and its dependent merge.
  N=${N:-16}
  jid=$(sbatch --parsable --array="1-$N" \
    --export="ALL,SPEC=$SPEC,OUT=$OUT,MYRIAD=$MYRIAD" "$0")
  jid=${jid%%;*}
  mid=$(sbatch --parsable --dependency="afterok:$jid" --job-name=myriad-sweep-merge \
    --ntasks=1 --cpus-per-task=1 --time=00:15:00 --output=myriad-sweep-merge-%j.log \
    --wrap="$MYRIAD sweep '$OUT' --merge --out '$OUT/merged.csv' --json")
  echo "submitted array job $jid ($N shards of $SPEC -> $OUT) and merge job $mid"
  exit 0
fi

# Inside array task K of N: one shard, with the task's CPUs as rayon threads.
export RAYON_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}
exec "$MYRIAD" sweep "$SPEC" \
  --shard "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT" --out "$OUT" --json
