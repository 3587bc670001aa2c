"""The Kafka clients' statistics of a benchmark run, summed up over its measured window.

The daemon writes its consumer's and producer's condensed librdkafka statistics to its applied
log (``--kafka-stats-interval``, ``kafka_stats`` events) and each bench producer to a JSON-lines
file (``examples/produce_edges.py --stats``); both come from :mod:`connectors.kafka_stats`.
:func:`summarize` reduces them to the figures that tell where records wait:

- ``consumer`` (the daemon's): fetch requests per second, records per fetch, the fetch round
  trip (broker wait included; mean of the per-second averages, and the largest p99), the
  records per second of each partition and the most records waiting in the client's fetch queue;
- ``producers`` (the bench's, summed): produce requests per second, messages per record batch
  (each batch is one object in Tansu's store), the time from ``produce()`` to the request
  (``int_latency``, linger included) and the produce round trip;
- ``rank_producer`` (the daemon's): its produce round trip.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def read_json_lines(path: Path) -> list:
    """The JSON lines of ``path`` (a producer's ``--stats`` file, a daemon's applied log), a torn
    last line left out; empty when the file does not exist."""
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return out


def _brokers(s: dict) -> list:
    return list(s.get("brokers", {}).values())


def _req(s: dict, kind: str) -> int:
    return sum(b.get("req", {}).get(kind, 0) for b in _brokers(s))


def _windows(stats: list, key: str) -> tuple:
    """Mean of the interval averages and the largest p99 of a broker window (ms), or Nones."""
    w = [b[key] for s in stats for b in _brokers(s) if b.get(key)]
    if not w:
        return None, None
    return round(float(np.mean([x[0] for x in w])), 2), round(float(max(x[2] for x in w)), 2)


def _in_window(stats: list, t0: float, t1: float) -> list:
    return [s for s in stats if t0 <= s.get("t", 0) <= t1]


def summarize_consumer(stats: list, topic: str) -> dict | None:
    """See the module docstring; ``stats``: the consumer's condensed statistics in the window."""
    if len(stats) < 2:
        return None
    a, b = stats[0], stats[-1]
    dt = b["t"] - a["t"]
    fetches = _req(b, "Fetch") - _req(a, "Fetch")
    records = (b.get("rxmsgs") or 0) - (a.get("rxmsgs") or 0)
    parts_a = a["topics"].get(topic, {}).get("partitions", {})
    parts_b = b["topics"].get(topic, {}).get("partitions", {})
    per_part = {p: round((v.get("rxmsgs", 0) - parts_a.get(p, {}).get("rxmsgs", 0)) / dt)
                for p, v in sorted(parts_b.items(), key=lambda kv: int(kv[0]))}
    queued = [sum(v.get("fetchq_cnt", 0) for v in s["topics"].get(topic, {}).get("partitions", {}).values())
              for s in stats]
    rtt_avg, rtt_p99 = _windows(stats, "rtt_ms")
    return {"fetches_per_s": round(fetches / dt, 1), "records_per_s": round(records / dt),
            "records_per_fetch": round(records / fetches, 1) if fetches else None,
            "fetch_rtt_ms_avg": rtt_avg, "fetch_rtt_ms_p99_max": rtt_p99,
            "partition_records_per_s": per_part, "fetch_queue_max": max(queued) if queued else None,
            "intervals": len(stats)}


def summarize_producers(per_producer: list, topic: str) -> dict | None:
    """See the module docstring; ``per_producer``: each producer's condensed statistics in the window."""
    per_producer = [s for s in per_producer if len(s) >= 2]
    if not per_producer:
        return None
    requests, batch_avgs = 0.0, []
    for stats in per_producer:
        a, b = stats[0], stats[-1]
        requests += (_req(b, "Produce") - _req(a, "Produce")) / (b["t"] - a["t"])
        batch_avgs += [s["topics"][topic]["batchcnt"][0] for s in stats
                       if s["topics"].get(topic, {}).get("batchcnt")]
    flat = [s for stats in per_producer for s in stats]
    int_avg, int_p99 = _windows(flat, "int_latency_ms")
    rtt_avg, rtt_p99 = _windows(flat, "rtt_ms")
    return {"producers": len(per_producer), "produce_requests_per_s": round(requests, 1),
            "messages_per_batch_avg": round(float(np.mean(batch_avgs)), 1) if batch_avgs else None,
            "queue_latency_ms_avg": int_avg, "queue_latency_ms_p99_max": int_p99,
            "produce_rtt_ms_avg": rtt_avg, "produce_rtt_ms_p99_max": rtt_p99,
            "unacknowledged_max": max((s.get("msg_cnt") or 0) for s in flat)}


def summarize(events: list, producer_files: list, topic: str, t0: float, t1: float) -> dict:
    """The ``client_stats`` entry of a run: the daemon's consumer and rank producer (from its
    applied log ``events``) and the bench producers (their ``--stats`` files) over ``[t0, t1]``."""
    mine = [e for e in events if e.get("event") == "kafka_stats"]
    consumer = _in_window([e for e in mine if e.get("client") == "consumer"], t0, t1)
    ranks = _in_window([e for e in mine if e.get("client") == "producer"], t0, t1)
    rank_rtt = _windows(ranks, "rtt_ms")
    return {"consumer": summarize_consumer(consumer, topic),
            "producers": summarize_producers([_in_window(read_json_lines(Path(f)), t0, t1)
                                              for f in producer_files], topic),
            "rank_producer_rtt_ms": list(rank_rtt) if rank_rtt[0] is not None else None}


def print_table(results: list) -> None:
    """A table of the clients' figures per run (runs without statistics left out)."""
    rows = [r for r in results if r.get("client_stats") and (r["client_stats"]["consumer"]
                                                              or r["client_stats"]["producers"])]
    if not rows:
        return
    print(f"\n{'Kafka clients over the window (librdkafka statistics)':44} {'fetch/s':>8} {'rec/fetch':>9} "
          f"{'fetch rtt':>14} {'fetchq':>7} {'prod req/s':>10} {'msg/batch':>9} {'prod queue':>14} "
          f"{'prod rtt':>14} {'rec/s per partition'}")
    for r in rows:
        c, p = r["client_stats"]["consumer"] or {}, r["client_stats"]["producers"] or {}

        def pair(x, y):
            return f"{x if x is not None else '-'}/{y if y is not None else '-'}"

        print(f"{r['tag']:44} {c.get('fetches_per_s', '-'):>8} {c.get('records_per_fetch') or '-':>9} "
              f"{pair(c.get('fetch_rtt_ms_avg'), c.get('fetch_rtt_ms_p99_max')):>14} "
              f"{c.get('fetch_queue_max', '-'):>7} {p.get('produce_requests_per_s', '-'):>10} "
              f"{p.get('messages_per_batch_avg') or '-':>9} "
              f"{pair(p.get('queue_latency_ms_avg'), p.get('queue_latency_ms_p99_max')):>14} "
              f"{pair(p.get('produce_rtt_ms_avg'), p.get('produce_rtt_ms_p99_max')):>14} "
              f"{' '.join(str(v) for v in (c.get('partition_records_per_s') or {}).values())}")
    print("(fetch rtt and prod queue/rtt: ms, mean of the per-second averages / largest per-second p99; fetchq: "
          "most records in the consumer's local queue; msg/batch: messages per record batch the producers sent)")
