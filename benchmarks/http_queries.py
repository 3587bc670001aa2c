"""Query latency of the daemon's HTTP API while it ingests, and what the queries cost the ingest.

Writes a synthetic edge stream (uniform random endpoints; inserts) as CSV files, then runs
``streamrank serve --input-dir`` over them twice from a fresh checkpoint directory: once without
queries and once with ``--qps`` queries per second (half ``GET /ranks/top?k=100``, half
``GET /ranks/{vertex}`` of random known vertices, open loop on keep-alive connections), plus a
few ``GET /ppr`` queries at the end. Prints a table: p50/p99 per endpoint and the ingest rate
(edges per second between the first and the last applied batch, from the applied log) with and
without queries, and the CPU seconds the daemon's process and the HTTP server's process took.
With ``--runs N`` it does that N times (each run its own baseline, in the order base, queries,
then queries, base, and so on, so that a drift of the machine's speed cancels) and prints the
median over the runs; ``--json PATH`` writes every run's figures.

    python benchmarks/http_queries.py --edges 3000000 --vertices 200000 --qps 200
    python benchmarks/http_queries.py --edges 1000000 --vertices 100000 --runs 5 --json out.json
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
        self._read, self._events, self._counted, self._applied = 0, [], 0, 0
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
        """The applied log's events so far, read on from where the last call stopped (the client
        process should not spend its time, and its interpreter lock, re-reading the log)."""
        if not os.path.exists(self.log):
            return []
        with open(self.log, "rb") as fh:
            fh.seek(self._read)
            raw = fh.read()
        done = raw.rfind(b"\n") + 1  # a line the daemon is still writing waits for the next call
        self._read += done
        self._events += [json.loads(x) for x in raw[:done].split(b"\n") if x.strip()]
        return self._events

    def applied(self) -> int:
        ev = self.events()
        self._applied += sum(e["edges"] for e in ev[self._counted:] if e["event"] == "apply")
        self._counted = len(ev)
        return self._applied

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
        self.on = threading.Event()  # cleared: the threads pause (--alternate)
        self.on.set()
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
            if not self.on.is_set():
                self.on.wait(0.05)
                nxt = time.perf_counter() + period * i / n
                continue
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


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_pid(port: int) -> int | None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/status")
    body = json.loads(conn.getresponse().read())
    conn.close()
    return (body.get("http_server") or {}).get("pid")


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
        srv = server_pid(port)
        cpu0 = cpu_seconds(d.proc.pid), cpu_seconds(srv) if srv else 0.0
        while d.applied() < args.edges:
            time.sleep(0.05)
        lat = q.stop() if q else None
        cpu = {"daemon_s": cpu_seconds(d.proc.pid) - cpu0[0],
               "server_s": (cpu_seconds(srv) - cpu0[1]) if srv else None}
        ppr = {}
        if queries:
            for m in args.ppr_methods.split(","):
                ppr[m] = ppr_latency(port, args.vertices, queries=args.ppr_queries, method=m)
            if args.screenshot:
                screenshot(port, args.screenshot)
        return ingest_rate(d.events()), lat, ppr, cpu
    finally:
        d.stop()


def run_alternating(args, *, input_dir: str, work: str) -> dict:
    """One daemon over the stream, the queries on and off every ``args.alternate`` seconds: the
    ingest rate of the windows with queries against that of the windows without, in the same
    run (a change of the machine's load over minutes falls on both alike)."""
    os.makedirs(work, exist_ok=True)
    port = free_port()
    d = Daemon(input_dir, work, batch_size=args.batch_size, port=port)
    try:
        while not d.first_apply():
            if d.proc.poll() is not None:
                raise SystemExit(f"daemon exited: see {work}/daemon.log")
            time.sleep(0.01)
        q = Querier(port, args.qps, vertices=args.vertices)
        q.on.clear()
        q.start()
        windows, on = [], False  # (start, end, queries on)
        start = time.time()
        while d.applied() < args.edges:
            time.sleep(0.05)
            if time.time() - start >= args.alternate:
                windows.append((start, time.time(), on))
                on = not on
                q.on.set() if on else q.on.clear()
                start = time.time()
        lat = q.stop()
    finally:
        d.stop()
    applies = [e for e in d.events() if e["event"] == "apply"]
    edges = {True: 0, False: 0}
    secs = {True: 0.0, False: 0.0}
    for a, b, w_on in windows[1:]:  # the first window holds the start
        edges[w_on] += sum(e["edges"] for e in applies if a <= e["t"] < b)
        secs[w_on] += b - a
    rate = {k: edges[k] / secs[k] if secs[k] else float("nan") for k in (True, False)}
    return {"rate_queries": rate[True], "rate_none": rate[False], "drop_pct": 100.0 * (1 - rate[True] / rate[False]),
            "windows": len(windows) - 1, "seconds": secs[True] + secs[False], "errors": lat["errors"],
            "endpoints": {k: {"n": len(lat[k]), "p50": pct(lat[k], 50), "p99": pct(lat[k], 99), "max": max(lat[k])}
                          for k in ("top100", "vertex")}}


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
    p.add_argument("--runs", type=int, default=1, help="repeat the pair of runs; the summary is the median")
    p.add_argument("--json", metavar="PATH", help="write every run's figures as JSON")
    p.add_argument("--alternate", type=float, metavar="S",
                   help="instead: one daemon per run, queries on and off every S seconds, the drop from the "
                        "rates of those windows")
    args = p.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="http-bench-")
    runs = []
    try:
        write_stream(os.path.join(tmp, "in"), edges=args.edges, vertices=args.vertices, per_file=args.batch_size)
        for i in range(args.runs if args.alternate else 0):
            load0 = os.getloadavg()[0]
            r = run_alternating(args, input_dir=os.path.join(tmp, "in"), work=os.path.join(tmp, f"w{i}"))
            r["load"] = (load0, os.getloadavg()[0])
            runs.append(r)
            print(f"# run {i + 1}: {args.edges} edges over {args.vertices} vertices, batches of {args.batch_size}, "
                  f"CPU, {os.cpu_count()} cores; {args.qps:g} queries/s in every other {args.alternate:g} s window "
                  f"({r['windows']} windows); load average {r['load'][0]:.2f} -> {r['load'][1]:.2f}")
            for name, label in (("top100", "GET /ranks/top?k=100"), ("vertex", "GET /ranks/{vertex}")):
                e = r["endpoints"][name]
                print(f"{label:<24}{e['n']:>9}{e['p50']:>10.2f}{e['p99']:>10.2f}{e['max']:>10.2f}")
            print(f"errors: {r['errors']}; ingest in windows without queries {r['rate_none']:,.0f} edges/s, with "
                  f"queries {r['rate_queries']:,.0f} edges/s: drop {r['drop_pct']:.1f}%")
        for i in range(0 if args.alternate else args.runs):
            load0 = os.getloadavg()[0]
            for with_queries in ((False, True) if i % 2 == 0 else (True, False)):  # ABBA: drift cancels
                if with_queries:
                    loaded, lat, ppr, cpu = run(args, queries=True, input_dir=os.path.join(tmp, "in"),
                                                work=os.path.join(tmp, f"b{i}"))
                else:
                    base, _, _, cpu_base = run(args, queries=False, input_dir=os.path.join(tmp, "in"),
                                               work=os.path.join(tmp, f"a{i}"))
            r = summarize(base, loaded, lat, ppr, cpu, cpu_base, (load0, os.getloadavg()[0]))
            runs.append(r)
            print_run(args, r, i)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.runs > 1 and args.alternate:
        med = lambda xs: float(np.median(xs))  # noqa: E731
        print(f"# median over {len(runs)} runs")
        for name, label in (("top100", "GET /ranks/top?k=100"), ("vertex", "GET /ranks/{vertex}")):
            p99 = [r["endpoints"][name]["p99"] for r in runs]
            print(f"{label:<24} p50 {med([r['endpoints'][name]['p50'] for r in runs]):.2f} ms, p99 {med(p99):.2f} ms "
                  f"(p99 per run: {', '.join(f'{x:.2f}' for x in p99)})")
        drops = [r["drop_pct"] for r in runs]
        print(f"ingest without queries {med([r['rate_none'] for r in runs]):,.0f} edges/s, with queries "
              f"{med([r['rate_queries'] for r in runs]):,.0f} edges/s; drop median {med(drops):.1f}% "
              f"(per run: {', '.join(f'{d:.1f}' for d in drops)})")
    elif args.runs > 1:
        print_median(runs)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"args": vars(args), "cores": os.cpu_count(), "runs": runs}, fh, indent=1)
    return 0


