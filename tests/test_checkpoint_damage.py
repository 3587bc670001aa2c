"""Damaged checkpoints: every single-byte flip either restores the exact state of an older valid
checkpoint plus its logs, or stops with a CheckpointError; never another exception, never a
silently different state.

A tiny graph is checkpointed through the daemon's CheckpointStage (three full checkpoints, each
with a batch log), recording the exact state (ids, ranks, edges, positions) after every batch.
Then, one at a time, a byte of the newest full checkpoint or of its log is flipped and the
directory restored on the CPU:

- the checkpoint: the bytes of the ZIP structure (local headers, the ``.npy`` headers, the
  central directory, the end records) densely, the ``.npy`` shape digits with a one-bit flip,
  the rest with a stride; every flip must restore seq 9 bit for bit, from the newest checkpoint
  (a flip in a field nothing reads) or from the older one plus the logs;
- its log: the frame headers densely and the payloads with a stride; the state must be the one
  after the last frame before the damaged one;
- a directory whose only full checkpoint is flipped: a restore, or :class:`StateUnreadableError`.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import zipfile

import numpy as np
import pytest
from kafka_broker import damage_checkpoint

from streamrank.batch import EdgeBatch
from streamrank.checkpoints.full import read_checkpoint, save_checkpoint
from streamrank.checkpoints.log import list_logs, read_log
from streamrank.checkpoints.recovery import restore_latest
from streamrank.daemon.checkpoints import CheckpointStage
from streamrank.engine import Engine
from streamrank.errors import CheckpointError, StateUnreadableError

META = {"algorithm": "dfp"}


def build(directory, *, full_every=3, batches=9, keep=3):
    """Checkpoint a tiny graph after each of ``batches`` batches; returns ``{seq: state}``."""
    rng = np.random.default_rng(0)
    stage = CheckpointStage(str(directory), full_every=full_every, keep=keep)
    eng = Engine("cpu", "dfp")
    # about 650 edges: engine/src and engine/dst are larger than zipfile's 4 KiB read-ahead, so that
    # a damaged .npy header is parsed before the member's CRC is checked (as in a real checkpoint)
    eng.load_edges(rng.integers(0, 60, 700), rng.integers(0, 60, 700))
    meta = {**META, "rank": eng.config.to_dict()}
    states = {}
    for i in range(batches):
        s, d, ins = rng.integers(0, 70, 8), rng.integers(0, 70, 8), rng.random(8) > 0.3
        step = eng.apply(EdgeBatch.from_arrays(s, d, ins))
        stage.record(step.seq, s, d, ins)
        stage.write(eng, positions={"dir": i + 1}, ranks=eng.ranks, meta=meta)
        states[eng.seq] = snapshot(eng, {"dir": i + 1})
    stage.close()
    return states


def snapshot(eng, positions):
    ids, p = eng.ranks()
    return {"ids": ids.copy(), "p": p.copy(), "edges": eng.graph.num_edges, "positions": positions}


def same_state(r, want) -> bool:
    ids, p = r.engine.ranks()
    return (np.array_equal(ids, want["ids"]) and np.array_equal(p, want["p"])  # bit for bit
            and r.engine.graph.num_edges == want["edges"] and r.positions == want["positions"])


def zip_structure(path) -> list:
    """Byte offsets of the ZIP structure of ``path``: local headers with the ``.npy`` headers after
    them, the central directory and the end records."""
    size = os.path.getsize(path)
    out = []
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            start = info.header_offset
            with open(path, "rb") as fh:
                fh.seek(start + 26)
                name_len, extra_len = struct.unpack("<HH", fh.read(4))
            data = start + 30 + name_len + extra_len
            npy_len = 10 + struct.unpack("<H", open(path, "rb").read()[data + 8:data + 10])[0]
            out += range(start, data + npy_len)
        out += range(zf.start_dir, size)
    return out


def shape_digits(path) -> list:
    """Offsets of the digits of every ``.npy`` header's ``'shape': (...)``."""
    data = open(path, "rb").read()
    out = []
    for m in re.finditer(rb"'shape': \(([0-9, ]*)\)", data):
        out += [m.start(1) + k for k, c in enumerate(m.group(1)) if chr(c).isdigit()]
    return out


