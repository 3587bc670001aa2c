#!/usr/bin/env bash
# The frontier loop's device time per iteration (loop_phases.py) for two builds in one device call,
# alternated: the working tree ("new") and a base build in .ab-base ("base"), made beforehand with
#   rm -rf .ab-base && mkdir .ab-base && git archive <rev> streamrank connectors | tar -x -C .ab-base
# Usage (repository root, GPU machine, SXMO naming sx-mathoverflow.txt.gz or it in .device-data):
#   bash examples/gpu_profiling/loop_ab.sh "self-loop:5 self-loop:50 uniform:5"
set -uo pipefail
SXMO=${SXMO:-$PWD/.device-data/sx-mathoverflow.txt.gz}
for ds in $1; do
  d=${ds%%:*}; s=${ds##*:}
  for b in new base new base; do
    echo "== $b $d SIZE=$s"
    if [ "$b" = new ]; then
      SXMO=$SXMO DANGLING=$d SIZE=$s QUIET=1 PYTHONPATH=. python3 examples/gpu_profiling/loop_phases.py | tail -5 | grep -v "^loop grid"
    else
      (cd .ab-base && SXMO=$SXMO DANGLING=$d SIZE=$s QUIET=1 PYTHONPATH=. python3 "$OLDPWD/examples/gpu_profiling/loop_phases.py" | tail -5 | grep -v "^loop grid")
    fi
  done
done
