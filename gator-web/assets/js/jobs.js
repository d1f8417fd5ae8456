// The job catalogue: each job, its queue, arguments, options and workers; and a form that
// enqueues one by name (POST api/jobs), with the catalogue's options.
"use strict";
(() => {
  const { el, fill, byId, table, queueLink, duration, flash, post, formValues, readOnly } = G;
  let known = [];

  function params(def) {
    if (!def.params) return "?";
    return def.params.map((p) => `${p.name}: ${p.type}`).join(", ");
  }

  function options(def) {
    const shown = [`retries=${def.retries}`];
    if (def.backoff === "list") shown.push(`backoff=[${def.backoff_ms.map(duration).join(",")}]`);
    else if (def.backoff === "custom") shown.push("backoff=custom");
    if (def.timeout_ms) shown.push(`timeout=${duration(def.timeout_ms)}`);
    if (def.priority != null) shown.push(`priority=${def.priority}`);
    if (def.cost != null) shown.push(`cost=${def.cost}`);
    if (def.critical) shown.push("critical");
    if (def.limit_key_arg != null) shown.push(`limit_key=arg${def.limit_key_arg + 1}`);
    if (def.fair_key_arg != null) shown.push(`fair_key=arg${def.fair_key_arg + 1}`);
    if (def.expires_in_ms != null) shown.push(`expires_in=${duration(def.expires_in_ms)}`);
    if (def.expires_in_ms != null && def.on_expire === "drop") shown.push("on_expire=drop");
    if (def.rate) shown.push(`rate=${def.rate}`);
    if (def.windows && def.windows.length) shown.push(`windows=${def.windows.join(",")}${def.tz ? " " + def.tz : ""}`);
    if (def.no_overlap === "args") shown.push("no_overlap");
    else if (def.no_overlap && def.no_overlap.arg != null) shown.push(`overlap_key=arg${def.no_overlap.arg + 1}`);
    if (def.unique) {
      shown.push(`unique_for=${duration(def.unique.for_ms)} until=${def.unique.until}`);
      if (def.unique.debounce_ms) shown.push(`debounce=${duration(def.unique.debounce_ms)}`);
    }
    return shown.join(" ");
  }

  function workers(job) {
    if (!job.runners.length) return el("span", { class: "badge warn", text: "none live" });
    return job.runners.map((r) => r.worker).join(", ");
  }

  function choices() {
    const select = byId("enqueue-job");
    const current = select.value;
    fill(select, ...known.map((j) => el("option", { value: j.definition.job, text: j.definition.job })));
    if (current) select.value = current;
  }

  async function refresh() {
    const { jobs } = await G.get("api/catalogue");
    known = jobs;
    choices();
    fill(
      byId("jobs"),
      table(
        ["Job", "Queue", "Arguments", "Options", "Workers"],
        jobs.map((j) =>
          el(
            "tr",
            { dataJob: j.definition.job },
            [j.definition.job, queueLink(j.definition.queue), el("code", { text: params(j.definition) }), options(j.definition), workers(j)].map((cell) => el("td", {}, cell)),
          ),
        ),
        "No job in the catalogue: no worker has published its jobs lately.",
      ),
    );
  }

  const form = byId("enqueue");
  if (readOnly) form.hidden = true;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const values = formValues(form);
    const body = { job: values.job };
    try {
      body.args = values.args ? JSON.parse(values.args) : [];
    } catch (error) {
      flash(`Arguments must be a JSON array: ${error.message}`, "error");
      return;
    }
    if (values.queue) body.queue = values.queue;
    if (values.in) body.in = values.in;
    try {
      const result = await post("api/jobs", body);
      flash(`${result.duplicate ? "Duplicate of" : "Enqueued"} ${body.job}: job ${result.jid}`, "ok");
    } catch (error) {
      flash(`Enqueue failed: ${error.message}`, "error");
    }
  });

  G.poll(refresh);
})();
