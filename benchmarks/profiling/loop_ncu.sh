#!/usr/bin/env bash
# Nsight Compute on one launch of the frontier loop (kernels/cuda/frontier_loop.cu) during the
# sx-mathoverflow replay of loop_phases.py: throughput against the device's peaks, memory traffic
# by level, warp stalls, occupancy. Usage (repository root, GPU machine with ncu):
#   OUT=dir DANGLING=self-loop SIZE=50 SKIP=10 bash benchmarks/profiling/loop_ncu.sh
# writes $OUT/loop.ncu-rep and $OUT/loop_ncu.txt (the report's details page). SOURCE=1 adds the
# warp-stall sampling per SASS instruction (--section SourceCounters) and writes the source page as
# $OUT/loop_sass.csv.gz (instruction, its samples by stall reason). PM=1 profiles the launch a second
# time with PM sampling alone (the device's throughput over time, every 1.5 us; clocks and caches as
# the application leaves them) into $OUT/loop_pm.ncu-rep and its raw page $OUT/loop_pm.csv, which
# benchmarks/profiling/pm_timeline.py reads.
set -euo pipefail
OUT=${OUT:-.}
SXMO=${SXMO:-$PWD/.device-data/sx-mathoverflow.txt.gz}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
# Nsight Compute on the (SKIP + 1)-th loop launch of the replay, with the options given
profile() {
  SXMO=$SXMO DANGLING=${DANGLING:-self-loop} SIZE=${SIZE:-50} QUIET=1 BATCHES=$(( ${SKIP:-10} + 2 )) PYTHONPATH=. \
    "$NCU" --kernel-name regex:frontier_loop --launch-skip "${SKIP:-10}" --launch-count 1 "$@" \
    python3 benchmarks/profiling/loop_phases.py
}
profile --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
  --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
  --section ComputeWorkloadAnalysis ${SOURCE:+--section SourceCounters --import-source no} -f -o "$OUT/loop"
"$NCU" --import "$OUT/loop.ncu-rep" --page details > "$OUT/loop_ncu.txt"
if [ -n "${SOURCE:-}" ]; then
  "$NCU" --import "$OUT/loop.ncu-rep" --page source --csv --print-source sass | gzip > "$OUT/loop_sass.csv.gz"
fi
if [ -n "${PM:-}" ]; then
  profile --section PmSampling --clock-control none --cache-control none -f -o "$OUT/loop_pm"
  "$NCU" --import "$OUT/loop_pm.ncu-rep" --page raw --print-metric-instances values --csv > "$OUT/loop_pm.csv"
fi
