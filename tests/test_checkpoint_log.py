"""Incremental checkpoints: the batch log, restore = full checkpoint + replay, torn appends."""

from __future__ import annotations

import os

import numpy as np
import pytest

from streamrank.batch import EdgeBatch
from streamrank.checkpoints.log import BatchLog, LoggedBatch, encode_frame, log_path, read_log
from streamrank.daemon.checkpoints import CheckpointStage
from streamrank.engine import Engine
from streamrank.checkpoints.recovery import list_logs, load_latest_state, restore_latest


def random_batches(seed, count, size, num_vertices):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        src = rng.integers(0, num_vertices, size)
        dst = rng.integers(0, num_vertices, size)
        ins = rng.random(size) > 0.2
        out.append((src, dst, ins))
    return out


def test_frame_roundtrip_and_torn_tail_at_every_byte(tmp_path):
    path = tmp_path / "x.log"
    log = BatchLog(str(path))
    frames = []
    for k in range(3):
        b = [LoggedBatch(2 * k + j + 1, np.arange(5) + j, np.arange(5)[::-1].copy(), np.arange(5) % 2 == 0)
             for j in range(2)]
        log.append(b, {"kafka:t:0": 10 * (k + 1)})
        frames.append(b)
    log.close()
    got = read_log(path)
    assert not got.torn and got.valid_bytes == os.path.getsize(path) and len(got.frames) == 3
    for f, want in zip(got.frames, frames):
        assert [b.seq for b in f.batches] == [b.seq for b in want]
        for b, w in zip(f.batches, want):
            assert np.array_equal(b.src, w.src) and np.array_equal(b.dst, w.dst)
            assert np.array_equal(b.insert, w.insert)
    assert got.frames[2].positions == {"kafka:t:0": 30}
    data = path.read_bytes()
    end2 = got.valid_bytes - got.frames[2].nbytes
    for cut in range(end2, len(data)):  # a crash anywhere inside the last append
        path.write_bytes(data[:cut])
        r = read_log(path)
        assert len(r.frames) == 2 and r.valid_bytes == end2 and r.torn == (cut > end2)
    # a flipped byte inside the last frame fails its CRC
    bad = bytearray(data)
    bad[-3] ^= 0xFF
    path.write_bytes(bytes(bad))
    assert len(read_log(path).frames) == 2
    # the writer drops the torn tail before appending again
    path.write_bytes(data[:end2 + 7])
    log = BatchLog(str(path), valid_bytes=end2)
    log.append([LoggedBatch(5, np.array([1]), np.array([2]), np.array([True]))], {"p": 1})
    log.close()
    r = read_log(path)
    assert not r.torn and [f.batches[0].seq for f in r.frames] == [1, 3, 5]


