// Flow control at a glance: concurrency units per key, rate limiters' next slots, windows,
// parked jobs, for every controlled queue.
"use strict";
(() => {
  const { el, fill, byId, num, table, duration } = G;

  function queueCard(q, now) {
    const keys = Object.entries(q.units_by_key);
    return el(
      "section",
      { class: "panel", dataQueue: q.queue },
      el("h2", {}, el("a", { href: "queue?name=" + encodeURIComponent(q.queue), text: q.queue }), q.paused ? el("span", { class: "badge warn", text: "paused" }) : null),
      el(
        "p",
        { class: "facts-row" },
        [
          ["Concurrency", q.limit === null ? `${num(q.units_in_use)} units in use, no limit` : `${num(q.units_in_use)} of ${num(q.limit)} units in use`],
          ["Windows", q.windows || "any time"],
          ["Order", q.order + (q.aging ? `, aging every ${duration(q.aging)}` : "")],
          ["Critical waiting", num(q.critical_waiting)],
          ["Fair keys taking turns", num(q.fair_keys_waiting)],
        ].map(([k, v]) => el("span", {}, k + ": ", el("b", { text: v }))),
      ),
      el(
        "div",
        { class: "limit-grid" },
        el("div", {}, el("h3", { text: "Units in use per key" }), table(["Key", "Units", "Share"], keys.map(([k, v]) => [k || "(no key)", num(v), q.shares[k] !== undefined ? q.shares[k] + " %" : q.default_share !== null ? q.default_share + " % (default)" : "–"]), "No units in use.")),
        el("div", {}, el("h3", { text: "Rate limiters" }), table(["Limiter", "Rate", "Next slot"], q.rates.map((r) => [r.name || "(the queue's own)", r.rate, r.next_allowed_ms && r.next_allowed_ms > now ? `in ${duration(r.next_allowed_ms - now)}` : "now"]), "No rate limiter.")),
        el("div", {}, el("h3", { text: "Fair key weights" }), table(["Fair key", "Weight"], Object.entries(q.fair_weights).map(([k, w]) => [k, num(w)]).concat(q.default_fair_weight !== null ? [["(unlisted keys)", num(q.default_fair_weight)]] : []), "Every fair key weighs 1.")),
        el("div", {}, el("h3", { text: "Parked" }), table(["Key", "Limiter", "Jobs", "Waiting for"], q.parked.map((p) => [p.key || "(no key)", p.rate || p.overlap || "–", num(p.jobs), p.state]), "Nothing parked.")),
      ),
    );
  }

  async function refresh() {
    const { now_ms, queues } = await G.get("api/limits");
    fill(byId("limits"), queues.length ? queues.map((q) => queueCard(q, now_ms)) : el("p", { class: "empty", text: "No queue is under flow control." }));
  }

  G.poll(refresh);
})();
