// The live page of streamrank serve --http-port: polls /status, /ranks/top and /history once a
// second and redraws; searches a vertex with /ranks?vertex=ID. No network beyond the daemon.
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const WINDOW_S = 300;
  const charts = {};

  async function getJSON(path) {
    const r = await fetch(path, { cache: "no-store" });
    const body = await r.json();
    if (!r.ok) { throw new Error(body.error || ("HTTP " + r.status)); }
    return body;
  }

  function fmtRank(x) { return x.toPrecision(6); }

  function makeChart(el, label, color) {
    const opts = {
      width: Math.max(el.clientWidth || 600, 300), height: 150,
      scales: { x: { time: true, range: () => { const now = Date.now() / 1000; return [now - WINDOW_S, now]; } } },
      series: [{}, { label: label, stroke: color, width: 1.5, points: { show: false } }],
      axes: [{}, { size: 70 }],  // room for six-digit labels (edges/s) beside the y axis
      legend: { show: false },
    };
    return new uPlot(opts, [[], []], el);
  }

  function ensureCharts() {
    if (charts.throughput) { return; }
    charts.throughput = makeChart($("chart-throughput"), "edges/s", "#1565c0");
    charts.latency = makeChart($("chart-latency"), "ms", "#c62828");
    charts.lag = makeChart($("chart-lag"), "lag", "#2e7d32");
  }

  function drawHistory(h) {
    ensureCharts();
    const col = {};
    h.columns.forEach((c, i) => { col[c] = i; });
    const rows = h.rows;
    // throughput: edges per second, in one-second buckets
    const buckets = new Map();
    for (const r of rows) {
      const s = Math.floor(r[col.t]);
      buckets.set(s, (buckets.get(s) || 0) + r[col.edges]);
    }
    const now = Math.floor(Date.now() / 1000);
    const tx = [], ty = [];
    for (let s = now - WINDOW_S; s < now; s++) { tx.push(s); ty.push(buckets.get(s) || 0); }
    charts.throughput.setData([tx, ty]);
    charts.latency.setData([rows.map((r) => r[col.t]), rows.map((r) => r[col.graph_ms] + r[col.rank_ms])]);
    const hasLag = rows.some((r) => r[col.lag] !== null);
    $("lag-title").textContent = hasLag ? "lag (records behind the end of the input)"
                                        : "batch wait (ms from first record to batch close)";
    charts.lag.setData([rows.map((r) => r[col.t]),
                        rows.map((r) => hasLag ? r[col.lag] : r[col.wait_ms])]);
  }

  function drawStatus(s) {
    $("seq").textContent = s.seq;
    $("vertices").textContent = s.vertices.toLocaleString();
    $("edges").textContent = (s.edges || 0).toLocaleString();
    $("device").textContent = s.device;
    $("algorithm").textContent = s.last_batch.algorithm || s.algorithm_setting;
    $("ckpt").textContent = s.checkpoint ? ("seq " + s.checkpoint.seq + ", " + s.checkpoint.age_s.toFixed(0) + " s ago")
                                         : "none yet";
    $("updated").textContent = "updated " + new Date().toLocaleTimeString();
    const b = s.last_batch;
    $("last-batch").textContent = b.edges == null ? "no batch applied since the start" :
      "last batch: " + b.edges + " edges, graph " + b.graph_ms.toFixed(2) + " ms, rank " + b.rank_ms.toFixed(2) +
      " ms, " + b.iterations + " iterations";
  }

  function drawTop(t) {
    const body = $("top-table").tBodies[0];
    const rows = t.top.map((r) => {
      const tr = document.createElement("tr");
      tr.dataset.seq = t.seq;
      for (const [cls, text] of [["pos", r.position], ["vertex", r.vertex], ["rank", fmtRank(r.rank)]]) {
        const td = document.createElement("td");
        td.className = cls;
        td.textContent = text;
        tr.appendChild(td);
      }
      return tr;
    });
    body.replaceChildren(...rows);
    $("top-table").dataset.seq = t.seq;
  }

  async function tick() {
    try {
      const k = $("k-select").value;
      const [s, t, h] = await Promise.all([getJSON("/status"), getJSON("/ranks/top?k=" + k),
                                           getJSON("/history?seconds=" + WINDOW_S)]);
      drawStatus(s);
      drawTop(t);
      drawHistory(h);
    } catch (e) {
      $("updated").textContent = "daemon unreachable: " + e.message;
    }
  }

  $("vertex-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const id = $("vertex-input").value.trim();
    const out = $("vertex-result");
    if (!id) { return; }
    try {
      const a = await getJSON("/ranks?vertex=" + encodeURIComponent(id));
      const r = a.ranks[0];
      out.className = r.rank === null ? "error" : "";
      out.textContent = r.rank === null ? ("unknown vertex " + r.vertex + " (batch " + a.seq + ")")
                                        : ("vertex " + r.vertex + ": rank " + fmtRank(r.rank) + " (batch " + a.seq + ")");
    } catch (e) {
      out.className = "error";
      out.textContent = e.message;
    }
  });
  $("k-select").addEventListener("change", tick);
  window.addEventListener("resize", () => {
    for (const c of Object.values(charts)) { c.setSize({ width: c.root.parentNode.clientWidth, height: 150 }); }
  });
  tick();
  setInterval(tick, 1000);
})();
