"""Query latency of the daemon's HTTP API while it ingests, and what the queries cost the ingest.

Writes a synthetic edge stream (uniform random endpoints; inserts) as CSV files, then runs
``streamrank serve --input-dir`` over them twice from a fresh checkpoint directory: once without
queries and once with ``--qps`` queries per second (half ``GET /ranks/top?k=100``, half
``GET /ranks/{vertex}`` of random known vertices, open loop on keep-alive connections), plus a
few ``GET /ppr`` queries at the end. Prints a table: p50/p99 per endpoint and the ingest rate
(edges per second between the first and the last applied batch, from the applied log) with and
without queries.

    python benchmarks/http_queries.py --edges 3000000 --vertices 200000 --qps 200
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_stream(directory: str, *, edges: int, vertices: int, per_file: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    os.makedirs(directory, exist_ok=True)
    for k in range(0, edges, per_file):
        m = min(per_file, edges - k)
        e = rng.integers(0, vertices, size=(m, 2))
        path = os.path.join(directory, f"e{k // per_file:06d}.csv")
        np.savetxt(path, e, fmt="%d", delimiter=",", header="src,dst", comments="")


class Daemon:
    def __init__(self, input_dir: str, work: str, *, batch_size: int, port: int | None):
        self.work = work
        self.log = os.path.join(work, "applied.jsonl")
        args = [sys.executable, "-m", "streamrank", "--log-level", "WARNING", "serve", "--input-dir", input_dir,
                "--checkpoint-dir", os.path.join(work, "ckpt"), "--batch-size", str(batch_size),
                "--checkpoint-every", "1000000", "--checkpoint-interval", "0", "--applied-log", self.log,
                "--warm-up", "on", "--device", "cpu"]
        if port is not None:
            args += ["--http-port", str(port)]
        env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.out = open(os.path.join(work, "daemon.log"), "wb")
        self.proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=self.out, stderr=subprocess.STDOUT)

    def events(self) -> list:
        if not os.path.exists(self.log):
            return []
        with open(self.log) as fh:
            lines = fh.read().split("\n")[:-1]
        return [json.loads(x) for x in lines if x.strip()]

    def applied(self) -> int:
        return sum(e["edges"] for e in self.events() if e["event"] == "apply")

    def first_apply(self) -> bool:
        return any(e["event"] == "apply" for e in self.events())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(120)
        self.out.close()


def ingest_rate(events: list) -> tuple:
    """(edges, seconds, edges/s) between the first and the last applied batch."""
    ap = [e for e in events if e["event"] == "apply"]
    edges = sum(e["edges"] for e in ap[1:])  # the first batch's edges arrived before its time stamp
    secs = ap[-1]["t"] - ap[0]["t"]
    return edges, secs, edges / secs


class Querier:
    """Open-loop queries at ``qps`` per second over ``threads`` keep-alive connections."""

    def __init__(self, port: int, qps: float, *, vertices: int, threads: int = 4):
        self.port, self.qps, self.vertices = port, qps, vertices
        self.lat = {"top100": [], "vertex": [], "errors": 0}
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i, threads), daemon=True) for i in range(threads)]

    def start(self) -> "Querier":
        for t in self._threads:
            t.start()
        return self

    def _run(self, i: int, n: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        rng = random.Random(i)
        period = n / self.qps
        nxt = time.perf_counter() + period * i / n
        k = i
        while not self._stop.is_set():
            now = time.perf_counter()
            if now < nxt:
                time.sleep(nxt - now)
            nxt += period
            kind = "top100" if k % 2 == 0 else "vertex"
            k += 1
            path = "/ranks/top?k=100" if kind == "top100" else f"/ranks/{rng.randrange(self.vertices)}"
            t0 = time.perf_counter()
            conn.request("GET", path)
            r = conn.getresponse()
            r.read()
            dt = time.perf_counter() - t0
            if r.status == 200 or (kind == "vertex" and r.status == 404):
                self.lat[kind].append(dt * 1e3)
            else:
                self.lat["errors"] += 1
        conn.close()

    def stop(self) -> dict:
        self._stop.set()
        for t in self._threads:
            t.join(30)
        return self.lat


def ppr_latency(port: int, vertices: int, *, queries: int, method: str) -> list:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    rng = random.Random(7)
    out = []
    for _ in range(queries):
        conn.request("GET", f"/ppr?seed={rng.randrange(vertices)}&k=20&method={method}")
        t0 = time.perf_counter()
        r = conn.getresponse()
        body = json.loads(r.read())
        out.append(((time.perf_counter() - t0) * 1e3, body.get("elapsed_ms")))
    return out


def pct(xs, q):
    return float(np.percentile(xs, q)) if xs else float("nan")


def run(args, *, queries: bool, input_dir: str, work: str):
    os.makedirs(work, exist_ok=True)
    port = free_port()
    d = Daemon(input_dir, work, batch_size=args.batch_size, port=port)
    try:
        while not d.first_apply():
            if d.proc.poll() is not None:
                raise SystemExit(f"daemon exited: see {work}/daemon.log")
            time.sleep(0.01)
        q = Querier(port, args.qps, vertices=args.vertices).start() if queries else None
        while d.applied() < args.edges:
            time.sleep(0.05)
        lat = q.stop() if q else None
        ppr = {}
        if queries:
            for m in args.ppr_methods.split(","):
                ppr[m] = ppr_latency(port, args.vertices, queries=args.ppr_queries, method=m)
            if args.screenshot:
                screenshot(port, args.screenshot)
        return ingest_rate(d.events()), lat, ppr
    finally:
        d.stop()


def screenshot(port: int, path: str) -> None:
    from selenium import webdriver

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,860"):
        opts.add_argument(a)
    drv = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=shutil.which("chromedriver")))
    try:
        drv.get(f"http://127.0.0.1:{port}/")
        time.sleep(2.5)
        drv.save_screenshot(path)
    finally:
        drv.quit()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--edges", type=int, default=3_000_000)
    p.add_argument("--vertices", type=int, default=200_000)
    p.add_argument("--batch-size", type=int, default=10_000)
    p.add_argument("--qps", type=float, default=200.0)
    p.add_argument("--ppr-queries", type=int, default=20)
    p.add_argument("--ppr-methods", default="push,power")
    p.add_argument("--screenshot", metavar="PNG", help="also save a screenshot of the live page (needs selenium)")
    args = p.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="http-bench-")
    try:
        write_stream(os.path.join(tmp, "in"), edges=args.edges, vertices=args.vertices, per_file=args.batch_size)
        base, _, _ = run(args, queries=False, input_dir=os.path.join(tmp, "in"), work=os.path.join(tmp, "a"))
        loaded, lat, ppr = run(args, queries=True, input_dir=os.path.join(tmp, "in"), work=os.path.join(tmp, "b"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"# {args.edges} edges over {args.vertices} vertices, batches of {args.batch_size}, CPU, "
          f"{os.cpu_count()} cores; {args.qps:g} queries/s while ingesting")
    print(f"{'endpoint':<24}{'queries':>9}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for name, label in (("top100", "GET /ranks/top?k=100"), ("vertex", "GET /ranks/{vertex}")):
        xs = lat[name]
        print(f"{label:<24}{len(xs):>9}{pct(xs, 50):>10.2f}{pct(xs, 99):>10.2f}{max(xs):>10.2f}")
    for m, rows in ppr.items():
        xs = [a for a, _ in rows]
        inner = [b for _, b in rows if b is not None]
        print(f"{'GET /ppr method=' + m:<24}{len(xs):>9}{pct(xs, 50):>10.2f}{pct(xs, 99):>10.2f}{max(xs):>10.2f}"
              f"   (compute p50 {pct(inner, 50):.2f} ms; after ingest)")
    print(f"errors: {lat['errors']}")
    drop = 100.0 * (1.0 - loaded[2] / base[2])
    print(f"ingest without queries: {base[2]:,.0f} edges/s ({base[0]} edges in {base[1]:.2f} s)")
    print(f"ingest with queries:    {loaded[2]:,.0f} edges/s ({loaded[0]} edges in {loaded[1]:.2f} s)  "
          f"drop {drop:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
