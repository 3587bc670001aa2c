#!/usr/bin/env bash
# The fused graph update's device time per step (graph_update_scale.py with TICKS=1)
# and its host-clock graph_ms for two or more builds in one device call, alternated: the working
# tree ("new") and a base build in .ab-base ("base"), made beforehand with
#   rm -rf .ab-base && mkdir .ab-base && git archive <rev> streamrank connectors | tar -x -C .ab-base
# BUILDS names others as name:dir pairs; ROUNDS (2) passes; SIZES (5,50,1000), BATCHES (30) and
# GRAPHS (sxmo) go to graph_update_scale.py; TICKS=0 times graph_ms alone (no per-step clock, no
# scan lengths read before each batch).
# Usage (repository root, GPU machine, SXMO naming sx-mathoverflow.txt.gz or it in .device-data):
#   GRAPHS=both bash benchmarks/profiling/update_ab.sh
set -uo pipefail
export SXMO=${SXMO:-$PWD/.device-data/sx-mathoverflow.txt.gz}
export SIZES=${SIZES:-5,50,1000} BATCHES=${BATCHES:-30} GRAPHS=${GRAPHS:-sxmo} TICKS=${TICKS:-1}
BUILDS=${BUILDS:-new:. base:.ab-base}
SCRIPT=$PWD/benchmarks/profiling/graph_update_scale.py
for _ in $(seq "${ROUNDS:-2}"); do
  for nb in $BUILDS; do
    name=${nb%%:*}; dir=${nb#*:}
    echo "== $name"
    (cd "$dir" && PYTHONPATH=. python3 "$SCRIPT" 2>&1 | grep -E "^(sx|R-MAT)|kernel steps")
  done
done
