// One job by jid: where it is, its status record, its error, its attempts over time, its
// args, result and whole payload, and what a durable job saved (checkpoint, steps, sleeps);
// retry, delete or cancel it.
"use strict";
(() => {
  const { el, fill, byId, when, duration, pretty, table, action, queueLink, relative } = G;
  const jid = G.params().get("jid") || "";
  byId("jid").textContent = jid;
  const sets = { scheduled: "scheduled", retry: "retry", dead: "dead" };

  // Large arguments come cut to a preview, and whole only when asked for, once (the page
  // refreshes every two seconds): then kept here.
  let wholeArgs = null;
  let wholeDurable = null;

  // What a durable job saved: its sleeps and slices, its checkpoint, its steps with their
  // results in order (each value a preview unless the whole state was asked for, once).
  function showDurable(job) {
    const panel = byId("durable-panel");
    panel.hidden = !job.durable;
    if (!job.durable) return;
    const d = wholeDurable || job.durable;
    const facts = [["Sleeps slept", String(d.sleeps)], ["Slices yielded", String(d.slices)]];
    if (d.unreadable) facts.push(["Unreadable", d.unreadable]);
    if (d.steps_total > d.steps.length) facts.push(["Steps listed", `${d.steps.length} of ${d.steps_total}`]);
    fill(byId("durable-facts"), facts.map(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]));
    byId("durable-checkpoint").textContent = d.checkpoint === null ? "(none saved)" : pretty(d.checkpoint);
    fill(byId("durable-steps"), table(["Step", "Result", "Size"], d.steps.map((s) => [s.name, el("pre", { text: pretty(s.value) }), G.bytes(s.bytes)]), "No step has succeeded yet."));
    const whole = byId("durable-whole");
    whole.hidden = !job.durable.cut || wholeDurable !== null;
    whole.textContent = "Show the saved values whole";
    whole.onclick = async () => {
      const all = await G.get("api/jobs/" + encodeURIComponent(jid) + "?full=true");
      wholeDurable = all.durable || null;
      showDurable(all);
    };
  }

  async function refresh() {
    let job;
    try {
      job = await G.get("api/jobs/" + encodeURIComponent(jid));
    } catch (error) {
      if (error.status !== 404) throw error;
      fill(byId("status"), el("dt", { text: "Status" }), el("dd", { text: "Not found: " + error.message }));
      fill(byId("job-actions"));
      return;
    }
    const p = job.payload || {};
    const s = job.status;
    const now = Date.now();
    const facts = [
      ["Job", p.job || (job.running && job.running.job) || "–"],
      ["Queue", job.queue ? queueLink(job.queue) : "–"],
      ["Where", job.place || "–"],
      ["Status", s.state],
    ];
    if (s.attempt !== undefined) facts.push(["Attempt", String(s.attempt)]);
    if (s.attempts !== undefined) facts.push(["Attempts", String(s.attempts)]);
    const atLabel = { scheduled: "Due", suspended: "Wakes", awaiting: "Wait ends", dead: "Died", done: "Finished", cancelled: "Cancelled", discarded: "Discarded", expired: "Expired" };
    if (s.at_ms) facts.push([atLabel[s.state] || "At", el("time", { title: when(s.at_ms), text: `${when(s.at_ms)} (${relative(s.at_ms, now)})` })]);
    if (s.next_at_ms) facts.push(["Next attempt", `${when(s.next_at_ms)} (${relative(s.next_at_ms, now)})`]);
    if (s.since_ms) facts.push(["Running since", `${when(s.since_ms)} (${duration(now - s.since_ms)})`]);
    if (s.process || job.process) facts.push(["Process", s.process || job.process]);
    if (s.reply_key) facts.push(["Awaiting reply", s.reply_key]);
    if (s.reason) facts.push(["Suspended", s.reason]);
    const pr = job.progress;
    if (pr) facts.push(["Progress", el("span", {}, el("progress", { max: "1", value: String(pr.fraction) }), ` ${Math.round(pr.fraction * 100)}% ${pr.note} (${relative(pr.at_ms, now)})`)]);
    if (s.state === "queued") {
      const pos = await G.get("api/jobs/" + encodeURIComponent(jid) + "/position").catch(() => ({}));
      if (pos.position && pos.state === "parked") facts.push(["Position", `${pos.position} of ${pos.length} parked ${pos.critical ? "critical jobs" : pos.key ? `with key ${pos.key}` : "without a key"} (${pos.waiting_keys} key${pos.waiting_keys === 1 ? "" : "s"} waiting)`]);
      else if (pos.position) facts.push(["Position", `${pos.position} of ${pos.length}${pos.exact ? "" : " (estimate)"}`]);
      else if (pos.state === "parked") facts.push(["Position", "parked: admission picks it by priority, limits and rates"]);
      if (pos.expected_start_ms) facts.push(["Expected start", `${when(pos.expected_start_ms)} (${relative(pos.expected_start_ms, now)})`]);
      else if (pos.no_estimate) facts.push(["Expected start", `unknown: ${pos.no_estimate}`]);
    }
    if (job.packed && job.packed.aside) facts.push(["Arguments", `stored aside (${G.bytes(job.packed.stored)}; ${G.bytes(job.packed.raw)} decoded)`]);
    else if (job.packed) facts.push(["Arguments", `compressed (zstd): ${G.bytes(job.packed.raw)} stored in ${G.bytes(job.packed.stored)}`]);
    // An expiring job: its deadline (Redis time), whether it has passed, and, once expired,
    // whether it is kept in the dead set.
    const deadline = s.deadline_ms || p.expires_at;
    if (deadline) facts.push([s.state === "expired" ? "Deadline (missed)" : "Expires", `${when(deadline)} (${relative(deadline, now)})`]);
    if (s.kept !== undefined) facts.push(["Kept", s.kept ? "in the dead set" : "no: dropped (on_expire = drop)"]);
    if (job.score_ms && job.place && job.score_ms !== s.at_ms && job.score_ms !== s.next_at_ms) facts.push([job.place === "dead" ? "Died" : "Due", `${when(job.score_ms)} (${relative(job.score_ms, now)})`]);
    fill(byId("status"), facts.map(([k, v]) => [el("dt", { text: k }), el("dd", {}, v)]));

    const error = s.error || p.error;
    byId("error-panel").hidden = !error;
    byId("error").textContent = error || "";

    const events = [];
    if (p.created_at) events.push([p.created_at, "created"]);
    if (p.enqueued_at && p.enqueued_at !== p.created_at) events.push([p.enqueued_at, "enqueued"]);
    if (p.retried_at) events.push([p.retried_at, "last retry started"]);
    if (p.failed_at) events.push([p.failed_at, `attempt ${p.attempt || "?"} failed`]);
    if (s.since_ms) events.push([s.since_ms, `attempt ${s.attempt} started`]);
    if (s.next_at_ms) events.push([s.next_at_ms, `attempt ${(s.attempt || 0) + 1} due`]);
    if (s.at_ms) events.push([s.at_ms, s.state === "suspended" ? `wakes (${s.reason})` : s.state]);
    if (deadline) events.push([deadline, "deadline"]);
    events.sort((a, b) => a[0] - b[0]);
    fill(byId("timeline"), table(["When", "What"], events.map(([at, what]) => [el("time", { title: relative(at, now), text: when(at) }), what]), "No times recorded."));

    byId("args").textContent = job.args_cut && wholeArgs !== null ? wholeArgs : pretty(p.args !== undefined ? p.args : job.running ? job.running.args : null);
    const whole = byId("args-whole");
    whole.hidden = !job.args_cut || wholeArgs !== null;
    whole.textContent = `Show all of the payload's ${G.bytes(job.payload_bytes || 0)}`;
    whole.onclick = async () => {
      const all = await G.get("api/jobs/" + encodeURIComponent(jid) + "?full=true");
      wholeArgs = pretty((all.payload || {}).args);
      byId("args").textContent = wholeArgs;
      whole.hidden = true;
    };
    showDurable(job);
    byId("result-panel").hidden = job.result === null || job.result === undefined;
    byId("result").textContent = job.result === null || job.result === undefined ? "" : pretty(job.result);
    byId("payload").textContent = job.payload ? pretty(job.payload) : "(not stored: the job has finished or is running, or it waits deeper in its queue than a lookup reads)";

    const set = sets[job.place];
    const path = (verb) => `api/sets/${set}/jobs/${encodeURIComponent(jid)}/${verb}`;
    fill(
      byId("job-actions"),
      set ? action(set === "scheduled" ? "Run now" : "Retry", path("retry"), {}, { name: "retry", done: refresh }) : null,
      set ? action("Delete", path("delete"), {}, { danger: true, question: `Delete job ${jid}?`, done: refresh }) : null,
      ["queued", "scheduled", "retry", "running"].includes(job.place) ? action("Cancel", "api/jobs/" + encodeURIComponent(jid) + "/cancel", {}, { danger: true, question: `Cancel job ${jid}?`, done: refresh }) : null,
    );
  }

  G.poll(refresh);
})();