def flip_cases(path, *, structure_stride=7, data_stride=97):
    """``(offset, mask)`` to try on ``path``: the ZIP structure every ``structure_stride`` bytes (two
    masks, alternating), the shape digits with a one-bit flip, the rest every ``data_stride``."""
    structure = zip_structure(path)
    structural = set(structure)
    cases = [(o, 0xFF if k % 2 else 0x01) for k, o in enumerate(structure[::structure_stride])]
    cases += [(o, 0x01) for o in shape_digits(path)] + [(o, 0x02) for o in shape_digits(path)]
    rest = [o for o in range(os.path.getsize(path)) if o not in structural]
    cases += [(o, 0x10) for o in rest[::data_stride]]
    return sorted(set(cases))


def flipped(path, offset, mask):
    """Context: ``path`` with one byte flipped, restored afterwards."""
    class _Flip:
        def __enter__(self):
            self.data = open(path, "rb").read()
            bad = bytearray(self.data)
            bad[offset] ^= mask
            with open(path, "wb") as fh:
                fh.write(bad)

        def __exit__(self, *exc):
            with open(path, "wb") as fh:
                fh.write(self.data)
    return _Flip()


@pytest.fixture(scope="module")
def lineage(tmp_path_factory):
    directory = tmp_path_factory.mktemp("damage")
    states = build(directory)
    fulls = sorted(n for n in os.listdir(directory) if n.endswith(".npz"))
    assert [int(n[5:17]) for n in fulls] == [1, 4, 7]
    return {"dir": directory, "states": states, "newest": directory / fulls[-1]}


def test_every_flip_of_the_newest_full_checkpoint_restores_exactly_or_falls_back(lineage):
    directory, states, newest = lineage["dir"], lineage["states"], lineage["newest"]
    cases = flip_cases(newest)
    outcomes = {"newest": 0, "fell back": 0}
    for offset, mask in cases:
        with flipped(newest, offset, mask):
            try:
                r = restore_latest(directory, device="cpu")
            except Exception as exc:  # noqa: BLE001 - the test is that nothing is raised here
                pytest.fail(f"flip {mask:#04x} at byte {offset}: {type(exc).__name__}: {exc}")
            assert r.seq == 9 and same_state(r, states[9]), (offset, mask, r.snapshot.path)
            outcomes["newest" if r.snapshot.path == str(newest) else "fell back"] += 1
    print(f"\n{newest.name} ({os.path.getsize(newest)} bytes): {len(cases)} flips: {outcomes}")
    assert len(cases) >= 400 and outcomes["fell back"] > 0.7 * len(cases)
    assert restore_latest(directory, device="cpu").snapshot.path == str(newest)  # put back whole


def test_every_flip_of_the_newest_log_restores_the_state_before_the_damaged_frame(lineage):
    directory, states = lineage["dir"], lineage["states"]
    (_, path), = [(b, p) for b, p in list_logs(directory) if b == 7]
    contents = read_log(path)
    ends, at = [], 0
    for frame in contents.frames:  # frame k spans [ends[k-1], ends[k]) and holds batch 8 + k
        at += frame.nbytes
        ends.append(at)
    assert [[b.seq for b in f.batches] for f in contents.frames] == [[8], [9]]
    size = os.path.getsize(path)
    headers = [o for start in (0, ends[0]) for o in range(start, start + 16)]
    cases = [(o, 0xFF if o % 2 else 0x01) for o in headers]
    cases += [(o, 0x04) for o in range(0, size, 13) if o not in headers]
    kinds = {"torn": 0, "corrupt": 0}
    for offset, mask in cases:
        frame = 0 if offset < ends[0] else 1
        with flipped(path, offset, mask):
            got = read_log(path)
            try:
                r = restore_latest(directory, device="cpu")
            except Exception as exc:  # noqa: BLE001
                pytest.fail(f"log flip {mask:#04x} at byte {offset}: {type(exc).__name__}: {exc}")
        assert got.damage is not None and got.valid_bytes == (0 if frame == 0 else ends[0]), (offset, got)
        kinds[got.damage] += 1
        if frame == 0:  # damage with a good frame after it: never called a torn tail
            assert got.damage == "corrupt" and got.frames_after == 1, (offset, mask)
        assert r.seq == 7 + frame and same_state(r, states[7 + frame]), (offset, mask)
        assert r.append_to == (path, got.valid_bytes)
    print(f"\n{os.path.basename(path)} ({size} bytes): {len(cases)} flips: {kinds}")
    assert kinds["corrupt"] > 0 and kinds["torn"] > 0


