"""The daemon with string vertex ids, end to end: Kafka (JSON, CSV, JSON array, Arrow messages,
decoded a fetch at a time, with both Kafka clients) and a directory of files; SIGKILL and restart
(incremental checkpoints: string ids in the batch log); published keys and Arrow rank batches;
query and ppr on the checkpoint.

The string stream is the integer stream of the other daemon tests with every id ``v`` written
as ``name(v)``; the ranks must be those of an Engine fed the same batches with the integer ids,
and of the oracle.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pytest
from kafka_broker import (DaemonProcess, batches_from_lineage, check_restored, kafka_broker, l1, lineage,  # noqa: F401
                          make_events, ranks_by_id)

from connectors.kafka_clients import confluent_available
from connectors.kafka_sink import BATCH_KEY, decode_rank_batch
from connectors.records import encode_arrow, encode_json
from streamrank.checkpoints.recovery import load_latest_state as load_latest
from streamrank.cli import main as cli_main
from streamrank.engine import Engine
from streamrank.config import RankConfig
from streamrank.oracle.static import scipy_pagerank

PARTITIONS = 3


def name(v: int) -> str:
    return f"user:{int(v)}/é"


def number(text: str) -> int:
    return int(text.split(":")[1].split("/")[0])


def int_ranks(ids, p) -> dict:
    """Checkpoint ranks keyed by the integer each name stands for."""
    assert np.asarray(ids).dtype == object
    return {number(v): r for v, r in zip(np.asarray(ids).tolist(), np.asarray(p).tolist())}


def string_oracle_error(ck, events) -> float:
    """The checkpoint's graph is the edge set ``events`` leave (by name); L1 of its ranks to the oracle."""
    from streamrank.ids.strings import StringIdMap

    st = ck.engine_state
    assert st["id_type"] == "string"
    names = StringIdMap.from_state(st).decode(np.asarray(st["external"]))
    got = {(number(a), number(b)) for a, b in zip(names[st["src"]].tolist(), names[st["dst"]].tolist())}
    present = set()
    for s_, d_, i_ in events:
        (present.add if i_ else present.discard)((s_, d_))
    assert got == present
    ids, p = ck.ranks
    assert ids.tolist() == names.tolist()
    ref = scipy_pagerank(st["src"], st["dst"], names.shape[0])
    return float(np.abs(ref - p).sum())


#: The Kafka tests compare the string-id daemon with an integer engine to 1e-9, so both iterate in
#: Jacobi order: in the default Gauss-Seidel order the order of the updates follows the internal
#: vertex numbering, which string and integer ids (and the daemon's batching) give differently,
#: and the ranks then agree only to DF-P's accuracy (an L1 distance near 2e-7 here).
JACOBI = {"STREAMRANK_RANK_UPDATE_ORDER": "jacobi"}


def engine_on_int_batches(batches) -> dict:
    eng = Engine("cpu", config=RankConfig(update_order="jacobi"))  # the daemon's default algorithm (auto)
    for b in batches:
        eng.apply(b)
    return ranks_by_id(*eng.ranks())


# ============================================================================ Kafka
def encode(rng, chunk):
    src = [name(e[0]) for e in chunk]
    dst = [name(e[1]) for e in chunk]
    ins = [e[2] for e in chunk]
    if len(chunk) == 1:
        if rng.random() < 0.5:
            return encode_json(src, dst, ins)
        return f"{src[0]}, {dst[0]},{'+' if ins[0] else '-'}".encode()
    if rng.random() < 0.5:
        return encode_json(src, dst, ins)
    return encode_arrow(src, dst, ins)


# records the daemon must dead-letter in a string-id stream (and apply everything around them)
BAD = [
    (encode_json([5], [6]), "mixed_id_types"),                     # integer ids
    (b"7,8", "mixed_id_types"),                                     # integer-looking text
    (b'{"src": "", "dst": "x"}', "empty_id"),
    (json.dumps({"src": "y" * 1100, "dst": "x"}).encode(), "id_too_long"),
    (b'{"src": "\\ud800", "dst": "x"}', "bad_utf8_id"),
    (encode_arrow(pa.array([b"\xff"], pa.binary()), pa.array([b"x"], pa.binary())), "bad_utf8_id"),
]


