"""The streamed first load (Engine.load_edge_chunks): the same graph and ranks as load_edges of
the whole table, on CollegeMsg read in small chunks; progress; errors leave the engine empty."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

import streamrank
from connectors.files import Layout, open_edge_file, read_edges
from streamrank import Engine
from streamrank.engine_load import LoadProgress, ProgressLog
from streamrank.errors import GraphCapacityError, InvalidArgumentError, SourceError
from streamrank.store import key_buffer
from streamrank.store.key_buffer import KeyBuffer

COLLEGE = Path(streamrank.__file__).parent / "data" / "CollegeMsg.txt.gz"
CHUNK = 4096  # CollegeMsg's 59,835 lines in 15 chunks


def _lines() -> list[str]:
    with gzip.open(COLLEGE, "rt") as f:
        return f.read().splitlines()


def _by_id(engine) -> dict:
    ids, p = engine.ranks()
    return dict(zip(ids.tolist(), p.tolist()))


def _edges(engine) -> set:
    s, d = engine.edges_external()
    return set(zip(s.tolist(), d.tolist()))


def _same(streamed, whole, *, exact: bool = False) -> None:
    assert streamed.graph.num_vertices == whole.graph.num_vertices
    assert _edges(streamed) == _edges(whole)
    a, b = _by_id(streamed), _by_id(whole)
    assert a.keys() == b.keys()
    if exact:  # the same build: same internal ids and bit-identical ranks
        np.testing.assert_array_equal(streamed.backend.to_host(streamed.graph.ids.external),
                                      whole.backend.to_host(whole.graph.ids.external))
        np.testing.assert_array_equal(streamed.ranks()[1], whole.ranks()[1])
    else:  # another numbering: the same ranks up to summation order
        got, want = np.array([a[k] for k in b]), np.array(list(b.values()))
        assert np.abs(got - want).max() <= 1e-9


def _chunks(reader, weighted: bool):
    for t in reader:
        if weighted:
            yield (t.column("src"), t.column("dst"), t.column("op").to_numpy() > 0, t.column("weight").to_numpy())
        else:
            yield t.column("src"), t.column("dst")


def _load_both(path, engine_kw: dict, read_kw: dict, *, weighted: bool = False):
    """``(streamed, whole, progress seen)``: the file streamed in chunks of CHUNK rows, and
    load_edges of the same reader's rows concatenated."""
    seen = []
    streamed = Engine(**engine_kw)
    with open_edge_file(path, chunk_rows=CHUNK, **read_kw) as reader:
        res = streamed.load_edge_chunks(_chunks(reader, weighted), progress=seen.append)
    assert res is streamed.last
    table, _ = read_edges(path, chunk_rows=CHUNK, **read_kw)
    whole = Engine(**engine_kw)
    op = table.column("op").to_numpy() > 0
    if weighted:
        whole.load_edges(table.column("src"), table.column("dst"), op, weight=table.column("weight").to_numpy())
    else:
        keep = np.flatnonzero(op)
        whole.load_edges(table.column("src").take(keep), table.column("dst").take(keep))
    return streamed, whole, seen


def test_unweighted_collegemsg_in_chunks(device):
    streamed, whole, seen = _load_both(COLLEGE, {"device": device}, {})
    _same(streamed, whole, exact=device == "gpu")  # the GPU builds both from the same keys
    assert streamed.graph.num_edges == whole.graph.num_edges and streamed.seq == 0
    # progress: one call per chunk with monotone counts, then one when the store is built
    assert [p.stage for p in seen] == ["reading"] * (len(seen) - 1) + ["built"]
    assert len(seen) - 1 == -(-59835 // CHUNK)
    edges = [p.edges for p in seen]
    assert edges == sorted(edges) and edges[-1] == 59835 and edges[0] == CHUNK
    assert [p.chunks for p in seen[:-1]] == list(range(1, len(seen)))
    assert all(b.elapsed_s >= a.elapsed_s for a, b in zip(seen, seen[1:]))


@pytest.mark.parametrize("mode", ["set", "sum"])
def test_weighted_rows_in_order_with_deletions(device, tmp_path, mode):
    """Every 5th row deletes its pair (every 10th without a weight), weights vary: the rows
    apply in order across chunk boundaries exactly as in one table."""
    rows = ["src,dst,op,weight"]
    for i, line in enumerate(_lines()):
        s, d, ts = line.split()
        if i % 5 == 4:
            rows.append(f"{s},{d},-,{'' if i % 10 == 9 else (int(ts) % 3) + 1}")
        else:
            rows.append(f"{s},{d},+,{(int(ts) % 7) + 1}")
    path = tmp_path / "weighted.csv"
    path.write_text("\n".join(rows) + "\n")
    kw = {"device": device, "weighted": True, "multi_edges": mode}
    streamed, whole, _ = _load_both(path, kw, {"layout": Layout(weighted=True)}, weighted=True)
    _same(streamed, whole)
    assert _weights(streamed) == _weights(whole)


def _weights(engine) -> dict:
    """``{(src, dst): weight}`` by external ids."""
    host = engine.backend.to_host
    s, d = (host(a) for a in engine.graph.edges())
    ext = host(engine.graph.ids.external)
    return dict(zip(zip(ext[s].tolist(), ext[d].tolist()), host(engine.graph.edge_weights()).tolist()))


def test_string_ids(device, tmp_path):
    path = tmp_path / "strings.txt"
    path.write_text("".join(f"v{s} u{d} {t}\n" for s, d, t in (line.split() for line in _lines())))
    streamed, whole, _ = _load_both(path, {"device": device, "id_type": "string"}, {"id_type": "string"})
    _same(streamed, whole)
    assert streamed.id_type == "string" and len(streamed.string_ids) == len(whole.string_ids)


def _with_bad_line(tmp_path) -> Path:
    lines = _lines()
    mid = len(lines) // 2
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines[:mid] + ["7 not-an-id 1082040961"] + lines[mid:]) + "\n")
    return path


