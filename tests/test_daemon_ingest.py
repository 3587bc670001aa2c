"""The ingest stage hands fetches to the loop in fetch order, whichever thread decoded them."""

from __future__ import annotations

import threading
import time

import pytest

from streamrank.daemon.ingest import Ingest
from streamrank.daemon.metrics import DaemonMetrics
from streamrank.daemon.signals import ShutdownFlag
from streamrank.ids.kinds import IdTypeLock


class FakeFetch(list):
    """A fetch: the numbers of its records."""


class SlowSource:
    """``fetch`` hands out fetches 0, 1, 2, ... of three records; ``decode`` of an even fetch takes
    longer than that of the next one, so a pool finishes them out of order."""

    max_poll_records = 3

    def __init__(self, fetches: int, kind: str | None = "int"):
        self.fetches = fetches
        self.next = 0
        self.id_lock = IdTypeLock("auto")
        if kind:
            self.id_lock.admit(kind)
        self.decoded_on = {}
        self.kind_at_decode = {}

    def fetch(self, timeout_s, *, max_records=None):
        if self.next >= self.fetches:
            time.sleep(timeout_s)
            return FakeFetch()
        k = self.next
        self.next += 1
        return FakeFetch([3 * k, 3 * k + 1, 3 * k + 2])

    def decode(self, records):
        k = records[0] // 3
        self.kind_at_decode[k] = self.id_lock.kind
        if self.id_lock.kind is None:
            self.id_lock.admit("int")  # the first accepted record fixes an auto stream's kind
        time.sleep(0.03 if k % 2 == 0 else 0.0)
        self.decoded_on[k] = threading.current_thread().name
        return [("item", n) for n in records]


def collect(ingest, n_items, timeout_s=10.0):
    got = []
    deadline = time.monotonic() + timeout_s
    while len(got) < n_items and time.monotonic() < deadline:
        got += ingest.get(0.2)
    return got


@pytest.mark.parametrize("decode_threads", [0, 1, 3])
def test_items_come_in_fetch_order(decode_threads):
    src = SlowSource(12)
    ing = Ingest(src, shutdown=ShutdownFlag(), metrics=DaemonMetrics(), decode_threads=decode_threads)
    ing.start()
    try:
        got = collect(ing, 36)
    finally:
        ing.stop()
    assert got == [("item", n) for n in range(36)]
    on_pool = {k for k, name in src.decoded_on.items() if name.startswith("streamrank-decode")}
    assert on_pool == (set(range(12)) if decode_threads else set())


def test_undetected_id_kind_is_decoded_in_order_on_the_ingest_thread():
    src = SlowSource(6, kind=None)
    ing = Ingest(src, shutdown=ShutdownFlag(), metrics=DaemonMetrics(), decode_threads=2)
    ing.start()
    try:
        got = collect(ing, 18)
    finally:
        ing.stop()
    assert got == [("item", n) for n in range(18)]
    assert src.kind_at_decode[0] is None and src.decoded_on[0] == "streamrank-ingest"
    assert all(src.kind_at_decode[k] == "int" for k in range(1, 6))


def test_a_decode_error_reaches_the_loop():
    class Broken(SlowSource):
        def decode(self, records):
            raise RuntimeError("decoder bug")

    ing = Ingest(Broken(2), shutdown=ShutdownFlag(), metrics=DaemonMetrics(), decode_threads=2)
    ing.start()
    try:
        with pytest.raises(RuntimeError, match="decoder bug"):
            collect(ing, 3)
    finally:
        ing.stop()
