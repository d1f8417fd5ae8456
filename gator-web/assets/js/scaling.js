// Scaling: the autoscaling signal of every queue, for a target latency.
"use strict";
(() => {
  const { el, fill, byId, num, table, queueLink } = G;
  let query = "";

  const seconds = (s) => (s === 0 ? "–" : s < 60 ? `${s.toFixed(1)} s` : G.duration(s * 1000));

  async function refresh() {
    const scaling = await G.get("api/scaling" + query);
    const rows = Object.entries(scaling.queues).map(([name, q]) =>
      el(
        "tr",
        { dataQueue: name, class: q.broken ? "broken" : "" },
        [
          queueLink(name),
          num(q.backlog),
          seconds(q.latency_seconds),
          num(q.orphaned),
          `${num(q.busy)} / ${num(q.capacity)}`,
          num(q.workers),
          q.throughput.toFixed(2),
          el("strong", { text: String(q.suggested_workers) }),
          q.broken ? el("span", { class: "badge bad", title: q.broken, text: "broken" }) : q.basis,
        ].map((cell) => el("td", {}, cell)),
      ),
    );
    fill(
      byId("scaling"),
      el("p", { class: "muted", text: `Target latency ${scaling.target_latency_seconds} s, at most ${scaling.max_workers} workers a queue.` }),
      table(["Queue", "Backlog", "Latency", "Orphaned", "Busy / capacity", "Workers", "Jobs/s", "Suggested workers", "Basis"], rows, "No queues yet: dispatch a job."),
    );
  }

  byId("target").addEventListener("submit", (event) => {
    event.preventDefault();
    const values = new URLSearchParams(new FormData(event.target));
    query = "?" + values.toString();
    refresh().catch((e) => G.flash(e.message, "error"));
  });

  G.poll(refresh);
})();