def test_bad_line_in_the_middle_is_recorded(device, tmp_path):
    streamed, whole, _ = _load_both(_with_bad_line(tmp_path), {"device": device}, {})
    clean = Engine(device)
    with open_edge_file(COLLEGE, chunk_rows=CHUNK) as reader:
        clean.load_edge_chunks(_chunks(reader, False))
    _same(streamed, clean, exact=device == "gpu")
    with open_edge_file(_with_bad_line(tmp_path), chunk_rows=CHUNK) as reader:
        Engine(device).load_edge_chunks(_chunks(reader, False))
        assert reader.report.bad == 1 and reader.report.bad_lines[0].line == 59835 // 2 + 1


def test_strict_bad_line_raises_and_leaves_the_engine_empty(device, tmp_path):
    eng = Engine(device, id_type="auto")
    seen = []
    # in file order, so that chunks come before the bad line (ordering by time reads it first)
    with open_edge_file(_with_bad_line(tmp_path), chunk_rows=CHUNK, strict=True, keep_order=True) as reader:
        with pytest.raises(SourceError):
            eng.load_edge_chunks(_chunks(reader, False), progress=seen.append)
    assert seen and seen[-1].edges >= CHUNK  # chunks were taken before the bad line
    assert eng.graph.num_vertices == 0 and eng.graph.num_edges == 0 and eng.id_type == "auto"
    with open_edge_file(COLLEGE, chunk_rows=CHUNK) as reader:  # and it loads afterwards
        eng.load_edge_chunks(_chunks(reader, False))
    assert eng.graph.num_edges > 0


def test_capacity_refusal_leaves_the_engine_empty(device):
    chunks = [([f"a{i}" for i in range(k, k + 500)], [f"b{i}" for i in range(k, k + 500)])
              for k in range(0, 100_000, 500)]
    one = Engine(device, id_type="string")
    one.load_edge_chunks(chunks[:1])
    limit = 2 * one.graph.nbytes  # room for one chunk, not for two hundred
    eng = Engine(device, id_type="string", max_graph_bytes=limit)
    with pytest.raises(GraphCapacityError):
        eng.load_edge_chunks(chunks)
    assert eng.graph.num_vertices == 0 and len(eng.string_ids) == 0 and eng.max_graph_bytes == limit
    eng.load_edge_chunks(chunks[:1])
    assert eng.graph.num_edges == 500 and len(eng.string_ids) == 1000


def test_refusals():
    eng = Engine("cpu")
    for bad in ([np.array([1, 2])], [(np.array([1]),)], "edges", 5):
        with pytest.raises(InvalidArgumentError):
            eng.load_edge_chunks(bad)
    with pytest.raises(InvalidArgumentError):
        eng.load_edge_chunks([], progress=3)
    with pytest.raises(InvalidArgumentError):
        eng.load_edge_chunks([], expected_edges=-1)
    assert eng.graph.num_vertices == 0
    eng.load_edge_chunks([([1, 2], [2, 3])])
    with pytest.raises(InvalidArgumentError, match="empty engine"):
        eng.load_edge_chunks([([4], [5])])  # a second load: apply batches instead
    unweighted = Engine("cpu")
    from streamrank.errors import BatchFormatError

    with pytest.raises(BatchFormatError):
        unweighted.load_edge_chunks([([1], [2], [True], [2.0])])
    assert unweighted.graph.num_vertices == 0


def test_empty_stream_and_mixed_chunks():
    eng = Engine("cpu")
    eng.load_edge_chunks(iter([]))
    assert eng.graph.num_vertices == 0 and eng.x.shape[0] == 0
    from streamrank import EdgeBatch

    eng.load_edge_chunks([EdgeBatch.from_arrays([1, 2], [2, 1]), ([2, 1], [1, 3], [False, True])])
    assert _edges(eng) == {(1, 2), (1, 3)}


