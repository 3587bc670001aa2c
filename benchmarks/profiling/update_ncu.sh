#!/usr/bin/env bash
# Nsight Compute on the fused graph update's first kernel (fast_update_hdr, kernels/cuda/graph_fast_update.cu)
# during graph_update_scale.py's random batches: warp stalls sampled per source line, so that the
# steps' time can be read line by line. Usage (repository root, GPU machine with ncu):
#   OUT=dir SIZE=1000 GRAPHS=sxmo bash benchmarks/profiling/update_ncu.sh
# writes $OUT/update.ncu-rep, $OUT/update_ncu.txt (details) and $OUT/update_source.csv (per line).
set -euo pipefail
OUT=${OUT:-.}
SXMO=${SXMO:-$PWD/.device-data/sx-mathoverflow.txt.gz}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
SXMO=$SXMO GRAPHS=${GRAPHS:-sxmo} SIZES=${SIZE:-1000} BATCHES=${BATCHES:-12} LINEINFO=1 PYTHONPATH=. \
  "$NCU" --kernel-name regex:fast_update_hdr --launch-skip "${SKIP:-8}" --launch-count "${COUNT:-1}" \
  --section WarpStateStats --section SourceCounters --section SchedulerStats --section LaunchStats \
  --section MemoryWorkloadAnalysis --import-source yes --cache-control none --clock-control none -f -o "$OUT/update" \
  python3 benchmarks/profiling/graph_update_scale.py > "$OUT/update_run.txt" 2>&1
"$NCU" --import "$OUT/update.ncu-rep" --page details > "$OUT/update_ncu.txt"
"$NCU" --import "$OUT/update.ncu-rep" --page source --print-source sass --csv > "$OUT/update_source.csv" 2>&1 || true
