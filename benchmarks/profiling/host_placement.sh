#!/usr/bin/env bash
# Does the host's placement change the graph update's host clock? graph_update_scale.py in ROUNDS (3)
# passes of separate processes, alternated by MODES (default "none task thread"):
#   none    the process as the shell starts it (any of the machine's CPUs);
#   task    the whole process (the CUDA driver's and library threads too) on 4 CPUs, `taskset -c`,
#           CPUs 4r..4r+3 (mod 16) in pass r;
#   thread  only the main thread (the one that queues and waits) on CPU r + 8 (graph_update_scale's
#           PIN, after loading);
#   arrow   Arrow's allocator replaced by the system's (ARROW_DEFAULT_MEMORY_POOL=system).
# SIZES (5,50,506,1000), BATCHES (60), GRAPHS (both) and PARTS go to graph_update_scale.py.
# Usage (repository root, GPU machine, sx-mathoverflow.txt.gz in .device-data or named by SXMO):
#   MODES="none task thread" bash benchmarks/profiling/host_placement.sh
set -uo pipefail
export PYTHONPATH=. SXMO=${SXMO:-$PWD/.device-data/sx-mathoverflow.txt.gz}
export GRAPHS=${GRAPHS:-both} SIZES=${SIZES:-5,50,506,1000} BATCHES=${BATCHES:-60}
SCRIPT=benchmarks/profiling/graph_update_scale.py
lscpu | grep -E "^CPU\(s\)|Model name|Thread|NUMA node\(s\)"
for r in $(seq "${ROUNDS:-3}"); do
  for mode in ${MODES:-none task thread}; do
    c=$(( (4 * r) % 16 ))
    case $mode in
      none) echo "== none r$r"; python3 "$SCRIPT" ;;
      task) echo "== task cpus $c-$((c + 3)) r$r"; taskset -c "$c-$((c + 3))" python3 "$SCRIPT" ;;
      thread) echo "== thread cpu $((r + 8)) r$r"; PIN=$((r + 8)) python3 "$SCRIPT" ;;
      arrow) echo "== arrow system pool r$r"; ARROW_DEFAULT_MEMORY_POOL=system python3 "$SCRIPT" ;;
      *) echo "unknown mode $mode" >&2; exit 2 ;;
    esac 2>&1 | grep -vE "^graph +vertices"
  done
done
