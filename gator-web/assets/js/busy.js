// Busy: the live worker processes, and the jobs each is running with how long they have run.
"use strict";
(() => {
  const { el, fill, byId, num, duration, table, action, jobLink, queueLink, clip, json } = G;

  function utilization(u) {
    const percent = Math.round(u * 100);
    const bar = el("span", { class: "fill" });
    bar.style.width = `${percent}%`; // through the CSSOM, which the page's CSP allows
    return el("span", { class: "meter", title: `${percent} %` }, bar, el("span", { class: "meter-text", text: `${percent} %` }));
  }

  async function refresh() {
    const processes = await G.get("api/processes");
    fill(
      byId("processes"),
      table(
        ["Process", "Host", "PID", "Queues", "Concurrency", "Busy", "Utilization", "Started", "Heartbeat"],
        processes.map((p) => [
          clip(p.worker_id || p.id, 40),
          p.host,
          String(p.pid),
          p.queues || "all known",
          num(p.concurrency),
          num(p.busy),
          utilization(p.utilization),
          G.when(p.started_at_ms),
          `${duration(p.heartbeat_age_ms)} ago`,
        ]),
        "No worker process is alive.",
      ),
    );
    const running = processes.flatMap((p) => p.jobs.map((j) => ({ ...j, process: p.worker_id || p.id })));
    fill(
      byId("running"),
      table(
        ["Job", "JID", "Queue", "Process", "Attempt", "Args", "Running for", ""],
        running.map((j) => [
          j.job,
          jobLink(j.jid),
          queueLink(j.queue),
          clip(j.process, 30),
          String(j.attempt),
          clip(json(j.args), 60),
          j.running_for_ms === null ? "just started" : duration(j.running_for_ms),
          action("Cancel", "api/jobs/" + encodeURIComponent(j.jid) + "/cancel", {}, { danger: true, question: `Cancel job ${j.jid}?`, done: refresh }),
        ]),
        "Nothing is running.",
      ),
    );
  }

  G.poll(refresh);
})();
