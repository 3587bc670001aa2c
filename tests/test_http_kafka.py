"""The HTTP query API of a daemon reading Kafka (a real broker), queried while edges are produced:
each answer's ranks are the oracle's for the graph of the batches it names (rebuilt from the
positions in the applied log), readers see batches in order, concurrent answers about one batch
agree, and ``/status`` shows the partitions' positions and lag."""

from __future__ import annotations

import time

import numpy as np
import pytest
from http_helpers import Readers, check_monotonic, check_snapshots, get, oracle_l1, wait_http
from kafka_broker import DaemonProcess, batches_from_lineage, free_port, kafka_broker, lineage, make_events  # noqa: F401

pytest.importorskip("uvicorn")
pytestmark = pytest.mark.kafka

PARTITIONS = 2
EVENTS = make_events(21, 2400, 200)


def test_live_queries_while_ingesting_from_kafka(kafka_broker, tmp_path):
    topic = kafka_broker.create_topic(partitions=PARTITIONS)
    port = free_port()
    d = DaemonProcess(["--bootstrap-servers", kafka_broker.bootstrap, "--topic", topic, "--checkpoint-dir",
                       tmp_path / "ckpt", "--batch-size", 50, "--batch-wait-ms", 20, "--warm-up", "on",
                       "--http-port", port, "--kafka-client", "kafka-python"], tmp_path,
                      env={"STREAMRANK_LAG_INTERVAL": "0.2"})
    readers = None
    try:
        wait_http(port, d)
        readers = Readers(port, "/ranks/top?k=1000")
        prod = kafka_broker.producer()
        sent, futures = {}, []
        for i, (s, t, ins) in enumerate(EVENTS):  # one edge per message, in bursts
            p = s % PARTITIONS
            futures.append((prod.send(topic, value=f"{s},{t},{'+' if ins else '-'}".encode(), partition=p),
                            (s, t, ins)))
            if i % 200 == 199:
                prod.flush()
                time.sleep(0.1)
        prod.flush()
        for f, (s, t, ins) in futures:
            md = f.get(timeout=30)
            sent[(md.partition, md.offset)] = (np.array([s]), np.array([t]), np.array([ins]))
        prod.close()
        d.wait_edges(len(EVENTS), timeout=120)
        time.sleep(0.5)
        answers = readers.stop()
        assert not readers.errors, readers.errors[:3]
        check_monotonic(readers.answers)
        by_seq = check_snapshots(answers)
        chain, _ = lineage(d.events())
        final = chain[-1]["seq"]
        assert len([s for s in by_seq if 0 < s < final]) >= 5, sorted(by_seq)
        assert max(by_seq) == final
        batches = batches_from_lineage(chain, sent, PARTITIONS)
        events = []
        upto = {}
        for a, b in zip(chain, batches):
            events += list(zip(np.asarray(b.src).tolist(), np.asarray(b.dst).tolist(), np.asarray(b.insert).tolist()))
            upto[a["seq"]] = len(events)
        picked = sorted(s for s in by_seq if s > 0)
        for s in picked[:: max(1, len(picked) // 10)] + [final]:
            err = oracle_l1(by_seq[s], events[:upto[s]])
            assert err < 1e-5, (s, err)
        st, status = get(port, "/status")
        assert status["seq"] == final
        merged = {}
        for a in chain:
            merged.update(a["positions"])
        assert status["last_batch"]["positions"] == merged  # every partition's position after the batch
        assert set(status["lag"]) == {f"{topic}:{p}" for p in range(PARTITIONS)}
        assert status["lag_total"] == 0
        assert status["source"].startswith("kafka ")
    finally:
        if readers is not None:
            readers.stop()
        assert d.terminate() == 0, d.log_tail()
