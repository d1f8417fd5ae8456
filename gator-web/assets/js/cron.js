// Periodic entries: schedule, last and next run, pause, resume, run now.
"use strict";
(() => {
  const { el, fill, byId, table, action, timeCell, queueLink, clip, json } = G;

  async function refresh() {
    const { now_ms, entries } = await G.get("api/cron");
    fill(
      byId("cron"),
      table(
        ["Name", "Job", "Queue", "Schedule", "Last tick", "Next tick", "State", ""],
        entries.map((c) => {
          const path = "api/cron/" + encodeURIComponent(c.name);
          return el(
            "tr",
            { dataCron: c.name, class: c.paused ? "paused" : "" },
            [
              c.name,
              el("span", {}, c.job, " ", clip(json(c.args), 40)),
              queueLink(c.queue),
              el("code", { text: `${c.cron} ${c.tz}` }),
              timeCell(c.last_fired_ms, now_ms),
              c.paused ? "–" : timeCell(c.next_ms, now_ms),
              c.paused ? el("span", { class: "badge warn", text: "paused" }) : el("span", { class: "badge", text: "active" }),
              el(
                "span",
                { class: "actions" },
                c.paused ? action("Resume", path + "/resume", {}, { done: refresh }) : action("Pause", path + "/pause", {}, { done: refresh }),
                action("Run now", path + "/run", {}, { name: "run", said: (r) => `Enqueued ${c.name}: job ${r.jid}`, done: refresh }),
              ),
            ].map((cell) => el("td", {}, cell)),
          );
        }),
        "No periodic jobs.",
      ),
    );
  }

  G.poll(refresh);
})();
