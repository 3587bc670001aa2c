"""Every input mistake gets a message in the user's words: the flag or the file and line they wrote."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from connectors.files import Layout, read_edges
from streamrank.cli import build_parser, main
from streamrank.errors import InvalidArgumentError, SourceError
from streamrank.replay.progress import Progress

REPO = Path(__file__).resolve().parents[1]


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def otc(tmp_path):
    """A headerless CSV as SNAP publishes soc-sign-bitcoinotc: src, dst, rating, fractional Unix time."""
    rows = ["6,2,4,1289241911.72836", "6,5,2,1289241941.53378", "1,15,1,1289243140.39049",
            "4,3,7,1289245277.36975", "13,16,8,1289254254.44746", "13,10,8,1289299106.18099",
            "7,5,1,1289314248.71314", "2,21,5,1289316798.7218", "21,2,5,1289317060.95306", "2,20,5,1289316811.27183"]
    return write(tmp_path / "otc.csv", "\n".join(rows) + "\n")


def test_headerless_csv_reads_and_names_the_unused_columns(otc):
    table, report = read_edges(otc)
    assert report.good == 10 and report.bad == 0
    assert report.columns.startswith("comma-separated, no header, src=column 1, dst=column 2")
    assert "not used: column 3, column 4" in report.columns


def test_fractional_timestamps_order_the_edges(otc):
    table, report = read_edges(otc, layout=Layout(ts=4))
    assert report.bad == 0 and str(table.schema.field("ts").type) == "double"
    assert table.column("src").to_pylist()[-2:] == [2, 21]  # 1289316811 sorts before 1289317060


def test_header_with_other_names_is_followed(tmp_path, otc):
    path = write(tmp_path / "h.csv", "src,dst,rating,time\n" + otc.read_text())
    table, report = read_edges(path)
    assert report.has_ts and report.unused_columns == ["rating"]
    assert "ts=time" in report.columns and "not used: rating" in report.columns


def test_no_header_flag_and_header_flag(tmp_path):
    path = write(tmp_path / "a.csv", "alice,bob\ncarol,dave\n")  # text over text: data
    table, report = read_edges(path)
    assert table.column("src").to_pylist() == ["alice", "carol"] and "no header" in report.columns
    with pytest.raises(SourceError, match=r"lacks column.*--src COL --dst COL.*--no-header if line 1 is data"):
        read_edges(path, layout=Layout(header=True))
    with pytest.raises(SourceError, match=r"lacks column.*--no-header if line 1 is data"):
        read_edges(write(tmp_path / "n.csv", "a,b\n1,2\n"))  # text over numbers: a header
    table, _ = read_edges(write(tmp_path / "b.txt", "who whom\n1 2\n"), layout=Layout(header=True, src="who",
                                                                                          dst="whom"))
    assert table.column("src").to_pylist() == [1]


@pytest.mark.parametrize("layout, message", [
    (Layout(src="from"), r"--src 'from' names a column, but .*otc.csv has no header \(line 1 is data\)"),
    (Layout(ts=9), r"--ts 9: .*otc.csv has 4 column\(s\)"),
])
def test_stated_columns_not_in_the_file(otc, layout, message):
    with pytest.raises(SourceError, match=message):
        read_edges(otc, layout=layout)


@pytest.mark.parametrize("kwargs, message", [
    (dict(src=0), "--src 0: column numbers start at 1"),
    (dict(dst="none"), "--dst none: every edge needs a dst column"),
    (dict(src=1, dst="1"), "--src and --dst both name column 1"),
    (dict(delimiter="x"), "--delimiter 'x': expected one of comma, tab"),
])
def test_layout_flag_errors(kwargs, message):
    with pytest.raises(InvalidArgumentError, match=message):
        Layout(**kwargs)


def test_header_names_not_found(tmp_path):
    path = write(tmp_path / "h.csv", "a,b,c\n1,2,3\n")
    with pytest.raises(SourceError, match=r"--ts 'when': no such column in the header of .*h.csv \(line 1: a, b, c\)"):
        read_edges(path, layout=Layout(src="a", dst="b", ts="when"))


def test_iso_timestamps_and_bad_ones(tmp_path):
    path = write(tmp_path / "e.csv", "src,dst,ts\n1,2,2020-01-01T00:00:01Z\n3,4,2020-01-01T00:00:00+00:00\n"
                                      "5,6,yesterday\n")
    table, report = read_edges(path)
    assert table.column("src").to_pylist() == [3, 1]
    assert [(b.line, b.reason) for b in report.bad_lines] == [(4, "bad ISO-8601 ts 'yesterday'")]


def test_fractional_ts_in_an_integer_file_is_a_bad_line_with_a_reason(tmp_path):
    lines = [f"{k} {k + 1} {k}" for k in range(300)] + ["1 2 3.5"]
    _, report = read_edges(write(tmp_path / "e.txt", "\n".join(lines) + "\n"), chunk_rows=50)
    assert [b.reason for b in report.bad_lines] == ["non-integer ts '3.5'"]


def test_bad_line_is_reported_as_file_line_reason_value(tmp_path):
    _, report = read_edges(write(tmp_path / "e.csv", "src,dst\n1,2\n3,x\n"))
    assert report.describe_bad(report.bad_lines[0]) == (
        f"{tmp_path / 'e.csv'}:3: non-integer dst id 'x' (a string id in an integer-id stream) (3,x)")


def test_binary_file_named_csv(tmp_path):
    path = tmp_path / "x.csv"
    path.write_bytes(bytes(range(256)) * 20)
    with pytest.raises(SourceError, match=r"x.csv: not a text edge file \(binary data at byte 0\)"):
        read_edges(path)


def test_csv_error_in_a_line_is_a_bad_line(tmp_path):
    path = tmp_path / "e.csv"
    path.write_bytes(b"src,dst\n1,2\n3,\"4\r5\"\n6,7\n")
    table, report = read_edges(path)
    assert table.column("src").to_pylist() == [1, 6] and report.bad == 1


def test_unknown_extension_names_the_flag(tmp_path):
    with pytest.raises(InvalidArgumentError, match=r"e.xml: cannot tell the format from the file name; pass --format"):
        read_edges(write(tmp_path / "e.xml", "1 2\n"))


@pytest.mark.parametrize("argv, message", [
    (["--batch-size", "0"], "--batch-size 0: expected at least 1 edge"),
    (["--batch-fraction", "2"], r"--batch-fraction 2.0: expected a share in \(0, 1\]"),
    (["--base-fraction", "1"], r"--base-fraction 1.0: expected a share in \[0, 1\)"),
    (["--delete-fraction", "-1"], r"--delete-fraction -1.0: expected a share in \[0, 1\)"),
    (["--top", "-1"], "--top -1: expected 0 or more"),
    (["--src", "from"], "--src 'from' names a column, but .* has no header"),
])
def test_replay_flag_errors(capsys, otc, argv, message):
    code, _, err = run_cli(capsys, "replay", str(otc), "--no-progress", *argv)
    assert code == 1
    assert err.startswith("streamrank replay: error: ")
    import re
    assert re.search(message, err), err


def test_replay_empty_and_header_only_files(capsys, tmp_path):
    code, _, err = run_cli(capsys, "replay", str(write(tmp_path / "e.txt", "")))
    assert code == 1 and "e.txt: the file is empty" in err
    code, _, err = run_cli(capsys, "replay", str(write(tmp_path / "h.csv", "src,dst\n")))
    assert code == 1 and "h.csv: no edges (only a header, comments or blank lines)" in err
    code, _, err = run_cli(capsys, "replay", str(write(tmp_path / "b.csv", "src,dst\n1,x\n")))
    assert code == 1 and f"no valid edges (1 bad lines; the first: {tmp_path / 'b.csv'}:2: non-integer dst id" in err


def test_replay_reports_columns_and_bad_lines(capsys, tmp_path, otc):
    path = write(tmp_path / "b.csv", otc.read_text() + "7,x,1,1289317061.5\n")
    code, out, err = run_cli(capsys, "replay", str(path), "--ts", "4", "--batch-size", "2", "--no-progress",
                             "--device", "cpu", "--top", "3")
    assert code == 0, err
    assert "ts=column 4 (fractional timestamps); not used: column 3" in err
    assert f"  {path}:11: non-integer dst id 'x' (a string id in an integer-id stream) (7,x,1,1289317061.5)" in err
    assert "BadLine(" not in err
    lines = out.splitlines()
    head = lines.index("top 3 ranks (auto):")
    assert lines[head + 1].split() == ["#", "vertex", "rank"] and len(lines[head + 2].split()) == 3


def test_every_replay_and_ppr_option_has_help():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for command in ("replay", "ppr"):
        p = sub.choices[command]
        missing = [a.option_strings or a.dest for a in p._actions if not a.help]
        assert not missing, (command, missing)
        text = p.format_help()
        for flag in ("--src", "--dst", "--ts", "--op", "--header", "--no-header", "--delimiter"):
            assert flag in text
    assert "(default 0.9)" in sub.choices["replay"].format_help()


def test_closing_stdout_early_is_quiet(tmp_path):
    path = write(tmp_path / "big.txt", "".join(f"{k} {k + 1} {k}\n" for k in range(3000)))
    cmd = (f"{sys.executable} -m streamrank replay {path} --top 2000 --device cpu --batch-size 100 "
           "--max-batches 2 --no-progress | head -3")
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, cwd=REPO,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert len(proc.stdout.splitlines()) == 3
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.returncode == 0


def test_ppr_empty_file_and_no_zero_padding(capsys, tmp_path):
    code, _, err = run_cli(capsys, "ppr", str(write(tmp_path / "e.txt", "")), "--seed", "1", "--device", "cpu")
    assert code == 1 and "e.txt: empty graph (the file has no edges)" in err
    path = write(tmp_path / "g.txt", "1 2\n2 3\n4 5\n5 6\n6 7\n")
    code, out, err = run_cli(capsys, "ppr", str(path), "--seed", "1", "--k", "10", "--device", "cpu")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].split() == ["#", "vertex", "score"]
    assert [line.split()[1] for line in lines[2:5]] == ["1", "2", "3"]
    assert "only 3 vertices have a non-zero score" in lines[5]


def test_query_before_the_first_checkpoint(capsys, tmp_path):
    code, _, err = run_cli(capsys, "query", "--checkpoint-dir", str(tmp_path), "--top", "3")
    assert code == 1 and "yet: the daemon writes its first one as soon as it has applied its first batch" in err
    code, _, err = run_cli(capsys, "query", "--checkpoint-dir", str(tmp_path / "nope"), "--top", "3")
    assert code == 1 and "--checkpoint-dir" in err and "no such directory" in err


def test_device_gpu_without_cupy_names_the_extra(capsys, otc):
    pytest.importorskip("numpy")
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed")
    except ImportError:
        pass
    code, _, err = run_cli(capsys, "replay", str(otc), "--device", "gpu", "--no-progress")
    assert code == 1 and "--device gpu: CuPy is not importable" in err and "pip install 'streamrank[gpu]'" in err


def test_progress_has_no_eta_until_it_has_a_rate(monkeypatch):
    clock = iter([0.0, 0.0, 100.0, 101.0, 111.0, 122.0])
    monkeypatch.setattr("streamrank.replay.progress.time.perf_counter", lambda: next(clock))
    out = io.StringIO()
    bar = Progress(10, "replay", stream=out)
    bar.update(1)   # the first batch (compiling): no rate yet
    bar.update(2)
    bar.update(10)
    lines = out.getvalue().splitlines()
    assert "eta    --" in lines[0]
    assert lines[-1].split("eta")[1].split()[0] == "0.0s"
