// Queues: one row per queue, with pause, resume and clear.
"use strict";
(() => {
  const { el, fill, byId, num, duration, table, action, queueLink } = G;

  function actions(q, refresh) {
    const name = encodeURIComponent(q.name);
    return el(
      "span",
      { class: "actions" },
      q.paused
        ? action("Resume", `api/queues/${name}/resume`, {}, { done: refresh })
        : action("Pause", `api/queues/${name}/pause`, {}, { done: refresh }),
      action("Clear", `api/queues/${name}/clear`, {}, {
        danger: true,
        question: `Delete the ${q.size} waiting jobs of queue ${q.name}?`,
        said: (r) => `Cleared ${q.name}: ${r.deleted} jobs deleted`,
        done: refresh,
      }),
    );
  }

  async function refresh() {
    const queues = await G.get("api/queues");
    const rows = queues.map((q) => {
      const row = el(
        "tr",
        { dataQueue: q.name, class: q.broken ? "broken" : q.paused ? "paused" : "" },
        [
          queueLink(q.name),
          num(q.size),
          q.latency_ms === null ? "–" : duration(q.latency_ms),
          num(q.busy),
          num(q.scheduled),
          num(q.retries),
          num(q.dead),
          q.broken
            ? el("span", { class: "badge bad", title: q.broken, text: "broken: " + q.broken })
            : q.paused
              ? el("span", { class: "badge warn", text: "paused" })
              : el("span", { class: "badge", text: "running" }),
          q.limit === null ? (q.controlled ? `${num(q.units_in_use)} in use` : "–") : `${num(q.units_in_use)} / ${num(q.limit)}`,
          num(q.parked),
          num(q.processed),
          num(q.failed),
          actions(q, refresh),
        ].map((cell) => el("td", {}, cell)),
      );
      return row;
    });
    fill(
      byId("queues"),
      table(["Queue", "Size", "Latency", "Busy", "Scheduled", "Retries", "Dead", "State", "Limit (units)", "Parked", "Processed", "Failed", ""], rows, "No queues yet: dispatch a job."),
    );
  }

  G.poll(refresh);
})();
