#!/usr/bin/env bash
# Regenerate the results docs/benchmarks.md cites. Run from the repository root.
#
#   bash benchmarks/run.sh temporal DATA_DIR OUT_DIR      # GPU: the DF-P paper's temporal protocol on sx-mathoverflow,
#                                                         #      both dangling modes; the reference DF-P too when
#                                                         #      SEED_DFP_BENCH names its runner (same device call)
#   bash benchmarks/run.sh rmat OUT_DIR [SCALE]           # GPU: R-MAT random batches (1e-6 / 1e-4 / 1e-2 |E|) against
#                                                         #      Static, cuSPARSE and cuGraph (where installed); SCALE 24
#   bash benchmarks/run.sh cpu DATA_DIR OUT_DIR           # CPU: the sx-mathoverflow replay beside a NetworkX recompute,
#                                                         #      and every algorithm on the bundled CollegeMsg
#   bash benchmarks/run.sh all DATA_DIR OUT_DIR [SCALE]   # the three above
#   bash benchmarks/run.sh cpu-threads DATA_DIR OUT_DIR   # CPU: the temporal protocol at 1-16 threads (padded and
#                                                         #      unpadded), beside the reference's OpenMP DF-P at the
#                                                         #      same thread counts when REFERENCE_SRC names its archive
#
# DATA_DIR holds sx-mathoverflow.txt.gz (SNAP). Environment: PYTHON (default python3), BATCHES
# (timed batches per fraction: temporal 20, rmat 11, cpu-threads 20), GRAPH (cpu: another edge file
# instead of DATA_DIR/sx-mathoverflow.txt.gz, e.g. for a quick check), THREADS (cpu-threads: thread
# counts, default 1,2,4,8,16), FRACTIONS (cpu-threads: default 1e-5,1e-4,1e-3), ERROR_EVERY
# (cpu-threads: L1 after every K-th batch, default 5), LOOSE_TOL (cpu-threads: also a looser
# frontier/prune tolerance), REFERENCE_SRC (cpu-threads: the reference implementation's archive,
# pagerank-cuda-dynamic-a164e37.tar.gz; benchmarks/reference/dfp_omp_threads.cxx is built against
# it with g++ -fopenmp). Each sub-command writes its result files under OUT_DIR with the names
# docs/benchmarks.md cites and prints the tables.
set -euo pipefail
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$(pwd)

usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

need_file() { [ -s "$1" ] || { echo "missing $1" >&2; exit 2; }; }

gpu_name() {
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name --format=csv,noheader | head -1
  else
    echo "no nvidia-smi"
  fi
}

temporal() {
  local data=$1 out=$2 graph="$1/sx-mathoverflow.txt.gz" batches=${BATCHES:-20}
  need_file "$graph"; mkdir -p "$out"
  local ref=() log="$out/temporal_sxmo_bench_h200.txt"
  {
    echo "# $(gpu_name): the published temporal protocol on sx-mathoverflow (bash benchmarks/run.sh temporal)"
    if [ -n "${SEED_DFP_BENCH:-}" ]; then
      echo "== reference DF-P ($SEED_DFP_BENCH): 248180 vertices, 506550 lines, fractions 1e-5,1e-4,1e-3"
      SEED_WORK=${SEED_WORK:-/tmp/seed-dfp} bash "$SEED_DFP_BENCH" "$graph" 248180 506550 0.00001,0.0001,0.001 \
        > "$out/temporal_sxmo_reference_h200.txt" 2> "$out/temporal_sxmo_reference_h200.err"
      grep -i "PruneDynamicFrontier" "$out/temporal_sxmo_reference_h200.txt" || true
      ref=(--reference-log "$out/temporal_sxmo_reference_h200.txt")
    fi
    echo "== temporal protocol, published setting (padded, self-loop)"
    "$PY" -m streamrank bench --graph "$graph" --protocol temporal --vertices 248180 --dangling self-loop \
      --batch-fractions 1e-5,1e-4,1e-3 --batches "$batches" --device gpu --error-every 1 "${ref[@]}" \
      --json "$out/temporal_sxmo_selfloop_h200.json"
    echo "== temporal protocol, standard semantics (uniform dangling, no padding)"
    "$PY" -m streamrank bench --graph "$graph" --protocol temporal --dangling uniform \
      --batch-fractions 1e-5,1e-4,1e-3 --batches "$batches" --device gpu --error-every 1 \
      --json "$out/temporal_sxmo_uniform_h200.json"
  } 2>&1 | tee "$log"
}

