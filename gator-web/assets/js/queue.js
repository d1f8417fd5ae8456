// One queue: its numbers, its flow controls (limits, keys, parked jobs, rate limiters,
// windows), and pause, resume, clear.
"use strict";
(() => {
  const { el, fill, byId, num, duration, table, action, relative } = G;
  const name = G.params().get("name") || "";
  byId("queue-name").textContent = name;
  const path = "api/queues/" + encodeURIComponent(name);

  const facts = (pairs) => pairs.map(([k, v]) => [el("dt", { text: k }), el("dd", {}, v)]);

  async function refresh() {
    const { info, flow } = await G.get(path);
    fill(
      byId("queue-actions"),
      info.paused ? action("Resume", path + "/resume", {}, { done: refresh }) : action("Pause", path + "/pause", {}, { done: refresh }),
      action("Clear", path + "/clear", {}, { danger: true, question: `Delete the ${info.size} waiting jobs of ${name}?`, done: refresh }),
      el("a", { class: "button", href: "search?queue=" + encodeURIComponent(name), text: "Search this queue" }),
    );
    fill(
      byId("numbers"),
      facts([
        ["State", info.paused ? "paused" : "running"],
        ["Waiting", num(info.size)],
        ["Latency", info.latency_ms === null ? "–" : duration(info.latency_ms)],
        ["Busy", num(info.busy)],
        ["Scheduled", el("a", { href: "scheduled?queue=" + encodeURIComponent(name), text: num(info.scheduled) })],
        ["Retries", el("a", { href: "retries?queue=" + encodeURIComponent(name), text: num(info.retries) })],
        ["Dead", el("a", { href: "dead?queue=" + encodeURIComponent(name), text: num(info.dead) })],
        ["Processed", num(info.processed)],
        ["Failed", num(info.failed)],
      ]),
    );
    const parts = [];
    if (!flow.controlled) {
      parts.push(el("p", { class: "muted", text: "A plain queue: no limit, rate, share or window." }));
    } else {
      parts.push(
        el("dl", { class: "facts" }, facts([
          ["Limit", flow.limit === null ? "none" : `${num(flow.units_in_use)} of ${num(flow.limit)} units in use`],
          ["Order", flow.order],
          ["Aging", flow.aging === null ? "–" : duration(flow.aging)],
          ["Windows", flow.windows || "any time"],
          ["Critical waiting", num(flow.critical_waiting)],
          ["Backlog", num(flow.backlog)],
        ])),
        el("h3", { text: "Units in use per key" }),
        table(["Key", "Units", "Share"], Object.entries(flow.units_by_key).map(([k, v]) => [k || "(no key)", num(v), flow.shares[k] !== undefined ? flow.shares[k] + " %" : "–"]), "No units in use."),
        el("h3", { text: "Rate limiters" }),
        table(["Limiter", "Rate", "Next slot"], flow.rates.map((r) => [r.name || "(the queue's own)", r.rate, r.next_allowed_ms ? relative(r.next_allowed_ms) : "now"]), "No rate limiter."),
        el("h3", { text: "Parked" }),
        table(["Key", "Rate", "Overlap", "Jobs", "State"], flow.parked.map((p) => [p.key || "(no key)", p.rate || "–", p.overlap || "–", num(p.jobs), p.state]), "Nothing parked."),
      );
    }
    fill(byId("flow"), parts);
    const history = await G.get("api/history?span=hour&queue=" + encodeURIComponent(name));
    const processed = history.reduce((s, p) => s + p.processed, 0);
    const failed = history.reduce((s, p) => s + p.failed, 0);
    byId("history").textContent = `${num(processed)} processed, ${num(failed)} failed.`;
  }

  G.poll(refresh);
})();
