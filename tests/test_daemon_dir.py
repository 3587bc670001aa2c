"""Directory mode end to end (no Kafka): ``python -m streamrank serve --input-dir DIR``.

Edge files in several formats, with bad lines, are read in name order; the ranks match the
oracle; bad lines land in the dead-letter file with their reason; a file added while running is
picked up; SIGTERM leaves a checkpoint and exits 0; SIGKILL and a restart end in the same ranks
with every batch sequence number applied once in the lineage; ``--exit-when-done`` stops by itself.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from kafka_broker import (DaemonProcess, check_restored, damage_checkpoint, full_checkpoints, l1, lineage, make_events,
                          oracle_error, ranks_by_id)

from streamrank.checkpoints.recovery import load_latest_state as load_latest

_rng = np.random.default_rng(9)
SNAP_EVENTS = [(int(a), int(b), True) for a, b in _rng.integers(0, 200, size=(100, 2))]  # SNAP text: inserts only
BASE = make_events(5, 1500, 200)
EVENTS = BASE[:800] + SNAP_EVENTS + BASE[800:]  # file order: a.csv, b.csv, b5.txt, c.jsonl, (later) d.csv
# (file name, bad line text, reason): each kind a file reader can report
BAD = {
    "a.csv": [("7,x,+", "mixed_id_types"), ("8,-2,+", "negative_id")],  # auto id type: fixed to int by line 2
    "b.csv": [("1,2,+,9", "bad_csv")],
    "b5.txt": [("1 2 3 4 5", "bad_csv"), (f"{2**64} 3", "id_out_of_range")],
    "c.jsonl": [('{"src": 1, "dst": ', "bad_json"), ('{"src": 4}', "missing_field"),
                ('{"op": "upsert", "src": 1, "dst": 2}', "unknown_op")],
}
FIRST = 1000  # edges in the files present at start (a, b, b5, c); d.csv holds the rest


def write_files(directory):
    """a.csv, b.csv (CSV with ops), b5.txt (SNAP text), c.jsonl, with bad lines inside."""
    os.makedirs(directory, exist_ok=True)
    op = {True: "+", False: "-"}

    def csv(evs):
        return ["src,dst,op"] + [f"{a},{b},{op[i]}" for a, b, i in evs]

    files = {
        "a.csv": csv(BASE[:400]),
        "b.csv": csv(BASE[400:800]),
        "b5.txt": [f"{a}\t{b}" for a, b, _ in SNAP_EVENTS],
        "c.jsonl": [json.dumps({"src": a, "dst": b, "op": op[i]}) for a, b, i in BASE[800:900]],
    }
    for name, lines in files.items():
        for k, (text, _reason) in enumerate(BAD[name]):
            lines.insert(3 + 30 * k, text)
        with open(os.path.join(directory, name), "w") as fh:
            fh.write("\n".join(lines) + "\n")
    return "src,dst,op\n" + "".join(f"{a},{b},{op[i]}\n" for a, b, i in BASE[900:])


def dead_letters(path):
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def check_dead_letters(path):
    got = {(d["topic"], d["value"]): d for d in dead_letters(path)}
    for name, bad in BAD.items():
        for text, reason in bad:
            d = got[(name, text)]
            assert d["reason"] == reason, d
            assert d["partition"] == -1 and d["offset"] > 0


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    """An uninterrupted run that also gets a file added while it is running."""
    work = tmp_path_factory.mktemp("dir-clean")
    late_text = write_files(work / "in")
    d = DaemonProcess(["--input-dir", work / "in", "--checkpoint-dir", work / "ckpt", "--batch-size", 100,
                       "--batch-wait-ms", 20, "--checkpoint-every", 3, "--warm-up", "on"], work)
    d.wait_edges(FIRST)  # the files present at start
    late = work / "in" / ".d.csv.part"  # written under a dot name, renamed when complete
    late.write_text(late_text)
    os.replace(late, work / "in" / "d.csv")
    d.wait_edges(len(EVENTS))
    rc = d.terminate()
    return {"rc": rc, "work": work, "daemon": d, "ckpt": load_latest(work / "ckpt")}


def test_directory_mode_ranks_and_dead_letters(clean_run):
    r = clean_run
    assert r["rc"] == 0, r["daemon"].log_tail()
    chain, edges = lineage(r["daemon"].events())
    assert edges == len(EVENTS)
    assert r["ckpt"].seq == chain[-1]["seq"]
    assert r["ckpt"].positions == {"dir": {"file": "d.csv", "rows": len(EVENTS) - FIRST, "bad": 0, "done": True}}
    assert oracle_error(r["ckpt"], EVENTS) < 1e-5  # DF-P (prune_tol 1e-6) accuracy
    check_dead_letters(r["work"] / "ckpt" / "dead-letters.jsonl")
    assert len(dead_letters(r["work"] / "ckpt" / "dead-letters.jsonl")) == sum(map(len, BAD.values()))


def test_directory_mode_warms_up_before_the_first_batch(clean_run):
    log = clean_run["daemon"].output.read_text()
    assert "warm-up: the engine's kernels compiled or loaded in" in log
    assert log.index("warm-up:") < log.index("batch seq=1 ")


def test_directory_mode_sigkill_restart(clean_run, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "d.csv").write_text(write_files(tmp_path / "in"))
    # small batches (320 of them, a checkpoint every 4): the compiled engine would otherwise finish the
    # whole input before the kill condition is seen
    args = ["--input-dir", tmp_path / "in", "--checkpoint-dir", tmp_path / "ckpt", "--batch-size", 5,
            "--batch-wait-ms", 10, "--checkpoint-every", 4]
    d1 = DaemonProcess(args, tmp_path)
    d1.wait_for(lambda ev: sum(e["event"] == "checkpoint" for e in ev) >= 3
                and lineage(ev)[0][-1]["seq"] % 4 != 0)
    d1.kill()
    ev1 = d1.events()
    assert 0 < lineage(ev1)[1] < len(EVENTS), "the kill did not land mid-stream"
    d2 = DaemonProcess(args + ["--exit-when-done"], tmp_path)
    assert d2.wait(timeout=120) == 0, d2.log_tail()
    events = d2.events()
    check_restored(ev1, events)
    chain, edges = lineage(events)
    assert edges == len(EVENTS)
    assert [a["seq"] for a in chain] == list(range(1, len(chain) + 1))
    ck = load_latest(tmp_path / "ckpt")
    assert ck.seq == chain[-1]["seq"]
    assert oracle_error(ck, EVENTS) < 1e-5
    assert l1(ranks_by_id(*ck.ranks), ranks_by_id(*clean_run["ckpt"].ranks)) < 1e-5
    check_dead_letters(tmp_path / "ckpt" / "dead-letters.jsonl")  # at least once each


def test_directory_mode_restart_applies_nothing_twice(clean_run, tmp_path):
    """A restart on a fully read directory applies nothing and exits with the same state."""
    import shutil

    work = tmp_path
    shutil.copytree(clean_run["work"] / "in", work / "in")
    shutil.copytree(clean_run["work"] / "ckpt", work / "ckpt")
    d = DaemonProcess(["--input-dir", work / "in", "--checkpoint-dir", work / "ckpt", "--exit-when-done"], work)
    assert d.wait(timeout=60) == 0, d.log_tail()
    assert [e["event"] for e in d.events()] == ["restore"]
    ck = load_latest(work / "ckpt")
    assert ck.seq == clean_run["ckpt"].seq
    assert np.array_equal(ck.ranks[1], clean_run["ckpt"].ranks[1])


def test_directory_mode_repeated_sigkill_with_incremental_checkpoints(clean_run, tmp_path):
    """SIGKILL at random moments (checkpointing after every batch, so many land mid-checkpoint
    or mid-log-append); every restart resumes from full checkpoint + log with no batch lost or
    applied twice, and the final state is that of the whole input."""
    import time

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "d.csv").write_text(write_files(tmp_path / "in"))
    # batches of 5 (320 of them): the loop applies the next batch while a checkpoint is written, so
    # on a loaded host larger batches could finish the input before the kill condition is seen
    args = ["--input-dir", tmp_path / "in", "--checkpoint-dir", tmp_path / "ckpt", "--batch-size", 5,
            "--batch-wait-ms", 5, "--checkpoint-every", 1, "--full-checkpoint-every", 4]
    rng = np.random.default_rng(17)
    for k in range(3):
        d = DaemonProcess(args, tmp_path)
        before = len(d.events())
        d.wait_for(lambda ev: sum(e["event"] == "checkpoint" for e in ev[before:]) >= 2 + k)
        time.sleep(float(rng.uniform(0.0, 0.05)))
        d.kill()
        chain, edges = lineage(d.events())  # asserts the sequence numbers of the lineage
        assert edges < len(EVENTS), "the input ended before the kill"
    # A kill that lands just after a full checkpoint leaves nothing to replay, and the daemon also
    # writes a full one whenever its log outgrows half the last full checkpoint, so no flag makes
    # a kill land on logged batches. Until a restart has replayed the batch log, more runs that
    # count fulls only by log size (--full-checkpoint-every 1000), each killed as soon as it has
    # written two incremental checkpoints (a 2 ms poll).
    def replayed(events):
        return sum(e["replayed"] for e in events if e["event"] == "restore")

    for _ in range(6):
        d = DaemonProcess([*args[:-1], 1000], tmp_path)
        before = len(d.events())
        d.wait_for(lambda ev: sum(e["event"] == "checkpoint" and e.get("kind") == "incremental"
                                  for e in ev[before:]) >= 2, poll=0.002)
        d.kill()
        chain, edges = lineage(d.events())
        assert edges < len(EVENTS), "the input ended before the kill"
        if replayed(d.events()) > 0:
            break
    d = DaemonProcess(args + ["--exit-when-done"], tmp_path)
    assert d.wait(timeout=120) == 0, d.log_tail()
    events = d.events()
    assert replayed(events) > 0  # a restart went through the batch log
    kinds = {e.get("kind") for e in events if e["event"] == "checkpoint"}
    assert kinds == {"full", "incremental"}
    chain, edges = lineage(events)
    assert edges == len(EVENTS)
    ck = load_latest(tmp_path / "ckpt")
    assert ck.seq == chain[-1]["seq"]
    assert oracle_error(ck, EVENTS) < 1e-5


@pytest.fixture(scope="module")
def checkpointed(tmp_path_factory):
    """A run to the end of the input with a full checkpoint every 3 checkpoints (three kept, with
    their logs), and the state it left."""
    work = tmp_path_factory.mktemp("dir-checkpointed")
    (work / "in" / "d.csv").parent.mkdir()
    (work / "in" / "d.csv").write_text(write_files(work / "in"))
    # the CPU backend: its restore is bit for bit (the GPU's in-place sweeps vary in the last digits)
    d = DaemonProcess(["--input-dir", work / "in", "--checkpoint-dir", work / "ckpt", "--batch-size", 100,
                       "--checkpoint-every", 1, "--full-checkpoint-every", 3, "--exit-when-done",
                       "--device", "cpu"], work)
    assert d.wait(timeout=120) == 0, d.log_tail()
    assert len(full_checkpoints(work / "ckpt")) == 3
    return {"work": work, "ckpt": load_latest(work / "ckpt")}


def _daemon(args, tmp_path, run: int) -> DaemonProcess:
    """The daemon with a work directory (applied log, output) of its own."""
    (tmp_path / f"run{run}").mkdir()
    return DaemonProcess(args, tmp_path / f"run{run}")


def _copy(checkpointed, tmp_path):
    import shutil

    shutil.copytree(checkpointed["work"] / "in", tmp_path / "in")
    shutil.copytree(checkpointed["work"] / "ckpt", tmp_path / "ckpt")
    return ["--input-dir", tmp_path / "in", "--checkpoint-dir", tmp_path / "ckpt", "--exit-when-done", "--device", "cpu"]


@pytest.mark.parametrize("how", ["npy header", "compression method"])
def test_directory_mode_damaged_newest_checkpoint_falls_back(checkpointed, tmp_path, how, capsys):
    """A flipped byte in the newest full checkpoint (the npy header, the zip's compression method):
    `serve` and `query` both fall back to the older checkpoint plus the logs, to the same state bit for bit;
    the daemon moves the damaged file into damaged/."""
    from streamrank.cli import main as cli_main

    args = _copy(checkpointed, tmp_path)
    newest = full_checkpoints(tmp_path / "ckpt")[-1]
    damage_checkpoint(newest, how)
    assert cli_main(["query", "--checkpoint-dir", str(tmp_path / "ckpt"), "--top", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["seq"] == checkpointed["ckpt"].seq
    d = _daemon(args, tmp_path, 1)
    assert d.wait(timeout=60) == 0, d.log_tail()
    (restore,) = [e for e in d.events() if e["event"] == "restore"]
    assert restore["seq"] == checkpointed["ckpt"].seq and restore["checkpoint"] < str(newest)
    assert restore["replayed"] > 0
    assert (tmp_path / "ckpt" / "damaged" / newest.name).exists() and not newest.exists()
    assert "Traceback" not in d.output.read_text()
    ck = load_latest(tmp_path / "ckpt")
    assert ck.seq == checkpointed["ckpt"].seq
    assert np.array_equal(ck.ranks[0], checkpointed["ckpt"].ranks[0])
    assert np.array_equal(ck.ranks[1], checkpointed["ckpt"].ranks[1])


def test_directory_mode_no_readable_checkpoint_stops_until_the_operator_resets(checkpointed, tmp_path):
    """Every full checkpoint unreadable: rather than start from an empty graph (whose first
    checkpoint retention would prune in favour of the unreadable ones), the daemon stops with exit
    status 4 naming the files and the choices, touching nothing; --reset-unreadable-state moves
    the state into damaged/ and starts afresh; the restart after that restores normally."""
    from streamrank.cli import main as cli_main
    from streamrank.daemon.loop import EXIT_STATE_UNREADABLE

    args = _copy(checkpointed, tmp_path)
    fulls = full_checkpoints(tmp_path / "ckpt")
    for path in fulls:
        damage_checkpoint(path)
    before = sorted(os.listdir(tmp_path / "ckpt"))
    d = _daemon(args, tmp_path, 1)
    assert d.wait(timeout=60) == EXIT_STATE_UNREADABLE, d.log_tail()
    text = d.output.read_text()
    assert all(str(p) in text for p in fulls) and "--reset-unreadable-state" in text
    assert "starting from an empty graph" not in text and "Traceback" not in text
    assert [e["event"] for e in d.events()] == ["unreadable_state"]
    assert sorted(os.listdir(tmp_path / "ckpt")) == before
    assert cli_main(["query", "--checkpoint-dir", str(tmp_path / "ckpt"), "--top", "1"]) == 1
    d = _daemon(args + ["--reset-unreadable-state"], tmp_path, 2)
    assert d.wait(timeout=120) == 0, d.log_tail()
    assert [e["event"] for e in d.events()][0] == "restore" and d.events()[0]["checkpoint"] is None
    assert "--reset-unreadable-state: moved" in d.output.read_text()
    state = {n for n in before if n.startswith("ckpt-") or n == "MANIFEST.json"}
    assert len(state) > 3 and state <= set(os.listdir(tmp_path / "ckpt" / "damaged"))
    ck = load_latest(tmp_path / "ckpt")
    assert oracle_error(ck, EVENTS) < 1e-5
    d = _daemon(args, tmp_path, 3)  # and it restarts from its own checkpoints
    assert d.wait(timeout=60) == 0, d.log_tail()
    assert [(e["event"], e["seq"]) for e in d.events()] == [("restore", ck.seq)]
    assert np.array_equal(load_latest(tmp_path / "ckpt").ranks[1], ck.ranks[1])
