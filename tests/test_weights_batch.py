"""Weighted edge batches and the engine's weighting settings: validation and the Arrow form."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from streamrank import BatchFormatError, ConfigError, EdgeBatch, Engine, InvalidArgumentError


def test_weights_validated_and_float64():
    b = EdgeBatch.from_arrays([1, 2, 3], [2, 3, 1], [True, False, True], weight=[2, None, 0.5])
    assert b.weighted and b.weight.dtype == np.float64
    assert b.weight[0] == 2.0 and np.isnan(b.weight[1]) and b.weight[2] == 0.5
    assert EdgeBatch.from_arrays([1], [2]).weight is None
    assert not EdgeBatch([1], [2], [True]).weighted


@pytest.mark.parametrize("weights, insert, row, why", [
    ([1.0, 0.0, 1.0], None, 1, "zero"),
    ([1.0, 1.0, -2.0], None, 2, "negative"),
    ([np.nan, 1.0, 1.0], None, 0, "NaN"),
    ([1.0, np.inf, 1.0], None, 1, "infinite"),
    ([1.0, 1.0, -np.inf], [True, True, False], 2, "infinite"),
    ([1.0, 0.0, 1.0], [True, False, True], 1, "zero"),
    ([1.0, -1.0, 1.0], [True, False, True], 1, "negative"),
])
def test_every_bad_weight_names_its_row_and_why(weights, insert, row, why):
    with pytest.raises(BatchFormatError, match=rf"row {row}: .*{why}"):
        EdgeBatch.from_arrays([1, 2, 3], [2, 3, 1], insert, weight=weights)


@pytest.mark.parametrize("weights, match", [
    (["a", 1, 1], "numbers"),
    (np.array([True, True, False]), "numbers"),
    ([1.0, 2.0], "length"),
    (np.ones((3, 2)), "length"),
])
def test_malformed_weight_arrays(weights, match):
    with pytest.raises(BatchFormatError, match=match):
        EdgeBatch.from_arrays([1, 2, 3], [2, 3, 1], weight=weights)


def test_nan_on_a_deletion_means_no_weight():
    b = EdgeBatch.from_arrays([1, 2], [2, 3], [True, False], weight=[1.0, np.nan])
    assert np.isnan(b.weight[1])


@pytest.mark.parametrize("ids", [[1, 2, 3], ["a", "b", "c"]])
def test_arrow_round_trip(ids):
    b = EdgeBatch.from_arrays(ids, ids[::-1], [True, False, False], weight=[2.5, 1.0, np.nan])
    t = b.to_arrow()
    assert t.schema.field("weight").type == pa.float64()
    assert t.column("weight").null_count == 1
    back = EdgeBatch.from_arrow(t)
    np.testing.assert_array_equal(back.weight, b.weight)
    np.testing.assert_array_equal(back.insert, b.insert)
    assert "weight" not in EdgeBatch.from_arrays(ids, ids).to_arrow().column_names
    assert EdgeBatch.from_arrow(EdgeBatch.from_arrays(ids, ids).to_arrow()).weight is None


def test_arrow_null_weight_on_an_insertion_counts_one():
    t = pa.table({"src": [1, 2], "dst": [2, 3], "op": pa.array([1, -1], pa.int8()),
                  "weight": pa.array([None, None], pa.float64())})
    b = EdgeBatch.from_arrow(t)
    assert b.weight[0] == 1.0 and np.isnan(b.weight[1])
    with pytest.raises(BatchFormatError, match="numeric"):
        EdgeBatch.from_arrow(t.set_column(3, "weight", pa.array(["x", "y"])))
    with pytest.raises(BatchFormatError, match="row 0"):
        EdgeBatch.from_arrow(t.set_column(3, "weight", pa.array([0.0, 1.0])))


def test_empty_and_to():
    e = EdgeBatch.empty(weighted=True)
    assert e.weighted and len(e) == 0
    assert not EdgeBatch.empty().weighted
    b = EdgeBatch.from_arrays([1], [2], weight=[3.0])
    assert b.to(np) is b


# "gpu" as a test id would mark the test for GPU hosts only; the settings are checked before the
# backend is resolved, so these checks need no GPU
@pytest.mark.parametrize("device", ["cpu", "gpu"], ids=["cpu", "gpu-settings"])
def test_engine_weighting_settings(device):
    with pytest.raises(ConfigError, match="weighted=True"):
        Engine(device, multi_edges="sum")
    with pytest.raises(ConfigError, match="multi_edges"):
        Engine(device, weighted=True, multi_edges="max")
    with pytest.raises(ConfigError, match="True or False"):
        Engine(device, weighted="yes")
    assert issubclass(ConfigError, InvalidArgumentError)
    if device == "gpu":  # a weighted GPU engine is tested where there is a GPU (test_weights_engine.py)
        return
    eng = Engine(device, weighted=True, multi_edges="sum")
    assert eng.weighted and eng.multi_edges == "sum"
    plain = Engine(device)
    assert not plain.weighted and plain.multi_edges == "set"
    with pytest.raises(BatchFormatError, match="unweighted"):
        plain.apply(EdgeBatch.from_arrays([1], [2], weight=[2.0]))
    with pytest.raises(BatchFormatError, match="unweighted"):
        plain.load_edges([1], [2], weight=[2.0])


def test_a_batch_built_directly_is_checked_before_it_changes_the_graph():
    eng = Engine("cpu", weighted=True)
    eng.load_edges([1], [2], weight=[2.0])
    bad = EdgeBatch(np.array([1, 2]), np.array([2, 3]), np.array([True, True]), np.array([1.0, -3.0]))
    with pytest.raises(BatchFormatError, match="row 1"):
        eng.apply(bad)
    assert eng.graph.num_edges == 1 and eng.seq == 0
