"""String vertex ids in the engine: same ranks as integer ids and NetworkX, dictionary, state, errors."""

from __future__ import annotations

import gzip
from pathlib import Path

import networkx as nx
import numpy as np
import pyarrow as pa
import pytest

from streamrank.batch import EdgeBatch
from streamrank.config import RankConfig
from streamrank.engine import Engine
from streamrank.errors import BatchFormatError, CheckpointError, InvalidArgumentError, StreamrankError
from streamrank.ids import strings as strings_mod
from streamrank.ids.strings import StringIdMap, pack_strings, unpack_strings
from streamrank.ids.kinds import IdError, IdTypeLock, string_id_problems

REPO = Path(__file__).resolve().parents[1]
COLLEGE_MSG = REPO / "streamrank" / "data" / "CollegeMsg.txt.gz"


def name_of(v) -> str:
    """An integer id rewritten as a string id (with non-ASCII text, so it can never look like an int)."""
    return f"user-{int(v)}-é"


def names(a) -> np.ndarray:
    return np.array([name_of(v) for v in np.asarray(a).tolist()], dtype=object)


def college_edges(limit=None):
    with gzip.open(COLLEGE_MSG, "rt") as fh:
        rows = [line.split() for line in fh if line.strip()]
    rows.sort(key=lambda r: int(r[2]))  # time order, stable
    src = np.array([int(r[0]) for r in rows], dtype=np.int64)
    dst = np.array([int(r[1]) for r in rows], dtype=np.int64)
    return (src[:limit], dst[:limit]) if limit else (src, dst)


def by_name(ids, p) -> dict:
    return dict(zip([str(v) for v in ids.tolist()], p.tolist()))


# ------------------------------------------------------------------ engine: strings == integers
@pytest.mark.parametrize("algorithm", ["dfp", "static"])
def test_string_stream_gives_the_ranks_of_the_integer_stream(device, algorithm):
    src, dst = college_edges()
    rng = np.random.default_rng(1)
    n_base = int(0.9 * src.shape[0])
    e_int = Engine(device, algorithm, config=RankConfig())
    e_str = Engine(device, algorithm, config=RankConfig())
    e_int.load_edges(src[:n_base], dst[:n_base])
    e_str.load_edges(names(src[:n_base]), names(dst[:n_base]))
    assert e_int.id_type == "int" and e_str.id_type == "string"
    step = 400
    for lo in range(n_base, src.shape[0], step):
        s, d = src[lo:lo + step], dst[lo:lo + step]
        ins = rng.random(s.shape[0]) > 0.2  # deletions too, some of absent edges
        a = e_int.apply(EdgeBatch.from_arrays(s, d, ins))
        b = e_str.apply(EdgeBatch.from_arrays(names(s), names(d), ins))
        assert a.changes.summary() == b.changes.summary()
    ids_i, p_i = e_int.ranks()
    ids_s, p_s = e_str.ranks()
    assert ids_s.dtype == object
    # internal numbering differs (the store orders a batch by its integer keys), so sums run in
    # another order: equal up to rounding, and for DF-P up to the frontier decisions rounding can
    # flip (each run is within its tolerance of the oracle)
    want = {name_of(v): r for v, r in zip(ids_i.tolist(), p_i.tolist())}
    got = by_name(ids_s, p_s)
    assert set(got) == set(want)
    if algorithm == "static":
        assert max(abs(got[k] - want[k]) for k in want) < 1e-12
    else:
        assert sum(abs(got[k] - want[k]) for k in want) < 1e-6
    top_i, _ = e_int.top_k(20)
    top_s, _ = e_str.top_k(20)
    assert [name_of(v) for v in top_i.tolist()] == top_s.tolist()
    # against NetworkX on string nodes
    es, ed = e_str.edges_external()
    g = nx.DiGraph()
    g.add_nodes_from(ids_s.tolist())
    g.add_edges_from(zip(es.tolist(), ed.tolist()))
    ref = nx.pagerank(g, alpha=0.85, tol=1e-13, max_iter=1000)
    got = by_name(ids_s, p_s)
    assert set(got) == set(ref)
    assert sum(abs(got[k] - ref[k]) for k in ref) < 1e-5


def test_three_line_example_from_the_issue(device):
    eng = Engine(device, "static")
    eng.load_edges(["alice", "bob", "carol"], ["bob", "carol", "alice"])
    ids, p = eng.top_k(3)
    assert sorted(ids.tolist()) == ["alice", "bob", "carol"]
    np.testing.assert_allclose(p, 1 / 3, atol=1e-12)
    eng.apply(EdgeBatch.from_arrays(["dave"], ["alice"]))
    ref = nx.pagerank(nx.DiGraph([("alice", "bob"), ("bob", "carol"), ("carol", "alice"), ("dave", "alice")]),
                      tol=1e-13, max_iter=1000)
    got = by_name(*eng.ranks())
    assert got == pytest.approx(ref, abs=1e-9)
    assert eng.lookup(["dave", "nobody"]).tolist()[1] == -1


