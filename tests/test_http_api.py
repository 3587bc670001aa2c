"""The HTTP query API of a real daemon (``serve --input-dir ... --http-port``), queried while it
ingests: each answer's ranks are the oracle's for the graph of the batch it names, readers see
batches in order, concurrent answers about one batch agree; bad requests get 4xx answers; PPR
queries match a direct computation on that batch's graph and are refused past the queue limit;
``streamrank query --url`` talks to the daemon.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pyarrow as pa
import pytest
from http_helpers import Readers, check_monotonic, check_snapshots, get, oracle_l1, quote, wait_http
from kafka_broker import DaemonProcess, free_port, lineage, make_events

from streamrank.backend import gpu_available

pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

EVENTS = make_events(11, 3000, 250)
FILES = 30  # written one by one while the daemon runs


def _write(directory, k: int) -> None:
    op = {True: "+", False: "-"}
    part = EVENTS[k * len(EVENTS) // FILES:(k + 1) * len(EVENTS) // FILES]
    tmp = directory / f".f{k:03d}.csv.part"
    tmp.write_text("src,dst,op\n" + "".join(f"{a},{b},{op[i]}\n" for a, b, i in part))
    os.replace(tmp, directory / f"f{k:03d}.csv")


def _edges_through(events: list, seq: int) -> int:
    chain, _ = lineage(events)
    return sum(a["edges"] for a in chain if a["seq"] <= seq)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A daemon fed a file every 60 ms, queried by three reader threads the whole time."""
    work = tmp_path_factory.mktemp("http-live")
    (work / "in").mkdir()
    port = free_port()
    d = DaemonProcess(["--input-dir", work / "in", "--checkpoint-dir", work / "ckpt", "--batch-size", 40,
                       "--batch-wait-ms", 10, "--warm-up", "on", "--http-port", port, "--http-ppr-queue", 2], work)
    wait_http(port, d)
    readers = Readers(port, "/ranks/top?k=1000")
    for k in range(FILES):
        _write(work / "in", k)
        time.sleep(0.06)
    d.wait_edges(len(EVENTS), timeout=120)
    time.sleep(0.3)
    answers = readers.stop()
    yield {"daemon": d, "port": port, "work": work, "answers": answers, "readers": readers}
    rc = d.terminate()
    assert rc == 0, d.log_tail()


