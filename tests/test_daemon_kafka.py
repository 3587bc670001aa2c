"""End to end against a real broker: ``python -m streamrank serve`` as a subprocess.

- edges produced to a topic (mixed JSON / CSV / JSON-array / Arrow messages, 3 partitions) end in
  the same ranks as an Engine fed the same batches, and as the oracle; published messages agree;
- SIGKILL mid-stream and a restart end in the same ranks as the uninterrupted run, every batch
  sequence number applied exactly once in the lineage of the final state;
- each kind of bad record is dead-lettered with its reason while the good records around it apply;
- SIGTERM leaves a checkpoint and exits 0; a broker that is not there yet is waited for.

Every test runs with both Kafka clients (confluent-kafka and kafka-python).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from kafka_broker import (Broker, DaemonProcess, batches_from_lineage, check_restored, damage_checkpoint,  # noqa: F401
                          free_port, full_checkpoints, kafka_broker, l1, lineage, make_events, oracle_error,
                          ranks_by_id)

from connectors.kafka_sink import BATCH_KEY, decode_rank_batch
from connectors.records import encode_arrow, encode_json
from streamrank.checkpoints.recovery import load_latest_state as load_latest
from streamrank.cli import main as cli_main
from streamrank.engine import Engine

pytestmark = pytest.mark.kafka

PARTITIONS = 3


def _confluent():
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(scope="module", params=[
    pytest.param("confluent", marks=pytest.mark.skipif(not _confluent(), reason="confluent-kafka not installed")),
    "kafka-python"])
def client(request):
    """The Kafka client the daemon uses (``--kafka-client``)."""
    return request.param


def encode(rng, chunk):
    src = [e[0] for e in chunk]
    dst = [e[1] for e in chunk]
    ins = [e[2] for e in chunk]
    if len(chunk) == 1:
        if rng.random() < 0.5:
            return encode_json(src, dst, ins)
        return f"{src[0]},{dst[0]},{'+' if ins[0] else '-'}".encode()
    if rng.random() < 0.5:
        return encode_json(src, dst, ins)
    return encode_arrow(src, dst, ins)


def produce_events(broker, topic, events, *, seed=0):
    """Send ``events`` to ``topic``, partition ``src % PARTITIONS``, in mixed message formats.

    Returns ``{(partition, offset): (src, dst, insert) arrays}``.
    """
    rng = np.random.default_rng(seed)
    per_part = {p: [e for e in events if e[0] % PARTITIONS == p] for p in range(PARTITIONS)}
    prod = broker.producer()
    futures = []
    for p, evs in per_part.items():
        i = 0
        while i < len(evs):
            size = 1 if rng.random() < 0.6 else int(rng.integers(2, 40))
            chunk = evs[i:i + size]
            i += size
            futures.append((prod.send(topic, value=encode(rng, chunk), key=str(chunk[0][0]).encode(),
                                      partition=p), chunk))
    prod.flush()
    sent = {}
    for f, chunk in futures:
        md = f.get(timeout=30)
        sent[(md.partition, md.offset)] = (np.array([e[0] for e in chunk], np.int64),
                                           np.array([e[1] for e in chunk], np.int64),
                                           np.array([e[2] for e in chunk], bool))
    prod.close()
    return sent


EVENTS = make_events(7, 2500, 300)


@pytest.fixture(scope="module")
def stream(kafka_broker):
    topic = kafka_broker.create_topic(partitions=PARTITIONS)
    sent = produce_events(kafka_broker, topic, EVENTS, seed=1)
    return {"topic": topic, "sent": sent}


@pytest.fixture(scope="module")
def uninterrupted(kafka_broker, stream, client, tmp_path_factory):
    """One uninterrupted daemon run over the stream (publishing ranks)."""
    work = tmp_path_factory.mktemp("uninterrupted")
    publish = kafka_broker.create_topic(partitions=1)
    d = DaemonProcess(["--bootstrap-servers", kafka_broker.bootstrap, "--topic", stream["topic"],
                       "--publish-topic", publish, "--checkpoint-dir", work / "ckpt", "--batch-size", 200,
                       "--batch-wait-ms", 50, "--checkpoint-every", 5, "--top-k", 5, "--top-k-every", 3,
                       "--group-id", f"g-{client}-{stream['topic']}", "--snapshot-every", 4,
                       "--kafka-client", client, "--full-checkpoint-every", 3, "--publish-format", "both",
                       "--kafka-stats-interval", 0.1], work)
    events = d.wait_edges(len(EVENTS))
    rc = d.terminate()
    ck = load_latest(work / "ckpt")
    return {"rc": rc, "events": d.events(), "ckpt": ck, "work": work, "publish": publish, "daemon": d,
            "applied_before_term": events}


def test_kafka_ranks_match_replay_of_same_batches(stream, uninterrupted):
    u = uninterrupted
    assert u["rc"] == 0, u["daemon"].log_tail()
    chain, edges = lineage(u["events"])
    assert edges == len(EVENTS)
    assert u["ckpt"].seq == chain[-1]["seq"]
    got = ranks_by_id(*u["ckpt"].ranks)
    # an Engine fed exactly the daemon's batches ends with the same ranks
    eng = Engine("cpu")  # the daemon's default algorithm (auto)
    for b in batches_from_lineage(chain, stream["sent"], PARTITIONS):
        eng.apply(b)
    assert l1(got, ranks_by_id(*eng.ranks())) < 1e-12
    # ... and the graph and ranks are those of the whole stream (oracle)
    assert oracle_error(u["ckpt"], EVENTS) < 1e-5  # DF-P (prune_tol 1e-6) accuracy
    # every position in the checkpoint is the end of its partition
    last = {p: max(o for (q, o) in stream["sent"] if q == p) + 1 for p in range(PARTITIONS)}
    assert u["ckpt"].positions == {f"kafka:{stream['topic']}:{p}": last[p] for p in range(PARTITIONS)}


def test_published_ranks_and_query(kafka_broker, stream, uninterrupted, capsys):
    u = uninterrupted
    got = ranks_by_id(*u["ckpt"].ranks)
    latest, tops, keyed, batched = {}, [], {}, {}
    for r in kafka_broker.read_all(u["publish"]):
        if r.key == BATCH_KEY:  # --publish-format both: one Arrow message per batch as well
            seq, vertex, rank = decode_rank_batch(r.value)
            assert dict(r.headers)["seq"] == str(seq).encode()
            batched[seq] = dict(zip(vertex.tolist(), rank.tolist()))
            continue
        body = json.loads(r.value)
        if r.key != b"__top_k__":
            keyed.setdefault(body["seq"], {})[body["vertex"]] = body["rank"]
        assert dict(r.headers)["seq"] == str(body["seq"]).encode()
        if r.key == b"__top_k__":
            tops.append(body)
        else:
            assert int(r.key) == body["vertex"]
            if body["seq"] >= latest.get(body["vertex"], (-1, 0))[0]:
                latest[body["vertex"]] = (body["seq"], body["rank"])
    assert set(latest) == set(got)  # every vertex was published at least once
    assert batched == keyed  # the Arrow batch of each seq holds exactly its keyed messages
    assert max(abs(latest[v][1] - got[v]) for v in got) <= 1e-6 + 1e-15  # the publish threshold
    assert tops and all(t["k"] == 5 and len(t["top"]) == 5 for t in tops)
    assert [t["seq"] % 3 for t in tops] == [0] * len(tops)
    # `streamrank query` reads the same ranks back
    assert cli_main(["query", "--checkpoint-dir", str(u["work"] / "ckpt"), "--top", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    best = sorted(got.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    assert [(t["vertex"], t["rank"]) for t in out["top"]] == best
    v = best[0][0]
    assert cli_main(["query", "--checkpoint-dir", str(u["work"] / "ckpt"), "--vertex", str(v), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["vertices_queried"][0]["rank"] == got[v]
    # Parquet snapshots every 4 batches
    snaps = sorted((u["work"] / "ckpt" / "snapshots").glob("ranks-*.parquet"))
    assert snaps and all(int(s.stem.split("-")[1]) % 4 == 0 for s in snaps)


def test_client_statistics_in_the_applied_log(stream, uninterrupted, client):
    """--kafka-stats-interval: confluent-kafka's statistics of the consumer (its partitions, fetch
    requests, records received) and of the rank producer land in the applied log; kafka-python has
    none."""
    stats = [e for e in uninterrupted["events"] if e["event"] == "kafka_stats"]
    if client == "kafka-python":
        assert stats == []
        return
    consumer = [e for e in stats if e["client"] == "consumer"]
    assert consumer, "no consumer statistics"
    last = consumer[-1]
    parts = last["topics"][stream["topic"]]["partitions"]
    assert sorted(parts, key=int) == [str(p) for p in range(PARTITIONS)]
    assert all(set(v) >= {"fetchq_cnt", "next_offset", "app_offset", "rxmsgs"} for v in parts.values())
    assert sum(b["req"].get("Fetch", 0) for b in last["brokers"].values()) > 0
    assert max(e["rxmsgs"] for e in consumer) >= 1
    producer = [e for e in stats if e["client"] == "producer"]
    assert producer and any(uninterrupted["publish"] in e["topics"] for e in producer)


@pytest.mark.parametrize("decode_threads", [0, 2])
def test_sigkill_and_restart_match_uninterrupted(kafka_broker, stream, uninterrupted, client, decode_threads, tmp_path):
    # The stream goes to its own topic in parts, so that the kill lands mid-stream whatever the
    # daemon's speed: the first 60% before the first daemon starts, the rest after it is killed.
    topic = kafka_broker.create_topic(partitions=PARTITIONS)
    args = ["--bootstrap-servers", kafka_broker.bootstrap, "--topic", topic, "--checkpoint-dir",
            tmp_path / "ckpt", "--batch-size", 10, "--batch-wait-ms", 20, "--checkpoint-every", 4,
            "--checkpoint-interval", 3600,  # checkpoints on batch counts only: none while d1 idles
            "--kafka-client", client, "--full-checkpoint-every", 3, "--decode-threads", decode_threads]
    env = {"STREAMRANK_POLL_MAX_RECORDS": "10"}  # batches of 10 edges: many of them, checkpoints among them
    produced = len(EVENTS) * 3 // 5
    sent = produce_events(kafka_broker, topic, EVENTS[:produced], seed=1)
    d1 = DaemonProcess(args, tmp_path, env=env)
    ev = d1.wait_edges(produced)
    # checkpoints follow batches 1, 5, 9, ... (the first batch, then every 4): idle on a
    # checkpoint's batch, send one more small part
    while lineage(ev)[0][-1]["seq"] % 4 == 1:
        sent.update(produce_events(kafka_broker, topic, EVENTS[produced:produced + 10], seed=2))
        produced += 10
        ev = d1.wait_edges(produced)
    d1.wait_for(lambda ev: sum(e["event"] == "checkpoint" for e in ev) >= 2)  # past a checkpoint, not on one
    d1.kill()
    sent.update(produce_events(kafka_broker, topic, EVENTS[produced:], seed=3))
    ev1 = d1.events()
    applied1 = lineage(ev1)[1]
    assert 0 < applied1 < len(EVENTS), "the kill did not land mid-stream"
    last_ckpt = max(e["seq"] for e in ev1 if e["event"] == "checkpoint")
    assert max(e["seq"] for e in ev1 if e["event"] == "apply") > last_ckpt  # some work is lost and redone
    d2 = DaemonProcess(args, tmp_path)
    d2.wait_edges(len(EVENTS))
    assert d2.terminate() == 0, d2.log_tail()
    events = d2.events()
    check_restored(ev1, events)  # the restart resumed from the last durable checkpoint
    chain, edges = lineage(events)  # asserts every seq 1..N exactly once in the final lineage
    assert edges == len(EVENTS)
    assert [a["seq"] for a in chain] == list(range(1, len(chain) + 1))
    ck = load_latest(tmp_path / "ckpt")
    assert ck.seq == chain[-1]["seq"]
    got = ranks_by_id(*ck.ranks)
    eng = Engine("cpu")  # the daemon's default algorithm (auto)
    for b in batches_from_lineage(chain, sent, PARTITIONS):
        eng.apply(b)
    assert l1(got, ranks_by_id(*eng.ranks())) < 1e-12
    assert l1(got, ranks_by_id(*uninterrupted["ckpt"].ranks)) < 1e-5  # batch boundaries differ
    assert oracle_error(ck, EVENTS) < 1e-5  # DF-P (prune_tol 1e-6) accuracy


BAD = [
    (b'{"src": 1, "dst": ', "bad_json"),
    (b"1;2;3;4;5", "bad_csv"),
    (b'{"src": 5}', "missing_field"),
    (b'{"src": 1.5, "dst": 2}', "non_integer_id"),
    (b'{"src": -3, "dst": 2}', "negative_id"),
    (json.dumps({"src": 2**64, "dst": 2}).encode(), "id_out_of_range"),
    (b'{"op": "upsert", "src": 1, "dst": 2}', "unknown_op"),
    (b'{"src": 1, "dst": 2, "pad": "' + b"x" * 600 + b'"}', "oversize"),
    (b"\xff\xff\xff\xffnot arrow", "bad_arrow"),
    (b"", "empty"),
]


@pytest.mark.parametrize("decode_threads", [0, 2])
def test_bad_records_dead_lettered_good_ones_applied(kafka_broker, client, decode_threads, tmp_path):
    topic = kafka_broker.create_topic(partitions=1)
    dlq = kafka_broker.create_topic(partitions=1)
    good = make_events(11, 60, 30)
    prod = kafka_broker.producer()
    expected_bad = {}
    gi = 0
    for value, reason in BAD:
        for _ in range(6):
            s, d, i = good[gi]
            gi += 1
            prod.send(topic, encode_json([s], [d], [i]))
        md = prod.send(topic, value, headers=[("origin", b"test")]).get(timeout=10)
        expected_bad[md.offset] = (value, reason)
    for s, d, i in good[gi:]:  # single-edge JSON objects (the compiled scan's shape)
        prod.send(topic, b'{"op":"%s","src":%d,"dst":%d}' % (b"+" if i else b"-", s, d))
    prod.flush()
    prod.close()
    d = DaemonProcess(["--bootstrap-servers", kafka_broker.bootstrap, "--topic", topic, "--dead-letter-topic", dlq,
                       "--checkpoint-dir", tmp_path / "ckpt", "--batch-size", 16, "--batch-wait-ms", 20,
                       "--max-message-bytes", 500, "--metrics-port", free_port(), "--kafka-client", client,
                       "--decode-threads", decode_threads], tmp_path)
    d.wait_edges(len(good))
    assert d.terminate() == 0, d.log_tail()
    letters = kafka_broker.read_all(dlq, expect=len(BAD))
    assert len(letters) == len(BAD)
    for r in letters:
        h = {k: v.decode() for k, v in r.headers}
        value, reason = expected_bad[int(h["offset"])]
        assert (h["reason"], h["topic"], h["partition"]) == (reason, topic, "0")
        assert r.value == value
    ck = load_latest(tmp_path / "ckpt")
    assert oracle_error(ck, good) < 1e-5  # DF-P (prune_tol 1e-6) accuracy
    assert ck.positions == {f"kafka:{topic}:0": len(good) + len(BAD)}
    log = d.output.read_text()
    assert "dead letter: negative_id" in log and "Traceback" not in log


def test_sigterm_idle_leaves_checkpoint(kafka_broker, client, tmp_path):
    topic = kafka_broker.create_topic(partitions=2)
    d = DaemonProcess(["--bootstrap-servers", kafka_broker.bootstrap, "--topic", topic,
                       "--checkpoint-dir", tmp_path / "ckpt", "--kafka-client", client], tmp_path)
    d.wait_for(lambda ev: any(e["event"] == "restore" for e in ev))
    d.wait_for(lambda ev: "serving" in d.output.read_text(), timeout=30)
    assert d.terminate() == 0, d.log_tail()
    ck = load_latest(tmp_path / "ckpt")
    assert ck is not None and ck.seq == 0


def test_broker_not_there_yet_is_waited_for(client, tmp_path):
    """The daemon starts before the broker, retries with backoff, and runs once it appears."""
    port = free_port()
    d = DaemonProcess(["--bootstrap-servers", f"127.0.0.1:{port}", "--topic", "late", "--checkpoint-dir",
                       tmp_path / "ckpt", "--batch-wait-ms", 20, "--kafka-client", client], tmp_path)
    d.wait_for(lambda ev: "unreachable" in d.output.read_text() or "waiting for topics" in d.output.read_text(),
               timeout=30)
    broker = Broker(port)
    try:
        broker.create_topic("late", partitions=1)
        prod = broker.producer()
        for s, dd, i in make_events(3, 50, 20):
            prod.send("late", encode_json([s], [dd], [i]))
        prod.flush()
        prod.close()
        d.wait_edges(50, timeout=60)
        assert d.terminate() == 0, d.log_tail()
    finally:
        broker.stop()
    assert load_latest(tmp_path / "ckpt").positions == {"kafka:late:0": 50}


def test_source_picks_up_a_new_topic_keeping_positions(kafka_broker, client):
    """A refresh that finds new partitions assigns them without moving the assigned ones, whether
    or not they yielded records since they were assigned."""
    import time

    from connectors.kafka_clients import make_source

    def read(source, n):
        got, deadline = [], time.monotonic() + 20
        while sum(len(i) for i in got) < n and time.monotonic() < deadline:
            got += source.poll(0.2)
        return {i.pos_key: i.src.tolist() for i in got}

    t1 = kafka_broker.create_topic(partitions=1)
    prod = kafka_broker.producer()
    for i in range(10):
        prod.send(t1, b"%d,%d" % (i, i + 1))
    prod.flush()
    busy = make_source(client, bootstrap_servers=kafka_broker.bootstrap, topics=[t1])
    quiet = make_source(client, bootstrap_servers=kafka_broker.bootstrap, topics=[t1])
    try:
        busy.open({f"kafka:{t1}:0": 4})  # resume after offset 3: reads 4..9 first
        quiet.open({f"kafka:{t1}:0": 10})  # nothing to read on t1 before the refresh
        assert read(busy, 6) == {f"kafka:{t1}:0": list(range(4, 10))}
        t2 = kafka_broker.create_topic(partitions=1)
        for i in range(3):
            prod.send(t2, b"%d,1" % (100 + i))
        prod.send(t1, b"7,7")
        prod.flush()
        want = {f"kafka:{t1}:0": [7], f"kafka:{t2}:0": [100, 101, 102]}
        for source in (busy, quiet):
            source.topics.append(t2)  # as if a topic had gained a partition
            source._last_refresh = 0.0  # the next poll refreshes the assignment
            assert read(source, 4) == want
    finally:
        busy.close()
        quiet.close()
        prod.close()


def test_producer_waits_for_the_acknowledgements_of_a_mark(kafka_broker, client):
    """``wait_acked(mark())`` returns once the messages sent before the mark are on the broker, on
    another thread while more are sent (how the checkpoint worker uses it)."""
    import threading

    from connectors.kafka_clients import make_producer

    topic = kafka_broker.create_topic(partitions=2)
    prod = make_producer(client, kafka_broker.bootstrap)
    try:
        for i in range(200):
            prod.send(topic, key=b"%d" % i, value=b"before", headers=[])
        token = prod.mark()
        waiter = threading.Thread(target=prod.wait_acked, args=(token,), kwargs={"timeout_s": 20.0})
        waiter.start()
        for i in range(200):
            prod.send(topic, key=b"%d" % i, value=b"after", headers=[])
        waiter.join(25)
        assert not waiter.is_alive()
        got = kafka_broker.read_all(topic)
        assert sum(r.value == b"before" for r in got) == 200
        prod.flush(timeout_s=20)
    finally:
        prod.close()


@pytest.fixture(scope="module")
def checkpointed(kafka_broker, stream, tmp_path_factory):
    """A run over the whole stream with a full checkpoint every 3 checkpoints (three kept, with
    their logs), stopped by SIGTERM; the default Kafka client."""
    work = tmp_path_factory.mktemp("kafka-checkpointed")
    args = ["--bootstrap-servers", kafka_broker.bootstrap, "--topic", stream["topic"], "--batch-size", 200,
            "--batch-wait-ms", 20, "--checkpoint-every", 1, "--full-checkpoint-every", 3,
            "--device", "cpu"]  # the CPU backend: its restore is bit for bit
    d = DaemonProcess(args + ["--checkpoint-dir", work / "ckpt"], work)
    d.wait_edges(len(EVENTS))
    assert d.terminate() == 0, d.log_tail()
    assert len(full_checkpoints(work / "ckpt")) == 3
    return {"work": work, "args": args, "ckpt": load_latest(work / "ckpt")}


def _copy_state(checkpointed, tmp_path):
    import shutil

    shutil.copytree(checkpointed["work"] / "ckpt", tmp_path / "ckpt")
    return checkpointed["args"] + ["--checkpoint-dir", tmp_path / "ckpt"]


def _daemon(args, tmp_path, run: int) -> DaemonProcess:
    """The daemon with a work directory (applied log, output) of its own."""
    (tmp_path / f"run{run}").mkdir()
    return DaemonProcess(args, tmp_path / f"run{run}")


def _serving(d):
    d.wait_for(lambda ev: "serving" in d.output.read_text(), timeout=60)


def test_kafka_damaged_newest_checkpoint_falls_back(checkpointed, tmp_path):
    """A flipped byte in the newest full checkpoint's .npy header (a tokenize.TokenError inside
    NumPy's header parser unless the member is checked first): it restores the older checkpoint plus the logs, moves the damaged file
    into damaged/ and serves on from the same positions and state."""
    args = _copy_state(checkpointed, tmp_path)
    newest = full_checkpoints(tmp_path / "ckpt")[-1]
    damage_checkpoint(newest, "npy header")
    d = _daemon(args, tmp_path, 1)
    _serving(d)
    assert d.terminate() == 0, d.log_tail()
    (restore,) = [e for e in d.events() if e["event"] == "restore"]
    assert restore["seq"] == checkpointed["ckpt"].seq and restore["checkpoint"] < str(newest)
    assert restore["positions"] == checkpointed["ckpt"].positions and restore["replayed"] > 0
    assert (tmp_path / "ckpt" / "damaged" / newest.name).exists()
    assert "Traceback" not in d.output.read_text()
    ck = load_latest(tmp_path / "ckpt")
    assert np.array_equal(ck.ranks[1], checkpointed["ckpt"].ranks[1])


def test_kafka_no_readable_checkpoint_stops_until_the_operator_resets(kafka_broker, stream, checkpointed, tmp_path):
    """Every full checkpoint unreadable: exit status 4 naming the files and the choices, nothing
    read or moved (never an empty graph of its own accord, whose first checkpoint retention would
    prune); --reset-unreadable-state moves the state aside and reads the topic again from the start; the
    restart after that restores its own checkpoints."""
    from streamrank.daemon.loop import EXIT_STATE_UNREADABLE

    args = _copy_state(checkpointed, tmp_path)
    fulls = full_checkpoints(tmp_path / "ckpt")
    for path in fulls:
        damage_checkpoint(path, "compression method")
    d = _daemon(args, tmp_path, 1)
    assert d.wait(timeout=60) == EXIT_STATE_UNREADABLE, d.log_tail()
    text = d.output.read_text()
    assert all(str(p) in text for p in fulls) and "--reset-unreadable-state" in text and "Traceback" not in text
    assert [e["event"] for e in d.events()] == ["unreadable_state"]
    d = _daemon(args + ["--reset-unreadable-state"], tmp_path, 2)
    d.wait_edges(len(EVENTS))
    assert d.terminate() == 0, d.log_tail()
    assert {p.name for p in fulls} <= {p.name for p in (tmp_path / "ckpt" / "damaged").iterdir()}
    ck = load_latest(tmp_path / "ckpt")
    assert oracle_error(ck, EVENTS) < 1e-5
    assert ck.positions == checkpointed["ckpt"].positions
    d = _daemon(args, tmp_path, 3)
    _serving(d)
    assert d.terminate() == 0, d.log_tail()
    assert d.events()[-1]["event"] == "restore" and d.events()[-1]["seq"] == ck.seq