def produce(broker, topic, events, *, seed=0, bad=()):
    rng = np.random.default_rng(seed)
    per_part = {p: [e for e in events if e[0] % PARTITIONS == p] for p in range(PARTITIONS)}
    prod = broker.producer()
    futures = []
    bad = list(bad)
    for p, evs in per_part.items():
        i = 0
        while i < len(evs):
            size = 1 if rng.random() < 0.6 else int(rng.integers(2, 40))
            chunk = evs[i:i + size]
            i += size
            futures.append((prod.send(topic, value=encode(rng, chunk), key=name(chunk[0][0]).encode(), partition=p),
                            chunk))
            if bad and p == 0 and i > 20 * (len(BAD) - len(bad) + 1):
                value, _reason = bad.pop(0)
                futures.append((prod.send(topic, value=value, partition=p), None))
    prod.flush()
    sent = {}
    for f, chunk in futures:
        md = f.get(timeout=30)
        if chunk is not None:
            sent[(md.partition, md.offset)] = (np.array([e[0] for e in chunk], np.int64),
                                               np.array([e[1] for e in chunk], np.int64),
                                               np.array([e[2] for e in chunk], bool))
    prod.close()
    assert not bad
    return sent


EVENTS = make_events(17, 2000, 250)


@pytest.fixture(scope="module", params=[
    pytest.param("confluent", marks=pytest.mark.skipif(not confluent_available(), reason="confluent-kafka not installed")),
    "kafka-python"])
def client(request):
    """The Kafka client the daemon uses (``--kafka-client``)."""
    return request.param


@pytest.fixture(scope="module")
def kafka_run(kafka_broker, client, tmp_path_factory):
    topic = kafka_broker.create_topic(partitions=PARTITIONS)
    sent = produce(kafka_broker, topic, EVENTS, seed=2, bad=BAD)
    work = tmp_path_factory.mktemp("kafka-strings")
    publish = kafka_broker.create_topic(partitions=1)
    dlq = kafka_broker.create_topic(partitions=1)
    d = DaemonProcess(["--bootstrap-servers", kafka_broker.bootstrap, "--topic", topic, "--publish-topic", publish,
                       "--dead-letter-topic", dlq, "--checkpoint-dir", work / "ckpt", "--batch-size", 150,
                       "--batch-wait-ms", 30, "--checkpoint-every", 4, "--top-k", 5, "--top-k-every", 3,
                       "--snapshot-every", 4, "--kafka-client", client, "--publish-format", "both",
                       "--full-checkpoint-every", 3], work, env=JACOBI)
    d.wait_edges(len(EVENTS))
    rc = d.terminate()
    return {"rc": rc, "daemon": d, "work": work, "topic": topic, "sent": sent, "publish": publish, "dlq": dlq,
            "ckpt": load_latest(work / "ckpt")}


