"""The weighted-edge settings: ``serve``'s ``weighted``, ``multi_edges`` and ``weight_column`` (TOML,
``STREAMRANK_*`` environment, flags) and ``replay``'s ``--weighted/--multi-edges/--weight``."""

from __future__ import annotations

import pytest

from streamrank.cli import build_parser
from streamrank.commands.layout_args import layout_from_args
from streamrank.daemon.config import load_config
from streamrank.errors import InvalidArgumentError

BASE = {"STREAMRANK_CHECKPOINT_DIR": "ckpt", "STREAMRANK_INPUT_DIR": "in"}


def test_defaults_are_unweighted():
    cfg = load_config(env=BASE)
    assert (cfg.weighted, cfg.multi_edges, cfg.is_weighted) == (False, "set", False)
    assert not cfg.layout().weighted and cfg.record_fields().weight is None


def test_sum_turns_weighted_on():
    cfg = load_config(env={**BASE, "STREAMRANK_MULTI_EDGES": "sum"})
    assert cfg.is_weighted and cfg.multi_edges == "sum"
    assert cfg.layout().weighted
    fields = cfg.record_fields()
    assert fields.weighted and fields.weight == "weight"


def test_environment_toml_and_flags(tmp_path):
    cfg = load_config(env={**BASE, "STREAMRANK_WEIGHTED": "yes", "STREAMRANK_WEIGHT_COLUMN": "w"})
    assert cfg.weighted is True and cfg.layout().weight == "w" and cfg.record_fields().weight == "w"
    toml = tmp_path / "s.toml"
    toml.write_text('checkpoint_dir = "c"\ninput_dir = "i"\n[serve]\nweighted = true\nmulti_edges = "sum"\n'
                    'weight_column = "3"\n')
    cfg = load_config(path=toml, env={})
    assert cfg.multi_edges == "sum" and cfg.layout().weight == 3
    cfg = load_config(path=toml, env={"STREAMRANK_MULTI_EDGES": "set"}, overrides={"weighted": None})
    assert cfg.multi_edges == "set" and cfg.weighted  # the environment wins over the file


@pytest.mark.parametrize("env,match", [
    ({"STREAMRANK_MULTI_EDGES": "max"}, "--multi-edges must be one of"),
    ({"STREAMRANK_WEIGHT_COLUMN": "w"}, "--weight w: the stream is unweighted"),
    ({"STREAMRANK_WEIGHTED": "maybe"}, "weighted='maybe' is not a valid bool"),
])
def test_bad_values_are_refused(env, match):
    with pytest.raises(InvalidArgumentError, match=match):
        load_config(env={**BASE, **env})


def test_kafka_weight_field_is_a_name():
    env = {"STREAMRANK_CHECKPOINT_DIR": "c", "STREAMRANK_BOOTSTRAP_SERVERS": "k:9092", "STREAMRANK_TOPIC": "t",
           "STREAMRANK_WEIGHTED": "1", "STREAMRANK_WEIGHT_COLUMN": "3"}
    with pytest.raises(InvalidArgumentError, match="read by field name"):
        load_config(env=env)


def test_serve_flags():
    args = build_parser().parse_args(["serve", "--input-dir", "in", "--checkpoint-dir", "c", "--multi-edges", "sum",
                                      "--weight", "score"])
    assert (args.multi_edges, args.weight, args.weighted) == ("sum", "score", None)
    args = build_parser().parse_args(["serve", "--weighted"])
    assert args.weighted is True
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--multi-edges", "max"])


def test_replay_flags_make_the_layout():
    parse = build_parser().parse_args
    assert not layout_from_args(parse(["replay", "e.csv"])).weighted
    assert layout_from_args(parse(["replay", "e.csv", "--multi-edges", "sum"])).weighted
    layout = layout_from_args(parse(["replay", "e.csv", "--weighted", "--weight", "2"]))
    assert layout.weighted and layout.weight == 2
    with pytest.raises(InvalidArgumentError, match="--weighted"):
        layout_from_args(parse(["replay", "e.csv", "--weight", "w"]))
    assert not layout_from_args(parse(["ppr", "e.csv", "--seed", "1"])).weighted
