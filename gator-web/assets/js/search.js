// Search by jid, job name, args or error across queued, scheduled, retry and dead jobs, a
// bounded step at a time; "More" goes on from the cursor. The cost (entries read) is shown.
"use strict";
(() => {
  const { el, fill, byId, num, table, jobLink, queueLink, clip, json, timeCell } = G;
  const form = byId("search");
  let query = null;
  let cursor = null;
  let hits = [];
  let scanned = 0;

  // Start from the URL (search?q=...&queue=...), so a search can be linked.
  const url = G.params();
  for (const name of ["q", "field", "queue"]) if (url.get(name)) form.elements[name].value = url.get(name);

  function render() {
    const now = Date.now();
    fill(
      byId("hits"),
      table(
        ["Where", "Job", "JID", "Queue", "Args", "Error", "When"],
        hits.map((h) => el("tr", { dataJid: h.jid || "" }, [h.place, h.job || "–", jobLink(h.jid), queueLink(h.queue), clip(json(h.args), 70), el("span", { class: "error-text" }, clip(h.error || "", 80)), h.score_ms ? timeCell(h.score_ms, now) : "waiting"].map((c) => el("td", {}, c)))),
        "No job found in the entries read so far.",
      ),
    );
    byId("cost").textContent = `${num(hits.length)} found; ${num(scanned)} entries read` + (cursor ? ", more to read." : ", everything read.");
    fill(byId("more-box"), cursor ? el("button", { type: "button", id: "more", text: "More", onclick: () => step().catch(show) }) : null);
  }

  const show = (error) => G.flash(error.message, "error");

  async function step() {
    const params = new URLSearchParams(query);
    if (cursor) params.set("cursor", cursor);
    const page = await G.get("api/search?" + params.toString());
    hits = hits.concat(page.hits);
    cursor = page.next_cursor;
    scanned += page.scanned;
    render();
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const values = G.formValues(form);
    const places = [...form.querySelectorAll("input[name=place]:checked")].map((b) => b.value);
    query = { q: values.q || "", field: values.field || "any" };
    if (places.length && places.length < 4) query.places = places.join(",");
    if (values.queue) query.queue = values.queue;
    history.replaceState(null, "", location.pathname + "?" + new URLSearchParams({ q: query.q, field: query.field, ...(values.queue ? { queue: values.queue } : {}) }).toString());
    cursor = null;
    hits = [];
    scanned = 0;
    step().catch(show);
  });

  if (url.get("q")) form.requestSubmit();
})();