def test_answers_are_consistent_snapshots_of_applied_batches(live):
    r = live["readers"]
    assert not r.errors, r.errors[:3]
    check_monotonic(r.answers)
    by_seq = check_snapshots(live["answers"])
    seqs = sorted(by_seq)
    final = lineage(live["daemon"].events())[0][-1]["seq"]
    assert len([s for s in seqs if 0 < s < final]) >= 5, f"too few batches seen while ingesting: {seqs}"
    assert seqs[-1] == final
    events = live["daemon"].events()
    picked = [s for s in seqs if s > 0]
    for s in picked[:: max(1, len(picked) // 12)] + [final]:
        err = oracle_l1(by_seq[s], EVENTS[:_edges_through(events, s)])
        assert err < 1e-5, (s, err)  # DF-P accuracy (prune_tol 1e-6), as the checkpoints are checked


def test_single_vertex_and_batch_queries_agree_with_top(live):
    port = live["port"]
    st, top = get(port, "/ranks/top?k=1000")
    ranks = {r["vertex"]: r["rank"] for r in top["top"]}
    assert [r["position"] for r in top["top"]] == list(range(1, len(ranks) + 1))
    values = [r["rank"] for r in top["top"]]
    assert values == sorted(values, reverse=True)
    some = sorted(ranks)[:5]
    st, one = get(port, f"/ranks/{some[0]}")
    assert st == 200 and one["seq"] == top["seq"] and one["rank"] == ranks[some[0]]
    st, many = get(port, "/ranks?" + "&".join(f"vertex={v}" for v in some + [10**9]))
    assert st == 200 and many["unknown"] == [10**9]
    assert [x["rank"] for x in many["ranks"]] == [ranks[v] for v in some] + [None]
    st, posted = get(port, "/ranks", data={"vertices": some + [str(some[0])]})
    assert st == 200 and [x["rank"] for x in posted["ranks"]] == [ranks[v] for v in some] + [ranks[some[0]]]
    st, raw = get(port, "/ranks/top?k=7&format=arrow")
    table = pa.ipc.open_stream(raw).read_all()
    assert table.schema.metadata[b"seq"] == str(top["seq"]).encode()
    assert table.column("vertex").to_pylist() == [r["vertex"] for r in top["top"][:7]]
    assert table.column("rank").to_pylist() == values[:7]


def test_status_reports_the_batch_positions_and_checkpoint(live):
    st, s = get(live["port"], "/status")
    assert st == 200
    last = lineage(live["daemon"].events())[0][-1]
    assert s["seq"] == last["seq"] and s["vertices"] > 0 and s["edges"] > 0
    b = s["last_batch"]
    assert b["edges"] == last["edges"] and b["algorithm"] == last["algorithm"]
    assert b["graph_ms"] >= 0 and b["rank_ms"] >= 0
    assert b["positions"]["dir"]["file"] == f"f{FILES - 1:03d}.csv" and b["positions"]["dir"]["done"]
    assert s["checkpoint"]["seq"] >= 1 and s["checkpoint"]["age_s"] >= 0
    assert s["device"] == ("gpu" if gpu_available() else "cpu") and s["ppr"]["limit"] == 2  # --device auto
    st, h = get(live["port"], "/history?seconds=600")
    rows = [dict(zip(h["columns"], r)) for r in h["rows"]]
    assert [r["seq"] for r in rows] == list(range(1, last["seq"] + 1))
    assert sum(r["edges"] for r in rows) == len(EVENTS)


@pytest.mark.parametrize("path,status,words", [
    ("/ranks/999999", 404, "unknown vertex"),
    ("/ranks/abc", 400, "malformed vertex id"),
    ("/ranks/-3", 400, "out of range"),
    ("/ranks/top?k=0", 400, "k must be between 1"),
    ("/ranks/top?k=many", 400, "k must be an integer"),
    ("/ranks/top?k=100001", 400, "k must be between 1"),
    ("/ranks", 400, "at least one vertex"),
    ("/ranks/top?format=xml", 400, "format must be"),
    ("/ppr?seed=999999", 404, "not in the graph"),
    ("/ppr?seed=x1", 400, "malformed vertex id"),
    ("/ppr", 400, "at least one seed"),
    ("/ppr?seed=1&method=magic", 400, "method must be one of"),
    ("/ppr?seed=1&alpha=2", 400, "alpha"),
    ("/ppr?seed=1&colour=red", 400, "unknown parameter"),
    ("/nothing-here", 404, "Not Found"),
])
def test_bad_requests_get_4xx_with_a_reason(live, path, status, words):
    st, body = get(live["port"], path)
    assert st == status, body
    assert body["status"] == status and words in body["error"], body


def test_bad_post_body(live):
    import urllib.request

    req = urllib.request.Request(f"http://127.0.0.1:{live['port']}/ranks", data=b"{not json", method="POST")
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(req, timeout=10)
    assert exc.value.code == 400 and "JSON" in json.loads(exc.value.read())["error"]


def test_ppr_matches_a_direct_computation_on_the_batch_graph(live):
    from kafka_broker import final_edges

    from streamrank.ppr import personalized_pagerank
    from streamrank.store.cpu import CpuGraph

    st, top = get(live["port"], "/ranks/top?k=3")
    seed = top["top"][0]["vertex"]
    for method in ("power", "push"):
        st, ans = get(live["port"], f"/ppr?seed={seed}&k=10&method={method}&eps=1e-9")
        assert st == 200, ans
        edges = sorted(final_edges(EVENTS[:_edges_through(live["daemon"].events(), ans["seq"])]))
        g = CpuGraph.from_edges([s for s, _ in edges], [d for _, d in edges])
        ref = personalized_pagerank(g, seed, k=10, method="power", tol=1e-13)
        got = {x["vertex"]: x["score"] for x in ans["top"]}
        want = dict(ref.top_k)
        for v, s in got.items():
            if v in want:
                assert abs(s - want[v]) < 1e-6, (method, v, s, want[v])
        assert ans["top"][0]["vertex"] == ref.top_k[0][0] and ans["method"] == method


def test_ppr_queue_limit_answers_429_and_ingest_goes_on(live):
    port = live["port"]
    st, top = get(port, "/ranks/top?k=1")
    seed = top["top"][0]["vertex"]
    results = []

    def ask():
        results.append(get(port, f"/ppr?seed={seed}&method=montecarlo&walks=4000000&k=5", timeout=120))

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    codes = sorted(s for s, _ in results)
    assert codes.count(429) >= 1 and codes.count(200) >= 1, codes
    busy = next(b for s, b in results if s == 429)
    assert "too many personalized PageRank queries" in busy["error"] and "limit 2" in busy["error"]
    # the daemon still ingests: a new file is applied and shows in the answers
    (live["work"] / "in" / ".z.part").write_text("src,dst,op\n1,2,+\n")
    os.replace(live["work"] / "in" / ".z.part", live["work"] / "in" / "z.csv")
    live["daemon"].wait_for(lambda ev: any(e.get("positions", {}).get("dir", {}).get("file") == "z.csv"
                                           for e in ev if e["event"] == "apply"))
    st, s = get(port, "/status")
    assert s["last_batch"]["positions"]["dir"]["file"] == "z.csv"


def test_query_url_talks_to_the_live_daemon(live):
    port = live["port"]
    env = {**os.environ, "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    run = lambda *a: subprocess.run([sys.executable, "-m", "streamrank", "query", "--url",  # noqa: E731
                                     f"http://127.0.0.1:{port}", *a], capture_output=True, text=True, env=env,
                                    timeout=60)
    p = run("--top", "3", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    st, top = get(port, "/ranks/top?k=3")
    assert out["seq"] == top["seq"] and [r["vertex"] for r in out["top"]] == [r["vertex"] for r in top["top"]]
    v = top["top"][1]["vertex"]
    p = run("--vertex", str(v), "--vertex", "999999")
    assert p.returncode == 1 and "unknown vertex" in p.stdout and f"seq={top['seq']}" in p.stdout, p.stdout
    p = run("--vertex", "abc")
    assert p.returncode != 0 and "malformed vertex id" in p.stderr
    p = subprocess.run([sys.executable, "-m", "streamrank", "query", "--url", f"http://127.0.0.1:{free_port()}",
                        "--top", "1"], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode != 0 and "cannot reach" in p.stderr


def test_string_ids_and_encoded_paths(tmp_path):
    (tmp_path / "in").mkdir()
    names = ["alice", "bob", "carol ann", "d/e", "émile", "x?y"]
    rows = [(names[i], names[(i * 2 + 1) % len(names)]) for i in range(len(names))] + [("bob", "alice")]
    (tmp_path / "in" / "a.csv").write_text("src,dst\n" + "".join(f"{a},{b}\n" for a, b in rows), encoding="utf-8")
    port = free_port()
    d = DaemonProcess(["--input-dir", tmp_path / "in", "--checkpoint-dir", tmp_path / "ckpt", "--id-type", "string",
                       "--http-port", port, "--warm-up", "off"], tmp_path)
    try:
        wait_http(port, d)
        d.wait_edges(len(rows))
        st, top = get(port, f"/ranks/top?k={len(names)}")
        ranks = {r["vertex"]: r["rank"] for r in top["top"]}
        assert set(ranks) == set(names) and abs(sum(ranks.values()) - 1) < 1e-9
        for name in names:
            st, one = get(port, f"/ranks/{quote(name)}")
            assert st == 200 and one["vertex"] == name and one["rank"] == ranks[name], one
        st, body = get(port, "/ranks/zoe")
        assert st == 404 and "unknown vertex 'zoe'" in body["error"]
        st, body = get(port, "/ranks", data={"vertices": ["alice", 7]})
        assert st == 400 and "string vertex ids" in body["error"]
        st, ans = get(port, f"/ppr?seed={quote('carol ann')}&k=3")
        assert st == 200 and ans["seeds"] == ["carol ann"] and all(x["vertex"] in names for x in ans["top"])
    finally:
        assert d.terminate() == 0, d.log_tail()


def test_daemon_without_http_port_serves_no_api(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("1,2\n2,3\n")
    d = DaemonProcess(["--input-dir", tmp_path / "in", "--checkpoint-dir", tmp_path / "ckpt", "--exit-when-done",
                       "--warm-up", "off"], tmp_path)
    assert d.wait(timeout=120) == 0, d.log_tail()
    assert "HTTP API" not in d.output.read_text()
