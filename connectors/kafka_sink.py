"""Kafka sinks: rank updates keyed by vertex id, periodic top-k, and dead letters.

Rank-update messages (topic ``publish_topic``), by ``publish_format``:

- ``"keyed"`` (default): key ``b"<vertex id>"`` (the id as text: digits, or the string id in
  UTF-8), value JSON ``{"seq": S, "vertex": V, "rank": R}`` (``V`` a JSON number, or a JSON string
  for string ids) for each vertex whose rank moved by more than the threshold since it was last
  published (new vertices included); compacted topics keep the latest rank per vertex;
- ``"arrow"``: one message per batch, key ``b"__batch__"``, value an Arrow IPC stream with columns
  ``vertex`` (int64, or string for string ids) and ``rank`` (float64) holding all those vertices,
  and schema metadata ``seq``; for consumers that want throughput;
- ``"both"``: both of the above;
- and always key ``b"__top_k__"``, value JSON ``{"seq": S, "k": K, "top": [[vertex, rank], ...]}``
  every ``top_k_every`` batches (string ids as JSON strings).

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

from streamrank.errors import InvalidArgumentError
from streamrank.ids.kinds import vertex_column

log = logging.getLogger(__name__)

TOP_K_KEY = b"__top_k__"
BATCH_KEY = b"__batch__"
PUBLISH_FORMATS = ("keyed", "arrow", "both")


def encode_rank_batch(seq: int, vertex, rank) -> bytes:
    """The ``"arrow"`` publish format: an Arrow IPC stream of ``vertex``/``rank`` with ``seq`` metadata."""
    import pyarrow as pa

    table = pa.table({"vertex": vertex_column(vertex), "rank": np.asarray(rank, dtype=np.float64)})
    table = table.replace_schema_metadata({"seq": str(int(seq))})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def decode_rank_batch(value: bytes):
    """``(seq, vertex, rank)`` of a message written by :func:`encode_rank_batch` (string ids: an
    ``object`` array of ``str``)."""
    import pyarrow as pa

    table = pa.ipc.open_stream(pa.BufferReader(value)).read_all()
    seq = int(table.schema.metadata[b"seq"])
    return seq, table.column("vertex").to_numpy(zero_copy_only=False), table.column("rank").to_numpy()


class MovedRanks:
    """Which vertices' ranks moved by more than ``threshold`` since they were last sent.

    The publishing rule of the daemon's sinks, usable by any sink: :meth:`moved` gives the
    internal ids to send (new vertices included: their last sent rank is 0), :meth:`mark`
    records what was sent once it was.

    Parameters
    ----------
    threshold : float
        A vertex is due when ``|p - p_sent| > threshold``.
    """

    def __init__(self, threshold: float = 1e-6):
        self.threshold = float(threshold)
        self._sent = np.zeros(0, dtype=np.float64)

    def prime(self, p) -> None:
        """Take ``p`` as already sent (after a restore: only later moves are due)."""
        self._sent = np.array(p, dtype=np.float64, copy=True)

    def moved(self, p, *, threshold: float | None = None) -> np.ndarray:
        """Internal ids whose rank moved by more than the threshold (or ``threshold``)."""
        n_old = self._sent.shape[0]
        if p.shape[0] > n_old:
            self._sent = np.concatenate([self._sent, np.zeros(p.shape[0] - n_old)])
        t = self.threshold if threshold is None else threshold
        return np.flatnonzero(np.abs(p - self._sent) > t)

    def mark(self, idx, p) -> None:
        """Record the ranks of ``idx`` as sent."""
        self._sent[idx] = p[idx]


class RankPublisher:
    """Publishes rank changes of each batch to a Kafka topic.

    Parameters
    ----------
    producer : KafkaPythonProducer or ConfluentProducer
        From :func:`connectors.kafka_clients.make_producer`.
    topic : str
    threshold : float
        A vertex is published when ``|p - p_published| > threshold``.
    top_k : int
        Size of the top-k message (0: none).
    top_k_every : int
        Send the top-k message every this many batches (0: never).
    publish_format : {"keyed", "arrow", "both"}
        Per-vertex keyed messages, one Arrow message per batch, or both.
    """

    def __init__(self, producer, topic: str, *, threshold: float = 1e-6, top_k: int = 20, top_k_every: int = 10,
                 publish_format: str = "keyed"):
        if publish_format not in PUBLISH_FORMATS:
            raise InvalidArgumentError(f"publish format must be one of {PUBLISH_FORMATS}, got {publish_format!r}")
        self.publish_format = publish_format
        self.producer = producer
        self.topic = topic
        self.threshold = float(threshold)
        self.top_k = int(top_k)
        self.top_k_every = int(top_k_every)
        self._moved = MovedRanks(threshold)
        self.sent = {"vertex": 0, "batch": 0, "top_k": 0}

    def prime(self, p) -> None:
        """Take ``p`` as already published (after a restore: only later moves are sent)."""
        self._moved.prime(p)

    def moved(self, p) -> np.ndarray:
        """Internal ids whose rank moved by more than the threshold (new vertices included)."""
        return self._moved.moved(p)

    def publish(self, seq: int, ids, p, *, force_top_k: bool = False) -> dict:
        """Send the moved vertices of batch ``seq`` (and the top-k when due), found by a scan of
        every vertex on the host (the daemon finds them on the engine's backend and calls :meth:`send`).

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
        connectors.kafka_clients.SinkError
        """
        idx = self.moved(p)
        top = None
        if self.top_k_due(seq, force=force_top_k) and p.shape[0]:
            k = min(self.top_k, p.shape[0])
            top = np.argpartition(-p, k - 1)[:k]
            top = top[np.lexsort((ids[top], -p[top]))]
            top = (ids[top], p[top])
        sent = self.send(seq, ids[idx], p[idx], top=top)
        self._moved.mark(idx, p)
        return sent

    def top_k_due(self, seq: int, *, force: bool = False) -> bool:
        """Whether batch ``seq`` sends the top-k message."""
        return bool(self.top_k and self.top_k_every and (seq % self.top_k_every == 0 or force))

    def send(self, seq: int, vertex, rank, *, top=None) -> dict:
        """Send the rank updates of batch ``seq``: exactly the vertices given (the moved ones), as
        keyed messages, one Arrow message, or both (none when ``vertex`` is empty), and the top-k
        message when ``top`` is given.

        The keyed messages go to the producer in one ``send_many`` call (one ``send`` each for a
        producer without it).

        Parameters
        ----------
        seq : int
        vertex, rank : ndarray
            External ids and published ranks of the vertices to send.
        top : tuple of ndarray, optional
            ``(external ids, ranks)`` of the best vertices, in order (rank descending, then id).

        Returns
        -------
        dict
            Messages sent by kind.

        Raises
        ------
        connectors.kafka_clients.SinkError
        """
        vertex, rank = np.asarray(vertex), np.asarray(rank)
        if vertex.shape[0:1] != rank.shape[0:1]:
            raise InvalidArgumentError(f"send: {vertex.shape} vertices but {rank.shape} ranks")
        headers = [("seq", str(seq).encode())]
        sent = {"vertex": 0, "batch": 0, "top_k": 0}
        send = self.producer.send
        topic = self.topic
        if self.publish_format in ("keyed", "both"):
            keys, values = keyed_messages(seq, vertex, rank)
            send_many = getattr(self.producer, "send_many", None)
            if send_many is not None:
                send_many(topic, keys, values, headers)
            else:
                for k, v in zip(keys, values):
                    send(topic, key=k, value=v, headers=headers)
            sent["vertex"] = len(keys)
        if self.publish_format in ("arrow", "both") and vertex.shape[0]:
            send(topic, key=BATCH_KEY, value=encode_rank_batch(seq, vertex, rank), headers=headers)
            sent["batch"] = 1
        if top is not None:
            t_ids, t_p = top
            body = {"seq": int(seq), "k": int(len(t_p)), "top": [[_vertex(v), float(r)] for v, r in zip(t_ids, t_p)]}
            send(topic, key=TOP_K_KEY, value=json.dumps(body, ensure_ascii=False).encode(), headers=headers)
            sent["top_k"] = 1
        for k, n in sent.items():
            self.sent[k] += n
        return sent


def keyed_messages(seq: int, ids, ranks) -> tuple:
    """Keys and values of the ``"keyed"`` rank messages of batch ``seq``, one per vertex, in order.

    Parameters
    ----------
    seq : int
    ids : ndarray
        External ids of the vertices (an integer dtype, or an object array of ``str``).
    ranks : ndarray
        Their ranks.

    Returns
    -------
    keys, values : list of bytes
        ``keys[i]`` is ``ids[i]`` as UTF-8 text, ``values[i]`` the JSON
        ``{"seq":S,"vertex":V,"rank":R}`` with ``R`` the ``repr`` of the rank as a Python float.

    Integer ids and string ids that need no JSON escaping are formatted by one C-level ``%`` per
    message (``%r`` of a float is its ``repr``); anything else (an id to escape, an unexpected
    type) by the per-vertex helpers. Both give the same bytes.

    Raises
    ------
    InvalidArgumentError
        When ``ids`` and ``ranks`` differ in length.
    """
    ids = np.asarray(ids)
    ranks = np.asarray(ranks)
    if ids.shape[0:1] != ranks.shape[0:1]:
        raise InvalidArgumentError(f"keyed_messages: {ids.shape} ids but {ranks.shape} ranks")
    seq = int(seq)
    vids = ids.tolist()
    vals = ranks.tolist()
    if ids.dtype.kind in "iu":
        keys = list(map(b"%d".__mod__, vids))
        return keys, list(map((b'{"seq":%d,"vertex":%%d,"rank":%%r}' % seq).__mod__, zip(vids, vals)))
    try:
        plain = _JSON_ESCAPE.search("".join(vids)) is None  # each match is one character: none in any id
    except TypeError:  # not all str
        plain = False
    if plain:
        keys = list(map(str.encode, vids))  # UTF-8, strict
        return keys, list(map((b'{"seq":%d,"vertex":"%%s","rank":%%r}' % seq).__mod__, zip(keys, vals)))
    keys = [_key(v) for v in vids]
    return keys, [b'{"seq":%d,"vertex":%s,"rank":%s}' % (seq, _json_vertex(v), repr(r).encode())
                  for v, r in zip(vids, vals)]


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

    #: Sent through the daemon's producer: its acknowledgements (``mark``/``wait_acked``) cover these.
    acked_by_producer = True

    def __init__(self, producer, topic: str):
        self.producer = producer
        self.topic = topic

    def send(self, bad) -> None:
        """Send one :class:`~connectors.records.BadRecord`.

        Raises
        ------
        connectors.kafka_clients.SinkError
        """
        headers = [
            ("reason", bad.reason.encode()),
            ("detail", bad.detail.encode("utf-8", "replace")[:1000]),
            ("topic", str(bad.topic).encode()),
            ("partition", str(bad.partition).encode()),
            ("offset", str(bad.offset).encode()),
        ]
        self.producer.send(self.topic, key=bad.key, value=bad.value, headers=headers)

    def flush(self, *, timeout_s: float = 30.0) -> None:
        self.producer.flush(timeout_s=timeout_s)

    def close(self) -> None:
        pass
