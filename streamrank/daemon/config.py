"""Daemon settings from a TOML file, environment variables and command-line flags.

Precedence, lowest to highest: the defaults of :class:`DaemonConfig`, the TOML file
(``--config``; keys at top level or under a ``[serve]`` table, rank settings under ``[rank]``),
environment variables ``STREAMRANK_<KEY>`` (the key in upper case, ``topic`` as ``a,b``, rank
settings as ``RANK_<NAME>``; read through :func:`streamrank.settings.daemon_values`), and flags
(flags win).
Keys are the flag names with ``-`` written as ``_``; ``topic`` may be a list.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field, fields

from connectors.kafka_clients import CLIENTS
from connectors.kafka_sink import PUBLISH_FORMATS

from .. import settings
from ..config import ALGORITHMS, RankConfig
from ..engine import MULTI_EDGES
from ..errors import InvalidArgumentError
from ..ids.kinds import DEFAULT_MAX_ID_BYTES, ID_TYPES

ENV_PREFIX = settings.PREFIX
#: ``--warm-up``: ``auto`` warms the engine's kernels up on the GPU only, ``on`` on every device,
#: ``off`` never (:mod:`streamrank.daemon.warmup`).
WARM_UP_MODES = ("auto", "on", "off")


@dataclass
class DaemonConfig:
    """Everything ``streamrank serve`` needs. See ``docs/daemon.md`` for each setting."""

    checkpoint_dir: str | None = None
    bootstrap_servers: str | None = None
    topic: list = field(default_factory=list)
    publish_topic: str | None = None
    dead_letter_topic: str | None = None
    dead_letter_file: str | None = None
    group_id: str | None = None
    input_dir: str | None = None
    exit_when_done: bool = False
    base_graph: str | None = None
    start_from: str = "earliest"
    checkpoint_every: int = 100
    checkpoint_interval: float = 30.0
    checkpoint_keep: int = 3
    reset_unreadable_state: bool = False
    full_checkpoint_every: int = 10
    kafka_client: str = "auto"
    publish_format: str = "keyed"
    batch_size: int = 10000
    batch_wait_ms: int = 200
    algorithm: str = "auto"
    device: str = "auto"
    publish_threshold: float = 1e-6
    top_k: int = 20
    top_k_every: int = 10
    snapshot_dir: str | None = None
    snapshot_every: int = 0
    drift_every: int = 0
    drift_bound: float = 1e-5
    metrics_port: int | None = None
    max_message_bytes: int = 8 * 1024 * 1024
    poll_max_records: int = 5000
    decode_threads: int = 0
    warm_up: str = "auto"
    lag_interval: float = 5.0
    kafka_stats_interval: float = 0.0
    stall_dump_s: float = 0.0
    applied_log: str | None = None
    id_type: str = "auto"
    max_id_bytes: int = DEFAULT_MAX_ID_BYTES
    max_graph_bytes: int | None = None
    # weighted edges: weights read from the records, repeats combined per multi_edges ("sum" turns weighted on)
    weighted: bool = False
    multi_edges: str = "set"
    http_port: int | None = None
    http_host: str = "127.0.0.1"
    http_ppr_queue: int = 8
    # column layout of edge files (input directory, base graph): connectors.files.layout.Layout
    src_column: str | None = None
    dst_column: str | None = None
    ts_column: str | None = None
    op_column: str | None = None
    header: bool | None = None
    delimiter: str | None = None
    weight_column: str | None = None
    rank: RankConfig = field(default_factory=RankConfig)

    def layout(self):
        """The :class:`connectors.files.Layout` of the edge files (``src_column`` ... ``delimiter``)."""
        from connectors.files.layout import Layout

        return Layout(header=self.header, delimiter=self.delimiter, src=self.src_column, dst=self.dst_column,
                      ts=self.ts_column, op=self.op_column, weight=self.weight_column, weighted=self.is_weighted)

    def record_fields(self):
        """The :class:`connectors.records.RecordFields` of Kafka records (``src_column``,
        ``dst_column``, ``op_column``, ``weight_column`` as field names)."""
        from connectors.record_fields import RecordFields

        return RecordFields.from_settings(self.src_column, self.dst_column, self.op_column, self.weight_column,
                                          weighted=self.is_weighted)

    @property
    def is_weighted(self) -> bool:
        """Whether weights are read: ``weighted``, or ``multi_edges="sum"`` (which turns it on)."""
        return bool(self.weighted) or self.multi_edges == "sum"

    def validate(self) -> "DaemonConfig":
        """Check the combination of settings; returns ``self``.

        Raises
        ------
        InvalidArgumentError
        """
        if not self.checkpoint_dir:
            raise InvalidArgumentError("a checkpoint directory is required (--checkpoint-dir)")
        if self.input_dir is None:
            if not self.bootstrap_servers:
                raise InvalidArgumentError("give --bootstrap-servers and --topic, or --input-dir")
            if not self.topic:
                raise InvalidArgumentError("give at least one --topic")
        elif self.bootstrap_servers and self.topic:
            raise InvalidArgumentError("--input-dir and --topic exclude each other")
        if self.algorithm not in ALGORITHMS:
            raise InvalidArgumentError(f"--algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")
        if self.start_from not in ("earliest", "latest"):
            raise InvalidArgumentError("--start-from must be 'earliest' or 'latest'")
        if self.kafka_client not in CLIENTS:
            raise InvalidArgumentError(f"--kafka-client must be auto, confluent or kafka-python, got {self.kafka_client!r}")
        if self.publish_format not in PUBLISH_FORMATS:
            raise InvalidArgumentError(f"--publish-format must be keyed, arrow or both, got {self.publish_format!r}")
        if self.warm_up not in WARM_UP_MODES:
            raise InvalidArgumentError(f"--warm-up must be one of {WARM_UP_MODES}, got {self.warm_up!r}")
        if self.multi_edges not in MULTI_EDGES:
            raise InvalidArgumentError(f"--multi-edges must be one of {MULTI_EDGES}, got {self.multi_edges!r}")
        if self.id_type not in ID_TYPES:
            raise InvalidArgumentError(f"--id-type must be one of {ID_TYPES}, got {self.id_type!r}")
        for name in ("checkpoint_every", "checkpoint_keep", "full_checkpoint_every", "batch_size", "poll_max_records",
                     "max_message_bytes", "max_id_bytes"):
            if int(getattr(self, name)) < 1:
                raise InvalidArgumentError(f"{name} must be >= 1")
        for name in ("batch_wait_ms", "checkpoint_interval", "publish_threshold", "top_k", "top_k_every",
                     "snapshot_every", "drift_every", "drift_bound", "lag_interval",
                     "decode_threads", "kafka_stats_interval", "stall_dump_s"):
            if float(getattr(self, name)) < 0:
                raise InvalidArgumentError(f"{name} must be >= 0")
        if 0 < float(self.kafka_stats_interval) < 0.001:
            raise InvalidArgumentError("kafka_stats_interval must be 0 (off) or at least 0.001 s")
        if self.max_graph_bytes is not None and int(self.max_graph_bytes) < 1:
            raise InvalidArgumentError("max_graph_bytes must be >= 1 (or unset: no limit)")
        if self.http_port is not None and not 0 <= int(self.http_port) <= 65535:
            raise InvalidArgumentError(f"http_port must be 0..65535 (or unset: no HTTP API), got {self.http_port}")
        if int(self.http_ppr_queue) < 1:
            raise InvalidArgumentError("http_ppr_queue must be >= 1")
        self.layout()  # raises for a column or delimiter setting outside its domain
        if self.input_dir is None:
            self.record_fields()  # Kafka records: field names, not column numbers
        if self.publish_topic and not self.bootstrap_servers:
            raise InvalidArgumentError("--publish-topic needs --bootstrap-servers")
        if self.dead_letter_topic and not self.bootstrap_servers:
            raise InvalidArgumentError("--dead-letter-topic needs --bootstrap-servers")
        return self


_FIELD_TYPES = {f.name: f.type for f in fields(DaemonConfig)}
_RANK_TYPES = {f.name: f.type for f in fields(RankConfig)}


def _coerce(name: str, typ, value):
    """Convert a TOML/env value to the type of field ``name``."""
    if value is None:
        return None
    t = str(typ)
    try:
        if name == "topic":
            if isinstance(value, str):
                return [v.strip() for v in value.split(",") if v.strip()]
            return [str(v) for v in value]
        if t.startswith("bool"):
            if isinstance(value, str):
                low = value.strip().lower()
                if low in ("1", "true", "yes", "on"):
                    return True
                if low in ("0", "false", "no", "off", ""):
                    return False
                raise ValueError(value)
            return bool(value)
        if t.startswith("int"):
            if isinstance(value, str) and value.strip().lower() in ("", "none"):
                return None
            return int(value)
        if t.startswith("float"):
            return float(value)
        return str(value)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"setting {name}={value!r} is not a valid {t}") from exc


def _apply(values: dict, cfg_kw: dict, rank_kw: dict, origin: str) -> None:
    for key, value in values.items():
        name = key.replace("-", "_")
        if name == "rank" and isinstance(value, dict):
            _apply({f"rank_{k}": v for k, v in value.items()}, cfg_kw, rank_kw, origin)
        elif name.startswith("rank_") and name[5:] in _RANK_TYPES:
            rank_kw[name[5:]] = _coerce(name[5:], _RANK_TYPES[name[5:]], value)
        elif name in _FIELD_TYPES and name != "rank":
            cfg_kw[name] = _coerce(name, _FIELD_TYPES[name], value)
        else:
            raise InvalidArgumentError(f"unknown setting {key!r} in {origin}")


def load_config(*, path=None, env=None, overrides: dict | None = None) -> DaemonConfig:
    """Build a validated :class:`DaemonConfig`.

    Parameters
    ----------
    path : str, optional
        TOML file.
    env : mapping, optional
        Environment (default :data:`os.environ`); only ``STREAMRANK_<KEY>`` keys of known settings
        are read.
    overrides : dict, optional
        Values from flags; ``None`` values are ignored (flag not given).

    Raises
    ------
    InvalidArgumentError
        On unknown keys, bad values or an invalid combination.
    """
    cfg_kw: dict = {}
    rank_kw: dict = {}
    if path:
        try:
            with open(path, "rb") as fh:
                doc = tomllib.load(fh)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise InvalidArgumentError(f"cannot read config file {path}: {exc}") from exc
        serve = doc.pop("serve", {})
        _apply(doc, cfg_kw, rank_kw, path)
        _apply(serve, cfg_kw, rank_kw, path)
    env_values = settings.daemon_values(env)
    known = {k: v for k, v in env_values.items()
             if k in _FIELD_TYPES or (k.startswith("rank_") and k[5:] in _RANK_TYPES)}
    _apply(known, cfg_kw, rank_kw, "the environment")
    if overrides:
        _apply({k: v for k, v in overrides.items() if v is not None and v != []}, cfg_kw, rank_kw, "flags")
    cfg = DaemonConfig(**cfg_kw)
    if rank_kw:
        cfg.rank = dataclasses.replace(cfg.rank, **rank_kw)
    return cfg.validate()
