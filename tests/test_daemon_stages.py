"""The daemon's batch window, checkpoint plans and checkpoint worker, without processes."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from connectors.fetch import EdgeRun
from streamrank.batch import EdgeBatch
from streamrank.daemon.batching import BatchWindow
from streamrank.daemon.checkpoint_worker import CheckpointWorker
from streamrank.daemon.checkpoints import CheckpointStage
from streamrank.engine import Engine
from streamrank.errors import CheckpointError
from streamrank.checkpoints.recovery import restore_latest


def run_of(n_messages: int, per_message: int, first_pos: int = 0) -> EdgeRun:
    n = n_messages * per_message
    z = np.arange(n, dtype=np.int64)
    return EdgeRun(z, z + 1, np.ones(n, bool), "kafka:t:0", first_pos + n_messages,
                   ends=np.arange(1, n_messages + 1) * per_message,
                   positions=np.arange(first_pos + 1, first_pos + n_messages + 1), timestamps_ms=None)


class FakeIngest:
    """``get`` hands out queued ``(polled_at, items)`` pairs, then waits out its timeout."""

    def __init__(self, polls):
        self.polls = list(polls)
        self.polled_at = 0.0
        self.waited = 0.0

    def get(self, timeout_s):
        if self.polls:
            self.polled_at, items = self.polls.pop(0)
            return items
        time.sleep(timeout_s)
        self.waited += timeout_s
        return []


def test_window_runs_from_poll_time():
    """Records polled longer ago than the window close the batch without a further wait."""
    old = time.monotonic() - 1.0
    ingest = FakeIngest([(old, [run_of(3, 10)])])
    w = BatchWindow(ingest, batch_size=1000, batch_wait_ms=200, stop=lambda: False).collect()
    assert sum(len(c) for c in w.chunks) == 30 and ingest.waited == 0.0
    assert w.closed_at - w.polled_at >= 1.0


def test_a_backlog_fills_the_batch_without_waiting():
    """Behind the stream, a batch takes every fetch already polled (up to the batch size), not one
    fetch per batch; then it closes at once."""
    old = time.monotonic() - 1.0
    ingest = FakeIngest([(old, [run_of(5, 10, 10 * k)]) for k in range(3)])
    bw = BatchWindow(ingest, batch_size=100, batch_wait_ms=200, stop=lambda: False)
    w = bw.collect()
    assert [len(c) for c in w.chunks] == [50, 50] and w.positions == {"kafka:t:0": 15} and ingest.waited == 0.0
    w = bw.collect()
    assert [len(c) for c in w.chunks] == [50] and ingest.waited == 0.0


def test_window_waits_for_fresh_records_and_never_splits_a_message():
    ingest = FakeIngest([(time.monotonic(), [run_of(5, 10)])])
    bw = BatchWindow(ingest, batch_size=25, batch_wait_ms=30, stop=lambda: False)
    for end in (2, 4):  # 20 edges: a third message would overflow, so the batch closes at once
        w = bw.collect()
        assert [len(c) for c in w.chunks] == [20] and w.positions == {"kafka:t:0": end}
    assert ingest.waited == 0.0
    w = bw.collect()  # the last message, then the window's wait for more
    assert [len(c) for c in w.chunks] == [10] and w.positions == {"kafka:t:0": 5}
    assert ingest.waited > 0.0


def batches(seed, n, size, nv=200):
    rng = np.random.default_rng(seed)
    return [(rng.integers(0, nv, size), rng.integers(0, nv, size), rng.random(size) < 0.8) for _ in range(n)]


def test_plan_taken_before_later_batches_writes_that_state(tmp_path):
    """A checkpoint prepared at seq S and written after more batches were applied holds seq S."""
    stage = CheckpointStage(str(tmp_path), full_every=3)
    eng = Engine("cpu", "dfp")
    plans = []
    for i, (s, d, ins) in enumerate(batches(3, 9, 50)):
        step = eng.apply(EdgeBatch.from_arrays(s, d, ins))
        stage.record(step.seq, s, d, ins)
        if i % 2 == 1:
            plans.append((stage.prepare(eng, positions={"p": i + 1}, ranks=eng.ranks, meta={}), eng.ranks()))
    for plan, _ in plans[:-1]:
        stage.write_plan(plan)
    r = restore_latest(tmp_path, device="cpu")  # written after batch 9, up to the plan taken after batch 6
    ids, p = plans[-2][1]
    assert r.seq == 6 and r.positions == {"p": 6}
    assert np.array_equal(r.engine.ranks()[0], ids) and np.array_equal(r.engine.ranks()[1], p)


def test_failed_write_keeps_batches_for_the_next_checkpoint(tmp_path, monkeypatch):
    stage = CheckpointStage(str(tmp_path), full_every=10)
    eng = Engine("cpu", "dfp")
    rng = np.random.default_rng(0)
    eng.load_edges(rng.integers(0, 300, 3000), rng.integers(0, 300, 3000))  # a full checkpoint outweighs the log
    bs = batches(4, 4, 40)
    for i, (s, d, ins) in enumerate(bs):
        step = eng.apply(EdgeBatch.from_arrays(s, d, ins))
        stage.record(step.seq, s, d, ins)
        if i == 0:
            assert stage.write(eng, positions={"p": 1}, ranks=eng.ranks, meta={}).kind == "full"
        if i == 1:
            def broken(*a, **k):
                raise CheckpointError("disk full")

            monkeypatch.setattr(stage._log, "append", broken)
            with pytest.raises(CheckpointError):
                stage.write(eng, positions={"p": 2}, ranks=eng.ranks, meta={})
            monkeypatch.undo()
    assert stage.write(eng, positions={"p": 4}, ranks=eng.ranks, meta={}).kind == "incremental"
    r = restore_latest(tmp_path, device="cpu")
    assert r.seq == 4 and r.replayed == 3 and np.array_equal(r.engine.ranks()[1], eng.ranks()[1])


def test_checkpoint_worker_runs_in_order_and_hands_errors_over():
    w = CheckpointWorker()
    order, gate = [], threading.Event()
    w.submit(lambda: (gate.wait(5), order.append(1)))
    assert w.busy
    gate.set()
    w.submit(lambda: order.append(2))  # waits for the first
    assert w.join(5) and order == [1, 2]
    w.submit(lambda: (_ for _ in ()).throw(CheckpointError("boom")))
    w.join(5)
    with pytest.raises(CheckpointError, match="boom"):
        w.raise_error()
    w.raise_error()  # once