def test_flips_of_the_only_full_checkpoint_restore_exactly_or_stop(tmp_path):
    states = build(tmp_path, full_every=100, batches=3, keep=1)
    (newest,) = [tmp_path / n for n in os.listdir(tmp_path) if n.endswith(".npz")]
    cases = flip_cases(newest, structure_stride=16, data_stride=97)
    outcomes = {"restored": 0, "stopped": 0}
    for offset, mask in cases:
        with flipped(newest, offset, mask):
            try:
                r = restore_latest(tmp_path, device="cpu")
            except StateUnreadableError as exc:
                assert str(newest) in str(exc) and exc.unreadable[0][0] == str(newest)
                outcomes["stopped"] += 1
                continue
            except Exception as exc:  # noqa: BLE001
                pytest.fail(f"flip {mask:#04x} at byte {offset}: {type(exc).__name__}: {exc}")
        assert r.seq == 3 and same_state(r, states[3]), (offset, mask)
        outcomes["restored"] += 1
    print(f"\n{newest.name}: {len(cases)} flips: {outcomes}")
    assert outcomes["stopped"] > 0.7 * len(cases)


@pytest.mark.parametrize("damage", ["npy header", "compression method", "renamed external",
                                    "renamed sweep_order", "shape digit"])
def test_damage_that_used_to_escape_falls_back(lineage, damage, tmp_path, capsys):
    """The flips that made ``serve`` and ``query`` crash (a tokenize error in the ``.npy`` header,
    an unsupported compression method) or restore wrongly (a renamed member: a missing state key,
    or a silently dropped sweep order) now fall back to the older checkpoint plus its logs."""
    from streamrank.cli import main as cli_main

    directory = tmp_path / "ckpt"
    shutil.copytree(lineage["dir"], directory)
    path = directory / lineage["newest"].name
    data = bytearray(path.read_bytes())
    if damage in ("npy header", "compression method"):
        path.write_bytes(bytes(data))
        damage_checkpoint(path, damage)  # tokenize.TokenError, NotImplementedError from NumPy and zipfile
        data = bytearray(path.read_bytes())
    elif damage in ("renamed external", "renamed sweep_order"):
        name = damage.split()[1]  # the same rename in the central directory and the local header
        for m in re.finditer(f"engine/{name}.npy".encode(), bytes(data)):
            data[m.start() + 7] ^= 0x20
    else:
        data[shape_digits(path)[0]] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError):
        read_checkpoint(path)
    r = restore_latest(directory, device="cpu")
    assert r.snapshot.seq == 4 and r.seq == 9 and same_state(r, lineage["states"][9])
    assert [p for p, _ in r.unreadable] == [str(path)]
    assert cli_main(["query", "--checkpoint-dir", str(directory), "--top", "2", "--json"]) == 0
    assert '"seq": 9' in capsys.readouterr().out
    assert path.exists()  # a reader leaves the directory as it is


def test_checkpoint_of_the_format_without_member_table_is_checked_by_structure(tmp_path):
    """A checkpoint written before the member table (``numpy.savez``, as streamrank 0.1.0 did)
    reads; with a member renamed consistently (central directory and local header, so that the
    ZIP's own checks pass) its structure check rejects it."""
    import json

    eng = Engine("cpu", "dfp")
    eng.load_edges(np.arange(10), (np.arange(10) + 1) % 10)
    state = eng.state()
    plain = {"seq": 0, "id_type": state["id_type"]}
    header = {"version": 1, "seq": 0, "positions": {}, "meta": {}, "engine_plain": plain, "created": 0.0}
    arrays = {f"engine/{k}": v for k, v in state.items() if isinstance(v, np.ndarray)}
    path = tmp_path / "ckpt-000000000000.npz"
    np.savez(path, **arrays, **{"meta.json": np.frombuffer(json.dumps(header).encode(), np.uint8)})
    ck = read_checkpoint(path)
    assert np.array_equal(ck.engine_state["src"], state["src"])
    data = path.read_bytes().replace(b"engine/sweep_order.npy", b"engine/sweep_ordes.npy")
    path.write_bytes(data)
    with pytest.raises(CheckpointError, match="unknown member 'engine/sweep_ordes'"):
        read_checkpoint(path)


