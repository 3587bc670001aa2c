"""Directory mode and the daemon's settings: column layouts of the files, and late files named in the log."""

from __future__ import annotations

import logging

import pytest

from connectors.dir_source import DirectorySource
from connectors.files import Layout
from connectors.records import EdgeChunk
from streamrank.daemon.config import load_config
from streamrank.errors import InvalidArgumentError


def drain(source) -> list:
    """Poll until the source has read every file; the edges as (src, dst, insert) triples."""
    edges = []
    for _ in range(100):
        for item in source.poll(0.0):
            if isinstance(item, EdgeChunk):
                edges += list(zip(item.src.tolist(), item.dst.tolist(), item.insert.tolist()))
        if source.exhausted:
            return edges
    raise AssertionError("the source never ran dry")


def test_directory_files_with_a_stated_layout(tmp_path):
    (tmp_path / "001.csv").write_text("1,2,4,1289241911.5\n3,4,1,1289241912.5\n")
    (tmp_path / "002.csv").write_text("5,6,9,1289241913.5\n")
    source = DirectorySource(str(tmp_path), chunk_rows=10, layout=Layout(ts=4, op="none"))
    source.open({})
    assert drain(source) == [(1, 2, True), (3, 4, True), (5, 6, True)]


def test_a_late_file_sorting_before_read_files_is_logged_as_skipped(tmp_path, caplog):
    (tmp_path / "b.txt").write_text("1 2\n")
    source = DirectorySource(str(tmp_path), chunk_rows=10)
    source.open({})
    assert drain(source) == [(1, 2, True)]
    (tmp_path / "a.txt").write_text("3 4\n")  # sorts before b.txt, already read
    (tmp_path / "c.txt").write_text("5 6\n")
    with caplog.at_level(logging.WARNING, logger="connectors.dir_source"):
        assert drain(source) == [(5, 6, True)]
        assert drain(source) == []
    assert source.late_files == ["a.txt"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1  # once, not at every listing
    assert "skipping a.txt" in warnings[0] and "sorts before" in warnings[0] and "b.txt" in warnings[0]


def test_layout_settings_in_the_toml_file(tmp_path):
    toml = tmp_path / "d.toml"
    toml.write_text('checkpoint_dir = "ck"\ninput_dir = "in"\nsrc_column = "from_node"\ndst_column = 3\n'
                    'ts_column = "none"\nheader = true\ndelimiter = "tab"\n')
    cfg = load_config(path=str(toml), env={})
    assert cfg.layout() == Layout(header=True, delimiter="\t", src="from_node", dst=3, ts="none")
    toml.write_text('checkpoint_dir = "ck"\ninput_dir = "in"\nsrc_column = 0\n')
    with pytest.raises(InvalidArgumentError, match="--src 0: column numbers start at 1"):
        load_config(path=str(toml), env={})


def test_serve_layout_flags_reach_the_config():
    from streamrank.cli import build_parser

    args = build_parser().parse_args(["serve", "--checkpoint-dir", "ck", "--input-dir", "in", "--ts", "4",
                                      "--no-header", "--delimiter", "comma"])
    assert (args.ts, args.no_header, args.delimiter) == ("4", True, "comma")