@pytest.mark.kafka
def test_kafka_string_ids_match_integer_engine_and_oracle(kafka_broker, kafka_run, capsys):
    r = kafka_run
    assert r["rc"] == 0, r["daemon"].log_tail()
    chain, edges = lineage(r["daemon"].events())
    assert edges == len(EVENTS)
    got = int_ranks(*r["ckpt"].ranks)
    assert l1(got, engine_on_int_batches(batches_from_lineage(chain, r["sent"], PARTITIONS))) < 1e-9
    assert string_oracle_error(r["ckpt"], EVENTS) < 1e-5
    # dead letters, with their reasons
    letters = kafka_broker.read_all(r["dlq"], expect=len(BAD))
    assert sorted(dict(x.headers)["reason"].decode() for x in letters) == sorted(reason for _, reason in BAD)
    # rank messages keyed by the id string; Arrow rank batches with a string vertex column
    latest, batched = {}, {}
    for m in kafka_broker.read_all(r["publish"]):
        if m.key == BATCH_KEY:
            seq, vertex, rank = decode_rank_batch(m.value)
            assert vertex.dtype == object and all(isinstance(v, str) for v in vertex.tolist())
            batched.update(zip(vertex.tolist(), rank.tolist()))
            continue
        body = json.loads(m.value)
        if m.key == b"__top_k__":
            assert all(isinstance(v, str) for v, _ in body["top"])
            continue
        assert m.key.decode("utf-8") == body["vertex"]
        latest[body["vertex"]] = body["rank"]
    ranks = ranks_by_id(*r["ckpt"].ranks)
    assert set(latest) == set(ranks) == set(batched)
    assert batched == latest
    # query by name
    best = max(ranks, key=ranks.get)
    assert cli_main(["query", "--checkpoint-dir", str(r["work"] / "ckpt"), "--vertex", best, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["vertices_queried"][0] == {"vertex": best, "rank": ranks[best]}
    assert cli_main(["query", "--checkpoint-dir", str(r["work"] / "ckpt"), "--top", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["top"][0]["vertex"] == best
    assert cli_main(["query", "--checkpoint-dir", str(r["work"] / "ckpt"), "--vertex", "nobody"]) == 1
    snaps = sorted((r["work"] / "ckpt" / "snapshots").glob("ranks-*.parquet"))
    import pyarrow.parquet as pq

    assert snaps and str(pq.read_table(snaps[-1]).schema.field("vertex").type) == "string"


@pytest.mark.kafka
def test_kafka_string_ids_sigkill_restart(kafka_broker, kafka_run, client, tmp_path):
    args = ["--bootstrap-servers", kafka_broker.bootstrap, "--topic", kafka_run["topic"], "--checkpoint-dir",
            tmp_path / "ckpt", "--batch-size", 10, "--batch-wait-ms", 20, "--checkpoint-every", 4,
            "--kafka-client", client, "--full-checkpoint-every", 3]
    # batches of 10 (200 of them): with checkpoints off the loop's thread the daemon can otherwise
    # apply the whole stream between two looks at its log, and the kill would land after the end
    d1 = DaemonProcess(args, tmp_path, env={"STREAMRANK_POLL_MAX_RECORDS": "10", **JACOBI})
    d1.wait_for(lambda ev: sum(e["event"] == "checkpoint" for e in ev) >= 2 and lineage(ev)[0][-1]["seq"] % 4 != 0)
    d1.kill()
    ev1 = d1.events()
    assert 0 < lineage(ev1)[1] < len(EVENTS), "the kill did not land mid-stream"
    d2 = DaemonProcess(args, tmp_path, env=JACOBI)
    d2.wait_edges(len(EVENTS))
    assert d2.terminate() == 0, d2.log_tail()
    events = d2.events()
    check_restored(ev1, events)
    chain, edges = lineage(events)
    assert edges == len(EVENTS) and [a["seq"] for a in chain] == list(range(1, len(chain) + 1))
    ck = load_latest(tmp_path / "ckpt")
    got = int_ranks(*ck.ranks)
    assert l1(got, engine_on_int_batches(batches_from_lineage(chain, kafka_run["sent"], PARTITIONS))) < 1e-9
    assert l1(got, int_ranks(*kafka_run["ckpt"].ranks)) < 1e-5  # batch boundaries differ
    assert string_oracle_error(ck, EVENTS) < 1e-5


# ============================================================================ directory
DIR_EVENTS = make_events(21, 1200, 150)
DIR_BAD = {  # (file, bad line, reason)
    "a.txt": [("5 6", "mixed_id_types")],
    "b.csv": [(" ,x,+", "empty_id"), ("z" * 1100 + ",x,+", "id_too_long")],
}


def write_dir(directory):
    os.makedirs(directory, exist_ok=True)
    op = {True: "+", False: "-"}
    a = [f"{name(s)} {name(d)}" for s, d, i in DIR_EVENTS[:500] if i]  # SNAP: inserts only
    a.insert(10, DIR_BAD["a.txt"][0][0])
    b = ["src,dst,op"] + [f"{name(s)},{name(d)},{op[i]}" for s, d, i in DIR_EVENTS[500:900]]
    b.insert(20, DIR_BAD["b.csv"][0][0])
    b.insert(40, DIR_BAD["b.csv"][1][0])
    c = [json.dumps({"src": name(s), "dst": name(d), "op": op[i]}, ensure_ascii=False) for s, d, i in DIR_EVENTS[900:]]
    for fname, lines in (("a.txt", a), ("b.csv", b), ("c.jsonl", c)):
        with open(os.path.join(directory, fname), "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
    return [e for e in DIR_EVENTS[:500] if e[2]] + DIR_EVENTS[500:]


@pytest.fixture(scope="module")
def dir_clean(tmp_path_factory):
    work = tmp_path_factory.mktemp("dir-strings")
    events = write_dir(work / "in")
    d = DaemonProcess(["--input-dir", work / "in", "--checkpoint-dir", work / "ckpt", "--batch-size", 100,
                       "--batch-wait-ms", 20, "--checkpoint-every", 3, "--exit-when-done"], work)
    assert d.wait(timeout=120) == 0, d.log_tail()
    return {"work": work, "events": events, "ckpt": load_latest(work / "ckpt"), "daemon": d}


def test_directory_string_ids_ranks_and_dead_letters(dir_clean):
    r = dir_clean
    chain, edges = lineage(r["daemon"].events())
    assert edges == len(r["events"])
    assert string_oracle_error(r["ckpt"], r["events"]) < 1e-5
    with open(r["work"] / "ckpt" / "dead-letters.jsonl", encoding="utf-8") as fh:
        letters = [json.loads(line) for line in fh]
    assert sorted((x["topic"], x["reason"]) for x in letters) == sorted(
        (f, reason) for f, bad in DIR_BAD.items() for _text, reason in bad)


def test_directory_string_ids_sigkill_restart(dir_clean, tmp_path):
    events = write_dir(tmp_path / "in")
    # batches of 5: about 230 of them, so the kill lands mid-stream however fast the loop runs
    args = ["--input-dir", tmp_path / "in", "--checkpoint-dir", tmp_path / "ckpt", "--batch-size", 5,
            "--batch-wait-ms", 10, "--checkpoint-every", 4]
    d1 = DaemonProcess(args, tmp_path)
    d1.wait_for(lambda ev: sum(e["event"] == "checkpoint" for e in ev) >= 3 and lineage(ev)[0][-1]["seq"] % 4 != 0)
    d1.kill()
    assert 0 < lineage(d1.events())[1] < len(events), "the kill did not land mid-stream"
    d2 = DaemonProcess(args + ["--exit-when-done"], tmp_path)
    assert d2.wait(timeout=120) == 0, d2.log_tail()
    chain, edges = lineage(d2.events())
    assert edges == len(events) and [a["seq"] for a in chain] == list(range(1, len(chain) + 1))
    ck = load_latest(tmp_path / "ckpt")
    assert string_oracle_error(ck, events) < 1e-5
    assert l1(ranks_by_id(*ck.ranks), ranks_by_id(*dir_clean["ckpt"].ranks)) < 1e-5


def test_restart_with_the_other_id_type_is_refused(dir_clean, tmp_path):
    import shutil

    shutil.copytree(dir_clean["work"] / "ckpt", tmp_path / "ckpt")
    d = DaemonProcess(["--input-dir", dir_clean["work"] / "in", "--checkpoint-dir", tmp_path / "ckpt",
                       "--id-type", "int", "--exit-when-done"], tmp_path)
    assert d.wait(timeout=60) != 0
    assert "string vertex ids but id_type='int'" in d.output.read_text()


def test_ppr_and_query_on_a_string_checkpoint(dir_clean, tmp_path, capsys):
    ck_dir = str(dir_clean["work"] / "ckpt")
    ranks = ranks_by_id(*dir_clean["ckpt"].ranks)
    seed = max(ranks, key=ranks.get)
    out = tmp_path / "ppr.json"
    assert cli_main(["ppr", ck_dir, "--seed", seed, "--k", "5", "--device", "cpu", "--json", str(out)]) == 0
    res = json.loads(out.read_text())["results"][0]
    assert res["seeds"] == [seed] and all(isinstance(v, str) for v, _ in res["top_k"])
    # the same query on the integer graph of the same edges
    from streamrank.store.cpu import CpuGraph
    from streamrank.ppr import personalized_pagerank
    from streamrank.ids.strings import StringIdMap

    st = dir_clean["ckpt"].engine_state
    names = StringIdMap.from_state(st).decode(np.asarray(st["external"]))
    ints = np.array([number(v) for v in names.tolist()])
    g = CpuGraph.from_edges(ints[st["src"]], ints[st["dst"]])
    ref = personalized_pagerank(g, number(seed), k=5)
    assert [number(v) for v, _ in res["top_k"]] == [v for v, _ in ref.top_k]
    np.testing.assert_allclose([s for _, s in res["top_k"]], [s for _, s in ref.top_k], rtol=1e-9)
    capsys.readouterr()
    assert cli_main(["ppr", ck_dir, "--seed", "nobody", "--device", "cpu"]) != 0
    assert "not in the graph: ['nobody']" in capsys.readouterr().err


def test_rank_messages_quote_string_ids_as_json():
    from connectors.kafka_sink import TOP_K_KEY, RankPublisher

    sent = []

    class Producer:
        def send(self, topic, key=None, value=None, headers=None):
            sent.append((key, value))

    ids = np.array(["alice", 'q"uote', "back\\slash", "tab\there", "ünï", "\u2028"], dtype=object)
    p = np.linspace(0.1, 0.2, ids.shape[0])
    RankPublisher(Producer(), "t", threshold=0.0, top_k=3, top_k_every=1).publish(1, ids, p)
    bodies = {k: json.loads(v) for k, v in sent}
    for v in ids.tolist():
        assert bodies[v.encode("utf-8")]["vertex"] == v
    assert [v for v, _ in bodies[TOP_K_KEY]["top"]] == ids[::-1][:3].tolist()


def test_string_base_graph_then_directory_in_process(tmp_path):
    from streamrank.daemon.config import load_config
    from streamrank.daemon.loop import Daemon
    from streamrank.errors import InvalidArgumentError

    base = tmp_path / "base.csv"
    base.write_text("src,dst,op\nalice,bob,+\nbob,carol,+\ncarol,dave,-\n")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("carol alice\ndave alice\n17 18\n")
    cfg = load_config(env={}, overrides={"input_dir": str(tmp_path / "in"), "checkpoint_dir": str(tmp_path / "ck"),
                                         "base_graph": str(base), "exit_when_done": True, "device": "cpu",
                                         "batch_wait_ms": 10})
    assert Daemon(cfg).run() == 0
    ck = load_latest(tmp_path / "ck")
    ranks = ranks_by_id(*ck.ranks)
    assert set(ranks) == {"alice", "bob", "carol", "dave"}
    import networkx as nx

    ref = nx.pagerank(nx.DiGraph([("alice", "bob"), ("bob", "carol"), ("carol", "alice"), ("dave", "alice")]),
                      tol=1e-13, max_iter=1000)
    assert l1(ranks, ref) < 1e-5
    with open(tmp_path / "ck" / "dead-letters.jsonl") as fh:
        assert [json.loads(x)["reason"] for x in fh] == ["mixed_id_types"]  # "17 18" in a string stream
    with pytest.raises(InvalidArgumentError):
        load_config(env={}, overrides={"input_dir": "d", "checkpoint_dir": "c", "id_type": "text"})