def test_a_new_checkpoint_is_kept_and_unreadable_newer_ones_moved_aside(tmp_path):
    """Retention counts the lineage being written: a new checkpoint with a lower sequence number
    than unreadable ones is kept, and they are moved into damaged/, not deleted."""
    eng = Engine("cpu", "dfp")
    eng.load_edges(np.arange(5), (np.arange(5) + 1) % 5)
    for seq in (5, 6, 7):
        p = save_checkpoint(tmp_path, eng.state(), seq=seq, positions={"a": seq})
        with open(p, "r+b") as fh:
            fh.truncate(200)
    path = save_checkpoint(tmp_path, eng.state(), seq=0, positions={"a": 0}, keep=3)
    assert sorted(n for n in os.listdir(tmp_path) if n.endswith(".npz")) == [os.path.basename(path)]
    assert sorted(os.listdir(tmp_path / "damaged")) == [f"ckpt-{s:012d}.npz" for s in (5, 6, 7)]
    assert read_checkpoint(path).seq == 0
    # a known unreadable older file is not kept in place of a readable one, and is moved aside too
    p1 = save_checkpoint(tmp_path, eng.state(), seq=1, positions={})
    open(p1, "r+b").truncate(100)
    save_checkpoint(tmp_path, eng.state(), seq=2, positions={}, keep=2, unreadable=[p1])
    assert sorted(n for n in os.listdir(tmp_path) if n.endswith(".npz")) == \
        ["ckpt-000000000000.npz", "ckpt-000000000002.npz"]
    assert "ckpt-000000000001.npz" in os.listdir(tmp_path / "damaged")


def test_state_without_a_readable_checkpoint_stops_and_reset_moves_it_aside(tmp_path):
    build(tmp_path, batches=6)
    for n in os.listdir(tmp_path):
        if n.endswith(".npz"):
            with open(tmp_path / n, "r+b") as fh:
                fh.seek(40)
                fh.write(b"\0")
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(StateUnreadableError) as err:
        restore_latest(tmp_path, device="cpu")
    assert len(err.value.unreadable) == 2 and "ckpt-000000000004.npz" in str(err.value)
    stage = CheckpointStage(str(tmp_path))
    with pytest.raises(StateUnreadableError, match="--reset-unreadable-state"):
        stage.restore(device="cpu", algorithm="dfp", config=None)
    assert sorted(os.listdir(tmp_path)) == before  # nothing moved without the flag
    assert stage.restore(device="cpu", algorithm="dfp", config=None, reset_unreadable=True) is None
    assert os.listdir(tmp_path) == ["damaged"] and sorted(os.listdir(tmp_path / "damaged")) == before
    assert restore_latest(tmp_path, device="cpu") is None
    # logs without any full checkpoint are state as well
    (tmp_path / "ckpt-000000000003.log").write_bytes(b"")
    with pytest.raises(StateUnreadableError, match="only batch logs"):
        restore_latest(tmp_path, device="cpu")


def test_the_daemon_moves_an_unreadable_checkpoint_aside_and_keeps_a_corrupt_log(tmp_path):
    states = build(tmp_path)
    newest = tmp_path / "ckpt-000000000007.npz"
    with open(newest, "r+b") as fh:
        fh.seek(os.path.getsize(newest) - 30)
        fh.write(b"\xff")
    log4 = tmp_path / "ckpt-000000000004.log"
    data = bytearray(log4.read_bytes())
    data[40] ^= 0xFF  # inside the first of its three frames
    log4.write_bytes(bytes(data))
    stage = CheckpointStage(str(tmp_path))
    r = stage.restore(device="cpu", algorithm="dfp", config=None)
    stage.close()
    assert r.snapshot.seq == 4 and r.seq == 4 and same_state(r, states[4])  # the chain stops at the damage
    assert sorted(os.listdir(tmp_path / "damaged")) == ["ckpt-000000000004.log", "ckpt-000000000007.npz"]
    assert (tmp_path / "damaged" / "ckpt-000000000004.log").read_bytes() == bytes(data)


def test_the_member_table_leaves_the_layout_numpy_load_reads(lineage):
    """Readers of the previous release use ``numpy.load``: the same members, and ``meta.json`` a
    JSON header whose earlier keys are unchanged (the table is one more key)."""
    import json

    ck = read_checkpoint(lineage["newest"])
    with np.load(lineage["newest"], allow_pickle=False) as z:
        header = json.loads(bytes(z["meta.json"]).decode())
        assert {"version", "seq", "positions", "meta", "engine_plain", "created", "members"} == set(header)
        assert set(header["members"]) == set(z.files) - {"meta.json"}
        for key, value in ck.engine_state.items():
            if isinstance(value, np.ndarray):
                assert np.array_equal(z[f"engine/{key}"], value)
        assert np.array_equal(z["ranks/p"], ck.ranks[1])