def summarize(base, loaded, lat, ppr, cpu, cpu_base, load) -> dict:
    out = {"ingest_base": base[2], "ingest_queries": loaded[2], "drop_pct": 100.0 * (1.0 - loaded[2] / base[2]),
           "base_edges": base[0], "base_s": base[1], "queries_edges": loaded[0], "queries_s": loaded[1],
           "errors": lat["errors"], "cpu": cpu, "cpu_base": cpu_base, "load": load, "endpoints": {}, "ppr": {}}
    for name in ("top100", "vertex"):
        xs = lat[name]
        out["endpoints"][name] = {"n": len(xs), "p50": pct(xs, 50), "p99": pct(xs, 99), "max": max(xs)}
    for m, rows in ppr.items():
        xs = [a for a, _ in rows]
        inner = [b for _, b in rows if b is not None]
        out["ppr"][m] = {"n": len(xs), "p50": pct(xs, 50), "p99": pct(xs, 99), "max": max(xs),
                         "compute_p50": pct(inner, 50)}
    return out


def print_run(args, r: dict, i: int) -> None:
    print(f"# run {i + 1}: {args.edges} edges over {args.vertices} vertices, batches of {args.batch_size}, CPU, "
          f"{os.cpu_count()} cores; {args.qps:g} queries/s while ingesting; load average "
          f"{r['load'][0]:.2f} -> {r['load'][1]:.2f}")
    print(f"{'endpoint':<24}{'queries':>9}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for name, label in (("top100", "GET /ranks/top?k=100"), ("vertex", "GET /ranks/{vertex}")):
        e = r["endpoints"][name]
        print(f"{label:<24}{e['n']:>9}{e['p50']:>10.2f}{e['p99']:>10.2f}{e['max']:>10.2f}")
    for m, e in r["ppr"].items():
        print(f"{'GET /ppr method=' + m:<24}{e['n']:>9}{e['p50']:>10.2f}{e['p99']:>10.2f}{e['max']:>10.2f}"
              f"   (compute p50 {e['compute_p50']:.2f} ms; after ingest)")
    print(f"errors: {r['errors']}")
    print(f"ingest without queries: {r['ingest_base']:,.0f} edges/s ({r['base_edges']} edges in {r['base_s']:.2f} s)"
          f"; CPU s: daemon {r['cpu_base']['daemon_s']:.1f}")
    srv = r["cpu"]["server_s"]
    print(f"ingest with queries:    {r['ingest_queries']:,.0f} edges/s ({r['queries_edges']} edges in "
          f"{r['queries_s']:.2f} s)  drop {r['drop_pct']:.1f}%; CPU s: daemon {r['cpu']['daemon_s']:.1f}, "
          f"HTTP server {'-' if srv is None else f'{srv:.1f}'}")


def print_median(runs: list) -> None:
    med = lambda xs: float(np.median(xs))  # noqa: E731
    print(f"# median over {len(runs)} runs (each against its own no-query baseline)")
    for name, label in (("top100", "GET /ranks/top?k=100"), ("vertex", "GET /ranks/{vertex}")):
        p50 = [r["endpoints"][name]["p50"] for r in runs]
        p99 = [r["endpoints"][name]["p99"] for r in runs]
        print(f"{label:<24} p50 {med(p50):.2f} ms, p99 {med(p99):.2f} ms (p99 per run: "
              f"{', '.join(f'{x:.2f}' for x in p99)})")
    drops = [r["drop_pct"] for r in runs]
    print(f"ingest without queries {med([r['ingest_base'] for r in runs]):,.0f} edges/s, with queries "
          f"{med([r['ingest_queries'] for r in runs]):,.0f} edges/s; drop median "
          f"{med([r['drop_pct'] for r in runs]):.1f}% (per run: {', '.join(f'{d:.1f}' for d in drops)})")


if __name__ == "__main__":
    sys.exit(main())
