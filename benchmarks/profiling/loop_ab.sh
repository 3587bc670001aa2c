#!/usr/bin/env bash
# The frontier loop's device time per iteration (loop_phases.py) for two or more builds in one
# device call, alternated: by default the working tree ("new") and a base build in .ab-base
# ("base"), made beforehand with
#   rm -rf .ab-base && mkdir .ab-base && git archive <rev> streamrank connectors | tar -x -C .ab-base
# BUILDS names others as name:dir pairs (BUILDS="new:. a:.ab-a base:.ab-base"); ROUNDS (2) passes.
# Usage (repository root, GPU machine, SXMO naming sx-mathoverflow.txt.gz or it in .device-data):
#   bash benchmarks/profiling/loop_ab.sh "self-loop:5 self-loop:50 uniform:5"
set -uo pipefail
SXMO=${SXMO:-$PWD/.device-data/sx-mathoverflow.txt.gz}
BUILDS=${BUILDS:-new:. base:.ab-base}
SCRIPT=$PWD/benchmarks/profiling/loop_phases.py
for ds in $1; do
  d=${ds%%:*}; s=${ds##*:}
  for _ in $(seq "${ROUNDS:-2}"); do
    for nb in $BUILDS; do
      name=${nb%%:*}; dir=${nb#*:}
      echo "== $name $d SIZE=$s"
      (cd "$dir" && SXMO=$SXMO DANGLING=$d SIZE=$s QUIET=1 PYTHONPATH=. python3 "$SCRIPT" | tail -7)
    done
  done
done
