"""``streamrank serve``: the long-running daemon (Kafka or a directory in, ranks out)."""

from __future__ import annotations

import argparse
import logging

from connectors.kafka_clients import CLIENTS
from connectors.kafka_sink import PUBLISH_FORMATS

from ..backend import DEVICES
from ..daemon.config import WARM_UP_MODES
from ..ids.kinds import ID_TYPES

HELP = "run the streaming daemon: Kafka (or a directory of edge files) in, ranks out, with checkpoints"

#: flag -> (config key, argparse kwargs). Flag names are a stable interface (scripts depend on them).
_FLAGS = {
    "--config": ("config", dict(metavar="TOML", help="TOML settings file (flags and STREAMRANK_* env win over it)")),
    "--bootstrap-servers": ("bootstrap_servers", dict(metavar="HOST:PORT[,...]", help="Kafka brokers")),
    "--topic": ("topic", dict(action="append", metavar="TOPIC", help="topic to read edges from (repeatable)")),
    "--publish-topic": ("publish_topic", dict(metavar="TOPIC", help="topic for rank updates and top-k")),
    "--dead-letter-topic": ("dead_letter_topic", dict(metavar="TOPIC", help="topic for rejected records")),
    "--dead-letter-file": ("dead_letter_file", dict(metavar="PATH",
                                                     help="JSON-lines dead-letter file (default CHECKPOINT_DIR/dead-letters.jsonl when no topic)")),
    "--group-id": ("group_id", dict(metavar="GROUP", help="consumer group to commit positions to (lag monitoring only)")),
    "--input-dir": ("input_dir", dict(metavar="DIR", help="read edge files from DIR (name order) instead of Kafka")),
    "--exit-when-done": ("exit_when_done", dict(action="store_const", const=True,
                                                 help="directory mode: checkpoint and exit once every file is read")),
    "--base-graph": ("base_graph", dict(metavar="FILE|CHECKPOINT|rmat:SCALE[:EF[:SEED]]",
                                        help="base graph of a fresh start: an edge file, a checkpoint (a full "
                                             "checkpoint file or a checkpoint directory), or a synthetic R-MAT graph "
                                             "generated on the device")),
    "--start-from": ("start_from", dict(choices=("earliest", "latest"),
                                         help="where partitions without a checkpointed position start (default earliest)")),
    "--checkpoint-dir": ("checkpoint_dir", dict(metavar="DIR", help="checkpoint directory (required)")),
    "--checkpoint-every": ("checkpoint_every", dict(type=int, metavar="N", help="checkpoint every N batches (default 100)")),
    "--checkpoint-interval": ("checkpoint_interval", dict(type=float, metavar="SECONDS",
                                                           help="checkpoint at least every SECONDS (default 30)")),
    "--checkpoint-keep": ("checkpoint_keep", dict(type=int, metavar="K", help="full checkpoints kept, with their logs (default 3)")),
    "--reset-unreadable-state": ("reset_unreadable_state", dict(
        action="store_const", const=True,
        help="when CHECKPOINT_DIR holds state but no full checkpoint in it reads, move the state files into "
             "CHECKPOINT_DIR/damaged/ and start afresh (empty graph or --base-graph, the input read again from "
             "its start) instead of stopping with exit status 4; a readable checkpoint is always restored")),
    "--full-checkpoint-every": ("full_checkpoint_every", dict(
        type=int, metavar="N", help="a full checkpoint every N checkpoints, batch-log frames between (default 10; 1: all full)")),
    "--kafka-client": ("kafka_client", dict(choices=CLIENTS,
                                             help="Kafka client library (default auto: confluent-kafka where installed)")),
    "--publish-format": ("publish_format", dict(choices=PUBLISH_FORMATS,
                                                 help="rank updates: a keyed message per vertex, one Arrow message per batch, or both (default keyed)")),
    "--decode-threads": ("decode_threads", dict(type=int, metavar="N",
                                                 help="Kafka: decode fetches on N threads beside the one that fetches, "
                                                      "results taken in fetch order (default 0: the fetching thread decodes)")),
    "--warm-up": ("warm_up", dict(choices=WARM_UP_MODES,
                                   help="compile the engine's kernels with a throwaway engine before the first poll "
                                        "(default auto: on the GPU, where a first use mid-stream stalls 4-5 s)")),
    "--batch-size": ("batch_size", dict(type=int, metavar="EDGES", help="max edges per batch (default 10000)")),
    "--batch-wait-ms": ("batch_wait_ms", dict(type=int, metavar="MS", help="close a batch MS after its first record (default 200)")),
    "--algorithm": ("algorithm", dict(metavar="NAME", help="static, nd, dt, df, dfp, warm or auto (default auto: DF-P per batch, warm sweeps after a flood)")),
    "--device": ("device", dict(choices=DEVICES, help="backend (default auto)")),
    "--max-graph-bytes": ("max_graph_bytes", dict(type=int, metavar="BYTES",
                                                  help="most bytes the graph store may take; a batch that would pass it, "
                                                       "or the free device memory, stops the daemon with exit status 3 "
                                                       "(default: no limit)")),
    "--weighted": ("weighted", dict(action="store_const", const=True,
                                     help="read a weight with every record (JSON field / Arrow or file column "
                                          "'weight', or --weight COL); a vertex's rank flows along its out-edges "
                                          "in proportion to their weights (default: unweighted)")),
    "--multi-edges": ("multi_edges", dict(choices=("set", "sum"),
                                          help="repeats of an edge: set (a new weight replaces the old, a delete "
                                               "removes the edge; default) or sum (weights add up, a delete "
                                               "subtracts its weight; turns --weighted on)")),
    "--alpha": ("rank_alpha", dict(type=float, help="damping factor (default 0.85)")),
    "--tol": ("rank_tol", dict(type=float, help="convergence tolerance (default 1e-10)")),
    "--publish-threshold": ("publish_threshold", dict(type=float, metavar="DELTA",
                                                       help="publish a vertex when its rank moved by more than DELTA (default 1e-6)")),
    "--top-k": ("top_k", dict(type=int, metavar="K", help="size of the periodic top-k message (default 20)")),
    "--top-k-every": ("top_k_every", dict(type=int, metavar="N", help="send the top-k message every N batches (default 10)")),
    "--snapshot-dir": ("snapshot_dir", dict(metavar="DIR", help="Parquet rank snapshots (default CHECKPOINT_DIR/snapshots)")),
    "--snapshot-every": ("snapshot_every", dict(type=int, metavar="N", help="write a Parquet snapshot every N batches (0: never)")),
    "--drift-every": ("drift_every", dict(type=int, metavar="N", help="compare with a static recompute every N batches (0: never)")),
    "--drift-bound": ("drift_bound", dict(type=float, metavar="L1", help="replace the ranks when the L1 error exceeds this (default 1e-5)")),
    "--metrics-port": ("metrics_port", dict(type=int, metavar="PORT", help="serve Prometheus metrics on PORT")),
    "--http-port": ("http_port", dict(type=int, metavar="PORT",
                                      help="serve the HTTP query API and the live page on PORT (default: off; "
                                           "0: any free port, logged); needs streamrank[http]")),
    "--http-host": ("http_host", dict(metavar="ADDR", help="address of the HTTP API (default 127.0.0.1: this "
                                                           "machine only; 0.0.0.0: every interface)")),
    "--http-ppr-queue": ("http_ppr_queue", dict(type=int, metavar="N",
                                                help="personalized PageRank queries admitted at once, running or "
                                                     "waiting for the one worker; more get HTTP 429 (default 8)")),
    "--max-message-bytes": ("max_message_bytes", dict(type=int, metavar="BYTES", help="larger messages are dead-lettered (default 8 MiB)")),
    "--id-type": ("id_type", dict(choices=ID_TYPES,
                                   help="vertex ids: int, string, or auto (fixed by the first record; default)")),
    "--max-id-bytes": ("max_id_bytes", dict(type=int, metavar="BYTES",
                                            help="longer string ids are dead-lettered as id_too_long (default 1024)")),
    "--kafka-stats-interval": ("kafka_stats_interval", dict(
        type=float, metavar="SECONDS",
        help="confluent-kafka: every SECONDS write the consumer's and producer's librdkafka statistics, condensed, "
             "to the applied log as kafka_stats events and to the DEBUG log (default 0: off)")),
    "--stall-dump-s": ("stall_dump_s", dict(
        type=float, metavar="SECONDS",
        help="when one batch (apply, publish, bookkeeping) takes longer than SECONDS, write every thread's "
             "Python stack to stderr, once per such batch: finds what holds the loop (default 0: off)")),
    "--src": ("src_column", dict(metavar="COL", help="edge files: src column, a header name or a 1-based number "
                                                     "(default: src or a usual other name; column 1 without a "
                                                     "header); Kafka records: the src field of JSON objects and "
                                                     "Arrow columns (default: src)")),
    "--dst": ("dst_column", dict(metavar="COL", help="edge files: dst column (default: dst or a usual other name; "
                                                     "column 2 without a header); Kafka records: the dst field "
                                                     "(default: dst)")),
    "--ts": ("ts_column", dict(metavar="COL", help="edge files: timestamp column, or 'none' (default: ts or a usual "
                                                   "other name); a directory's rows are applied in file order, "
                                                   "Kafka records in arrival order")),
    "--op": ("op_column", dict(metavar="COL", help="edge files: op column (+/-, insert/delete, 1/-1), or 'none': "
                                                   "all inserts (default: op or a usual other name); Kafka "
                                                   "records: the op field, or 'none' (default: op)")),
    "--weight": ("weight_column", dict(metavar="COL", help="weighted streams: the weight column of edge files (a "
                                                           "header name or a 1-based number; default: weight; a "
                                                           "headerless file has none unless named) and the weight "
                                                           "field of Kafka records (default: weight); 'none': every "
                                                           "insert weighs 1")),
    "--header": ("header", dict(action="store_const", const=True,
                                help="edge files: the first line names the columns (default: detected)")),
    "--delimiter": ("delimiter", dict(metavar="SEP", help="edge files: comma, tab, semicolon, pipe or space "
                                                          "(default: detected)")),
    "--applied-log": ("applied_log", dict(metavar="PATH", help="append a JSON line per restore/batch/checkpoint (audit, tests)")),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    for flag, (_key, kw) in _FLAGS.items():
        parser.add_argument(flag, dest=flag[2:].replace("-", "_"), default=None, **kw)
    parser.add_argument("--no-header", dest="no_header", action="store_true",
                        help="edge files: the first line is data (default: detected)")


def run(args) -> int:
    from ..daemon.config import load_config
    from ..daemon.loop import Daemon
    from ..daemon.signals import ShutdownFlag

    overrides = {}
    for flag, (key, _kw) in _FLAGS.items():
        if key == "config":
            continue
        overrides[key] = getattr(args, flag[2:].replace("-", "_"))
    if args.no_header:
        overrides["header"] = False
    cfg = load_config(path=args.config, overrides=overrides)
    if logging.getLogger().level > logging.INFO and not _explicit_level(args):
        logging.getLogger().setLevel(logging.INFO)  # a daemon logs a line per batch by default
    if logging.getLogger().level >= logging.INFO:
        logging.getLogger("kafka").setLevel(logging.WARNING)  # kafka-python is chatty at INFO
        logging.getLogger("confluent_kafka").setLevel(logging.WARNING)
    shutdown = ShutdownFlag().install()
    return Daemon(cfg, shutdown=shutdown).run()


def _explicit_level(args) -> bool:
    import sys

    return any(a.startswith("--log-level") for a in sys.argv[1:])