def test_progress_log_lines():
    lines = []
    log = ProgressLog(lines.append, "base graph x.txt", every_s=10.0)
    for i in range(1, 5):
        log(LoadProgress(1000 * i, i, 2.5 * i, "reading"))
    log(LoadProgress(4000, 4, 10.5, "built"))
    assert len(lines) == 2 and lines[0].startswith("base graph x.txt: 4,000 edges read in 10.0 s (400 edges/s")
    assert "stored" in lines[1]
    assert LoadProgress(0, 0, 0.0, "reading").edges_per_s == 0.0
    with pytest.raises(InvalidArgumentError):
        ProgressLog(3, "x")
    with pytest.raises(InvalidArgumentError):
        ProgressLog(print, "x", every_s=-1)


def test_key_buffer_grows_and_trims(monkeypatch):
    monkeypatch.setattr(key_buffer, "MIN_CAPACITY", 16)
    rng = np.random.default_rng(3)
    buf = KeyBuffer(np)
    parts = []
    for m in (10, 7, 30, 1, 0, 100):
        s, d = rng.integers(0, 2**31 - 1, m), rng.integers(0, 1000, m)
        buf.append(s, d, int(max(s.max(initial=0), d.max(initial=0))))
        parts.append((s << 32) | d)
    assert buf.size == 148 and buf.capacity >= 148 and buf.hi == max(int(p.max() >> 32) for p in parts if p.size)
    keys = buf.take()
    np.testing.assert_array_equal(keys, np.concatenate(parts))
    assert keys.shape[0] == 148 and buf.size == 0 and buf.capacity == 0
    sized = KeyBuffer(np, capacity=148)
    for p in parts:
        sized.append(p >> 32, p & 0xFFFFFFFF, 0)
        assert sized.capacity == 148  # sized once from the known total
    assert sized.take().base is None  # no tail to trim: the buffer itself


def _gpu_chunks(lines, *, chunk=CHUNK):
    s = np.array([int(x.split()[0]) for x in lines])
    d = np.array([int(x.split()[1]) for x in lines])
    return s, d, [(s[i:i + chunk], d[i:i + chunk]) for i in range(0, len(s), chunk)]


@pytest.mark.gpu
def test_gpu_key_buffer_growth_is_the_bounded_build(monkeypatch):
    monkeypatch.setattr(key_buffer, "MIN_CAPACITY", 1024)  # several growth steps
    s, d, chunks = _gpu_chunks(_lines())
    streamed, whole = Engine("gpu"), Engine("gpu")
    streamed.load_edge_chunks(chunks)
    whole.load_edges(s, d)
    _same(streamed, whole, exact=True)


@pytest.mark.gpu
def test_gpu_leaving_the_key_buffer():
    """A chunk with a deletion, or with an id past the packed range, ends the key buffer: the
    keys so far go in as one batch, every chunk after as its own; the graph is load_edges'."""
    s, d, chunks = _gpu_chunks(_lines())
    delete = (s[:50], d[:50], np.zeros(50, dtype=bool))
    big = (np.array([2**40, 5]), np.array([7, 2**33]))
    for extra in (delete, big):
        mid = len(chunks) // 2
        streamed, whole = Engine("gpu"), Engine("gpu")
        streamed.load_edge_chunks(chunks[:mid] + [extra] + chunks[mid:])
        ins = np.ones(len(s) + len(extra[0]), dtype=bool)
        cut = mid * CHUNK
        if len(extra) == 3:
            ins[cut:cut + 50] = False
        whole.load_edges(np.concatenate([s[:cut], extra[0], s[cut:]]),
                         np.concatenate([d[:cut], extra[1], d[cut:]]), ins)
        _same(streamed, whole)


@pytest.mark.parametrize("weighted", [False, True])
def test_deleted_in_a_later_chunk_leaves_no_vertex(device, weighted):
    """One table creates a vertex only for an insertion that survives it: an edge inserted in one
    chunk and deleted in a later one leaves no vertex behind either."""
    src, dst, ins = [1, 3, 5, 1, 5], [2, 4, 6, 2, 6], [True, True, True, False, False]
    kw = {"device": device, "weighted": weighted}
    whole, streamed = Engine(**kw), Engine(**kw)
    whole.load_edges(src, dst, ins)
    streamed.load_edge_chunks([(src[:3], dst[:3]), (src[3:], dst[3:], ins[3:])])
    assert streamed.graph.num_vertices == whole.graph.num_vertices == 2
    _same(streamed, whole)
    if weighted:
        assert _weights(streamed) == _weights(whole) == {(3, 4): 1.0}