rmat() {
  local out=$1 scale=${2:-24} batches=${BATCHES:-11}
  mkdir -p "$out"
  local name="rmat${scale}_h200"
  "$PY" -m streamrank bench --graph "rmat:$scale" --device gpu --batches "$batches" \
    --batch-fractions 1e-6,1e-4,1e-2 --algorithms warm,auto \
    --json "$out/$name.json" --plot "$out/$name.png" 2>&1 | tee "$out/$name.txt"
}

cpu() {
  local data=$1 out=$2 graph=${GRAPH:-$1/sx-mathoverflow.txt.gz}
  need_file "$graph"; mkdir -p "$out"
  {
    echo "# streamrank replay $(basename "$graph") --algorithm dfp --check --baseline networkx --no-progress"
    echo "# CPU backend, $(nproc) cores; $(uptime | sed 's/.*load/load/')"
    "$PY" -m streamrank replay "$graph" --algorithm dfp --device cpu --check --baseline networkx --no-progress
  } 2>&1 | tee "$out/cpu_replay_sxmo_networkx.txt"
  {
    echo "# streamrank replay --algorithm all --check --no-progress (the bundled CollegeMsg graph), CPU backend, $(nproc) cores"
    "$PY" -m streamrank replay --algorithm all --device cpu --check --no-progress
  } 2>&1 | tee "$out/college_all_cpu.txt"
}

cpu_threads() {
  local data=$1 out=$2 graph="$1/sx-mathoverflow.txt.gz" batches=${BATCHES:-20} threads=${THREADS:-1,2,4,8,16}
  local fractions=${FRACTIONS:-1e-5,1e-4,1e-3} loose=()
  [ -n "${LOOSE_TOL:-}" ] && loose=(--loose-tol "$LOOSE_TOL")
  need_file "$graph"; mkdir -p "$out"
  local refs=() top
  top=$(echo "$threads" | tr ',' '\n' | sort -n | tail -1)
  if [ -n "${REFERENCE_SRC:-}" ]; then
    local work=${REFERENCE_WORK:-/tmp/dfp-omp-threads}
    rm -rf "$work" && mkdir -p "$work"
    tar -xzf "$REFERENCE_SRC" -C "$work"
    g++ -DTYPE=double -std=c++17 -O3 -fopenmp -I"$work" benchmarks/reference/dfp_omp_threads.cxx -o "$work/dfp_omp"
    gunzip -c "$graph" > "$work/input.txt"
    local desc
    desc=$(echo "$threads" | tr ',' '\n' | sort -rn | paste -sd, -)  # descending: a run never waits for new threads
    # padded: the published 248,180 ids; unpadded: the fewest the reference takes (its ids are the
    # file's, up to 88,580), where streamrank keeps only the 24,818 ids the file uses
    for setting in padded:248180 unpadded:88581; do
      local name=${setting%%:*} rows=${setting##*:} log="$out/cpu_threads_reference_${setting%%:*}.txt"
      : > "$log"
      for f in ${fractions//,/ }; do
        OMP_NUM_THREADS=$top "$work/dfp_omp" "$work/input.txt" "$rows" 506550 "$f" "$desc" "$batches" >> "$log"
      done
      refs+=(--reference-log "$name=$log")
    done
  fi
  "$PY" benchmarks/cpu_threads.py --graph "$graph" --threads "$threads" --batches "$batches" --fractions "$fractions" \
    --error-every "${ERROR_EVERY:-5}" "${loose[@]}" --json "$out/cpu_threads_sxmo.json" "${refs[@]}" 2>&1 \
    | tee "$out/cpu_threads_sxmo.txt"
}

[ $# -ge 1 ] || usage
cmd=$1; shift
case "$cmd" in
  temporal) [ $# -eq 2 ] || usage; temporal "$1" "$2" ;;
  rmat)     [ $# -ge 1 ] && [ $# -le 2 ] || usage; rmat "$1" "${2:-24}" ;;
  cpu)      [ $# -eq 2 ] || usage; cpu "$1" "$2" ;;
  cpu-threads) [ $# -eq 2 ] || usage; cpu_threads "$1" "$2" ;;
  all)      [ $# -ge 2 ] && [ $# -le 3 ] || usage
            temporal "$1" "$2"; rmat "$2" "${3:-24}"; cpu "$1" "$2" ;;
  *) usage ;;
esac
