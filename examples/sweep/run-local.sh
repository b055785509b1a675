#!/usr/bin/env bash
# Runs all N shards of a sweep on this machine in parallel, then merges them.
#
#   examples/sweep/run-local.sh SPEC N OUTDIR [MERGED.csv]
#   examples/sweep/run-local.sh examples/sweep/oversubscription.yaml 4 sweep-out
#
# Each shard writes OUTDIR/shard-K-of-N.csv (rerunning resumes: rows already there are kept);
# the merge writes MERGED.csv (default OUTDIR/merged.csv), byte-identical to a 1/1 run.
# The binary is $MYRIAD, else `myriad` on PATH, else target/release/myriad of this repository
# (built with cargo when missing). Each shard gets nproc/N rayon threads (at least 1).
set -euo pipefail

if [ $# -lt 3 ]; then
  sed -n '2,10p' "$0" >&2
  exit 2
fi
spec=$1
n=$2
out=$3
merged=${4:-$out/merged.csv}

repo=$(cd "$(dirname "$0")/../.." && pwd)
if [ -n "${MYRIAD:-}" ]; then
  myriad=$MYRIAD
elif command -v myriad >/dev/null 2>&1; then
  myriad=myriad
else
  myriad=$repo/target/release/myriad
  if [ ! -x "$myriad" ]; then
    (cd "$repo" && cargo build --release -q -p myriad-cli)
  fi
fi

cores=$(nproc 2>/dev/null || echo 1)
threads=$(( cores / n ))
[ "$threads" -ge 1 ] || threads=1

pids=()
for k in $(seq 1 "$n"); do
  RAYON_NUM_THREADS=$threads "$myriad" sweep "$spec" --shard "$k/$n" --out "$out" &
  pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    echo "shard $((i + 1))/$n failed" >&2
    failed=1
  fi
done
[ "$failed" -eq 0 ] || exit 1

"$myriad" sweep "$out" --merge --out "$merged"
