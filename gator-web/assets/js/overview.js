// Overview: the totals, a chart of processed and failed (live from the totals' deltas, or the
// per-minute history for the last hour, day or week), the transactional outbox's relays when any
// reported, and the Redis server.
"use strict";
(() => {
  const { el, fill, byId, num, bytes, duration } = G;
  let span = "live";
  let last = null; // the previous totals, for the live deltas
  const live = []; // {at_ms, processed, failed} per 2 s poll, the last 5 minutes

  function showTotals(o) {
    for (const node of document.querySelectorAll("[data-stat]")) {
      node.textContent = num(o[node.dataset.stat]);
    }
    const r = o.redis;
    fill(
      byId("redis"),
      [
        ["Server", `${r.server === "valkey" ? "Valkey" : "Redis"} ${r.version}`],
        ["Mode", r.mode],
        ["Memory", `${r.used_memory_human} (${bytes(r.used_memory)})` + (r.maxmemory ? ` of ${bytes(r.maxmemory)}` : "")],
        ["Clients", num(r.connected_clients)],
        ["Uptime", duration(r.uptime_seconds * 1000)],
        ["Queues", num(o.queues) + (o.broken_queues.length ? ` (broken: ${o.broken_queues.join(", ")}; see Queues)` : "")],
        ...(o.broken_keys || []).map((b) => ["Broken key", `${b.key} ${b.reason}: read as empty until it is deleted or repaired with redis-cli`]),
      ].map(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]),
    );
  }

  // One row per relay that reported in the last minute; the panel shows only when one did.
  function showOutbox(outbox) {
    const relays = outbox.relays || [];
    byId("outbox-panel").hidden = relays.length === 0;
    const rows = relays.map((r) => [
      G.clip(r.relay, 48),
      G.timeCell(r.at_ms, outbox.now_ms),
      num(r.waiting),
      el("span", { class: r.dead ? "bad" : "", text: num(r.dead) }),
      duration(r.lag_ms),
      r.rows_per_second.toFixed(1),
      num(r.relayed),
    ]);
    fill(byId("outbox"), G.table(["Relay", "Reported", "Waiting", "Dead", "Lag", "Rows/s", "Relayed"], rows));
  }

  function recordLive(o) {
    if (last) {
      live.push({
        at_ms: o.now_ms,
        processed: Math.max(0, o.processed - last.processed),
        failed: Math.max(0, o.failed - last.failed),
      });
      while (live.length > 150) live.shift();
    }
    last = o;
  }

  // The chart: two polylines over a grid, drawn as SVG elements (no library).
  const SVG = "http://www.w3.org/2000/svg";
  const svg = (tag, attrs) => {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    return node;
  };

  function draw(points, note) {
    const box = byId("chart");
    // Drawn at the box's own width, so the axis text is never stretched.
    const width = Math.max(320, box.clientWidth || 900), height = 220, left = 48, bottom = 22, top = 8, right = 8;
    const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img" });
    const max = Math.max(1, ...points.map((p) => Math.max(p.processed, p.failed)));
    const plotW = width - left - right, plotH = height - top - bottom;
    const x = (i) => left + (points.length > 1 ? (i / (points.length - 1)) * plotW : plotW);
    const y = (v) => top + plotH - (v / max) * plotH;
    for (const fraction of [0, 0.5, 1]) {
      const v = max * fraction;
      chart.append(svg("line", { x1: left, x2: width - right, y1: y(v), y2: y(v), class: "grid" }));
      const label = svg("text", { x: left - 6, y: y(v) + 4, class: "axis", "text-anchor": "end" });
      label.textContent = num(Math.round(v));
      chart.append(label);
    }
    if (points.length) {
      const first = svg("text", { x: left, y: height - 6, class: "axis" });
      first.textContent = new Date(points[0].at_ms).toLocaleString();
      const lastLabel = svg("text", { x: width - right, y: height - 6, class: "axis", "text-anchor": "end" });
      lastLabel.textContent = new Date(points[points.length - 1].at_ms).toLocaleString();
      chart.append(first, lastLabel);
    }
    for (const series of ["processed", "failed"]) {
      const line = points.map((p, i) => `${x(i).toFixed(1)},${y(p[series]).toFixed(1)}`).join(" ");
      chart.append(svg("polyline", { points: line, class: "line " + series }));
    }
    fill(box, chart);
    byId("chart-note").textContent = note;
  }

  async function refresh() {
    const overview = await G.get("api/overview");
    showTotals(overview);
    recordLive(overview);
    showOutbox(await G.get("api/outbox"));
    if (span === "live") {
      draw(live, "per 2 s, since this page opened");
    } else {
      const history = await G.get("api/history?span=" + span);
      draw(history, span === "week" ? "per hour" : "per minute");
    }
  }

  const tick = G.poll(refresh);
  for (const button of document.querySelectorAll(".tabs button")) {
    button.addEventListener("click", () => {
      span = button.dataset.span;
      for (const b of document.querySelectorAll(".tabs button")) b.setAttribute("aria-selected", String(b === button));
      tick();
    });
  }
})();
