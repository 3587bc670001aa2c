"""librdkafka's statistics (confluent-kafka's ``stats_cb``), condensed to what explains a stall.

librdkafka emits, every ``statistics.interval.ms``, one JSON document per client (tens of
kilobytes with a few partitions). :func:`condense` keeps, per broker, the request round trip
(``rtt``: for a consumer the fetch's, broker wait included), a producer's internal queue latency
(``int_latency``: from ``produce()`` to the request, linger included), the requests sent so far
by kind; per topic a producer's batch sizes in messages (``batchcnt``: one broker-side record
batch each); and per partition the local fetch queue and positions of a consumer or the queues
of a producer. Windowed figures (``rtt``, ``int_latency``, ``batchcnt``, ``batchsize``) are over
the last interval; counters are cumulative. Times are in milliseconds.

:func:`stats_config` gives the client settings that turn the callback on.
"""

from __future__ import annotations

import json
import logging
import time

log = logging.getLogger(__name__)

#: Per-partition counters kept for a consumer / a producer (names of librdkafka's statistics).
CONSUMER_PARTITION_FIELDS = ("fetchq_cnt", "fetchq_size", "fetch_state", "next_offset", "app_offset",
                             "hi_offset", "rxmsgs", "rxbytes")
PRODUCER_PARTITION_FIELDS = ("msgq_cnt", "xmit_msgq_cnt", "msgs_inflight", "txmsgs", "txbytes")


def stats_config(interval_s: float, on_stats) -> dict:
    """confluent-kafka settings that call ``on_stats(condensed)`` every ``interval_s`` seconds
    (from the thread that polls the client); ``{}`` when ``interval_s`` is 0."""
    if not interval_s:
        return {}
    if interval_s < 0.001:
        raise ValueError(f"the statistics interval must be 0 (off) or >= 1 ms, got {interval_s!r} s")

    def callback(raw: str) -> None:
        try:
            on_stats(condense(raw))
        except Exception as exc:  # raised here, it would surface from the client's poll or consume
            log.warning("Kafka client statistics not recorded: %s: %s", type(exc).__name__, exc)

    return {"statistics.interval.ms": max(1, int(round(interval_s * 1000))), "stats_cb": callback}


def _window(w: dict | None, scale: float) -> list | None:
    """``[avg, p50, p99, max]`` of a librdkafka window, scaled; ``None`` when it saw nothing."""
    if not w or not w.get("cnt"):
        return None
    return [round(w.get(k, 0) * scale, 3) for k in ("avg", "p50", "p99", "max")]


def condense(raw) -> dict:
    """The parts of one librdkafka statistics document (``str`` or parsed ``dict``) listed in the
    module docstring, with ``t`` the wall-clock time it was condensed (seconds)."""
    s = json.loads(raw) if isinstance(raw, (str, bytes)) else raw
    kind = s.get("type", "")
    out = {"t": round(time.time(), 3), "client": kind, "name": s.get("name"), "msg_cnt": s.get("msg_cnt"),
           "rxmsgs": s.get("rxmsgs"), "txmsgs": s.get("txmsgs"), "brokers": {}, "topics": {}}
    for b in s.get("brokers", {}).values():
        if b.get("nodeid", -1) < 0:  # bootstrap and internal entries
            continue
        out["brokers"][str(b["nodeid"])] = {
            "state": b.get("state"), "rtt_ms": _window(b.get("rtt"), 1e-3),
            "int_latency_ms": _window(b.get("int_latency"), 1e-3),
            "outbuf_cnt": b.get("outbuf_cnt"), "waitresp_cnt": b.get("waitresp_cnt"),
            "req": {k: v for k, v in b.get("req", {}).items() if k in ("Fetch", "Produce") and v},
            "rx": b.get("rx"), "tx": b.get("tx")}
    fields = CONSUMER_PARTITION_FIELDS if kind == "consumer" else PRODUCER_PARTITION_FIELDS
    for name, t in s.get("topics", {}).items():
        parts = {p: {f: v[f] for f in fields if f in v} for p, v in t.get("partitions", {}).items() if p != "-1"}
        entry = {"partitions": parts}
        if kind == "producer":
            entry["batchcnt"] = _window(t.get("batchcnt"), 1.0)
            entry["batchsize"] = _window(t.get("batchsize"), 1.0)
        out["topics"][name] = entry
    return out
