"""The published temporal protocol (`streamrank bench --protocol temporal`): on both backends a
small run on the bundled CollegeMsg, padded with isolated vertices, against the float64 oracle;
the reference's summary lines parsed into the ratio column."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from streamrank.bench.host_probe import host_probe_us
from streamrank.bench.temporal import (SEED_DFP, SEED_DFP_CPU, TemporalOptions, format_temporal, parse_seed_log,
                                       run_temporal)
from streamrank.config import RankConfig
from streamrank.errors import InvalidArgumentError

DATA = Path(__file__).resolve().parents[1] / "streamrank" / "data" / "CollegeMsg.txt.gz"
SEED_LOG = """\
fraction  0.00001  pagerankPruneDynamicFrontierCuda           batches  20  ms    0.80  iterations   7.0  error 5.00e-08
fraction  0.00001  pagerankPruneDynamicFrontierCudaPartition  batches  20  ms    0.95  iterations   7.0  error 5.10e-08
fraction  0.00001  pagerankPruneDynamicFrontierOmp            batches  20  ms    3.25  iterations   5.0  error 3.20e-07
fraction   0.0001  pagerankPruneDynamicFrontierCuda           batches  20  ms    1.30  iterations  15.0  error 1.10e-07
fraction   0.0001  pagerankStaticCuda                         batches  20  ms    9.00  iterations  60.0  error 1.00e-10
"""


def test_parse_seed_log_picks_the_faster_dfp():
    seed = parse_seed_log(SEED_LOG)
    assert set(seed) == {1e-5, 1e-4}
    assert seed[1e-5][SEED_DFP[1]]["ms"] == 0.95 and seed[1e-4][SEED_DFP[0]]["iterations"] == 15.0
    assert seed[1e-5][SEED_DFP_CPU[0]]["ms"] == 3.25


@pytest.mark.parametrize("dangling", ["self-loop", "uniform"])
def test_temporal_protocol_matches_the_oracle(device, dangling, tmp_path):
    log = tmp_path / "seed.txt"
    log.write_text(SEED_LOG.replace("0.00001", "0.0002").replace("0.0001 ", "0.001 "))
    opts = TemporalOptions(path=str(DATA), fractions=(2e-4, 1e-3), algorithms=("dfp", "warm"), batches=4,
                           vertices=3000 if dangling == "self-loop" else None, device=device,
                           config=RankConfig(dangling=dangling), reference_log=str(log), error_every=2)
    report = run_temporal(opts, log=lambda m: None)
    rows = report["rows"]
    assert [(r["fraction"], r["algorithm"]) for r in rows] == [(2e-4, "dfp"), (2e-4, "warm"), (1e-3, "dfp"),
                                                               (1e-3, "warm")]
    assert report["graph"]["lines"] == 59835 and report["graph"]["base_lines"] == 53851
    if dangling == "self-loop":
        assert report["graph"]["vertices"] == 3000  # ids 0..2999 up front (CollegeMsg has 1..1899)
    for r in rows:
        assert r["batch_lines"] == int(r["fraction"] * 59835) and r["batches"] == 4 and r["error_checks"] == 2
        assert r["ran"] == {r["algorithm"]: 4}
        if r["algorithm"] == "dfp":  # the error pass replays the timed pass exactly
            assert r["same_iterations"]
        assert r["converged"] and r["iterations_median"] >= 1
        assert r["l1_max"] < (2e-6 if r["algorithm"] == "dfp" else 1e-7)
        if dangling == "self-loop":  # the iterate in the reference's form, x (1 - alpha) / n, and x / sum(x)
            assert 0 < r["l1_unnormalized_median"] < (2e-6 if r["algorithm"] == "dfp" else 1e-7)
            assert 0 < r["l1_sum_normalized_median"] < (2e-6 if r["algorithm"] == "dfp" else 1e-7)
            if r["algorithm"] == "dfp":  # published: the exact vertices exactly, the rest renormalized
                assert r["l1_median"] < min(r["l1_unnormalized_median"], r["l1_sum_normalized_median"])
        else:
            assert r["l1_unnormalized_median"] is None and r["l1_sum_normalized_median"] is None
        assert r["graph_ms_median"] > 0 and r["rank_ms_median"] > 0
        assert r["host_probe_us"] > 0  # the host's speed after the row's timed batches
    # the baseline: the reference's faster CUDA DF-P on the GPU, its OpenMP DF-P on the CPU
    ref_ms = 0.8 if device == "gpu" else 3.25
    assert rows[0]["reference_method"] == ("pagerankPruneDynamicFrontierCuda" if device == "gpu" else SEED_DFP_CPU[0])
    assert rows[0]["reference_ms"] == ref_ms
    assert rows[0]["ratio_vs_reference"] == pytest.approx(ref_ms / rows[0]["total_ms_median"])
    table = format_temporal(report)
    assert "x ref" in table and "L1 x(1-a)/N" in table and "L1 x/sum" in table and "host us" in table
    assert "None" not in table  # figures that do not apply to a row print as "-"


def test_temporal_protocol_rejects_what_it_cannot_replay(tmp_path):
    with pytest.raises(InvalidArgumentError):
        run_temporal(TemporalOptions(path=str(DATA), vertices=100, device="cpu"), log=lambda m: None)  # ids up to 1899
    with pytest.raises(InvalidArgumentError):
        run_temporal(TemporalOptions(path=str(DATA), fractions=(1e-6,), device="cpu"), log=lambda m: None)
    with pytest.raises(InvalidArgumentError):
        run_temporal(TemporalOptions(path=str(DATA), batches=0, device="cpu"), log=lambda m: None)


def test_bench_cli_temporal_writes_json_and_plot(tmp_path):
    out, png = tmp_path / "t.json", tmp_path / "t.png"
    proc = subprocess.run([sys.executable, "-m", "streamrank", "bench", "--graph", str(DATA), "--protocol", "temporal",
                           "--vertices", "2000", "--batch-fractions", "1e-3", "--batches", "3", "--device", "cpu",
                           "--json", str(out), "--plot", str(png)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "auto" in proc.stdout and "dfp" in proc.stdout and "self-loop" in proc.stdout
    report = json.loads(out.read_text())
    # the default: the engine's default algorithm and the one the reference implements
    assert report["protocol"] == "temporal" and [r["algorithm"] for r in report["rows"]] == ["auto", "dfp"]
    assert png.stat().st_size > 10_000


def test_host_probe_times_the_fixed_work():
    us = host_probe_us(rounds=5)
    assert isinstance(us, float) and 0 < us < 1e6
    with pytest.raises(InvalidArgumentError):
        host_probe_us(rounds=0)


@pytest.mark.parametrize("mode", ["set", "sum"])
def test_temporal_protocol_weighted(mode):
    """Weighted replays (CPU): set mode weighs every edge 1, the unweighted ranks; sum mode counts
    repeated lines, which become reweights, and the oracle takes the counts."""
    opts = TemporalOptions(path=str(DATA), fractions=(1e-3,), algorithms=("dfp",), batches=3, device="cpu",
                           config=RankConfig(dangling="self-loop"), weighted=True, multi_edges=mode)
    report = run_temporal(opts, log=lambda m: None)
    (row,) = report["rows"]
    assert report["weighted"] and report["multi_edges"] == mode
    assert row["converged"] and row["l1_max"] < 2e-6
    if mode == "sum":  # CollegeMsg repeats most messages: most lines of a batch are reweights
        assert row["reweighted_median"] > row["inserted_median"] > 0
    else:
        assert row["reweighted_median"] == 0
    assert "weighted: multi-edges " + mode in format_temporal(report)


def test_bench_cli_weighted_options_belong_to_the_temporal_protocol(capsys):
    from streamrank.cli import main

    assert main(["bench", "--graph", "rmat:8", "--multi-edges", "sum", "--device", "cpu"]) == 1
    assert "belong to --protocol temporal" in capsys.readouterr().err
