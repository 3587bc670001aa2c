"""The environment variables streamrank reads (streamrank/settings.py, docs/settings.md): defaults,
accepted spellings, and a clear error naming the variable for anything else."""

import re
from pathlib import Path

import pytest

from streamrank import settings
from streamrank.errors import InvalidArgumentError

DOC = Path(__file__).resolve().parent.parent / "docs" / "settings.md"


def test_defaults_when_unset_or_empty():
    for env in ({}, {"STREAMRANK_CPU_THREADS": "", "STREAMRANK_CUDF": " ", "STREAMRANK_CUDA_GRAPHS": ""}):
        assert settings.cpu_threads(env) == "auto"
        assert settings.cudf(env) is True
        assert settings.cuda_graphs(env) is True


@pytest.mark.parametrize("value,expected", [("0", False), ("off", False), ("False", False), ("no", False),
                                            ("1", True), ("ON", True), (" true ", True), ("yes", True)])
def test_switch_spellings(value, expected):
    assert settings.cudf({"STREAMRANK_CUDF": value}) is expected
    assert settings.cuda_graphs({"STREAMRANK_CUDA_GRAPHS": value}) is expected


def test_cpu_threads_values():
    assert settings.cpu_threads({"STREAMRANK_CPU_THREADS": "all"}) == "all"
    assert settings.cpu_threads({"STREAMRANK_CPU_THREADS": " ALL "}) == "all"
    assert settings.cpu_threads({"STREAMRANK_CPU_THREADS": "auto"}) == "auto"


@pytest.mark.parametrize("name,read,bad", [("STREAMRANK_CPU_THREADS", settings.cpu_threads, "4"),
                                           ("STREAMRANK_CPU_THREADS", settings.cpu_threads, "one"),
                                           ("STREAMRANK_CUDF", settings.cudf, "maybe"),
                                           ("STREAMRANK_CUDA_GRAPHS", settings.cuda_graphs, "2")])
def test_bad_values_name_the_variable(name, read, bad):
    with pytest.raises(InvalidArgumentError, match=re.escape(name)) as err:
        read({name: bad})
    assert repr(bad) in str(err.value)


def test_read_from_the_process_environment(monkeypatch):
    """Each call reads the environment: a change between engines takes effect."""
    monkeypatch.setenv("STREAMRANK_CUDF", "0")
    assert settings.cudf() is False
    monkeypatch.setenv("STREAMRANK_CUDF", "1")
    assert settings.cudf() is True
    monkeypatch.setenv("STREAMRANK_CPU_THREADS", "sometimes")
    with pytest.raises(InvalidArgumentError, match="STREAMRANK_CPU_THREADS"):
        settings.cpu_threads()


def test_cpu_thread_choice_refuses_a_bad_value(monkeypatch):
    numba = pytest.importorskip("numba")
    from streamrank.rank.cpu.threads import ThreadChooser

    monkeypatch.setenv("STREAMRANK_CPU_THREADS", "all")
    assert ThreadChooser().choose() == numba.get_num_threads()
    monkeypatch.setenv("STREAMRANK_CPU_THREADS", "many")
    if numba.get_num_threads() > 1:  # with one thread there is nothing to choose
        with pytest.raises(InvalidArgumentError, match="STREAMRANK_CPU_THREADS"):
            ThreadChooser().choose()


def test_cudf_switch_turns_cudf_off(monkeypatch):
    from streamrank import cudf_support

    monkeypatch.setenv("STREAMRANK_CUDF", "0")
    assert cudf_support.cudf_enabled() is False
    monkeypatch.setenv("STREAMRANK_CUDF", "perhaps")
    with pytest.raises(InvalidArgumentError, match="STREAMRANK_CUDF"):
        cudf_support.cudf_enabled()


def test_daemon_values_leave_the_engine_settings_out():
    env = {"STREAMRANK_CPU_THREADS": "all", "STREAMRANK_CUDF": "0", "STREAMRANK_CUDA_GRAPHS": "1",
           "STREAMRANK_BATCH_SIZE": "20", "STREAMRANK_RANK_TOL": "1e-8", "OTHER": "x"}
    assert settings.daemon_values(env) == {"batch_size": "20", "rank_tol": "1e-8"}


def test_engine_settings_are_no_daemon_settings():
    """``STREAMRANK_<SETTING>`` of the daemon and the engine's own variables never share a name."""
    from dataclasses import fields

    from streamrank.config import RankConfig
    from streamrank.daemon.config import DaemonConfig

    daemon = {f.name for f in fields(DaemonConfig)} | {f"rank_{f.name}" for f in fields(RankConfig)}
    for s in settings.SETTINGS:
        assert s.name.startswith(settings.PREFIX)
        assert s.name[len(settings.PREFIX):].lower() not in daemon


def test_the_table_lists_every_setting():
    """docs/settings.md has one row per variable, with its default."""
    rows = [line for line in DOC.read_text().splitlines() if line.startswith("| `STREAMRANK_")]
    names = [re.match(r"\| `([A-Z_<>]+)", r).group(1) for r in rows]
    assert names == [s.name for s in settings.SETTINGS] + ["STREAMRANK_<SETTING>"]
    for s, row in zip(settings.SETTINGS, rows):
        assert f"`{s.default}`" in row
