"""Run the daemon on a directory of edge files (no Kafka), then read its ranks and outputs.

    python examples/daemon_directory.py                  # the bundled CollegeMsg graph, in 4 files
    python examples/daemon_directory.py --file graph.txt.gz --files 8 --batch-size 5000
    python examples/daemon_directory.py --work /tmp/sr   # keep everything in /tmp/sr (default: a temp dir)

1. The edge file is split, in time order, into ``--files`` CSV files. All but the last are put
   into an input directory the way a producer should: each is written under a name starting
   with ``.`` (the daemon skips those) and then renamed into place, so the daemon never reads a
   half-written file. Names sort in stream order (``part-0000.csv``, ...): the daemon reads
   files in name order and, once it has read a file, only picks up files whose names sort after
   it. One malformed line is put into the first file on purpose, to show where rejected lines go.
2. ``streamrank serve --input-dir IN --checkpoint-dir CKPT --exit-when-done`` reads every file,
   writes a final checkpoint and exits.
3. The last file is dropped in and the daemon started again: it resumes from its checkpoint and
   reads only the new file.
4. ``streamrank query --checkpoint-dir CKPT --top K`` prints the best vertices (the CLI's
   ``main``, called in this process; in a shell it is the same command).
5. Where the outputs went: in directory mode there is no rank topic (``--publish-topic`` needs
   Kafka); the ranks go to the checkpoints (what ``streamrank query`` reads), to Parquet
   snapshots of all ranks every ``--snapshot-every`` batches, and rejected lines to the
   dead-letter file ``CKPT/dead-letters.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streamrank.cli import main as cli_main  # noqa: E402
from streamrank.replay.run import BUNDLED_GRAPH, read_stream  # noqa: E402

BAD_LINE = "1,2,maybe"  # an unknown op: dead-lettered, the lines around it apply


def child_env() -> dict:
    """This environment with the repository first on ``PYTHONPATH`` (for ``python -m streamrank``)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def drop_file(directory: Path, name: str, text: str) -> Path:
    """Put a complete file into the watched directory atomically: write a dot name, then rename."""
    tmp = directory / f".{name}.part"  # a dot name: the daemon does not list it
    with open(tmp, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    final = directory / name
    os.replace(tmp, final)  # atomic on one file system: the daemon sees no file, or the whole file
    return final


def csv_text(src, dst, insert, *, extra_line: str | None = None) -> str:
    """A CSV edge file with a ``src,dst,op`` header (``op`` ``+`` insert, ``-`` delete)."""
    ops = np.where(insert, "+", "-")
    lines = [f"{s},{d},{o}" for s, d, o in zip(src.tolist(), dst.tolist(), ops.tolist())]
    if extra_line is not None:
        lines.insert(min(10, len(lines)), extra_line)
    return "src,dst,op\n" + "\n".join(lines) + "\n"


def serve(args, in_dir: Path, ckpt: Path, run: int) -> list:
    """Run ``streamrank serve`` until the directory is read; returns its applied-log events."""
    applied = ckpt.parent / f"applied-{run}.jsonl"
    log_path = ckpt.parent / f"daemon-{run}.log"
    cmd = [sys.executable, "-m", "streamrank", "serve", "--input-dir", str(in_dir), "--checkpoint-dir", str(ckpt),
           "--exit-when-done", "--batch-size", str(args.batch_size), "--batch-wait-ms", "20",
           "--snapshot-every", str(args.snapshot_every), "--device", args.device, "--warm-up", "off",
           "--applied-log", str(applied)]
    print(f"\n$ {' '.join(cmd[2:])}")
    with open(log_path, "w") as log:
        rc = subprocess.run(cmd, cwd=str(ROOT), env=child_env(), stdout=log, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        sys.exit(f"the daemon exited with {rc}; its log:\n{log_path.read_text()}")
    events = [json.loads(line) for line in applied.read_text().splitlines() if line.strip()]
    restore = next(e for e in events if e["event"] == "restore")
    batches = [e for e in events if e["event"] == "apply"]
    files = sorted({e["positions"]["dir"]["file"] for e in batches})
    start = f"resumed from checkpoint seq={restore['seq']}" if restore["checkpoint"] else "started fresh"
    print(f"run {run}: {start}; applied {len(batches)} batches, {sum(e['edges'] for e in batches):,} edges "
          f"from {', '.join(files)}; exit status {rc}; log in {log_path}")
    return events


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=str(BUNDLED_GRAPH), help="edge file to split (default: bundled CollegeMsg)")
    ap.add_argument("--files", type=int, default=4, help="how many files to split it into (>= 2)")
    ap.add_argument("--batch-size", type=int, default=2000, help="edges per daemon batch")
    ap.add_argument("--snapshot-every", type=int, default=5, help="Parquet snapshot every N batches")
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--device", default="auto", choices=("auto", "cpu", "gpu"))
    ap.add_argument("--work", help="working directory (default: a new temp directory)")
    args = ap.parse_args(argv)
    if args.files < 2:
        ap.error("--files must be >= 2 (the last file is dropped in between two runs)")

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="streamrank-dir-"))
    in_dir, ckpt = work / "in", work / "ckpt"
    in_dir.mkdir(parents=True, exist_ok=True)
    stream = read_stream(args.file)  # time order
    if stream.id_type == "string":
        sys.exit("this example splits integer-id files; the daemon itself also reads string ids")
    parts = np.array_split(np.arange(len(stream)), args.files)
    texts = [csv_text(stream.src[p], stream.dst[p], stream.insert[p], extra_line=BAD_LINE if i == 0 else None)
             for i, p in enumerate(parts)]
    names = [f"part-{i:04d}.csv" for i in range(args.files)]
    print(f"{args.file}: {len(stream):,} edges -> {args.files} files in {in_dir}")

    for name, text in zip(names[:-1], texts[:-1]):
        drop_file(in_dir, name, text)
    serve(args, in_dir, ckpt, 1)
    print(f"\ndropping {names[-1]} in, then running the daemon again")
    drop_file(in_dir, names[-1], texts[-1])
    serve(args, in_dir, ckpt, 2)

    # the same as the shell command, run in this process: streamrank.cli.main takes the CLI's arguments
    print(f"\n$ streamrank query --checkpoint-dir {ckpt} --top {args.top_k}")
    sys.stdout.flush()
    rc = cli_main(["query", "--checkpoint-dir", str(ckpt), "--top", str(args.top_k)])
    if rc != 0:
        sys.exit(f"streamrank query failed with {rc}")

    print("\nwhere the outputs went (directory mode has no rank topic):")
    print(f"  checkpoints (what streamrank query reads): {ckpt}")
    snaps = sorted((ckpt / "snapshots").glob("ranks-*.parquet"))
    if snaps:
        import pyarrow.parquet as pq

        last = pq.read_table(snaps[-1])
        seq = last.schema.metadata[b"seq"].decode()
        order = np.argsort(-last.column("rank").to_numpy(), kind="stable")[:3]
        best = ", ".join(f"{last.column('vertex')[int(i)].as_py()} ({last.column('rank')[int(i)].as_py():.6f})"
                         for i in order)
        print(f"  Parquet snapshots of all ranks: {len(snaps)} in {ckpt / 'snapshots'}; the last, {snaps[-1].name}: "
              f"seq {seq}, {last.num_rows:,} vertices, best {best}")
    dead = ckpt / "dead-letters.jsonl"
    letters = [json.loads(line) for line in dead.read_text().splitlines()] if dead.exists() else []
    print(f"  dead letters: {len(letters)} in {dead}")
    for d in letters:
        print(f"    {d['topic']} line {d['offset']}: {d['reason']}: {d['value']!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
