"""Kafka sinks: rank updates keyed by vertex id, periodic top-k, and dead letters.

Rank-update messages (topic ``publish_topic``):

- key ``b"<vertex id>"`` (the id as text: digits, or the string id in UTF-8), value JSON
  ``{"seq": S, "vertex": V, "rank": R}`` (``V`` a JSON number, or a JSON string for string ids)
  for each vertex whose rank moved by more than the threshold since it was last published (new
  vertices included);
- key ``b"__top_k__"``, value JSON ``{"seq": S, "k": K, "top": [[vertex, rank], ...]}`` every
  ``top_k_every`` batches.

Every message also has a header ``seq``. Publishing is at-least-once: after a crash, batches
past the last checkpoint are applied and published again with the same sequence numbers, so a
consumer keeps, per key, the message with the highest ``seq`` and drops the rest.

Dead letters (topic ``dead_letter_topic``) carry the original key and bytes, and headers
``reason``, ``detail``, ``topic``, ``partition``, ``offset``.
"""

from __future__ import annotations

import json
import logging
import re

import numpy as np

from streamrank.errors import StreamrankError

log = logging.getLogger(__name__)

TOP_K_KEY = b"__top_k__"


class SinkError(StreamrankError, IOError):
    """Publishing to a sink failed (the broker is unreachable, the flush timed out)."""


def make_producer(bootstrap_servers: str, *, client_id: str = "streamrank-serve", linger_ms: int = 20):
    """A kafka-python producer configured for at-least-once delivery.

    Raises
    ------
    SinkError
        When no broker is reachable.
    """
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    try:
        return KafkaProducer(bootstrap_servers=bootstrap_servers.split(","), client_id=client_id,
                             acks="all", linger_ms=linger_ms, retries=5, max_block_ms=10000,
                             request_timeout_ms=10000, batch_size=256 * 1024,
                             max_request_size=16 * 1024 * 1024, bootstrap_timeout_ms=5000)
    except (KafkaError, OSError) as exc:
        raise SinkError(f"cannot create a Kafka producer for {bootstrap_servers}: {exc}") from exc


def flush(producer, *, timeout_s: float = 30.0) -> None:
    """Wait until everything sent is acknowledged.

    Raises
    ------
    SinkError
    """
    from kafka.errors import KafkaError

    try:
        producer.flush(timeout=timeout_s)
    except (KafkaError, OSError) as exc:
        raise SinkError(f"Kafka flush failed: {exc}") from exc


class RankPublisher:
    """Publishes rank changes of each batch to a Kafka topic.

    Parameters
    ----------
    producer : kafka.KafkaProducer
    topic : str
    threshold : float
        A vertex is published when ``|p - p_published| > threshold``.
    top_k : int
        Size of the top-k message (0: none).
    top_k_every : int
        Send the top-k message every this many batches (0: never).
    """

    def __init__(self, producer, topic: str, *, threshold: float = 1e-6, top_k: int = 20, top_k_every: int = 10):
        self.producer = producer
        self.topic = topic
        self.threshold = float(threshold)
        self.top_k = int(top_k)
        self.top_k_every = int(top_k_every)
        self._published = np.zeros(0, dtype=np.float64)
        self.sent = {"vertex": 0, "top_k": 0}

    def prime(self, p) -> None:
        """Take ``p`` as already published (after a restore: only later moves are sent)."""
        self._published = np.array(p, dtype=np.float64, copy=True)

    def moved(self, p) -> np.ndarray:
        """Internal ids whose rank moved by more than the threshold (new vertices included)."""
        n_old = self._published.shape[0]
        if p.shape[0] > n_old:
            self._published = np.concatenate([self._published, np.zeros(p.shape[0] - n_old)])
        return np.flatnonzero(np.abs(p - self._published) > self.threshold)

    def publish(self, seq: int, ids, p, *, force_top_k: bool = False) -> dict:
        """Send the moved vertices of batch ``seq`` (and the top-k when due).

        Parameters
        ----------
        seq : int
        ids, p : ndarray
            External ids and ranks by internal id (``Engine.ranks()``).

        Returns
        -------
        dict
            Messages sent by kind.

        Raises
        ------
        SinkError
        """
        from kafka.errors import KafkaError

        idx = self.moved(p)
        headers = [("seq", str(seq).encode())]
        sent = {"vertex": 0, "top_k": 0}
        try:
            send = self.producer.send
            topic = self.topic
            vids = ids[idx].tolist()
            vals = p[idx].tolist()
            for v, r in zip(vids, vals):
                send(topic, key=_key(v),
                     value=b'{"seq":%d,"vertex":%s,"rank":%s}' % (seq, _json_vertex(v), repr(r).encode()),
                     headers=headers)
            sent["vertex"] = len(vids)
            if self.top_k and self.top_k_every and (seq % self.top_k_every == 0 or force_top_k) and p.shape[0]:
                k = min(self.top_k, p.shape[0])
                top = np.argpartition(-p, k - 1)[:k]
                top = top[np.lexsort((ids[top], -p[top]))]
                body = {"seq": int(seq), "k": int(k), "top": [[_vertex(ids[i]), float(p[i])] for i in top]}
                send(topic, key=TOP_K_KEY, value=json.dumps(body, ensure_ascii=False).encode(), headers=headers)
                sent["top_k"] = 1
        except (KafkaError, OSError) as exc:
            raise SinkError(f"publishing batch {seq} to {self.topic} failed: {exc}") from exc
        self._published[idx] = p[idx]
        for k, n in sent.items():
            self.sent[k] += n
        return sent


def _vertex(v):
    """A vertex id as a JSON value: an int, or the string id."""
    return v if isinstance(v, str) else int(v)


def _key(v) -> bytes:
    """A rank message's key: the vertex id as UTF-8 text."""
    return (v if isinstance(v, str) else str(int(v))).encode("utf-8")


_JSON_ESCAPE = re.compile(r'["\\\x00-\x1f\u2028\u2029]|[\ud800-\udfff]')


def _json_vertex(v) -> bytes:
    """A vertex id as JSON bytes (a string id is quoted; escaped by :mod:`json` only when it must be)."""
    if isinstance(v, str):
        if _JSON_ESCAPE.search(v):
            return json.dumps(v, ensure_ascii=False).encode("utf-8")
        return b'"%s"' % v.encode("utf-8")
    return b"%d" % v


class KafkaDeadLetters:
    """Sends rejected records to a dead-letter topic with their reason in headers."""

    def __init__(self, producer, topic: str):
        self.producer = producer
        self.topic = topic

    def send(self, bad) -> None:
        """Send one :class:`~connectors.records.BadRecord`.

        Raises
        ------
        SinkError
        """
        from kafka.errors import KafkaError

        headers = [
            ("reason", bad.reason.encode()),
            ("detail", bad.detail.encode("utf-8", "replace")[:1000]),
            ("topic", str(bad.topic).encode()),
            ("partition", str(bad.partition).encode()),
            ("offset", str(bad.offset).encode()),
        ]
        try:
            self.producer.send(self.topic, key=bad.key, value=bad.value, headers=headers)
        except (KafkaError, OSError) as exc:
            raise SinkError(f"dead-lettering to {self.topic} failed: {exc}") from exc

    def flush(self, *, timeout_s: float = 30.0) -> None:
        flush(self.producer, timeout_s=timeout_s)

    def close(self) -> None:
        pass
