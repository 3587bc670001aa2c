"""Personalized PageRank through the daemon's HTTP API, beside ``streamrank bench-ppr`` on the same graph.

Writes a synthetic graph (uniform random edges, as ``http_queries.py``) as one CSV file, runs
``streamrank serve --input-dir ... --http-port`` over it on ``--device``, and once every edge is
applied times ``--queries`` ``GET /ppr`` queries per method from random seeds (round trip at the
client, and the compute time the answer reports). Then runs ``streamrank bench-ppr`` on the same
file, the same methods and the same number of seeds, and prints both::

    python benchmarks/http_ppr.py --device gpu --edges 1000000 --vertices 100000 --queries 50
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from http_queries import REPO, free_port, pct

METHODS = {"power": "power", "push": "push/native"}  # HTTP method -> bench-ppr row of the same computation


def write_graph(path: str, *, edges: int, vertices: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    e = rng.integers(0, vertices, size=(edges, 2))
    np.savetxt(path, e, fmt="%d", delimiter=",", header="src,dst", comments="")


def http_ppr(port: int, *, vertices: int, queries: int, method: str, warm: int = 3) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    rng = random.Random(7)
    rtt, compute, seqs = [], [], set()
    for i in range(warm + queries):
        conn.request("GET", f"/ppr?seed={rng.randrange(vertices)}&k=20&method={method}&eps=1e-7")
        t0 = time.perf_counter()
        r = conn.getresponse()
        body = json.loads(r.read())
        dt = (time.perf_counter() - t0) * 1e3
        if r.status != 200:
            raise SystemExit(f"/ppr answered {r.status}: {body}")
        if i >= warm:
            rtt.append(dt)
            compute.append(body["elapsed_ms"])
            seqs.add(body["seq"])
    conn.close()
    return {"n": queries, "rtt_p50": pct(rtt, 50), "rtt_p95": pct(rtt, 95), "rtt_max": max(rtt),
            "compute_p50": pct(compute, 50), "compute_p95": pct(compute, 95), "device": body["device"],
            "seqs": sorted(seqs)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--edges", type=int, default=1_000_000)
    p.add_argument("--vertices", type=int, default=100_000)
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="http-ppr-")
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    try:
        os.makedirs(os.path.join(tmp, "in"))
        graph = os.path.join(tmp, "in", "g.csv")
        write_graph(graph, edges=args.edges, vertices=args.vertices)
        port = free_port()
        log = os.path.join(tmp, "applied.jsonl")
        out = open(os.path.join(tmp, "daemon.log"), "wb")
        t0 = time.perf_counter()
        d = subprocess.Popen([sys.executable, "-m", "streamrank", "--log-level", "WARNING", "serve", "--input-dir",
                              os.path.join(tmp, "in"), "--checkpoint-dir", os.path.join(tmp, "ckpt"),
                              "--batch-size", str(args.edges), "--checkpoint-every", "1000000",
                              "--checkpoint-interval", "0", "--applied-log", log, "--device", args.device,
                              "--warm-up", "off", "--http-port", str(port)],
                             cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            while True:
                if d.poll() is not None:
                    raise SystemExit(f"daemon exited: {open(os.path.join(tmp, 'daemon.log')).read()[-3000:]}")
                ev = [json.loads(x) for x in open(log).read().splitlines() if x.strip()] if os.path.exists(log) else []
                if sum(e["edges"] for e in ev if e["event"] == "apply") >= args.edges:
                    break
                time.sleep(0.05)
            ready_s = time.perf_counter() - t0
            via_http = {m: http_ppr(port, vertices=args.vertices, queries=args.queries, method=m) for m in METHODS}
        finally:
            d.terminate()
            d.wait(120)
            out.close()
        bench_json = os.path.join(tmp, "bench.json")
        b = subprocess.run([sys.executable, "-m", "streamrank", "bench-ppr", "--graph", graph, "--seeds",
                            str(args.queries), "--methods", ",".join(METHODS), "--atomics", "native",
                            "--power-iters", "", "--power-dtypes", "float64", "--batch-iters", "", "--no-static",
                            "--device", args.device, "--eps", "1e-7", "--json", bench_json],
                           cwd=REPO, env=env, capture_output=True, text=True)
        print(b.stdout + b.stderr)
        rows = {r["method"]: r for r in json.load(open(bench_json))["rows"]} if b.returncode == 0 else {}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"# {args.edges} uniform random edges over {args.vertices} vertices; daemon --device {args.device}, "
          f"graph applied and API up {ready_s:.1f} s after start; {args.queries} queries per method, k=20, eps 1e-7")
    print(f"{'method':<8}{'device':>7}{'HTTP p50 ms':>13}{'HTTP p95 ms':>13}{'compute p50':>13}"
          f"{'bench-ppr p50':>15}{'bench-ppr p95':>15}")
    for m, row in METHODS.items():
        h, br = via_http[m], rows.get(row, {})
        print(f"{m:<8}{h['device']:>7}{h['rtt_p50']:>13.2f}{h['rtt_p95']:>13.2f}{h['compute_p50']:>13.2f}"
              f"{br.get('median_ms', float('nan')):>15.2f}{br.get('p95_ms', float('nan')):>15.2f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"args": vars(args), "http": via_http, "bench_ppr": rows, "ready_s": ready_s}, fh, indent=1)
    return 0 if b.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