def test_unknown_deletions_are_counted_like_integer_ones(device):
    e_int, e_str = Engine(device), Engine(device)
    e_int.load_edges([1, 2], [2, 3])
    e_str.load_edges(names([1, 2]), names([2, 3]))
    n_dict = len(e_str.string_ids)
    # deletions of edges with unknown endpoints, duplicated; an insert+delete of a new pair
    s, d = [9, 9, 1, 7, 7], [1, 1, 8, 6, 6]
    ins = [False, False, False, True, False]
    a = e_int.apply(EdgeBatch.from_arrays(s, d, ins))
    b = e_str.apply(EdgeBatch.from_arrays(names(s), names(d), ins))
    assert a.changes.summary() == b.changes.summary()
    assert e_str.num_vertices == e_int.num_vertices == 3
    # ids seen only in deletions were not stored; the inserted-then-deleted pair was
    assert len(e_str.string_ids) == n_dict + 2
    assert e_str.string_ids.lookup([name_of(9), name_of(8)]).tolist() == [-1, -1]


# ------------------------------------------------------------------ mixing and bad ids
def test_mixing_is_refused_both_ways():
    e = Engine("cpu")
    e.load_edges(["a"], ["b"])
    with pytest.raises(IdError) as info:
        e.apply(EdgeBatch.from_arrays([1], [2]))
    assert info.value.reason == "mixed_id_types"
    e2 = Engine("cpu")
    e2.load_edges([1], [2])
    with pytest.raises(IdError):
        e2.apply(EdgeBatch.from_arrays(["1"], ["2"]))
    e3 = Engine("cpu", id_type="int")
    with pytest.raises(IdError):
        e3.load_edges(["a"], ["b"])
    e4 = Engine("cpu", id_type="string")
    with pytest.raises(IdError):
        e4.apply(EdgeBatch.from_arrays([1], [2]))
    e4.apply(EdgeBatch.empty())  # an empty batch has no kind
    assert e4.id_type == "string"
    with pytest.raises(InvalidArgumentError):
        Engine("cpu", id_type="text")


@pytest.mark.parametrize("src, reason", [
    (["a", 1], "mixed_id_types"),
    (["", "b"], "empty_id"),
    (["x" * 1025, "b"], "id_too_long"),
    (np.array([b"\xff\xfe", b"b"]), "bad_utf8_id"),
    (["\ud800", "b"], "bad_utf8_id"),
])
def test_bad_string_ids_have_reasons(src, reason):
    with pytest.raises(IdError) as info:
        EdgeBatch.from_arrays(src, ["b", "c"])
    assert info.value.reason == reason


def test_length_limit_counts_utf8_bytes_and_is_a_setting():
    EdgeBatch.from_arrays(["é" * 512], ["b"])  # 1024 bytes: at the limit
    with pytest.raises(IdError):
        EdgeBatch.from_arrays(["é" * 513], ["b"])
    EdgeBatch.from_arrays(["x" * 5000], ["b"], max_id_bytes=5000)
    with pytest.raises(IdError):
        Engine("cpu", max_id_bytes=4).load_edges(["abcde"], ["b"])
    with pytest.raises(BatchFormatError):
        EdgeBatch.from_arrays([None, "a"], ["b", "c"])


def test_string_id_problems_column_wise():
    arr = pa.array(["ok", "", "x" * 20, "12", None, " -3 "])
    bad = string_id_problems(arr, max_bytes=10, name="src")
    assert {r: e.reason for r, e in bad.items()} == {1: "empty_id", 2: "id_too_long"}
    bad = string_id_problems(arr, max_bytes=10, name="src", auto=True)
    assert {r: e.reason for r, e in bad.items()} == {1: "empty_id", 2: "id_too_long", 3: "mixed_id_types",
                                                     5: "mixed_id_types"}


@pytest.mark.parametrize("type_", [pa.string(), pa.large_string()])
def test_string_id_problems_of_slices(type_):
    """Lengths are read off the offsets buffer of a slice, not of the array it was cut from."""
    arr = pa.array(["", "ok", "x" * 11, "ab", "é" * 5, "", "z"], type=type_)
    assert string_id_problems(arr[1:2], max_bytes=10) == {}
    assert string_id_problems(arr[3:5], max_bytes=10) == {}  # "é" * 5 is 10 bytes
    assert string_id_problems(arr[3:5], max_bytes=9)[1].reason == "id_too_long"
    assert {r: e.reason for r, e in string_id_problems(arr[1:6], max_bytes=10).items()} == \
        {1: "id_too_long", 4: "empty_id"}
    assert string_id_problems(arr[6:], max_bytes=1) == {}