def test_log_tells_a_torn_tail_from_corruption_in_the_middle(tmp_path, caplog):
    """A CRC failure in the first frame is corruption (the good frames after it are counted and
    reported), not a torn append; an incomplete last frame, or zeros after the last frame, is."""
    path = tmp_path / "x.log"
    log = BatchLog(str(path))
    for k in range(3):
        log.append([LoggedBatch(k + 1, np.arange(4), np.arange(4)[::-1].copy(), np.ones(4, bool))], {"p": k})
    log.close()
    data = path.read_bytes()
    first = read_log(path).frames[0].nbytes
    bad = bytearray(data)
    bad[first // 2] ^= 0x01
    path.write_bytes(bytes(bad))
    r = read_log(path)
    assert (r.damage, r.frames, r.valid_bytes, r.frames_after) == ("corrupt", [], 0, 2)
    assert "corrupt frame at byte 0" in caplog.text and "torn append" not in caplog.text
    for torn, frames in ((data + bytes(40), 3), (data[:-5], 2), (data[:-(len(data) - 2 * first) + 9], 2)):
        path.write_bytes(torn)
        r = read_log(path)
        assert (r.damage, len(r.frames), r.torn, r.corrupt) == ("torn", frames, True, False)
    bad = bytearray(data)
    bad[-3] ^= 0xFF  # the last frame complete but failing its CRC
    path.write_bytes(bytes(bad))
    r = read_log(path)
    assert (r.damage, len(r.frames), r.frames_after) == ("corrupt", 2, 0)


def run_stage(directory, batches, *, full_every, checkpoint_every):
    """Feed ``batches`` to an engine, checkpointing through a CheckpointStage; returns the engine
    and, per checkpoint, ``(seq, ranks)``."""
    stage = CheckpointStage(str(directory), full_every=full_every, keep=2)
    eng = Engine("cpu", "dfp")
    rng = np.random.default_rng(0)
    eng.load_edges(rng.integers(0, 300, 3000), rng.integers(0, 300, 3000))
    kinds, states = [], []
    for i, (s, d, ins) in enumerate(batches):
        step = eng.apply(EdgeBatch.from_arrays(s, d, ins))
        stage.record(step.seq, s, d, ins)
        if (i + 1) % checkpoint_every == 0:
            info = stage.write(eng, positions={"kafka:t:0": i + 1}, ranks=eng.ranks,
                               meta={"algorithm": "dfp", "rank": eng.config.to_dict()})
            kinds.append(info.kind)
            states.append((eng.seq, eng.ranks()))
    stage.close()
    return eng, kinds, states


def test_restore_replays_log_to_identical_ranks(tmp_path):
    batches = random_batches(1, 24, 40, 400)
    eng, kinds, states = run_stage(tmp_path, batches, full_every=3, checkpoint_every=2)
    assert kinds[:4] == ["full", "incremental", "incremental", "full"]
    r = restore_latest(tmp_path, device="cpu")
    assert r.seq == eng.seq == 24 and r.positions == {"kafka:t:0": 24}
    assert r.replayed > 0  # the last full checkpoint is older than the state
    ids, p = r.engine.ranks()
    ids0, p0 = eng.ranks()
    assert np.array_equal(ids, ids0) and np.array_equal(p, p0)  # bit for bit
    ck = load_latest_state(tmp_path)
    assert ck.seq == 24 and np.array_equal(ck.ranks[1], p0)


def test_incremental_checkpoint_writes_what_changed(tmp_path):
    stage = CheckpointStage(str(tmp_path), full_every=10)
    rng = np.random.default_rng(2)
    eng = Engine("cpu", "dfp")
    eng.load_edges(rng.integers(0, 20000, 200000), rng.integers(0, 20000, 200000))
    meta = {"algorithm": "dfp", "rank": eng.config.to_dict()}
    full = stage.write(eng, positions={}, ranks=eng.ranks, meta=meta)
    s, d = rng.integers(0, 20000, 1000), rng.integers(0, 20000, 1000)
    step = eng.apply(EdgeBatch.from_arrays(s, d))
    stage.record(step.seq, s, d, np.ones(1000, bool))
    inc = stage.write(eng, positions={"kafka:t:0": 1000}, ranks=eng.ranks, meta=meta)
    stage.close()
    assert (full.kind, inc.kind) == ("full", "incremental")
    assert inc.bytes < 0.01 * full.bytes, (inc.bytes, full.bytes)
    assert inc.bytes == os.path.getsize(list_logs(tmp_path)[-1][1])


def test_torn_append_restores_previous_checkpoint(tmp_path):
    batches = random_batches(3, 10, 30, 300)
    eng, kinds, states = run_stage(tmp_path, batches, full_every=100, checkpoint_every=2)
    assert kinds == ["full"] + ["incremental"] * 4
    (_, path), = list_logs(tmp_path)
    data = open(path, "rb").read()
    contents = read_log(path)
    last = contents.frames[-1].nbytes
    for cut in (len(data) - last + 1, len(data) - last // 2, len(data) - 1):
        with open(path, "wb") as fh:
            fh.write(data[:cut])
        r = restore_latest(tmp_path, device="cpu")
        seq, (ids, p) = states[-2]
        assert r.seq == seq == 8 and r.positions == {"kafka:t:0": 8}
        assert np.array_equal(r.engine.ranks()[1], p)
        assert r.append_to == (path, len(data) - last)


def test_unreadable_newest_full_checkpoint_falls_back_through_the_logs(tmp_path):
    batches = random_batches(4, 12, 30, 300)
    eng, kinds, states = run_stage(tmp_path, batches, full_every=2, checkpoint_every=2)
    assert kinds == ["full", "incremental", "full", "incremental", "full", "incremental"]
    newest = sorted(f for f in os.listdir(tmp_path) if f.endswith(".npz"))[-1]
    with open(tmp_path / newest, "r+b") as fh:
        fh.truncate(100)
    r = restore_latest(tmp_path, device="cpu")
    assert r.seq == 12 and np.array_equal(r.engine.ranks()[1], eng.ranks()[1])
    assert r.snapshot.seq < int(newest[5:17])


def test_frame_without_batches_carries_positions(tmp_path):
    stage = CheckpointStage(str(tmp_path), full_every=5)
    eng = Engine("cpu", "dfp")
    eng.load_edges(np.array([1, 2]), np.array([2, 3]))
    meta = {"algorithm": "dfp", "rank": eng.config.to_dict()}
    stage.write(eng, positions={"dir": {"rows": 0}}, ranks=eng.ranks, meta=meta)
    info = stage.write(eng, positions={"dir": {"rows": 0, "bad": 2}}, ranks=eng.ranks, meta=meta)
    stage.close()
    assert info.kind == "incremental"
    assert restore_latest(tmp_path, device="cpu").positions == {"dir": {"rows": 0, "bad": 2}}


def test_encode_frame_string_ids_roundtrip():
    """External ids are stored with their Arrow type: string ids need no change of format."""
    frame = encode_frame([LoggedBatch(1, np.array(["a", "b"], dtype=object), np.array(["b", "c"], dtype=object),
                                      np.array([True, False]))], {})
    import pyarrow as pa

    table = pa.ipc.open_stream(pa.BufferReader(frame[16:])).read_all()
    assert table.column("src").to_pylist() == ["a", "b"] and table.column("op").to_pylist() == [1, -1]


def test_string_id_engine_restores_from_full_checkpoint_and_log(tmp_path):
    """String ids (NumPy object batches and Arrow batches) are logged as strings; the restore gives
    the same id dictionary and ranks bit for bit."""
    import pyarrow as pa

    stage = CheckpointStage(str(tmp_path), full_every=3, keep=2)
    eng = Engine("cpu", "dfp", id_type="string")
    rng = np.random.default_rng(0)  # a base graph, so that the log stays small beside a full checkpoint
    eng.load_edges(pa.array([f"u{v}/é" for v in rng.integers(0, 300, 3000)]),
                   pa.array([f"u{v}/é" for v in rng.integers(0, 300, 3000)]))
    kinds = []
    for i, (s, d, ins) in enumerate(random_batches(3, 12, 30, 120)):
        names_s = np.array([f"u{v}/é" for v in s], dtype=object)
        names_d = np.array([f"u{v}/é" for v in d], dtype=object)
        if i % 2:
            names_s, names_d = pa.array(names_s.tolist()), pa.array(names_d.tolist())
        step = eng.apply(EdgeBatch(names_s, names_d, ins))
        stage.record(step.seq, names_s, names_d, ins)
        if (i + 1) % 2 == 0:
            kinds.append(stage.write(eng, positions={"dir": i}, ranks=eng.ranks, meta={"algorithm": "dfp"}).kind)
    stage.close()
    assert "incremental" in kinds and kinds[-1] == "incremental"
    r = restore_latest(tmp_path, device="cpu", id_type="string")
    assert r.replayed > 0 and r.seq == eng.seq and r.engine.id_type == "string"
    ids, p = r.engine.ranks()
    ids0, p0 = eng.ranks()
    assert ids.tolist() == ids0.tolist() and np.array_equal(p, p0)
    frame = read_log(list_logs(tmp_path)[-1][1]).frames[-1]
    assert isinstance(frame.batches[-1].src, pa.Array) and frame.batches[-1].src[0].as_py().startswith("u")
    from streamrank.errors import StreamrankError

    with pytest.raises(StreamrankError, match="string vertex ids"):
        restore_latest(tmp_path, device="cpu", id_type="int")


@pytest.mark.parametrize("full_every", [1, 4])
def test_stage_keeps_logs_of_kept_full_checkpoints_only(tmp_path, full_every):
    run_stage(tmp_path, random_batches(5, 16, 20, 200), full_every=full_every, checkpoint_every=1)
    fulls = sorted(int(f[5:17]) for f in os.listdir(tmp_path) if f.endswith(".npz"))
    assert len(fulls) == 2
    assert all(base >= fulls[0] for base, _ in list_logs(tmp_path))
    assert restore_latest(tmp_path, device="cpu").seq == 16


def test_log_after_a_gap_is_left_to_readers_and_set_aside_by_the_owner(tmp_path):
    batches = random_batches(3, 8, 20, 300)
    eng, _kinds, _states = run_stage(tmp_path, batches, full_every=2, checkpoint_every=2)
    # a log whose batches start past what was logged (the gap), and a log after it
    strays = [log_path(tmp_path, eng.seq + k) for k in (5, 7)]
    for k, path in zip((6, 8), strays):
        BatchLog(path).append([LoggedBatch(eng.seq + k, np.array([1]), np.array([2]), np.array([True]))], {"p": k})
    r = restore_latest(tmp_path, device="cpu")  # a reader: applies up to the gap, moves nothing
    assert r.seq == eng.seq and all(os.path.exists(p) for p in strays)
    r = restore_latest(tmp_path, device="cpu", set_aside=True)  # the directory's owner
    assert r.seq == eng.seq and os.path.exists(strays[0]) and not os.path.exists(strays[1])
    assert os.path.exists(os.path.join(tmp_path, "damaged", os.path.basename(strays[1])))
