"""The daemon's endpoints, built from its settings: the edge source (a directory or Kafka), the
rank publisher, the dead letters and the Parquet snapshots.

Each builder imports its connector on use, so a daemon that reads a directory never imports a
Kafka client. Private to :mod:`.loop`.
"""

from __future__ import annotations

import logging
import os

from .config import DaemonConfig

log = logging.getLogger("streamrank.daemon")


def make_source(cfg: DaemonConfig, *, stop, id_lock, on_stats):
    """The edge source of ``cfg``: a :class:`connectors.dir_source.DirectorySource` when
    ``input_dir`` is set, else a Kafka source of the configured client. ``stop`` says whether a
    shutdown was requested; ``on_stats`` takes the Kafka client's condensed statistics."""
    if cfg.input_dir is not None:
        from connectors.dir_source import DirectorySource

        return DirectorySource(cfg.input_dir, chunk_rows=cfg.batch_size, id_type=cfg.id_type,
                               id_lock=id_lock, max_id_bytes=cfg.max_id_bytes, layout=cfg.layout())
    from connectors.kafka_clients import make_source as make_kafka_source
    from connectors.kafka_clients import resolve_client

    client = resolve_client(cfg.kafka_client)
    log.info("Kafka client: %s", client)
    return make_kafka_source(client, bootstrap_servers=cfg.bootstrap_servers, topics=cfg.topic,
                             group_id=cfg.group_id, start_from=cfg.start_from,
                             max_message_bytes=cfg.max_message_bytes, max_poll_records=cfg.poll_max_records,
                             stop=stop, id_type=cfg.id_type, id_lock=id_lock, max_id_bytes=cfg.max_id_bytes,
                             fields=cfg.record_fields(), stats_interval_s=cfg.kafka_stats_interval,
                             on_stats=on_stats)


def make_producer(cfg: DaemonConfig, *, on_stats):
    """The Kafka producer the publisher and the dead letters share."""
    from connectors.kafka_clients import make_producer as make_kafka_producer

    return make_kafka_producer(cfg.kafka_client, cfg.bootstrap_servers, stats_interval_s=cfg.kafka_stats_interval,
                               on_stats=on_stats)


def make_publisher(cfg: DaemonConfig, producer, ranks=None):
    """The rank publisher of ``cfg.publish_topic``, primed with ``ranks`` (the restored ones) so
    that its first batch publishes only what moved."""
    from connectors.kafka_sink import RankPublisher

    publisher = RankPublisher(producer, cfg.publish_topic, threshold=cfg.publish_threshold, top_k=cfg.top_k,
                              top_k_every=cfg.top_k_every, publish_format=cfg.publish_format)
    if ranks is not None:
        publisher.prime(ranks)
    return publisher


def make_dead_letters(cfg: DaemonConfig, producer):
    """The dead-letter topic's writer when one is set, else the dead-letter file (by default
    ``dead-letters.jsonl`` in the checkpoint directory)."""
    if cfg.dead_letter_topic:
        from connectors.kafka_sink import KafkaDeadLetters

        return KafkaDeadLetters(producer, cfg.dead_letter_topic)
    from connectors.dir_source import FileDeadLetters

    return FileDeadLetters(cfg.dead_letter_file or os.path.join(cfg.checkpoint_dir, "dead-letters.jsonl"))


def make_snapshots(cfg: DaemonConfig):
    """The Parquet rank snapshots every ``cfg.snapshot_every`` batches, or None."""
    if not cfg.snapshot_every:
        return None
    from connectors.parquet_sink import ParquetSnapshots

    return ParquetSnapshots(cfg.snapshot_dir or os.path.join(cfg.checkpoint_dir, "snapshots"),
                            every=cfg.snapshot_every)