def test_id_type_lock():
    lock = IdTypeLock("auto")
    assert lock.current == "auto"
    lock.admit("string")
    lock.admit("string")
    with pytest.raises(IdError):
        lock.admit("int")
    assert IdTypeLock("int").current == "int"


# ------------------------------------------------------------------ dictionary and state
def test_dictionary_encodes_in_first_appearance_order_and_grows():
    m = StringIdMap()
    assert m.encode(pa.array(["b", "a", "b"])).tolist() == [0, 1, 0]
    codes = m.encode(pa.array(["c", "x", "a", "x"]), add=np.array([True, False, True, False]))
    assert codes.tolist() == [2, 3, 1, 3] and len(m) == 3  # "x": transient code, not stored
    for k in range(3000):  # grows past the initial capacity
        m.encode(pa.array([f"v{k}"]))
    assert len(m) == 3003 and m.decode([0, 3002]).tolist() == ["b", "v2999"]
    assert m.lookup(["v10", "nope"]).tolist() == [13, -1]


def test_small_batches_encode_as_the_arrow_path_does(monkeypatch):
    """Small batches are looked up in Python, large ones through Arrow's dictionary_encode: the
    same stream of batches (new ids, ids only deleted, repeats) gets the same codes both ways."""
    rng = np.random.default_rng(7)
    batches = []
    for _ in range(60):
        n = int(rng.integers(1, 12))
        names = [f"v{k}" for k in rng.integers(0, 40, 2 * n)]
        batches.append((pa.array(names[:n]), pa.array(names[n:], type=pa.large_string()), rng.random(n) < 0.7))
    results = []
    for small in (0, strings_mod.SMALL_BATCH_IDS):
        monkeypatch.setattr(strings_mod, "SMALL_BATCH_IDS", small)
        m = StringIdMap()
        codes, transient = [], 0
        for s, d, ins in batches:
            codes.append(np.concatenate(m.encode_edges(s, d, ins)))
            transient += int(codes[-1].max()) >= len(m)
        codes.append(m.encode(pa.array(["w1", "v3", "w2", "w1"]), add=np.array([False, True, True, False])))
        codes.append(m.encode(pa.array(["w3", "w3"])))
        results.append((codes, m.strings.tolist()))
        assert transient  # ids named only by deletions were met
    (arrow_codes, arrow_ids), (list_codes, list_ids) = results
    assert arrow_ids == list_ids and len(arrow_ids) > 20
    for a, b in zip(arrow_codes, list_codes):
        assert a.dtype == b.dtype == np.int64 and a.tolist() == b.tolist()


def test_dictionary_state_round_trip_and_corruption():
    m = StringIdMap()
    m.encode(pa.array(["ä", "", "long" * 100, "b"]).filter(pa.array([True, False, True, True])))
    m2 = StringIdMap.from_state(m.state())
    assert m2.strings.tolist() == m.strings.tolist()
    assert m2.lookup(["b"]).tolist() == [2]
    offsets, data = pack_strings(["a", "b"])
    with pytest.raises(CheckpointError):
        unpack_strings(offsets, np.array([0xFF, 0xFE], dtype=np.uint8))
    with pytest.raises(CheckpointError):
        StringIdMap.from_state({"id_offsets": np.array([0, 1, 2]), "id_data": np.frombuffer(b"aa", np.uint8)})
    with pytest.raises(CheckpointError):
        StringIdMap.from_state({})


def test_engine_state_round_trip(device):
    src, dst = college_edges(3000)
    e = Engine(device)
    e.load_edges(names(src[:2000]), names(dst[:2000]))
    e.apply(EdgeBatch.from_arrays(names(src[2000:2500]), names(dst[2000:2500])))
    st = e.state()
    e2 = Engine.from_state(st, device=device)
    assert e2.id_type == "string" and e2.seq == e.seq
    for eng in (e, e2):
        eng.apply(EdgeBatch.from_arrays(names(src[2500:]), names(dst[2500:])))
    ids1, p1 = e.ranks()
    ids2, p2 = e2.ranks()
    assert ids1.tolist() == ids2.tolist()
    np.testing.assert_allclose(p1, p2, atol=1e-10)  # a rebuilt GPU store may sum in another order
    with pytest.raises(StreamrankError):
        Engine.from_state(st, device=device, id_type="int")
    old = {k: v for k, v in Engine(device).state().items() if k != "id_type"}
    assert Engine.from_state(old, device=device).id_type == "auto"
