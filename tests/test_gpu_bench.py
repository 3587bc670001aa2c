"""`streamrank bench` and the R-MAT generator: CPU smoke runs everywhere, the GPU run where there is one."""

import json

import numpy as np
import pytest

from streamrank.bench import parse_graph_spec
from streamrank.cli import main
from streamrank.errors import InvalidArgumentError
from streamrank.bench.rmat import rmat_edges


def test_rmat_on_the_host_is_simple_and_skewed():
    s, d = rmat_edges(10, 8, seed=1)
    assert s.dtype == np.int64 and not (s == d).any()
    assert np.unique(s * 1024 + d).shape[0] == s.shape[0]
    assert np.bincount(s).max() > 10 * np.bincount(s).mean()
    s2, d2 = rmat_edges(10, 8, seed=1)
    assert np.array_equal(s, s2) and np.array_equal(d, d2)
    with pytest.raises(InvalidArgumentError):
        rmat_edges(0)


def test_graph_spec():
    assert parse_graph_spec("rmat:12") == {"kind": "rmat", "scale": 12, "edge_factor": 16, "name": "rmat:12"}
    assert parse_graph_spec("rmat:12:4")["edge_factor"] == 4
    assert parse_graph_spec("edges.txt")["kind"] == "file"
    for bad in ("rmat:", "rmat:x", "rmat:40", "rmat:3:0", ""):
        with pytest.raises(InvalidArgumentError):
            parse_graph_spec(bad)


def _run(tmp_path, device, capsys):
    out, png = tmp_path / "b.json", tmp_path / "b.png"
    rc = main(["bench", "--graph", "rmat:9", "--device", device, "--batches", "2",
               "--batch-fractions", "1e-3,1e-2", "--algorithms", "nd,dt,df,dfp",
               "--json", str(out), "--plot", str(png)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "x static" in text and "dfp" in text
    doc = json.loads(out.read_text())
    algos = {r["algorithm"] for r in doc["rows"]}
    assert {"static", "nd", "dt", "df", "dfp"} <= algos
    for r in doc["rows"]:
        if "note" in r:  # a baseline that did not run says why
            assert r["algorithm"] in ("cusparse", "cugraph") and r["note"], r
            continue
        assert r["total_ms_median"] > 0 and r["l1_error"] < 1e-4, r
    assert png.read_bytes()[:4] == b"\x89PNG"
    return doc


def test_bench_cpu(tmp_path, capsys):
    doc = _run(tmp_path, "cpu", capsys)
    assert doc["backend"] == "cpu"


@pytest.mark.gpu
def test_bench_gpu(tmp_path, capsys):
    doc = _run(tmp_path, "gpu", capsys)
    assert doc["backend"] == "gpu" and doc["cugraph"] in ("installed", "not installed")
    assert any(r["algorithm"] == "cusparse" and "note" not in r for r in doc["rows"])
    if doc["cugraph"] != "installed":  # cuGraph's row says so instead of being left out
        assert any(r["algorithm"] == "cugraph" and r["note"] == doc["cugraph"] for r in doc["rows"])
    mem = doc["memory"]
    assert "load_within_bound" in mem and mem["load_bound_bytes"] > mem["store_bytes"]
    assert "profile" in doc


def test_baselines_say_why_they_cannot_load_a_graph():
    from types import SimpleNamespace

    from streamrank.bench.baselines import CUSPARSE_BYTES_PER_EDGE, baseline_fits

    big = SimpleNamespace(num_edges=2**31 - 2**20, num_vertices=2**27)
    assert "int32" in baseline_fits("cusparse", big, available=2**50, self_loops=True)
    assert baseline_fits("cusparse", big, available=2**50) is None
    g = SimpleNamespace(num_edges=10**9, num_vertices=10**7)
    need = CUSPARSE_BYTES_PER_EDGE * (10**9 + 10**7)
    assert baseline_fits("cusparse", g, available=need, self_loops=True) is None
    assert "cannot load on this GPU" in baseline_fits("cusparse", g, available=need - 1, self_loops=True)
    assert "cannot load on this GPU" in baseline_fits("cugraph", g, available=2**30)
    assert baseline_fits("cugraph", g, available=2**40) is None


def test_file_graph_streams_its_keys_in_file_order(device, tmp_path):
    """A file base graph is read chunk by chunk into packed keys: the same edges in the same order
    as the whole file read at once (so the same random batches), and the same store."""
    from pathlib import Path

    import streamrank
    from streamrank.backend import resolve_backend
    from streamrank.bench.inputs import file_graph, load_base_edges, load_file_keys

    xp = resolve_backend(device).xp
    if device == "gpu":
        from streamrank.store.gpu import GpuGraph as Graph
    else:
        from streamrank.store.cpu import CpuGraph as Graph
    spec = parse_graph_spec(str(Path(streamrank.__file__).parent / "data" / "CollegeMsg.txt.gz"))
    keys = load_file_keys(spec, xp=xp, log=print)
    s, d = load_base_edges(spec, xp=xp, seed=0)
    assert keys.shape[0] == s.shape[0] == 59835
    assert bool(((keys >> 32) == s).all()) and bool(((keys & 0xFFFFFFFF) == d).all())
    kept = keys.copy()
    got, want = file_graph(Graph, keys, xp=xp), Graph.from_edges(s, d)
    assert bool((keys == kept).all())  # the bench keeps its keys for the batches' deletions
    assert got.num_edges == want.num_edges
    np.testing.assert_array_equal(xp.asnumpy(got.ids.external) if device == "gpu" else got.ids.external,
                                  xp.asnumpy(want.ids.external) if device == "gpu" else want.ids.external)
    wide = tmp_path / "wide.txt"
    wide.write_text("0 1\n2147483647 3\n")
    assert load_file_keys(parse_graph_spec(str(wide)), xp=xp) is None  # past the keys' range
