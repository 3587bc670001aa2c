"""Condensing librdkafka's statistics (connectors/kafka_stats.py) on documents of a real client."""

from __future__ import annotations

import json
import logging

import pytest

from connectors.kafka_stats import condense, stats_config

confluent_kafka = pytest.importorskip("confluent_kafka")


def _document(kind: str) -> str:
    """A statistics document of a real librdkafka client with no reachable broker."""
    got = []
    conf = {"bootstrap.servers": "127.0.0.1:9", "statistics.interval.ms": 20, "stats_cb": got.append}
    if kind == "producer":
        client = confluent_kafka.Producer(conf)
        client.produce("t", b"x")
        while not got:
            client.poll(0.05)
    else:
        client = confluent_kafka.Consumer({**conf, "group.id": "g"})
        while not got:
            client.poll(0.05)
        client.close()
    return got[-1]


@pytest.mark.parametrize("kind", ["producer", "consumer"])
def test_condense_keeps_the_client_and_leaves_out_bootstrap_brokers(kind):
    raw = _document(kind)
    out = condense(raw)
    assert out["client"] == kind and out["t"] > 0
    assert out["brokers"] == {}  # only the bootstrap entry (node id -1) exists: left out
    assert condense(json.loads(raw))["client"] == kind  # parsed documents too
    json.dumps(out)  # an applied-log line


def test_condense_broker_windows_and_partitions():
    doc = {"type": "consumer", "name": "c", "msg_cnt": 0, "rxmsgs": 12,
           "brokers": {"b:1/1": {"nodeid": 1, "state": "UP", "rtt": {"cnt": 4, "avg": 10500, "p50": 10000,
                                                                      "p99": 30000, "max": 31000},
                                 "int_latency": {"cnt": 0}, "req": {"Fetch": 7, "Produce": 0, "Metadata": 2}},
                       "b:1/bootstrap": {"nodeid": -1}},
           "topics": {"e": {"partitions": {"0": {"fetchq_cnt": 3, "rxmsgs": 12, "next_offset": 12, "msgq_cnt": 0},
                                           "-1": {"fetchq_cnt": 0}}}}}
    out = condense(doc)
    assert out["brokers"] == {"1": {"state": "UP", "rtt_ms": [10.5, 10.0, 30.0, 31.0], "int_latency_ms": None,
                                    "outbuf_cnt": None, "waitresp_cnt": None, "req": {"Fetch": 7},
                                    "rx": None, "tx": None}}
    assert out["topics"] == {"e": {"partitions": {"0": {"fetchq_cnt": 3, "next_offset": 12, "rxmsgs": 12}}}}


def test_stats_config_off_invalid_and_callback_errors_logged(caplog):
    assert stats_config(0, print) == {}
    with pytest.raises(ValueError):
        stats_config(1e-6, print)
    conf = stats_config(0.5, lambda stats: 1 / 0)
    assert conf["statistics.interval.ms"] == 500
    with caplog.at_level(logging.WARNING):
        conf["stats_cb"]('{"type": "producer"}')  # must not raise into the client's poll
    assert "ZeroDivisionError" in caplog.text


def test_daemon_setting_validated():
    from streamrank.daemon.config import DaemonConfig
    from streamrank.errors import InvalidArgumentError

    base = dict(checkpoint_dir="/tmp/x", bootstrap_servers="h:1", topic=["t"])
    assert DaemonConfig(**base, kafka_stats_interval=0.5).validate().kafka_stats_interval == 0.5
    for bad in (-1.0, 1e-4):
        with pytest.raises(InvalidArgumentError):
            DaemonConfig(**base, kafka_stats_interval=bad).validate()
