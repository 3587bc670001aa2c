"""Decoding a fetch of single-edge JSON messages: the compiled scan, pyarrow's JSON reader, one by one.

Builds ``--messages`` messages like ``{"op":"+","src":12,"dst":34}`` (the shape
``examples/produce_edges.py`` writes) and times, per message, over ``--repeat`` fetches:

- ``decode_values`` (what the daemon runs: the compiled scan, ``connectors/json_scan.py``);
- pyarrow's JSON reader on the newline-joined fetch (what ``decode_values`` used before the scan,
  and still uses for JSON objects outside the scan's strict form);
- ``parse_message`` on each message alone (the per-message path of rejected records)::

    python benchmarks/decode.py --messages 5000 --repeat 200
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from connectors.batch_decode import decode_values  # noqa: E402
from connectors.records import parse_message  # noqa: E402


def per_message_us(fn, n_messages: int, repeat: int) -> float:
    fn()  # compile / warm up
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat / n_messages * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=5000, help="messages per fetch")
    ap.add_argument("--repeat", type=int, default=200, help="fetches timed")
    args = ap.parse_args(argv)
    import pyarrow as pa
    import pyarrow.json as pj

    rng = np.random.default_rng(0)
    n = args.messages
    src, dst, ins = rng.integers(0, 2_000_000, n), rng.integers(0, 2_000_000, n), rng.random(n) < 0.8
    values = [b'{"op":"%s","src":%d,"dst":%d}' % (b"+" if i else b"-", s, d)
              for s, d, i in zip(src.tolist(), dst.tolist(), ins.tolist())]
    got = decode_values(values, id_type="int")
    assert got.vectorized == n and np.array_equal(got.src, src) and np.array_equal(got.insert, ins)
    schema = pa.schema([("src", pa.int64()), ("dst", pa.int64())])

    def arrow_reader():
        pj.read_json(io.BytesIO(b"\n".join(values)), read_options=pj.ReadOptions(block_size=1 << 20),
                     parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer"))

    rows = [("decode_values (compiled scan)", per_message_us(lambda: decode_values(values, id_type="int"), n,
                                                            args.repeat)),
            ("pyarrow.json.read_json of the joined fetch", per_message_us(arrow_reader, n, args.repeat)),
            ("parse_message, one by one", per_message_us(lambda: [parse_message(v) for v in values], n,
                                                         max(1, args.repeat // 20)))]
    print(f"{'decoder (' + str(n) + ' messages a fetch)':48} {'us/message':>11} {'messages/s':>12}")
    for name, us in rows:
        print(f"{name:48} {us:>11.3f} {1e6 / us:>12,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
