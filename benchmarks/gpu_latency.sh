#!/usr/bin/env bash
# Per-batch GPU latency on the published temporal protocol, in one device call:
#   1. the gpu-marked tests of the rank and graph code (TESTS=1, default);
#   2. `streamrank bench --protocol temporal` on sx-mathoverflow: the published setting (ids
#      0..248179 created up front, self-loop mode) and standard semantics (uniform dangling, no
#      padding), each with VARIANTS (environment settings to compare, e.g. the frontier loop on/off);
#   3. the reference DF-P (shared/tools/seed-dfp-bench) on the same GPU when REFERENCE=1.
# Usage, from the repository root on a GPU machine with DATA holding sx-mathoverflow.txt.gz,
# tools/seed-dfp-bench and anchors/ (copies of ../shared/{data,tools,anchors}):
#   DATA=.device-data OUT=/tmp/out REFERENCE=1 bash benchmarks/gpu_latency.sh
set -uo pipefail
DATA=${DATA:-.device-data}
OUT=${OUT:-out}
FRACTIONS=${FRACTIONS:-1e-5,1e-4,1e-3}
BATCHES=${BATCHES:-20}
VARIANTS=${VARIANTS:-"default"}
mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1
graph="$DATA/sx-mathoverflow.txt.gz"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader

if [ "${REFERENCE:-0}" = 1 ]; then
  echo "== reference DF-P (seed-dfp-bench): 248180 vertices, 506550 lines, fractions $FRACTIONS"
  SEED_WORK=/tmp/seed-dfp bash "$DATA/tools/seed-dfp-bench" "$graph" 248180 506550 \
    "$(python3 -c "import sys; print(','.join(f'{float(f):.5f}'.rstrip('0') for f in sys.argv[1].split(',')))" "$FRACTIONS")" \
    > "$OUT/reference.txt" 2> "$OUT/reference.err"
  grep -i "PruneDynamicFrontier" "$OUT/reference.txt"
fi
ref_arg=()
[ -s "$OUT/reference.txt" ] && ref_arg=(--reference-log "$OUT/reference.txt")

if [ "${TESTS:-1}" = 1 ]; then
  echo "== gpu tests"
  python3 -m pytest -q -m gpu ${PYTEST_K:+-k "$PYTEST_K"} ${TEST_FILES:-tests} 2>&1 | tail -${TEST_TAIL:-15}
fi

for v in $VARIANTS; do
  envs=()
  [ "$v" != default ] && envs=(${v//,/ })
  tag=${v//[^A-Za-z0-9_]/_}
  echo "== temporal protocol, published setting (padded, self-loop), variant $v"
  env "${envs[@]}" python3 -m streamrank bench --graph "$graph" --protocol temporal --vertices 248180 \
    --dangling self-loop --batch-fractions "$FRACTIONS" --batches "$BATCHES" --device gpu --error-every "${ERROR_EVERY:-1}" "${ref_arg[@]}" \
    --json "$OUT/temporal_selfloop_$tag.json" 2> "$OUT/temporal_selfloop_$tag.log"
  if [ "${UNIFORM:-1}" = 1 ]; then
    echo "== temporal protocol, standard semantics (uniform dangling, no padding), variant $v"
    env "${envs[@]}" python3 -m streamrank bench --graph "$graph" --protocol temporal --dangling uniform \
      --batch-fractions "$FRACTIONS" --batches "$BATCHES" --device gpu --error-every "${ERROR_EVERY:-1}" \
      --json "$OUT/temporal_uniform_$tag.json" 2> "$OUT/temporal_uniform_$tag.log"
  fi
done

# Only a few files come back from a device call: pack the JSON reports and logs into one.
(cd "$OUT" && tar czf latency_runs.tgz --remove-files ./*.json ./*.log ./*.txt ./*.err 2>/dev/null)
exit 0
