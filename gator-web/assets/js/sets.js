// Scheduled, Retries and Dead: one page shape over a set. Paged by cursor when unfiltered and
// refreshed live; filtered by job, queue or error text through the API's bounded search, page
// by page with "More". Retry or delete one job, the selected ones, or all.
"use strict";
const GatorSets = (() => {
  const { el, fill, byId, num, table, action, jobLink, queueLink, clip, json, timeCell, params } = G;

  function show(set, labels) {
    const root = byId("set");
    const url = params();
    const state = {
      cursors: [url.get("cursor") || null], // where each page shown so far starts
      filters: { job: url.get("job") || "", queue: url.get("queue") || "", error: url.get("error") || "" },
      selected: new Set(),
      shown: [], // entries on screen (filtered mode appends pages)
      cursor: null,
      scanned: 0,
    };
    const filtering = () => Boolean(state.filters.job || state.filters.error);

    // The filter form.
    const field = (name, label) => el("label", {}, label + " ", el("input", { name, type: "search", value: state.filters[name] || "", placeholder: label.toLowerCase() }));
    const form = el(
      "form",
      { class: "filters", id: "filters" },
      field("job", "Job"),
      field("queue", "Queue"),
      set === "scheduled" ? null : field("error", "Error text"),
      el("button", { type: "submit", text: "Filter" }),
      el("a", { href: set === "retry" ? "retries" : set, class: "button plain", text: "Clear" }),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const values = G.formValues(form);
      state.filters = { job: values.job || "", queue: values.queue || "", error: values.error || "" };
      state.cursors = [null];
      const query = new URLSearchParams(Object.entries(state.filters).filter(([, v]) => v));
      history.replaceState(null, "", location.pathname + "?" + query.toString());
      loadOnce(true);
    });

    const bulk = el("div", { class: "bulk actions" });
    const summary = el("p", { class: "muted", id: "summary" });
    const list = el("div", { id: "entries" });
    const pager = el("div", { class: "pager" });
    fill(root, form, bulk, summary, list, pager);

    const base = "api/sets/" + set;
    const selection = () => ({ jids: [...state.selected], queue: state.filters.queue || null });
    const scope = () => ({ all: true, queue: state.filters.queue || null });
    const afterBulk = async () => {
      state.selected.clear();
      await load(true);
    };
    fill(
      bulk,
      action(labels.selected, base + "/retry", selection, { name: "retry-selected", follow: true, said: (r) => `${labels.selected}: ${G.plural(r.done, "job")}`, done: afterBulk }),
      action("Delete selected", base + "/delete", selection, { name: "delete-selected", follow: true, danger: true, said: (r) => `Deleted ${G.plural(r.done, "job")}`, done: afterBulk }),
      action(labels.all, base + "/retry", scope, { name: "retry-all", follow: true, question: `${labels.all}: every job in ${labels.title}?`, said: (r) => `${labels.all}: ${G.plural(r.done, "job")}`, done: afterBulk }),
      action("Delete all", base + "/delete", scope, { name: "delete-all", follow: true, danger: true, question: `Delete every job in ${labels.title}?`, said: (r) => `Deleted ${G.plural(r.done, "job")}`, done: afterBulk }),
    );

    function row(entry, now) {
      const jid = entry.jid;
      const box = el("input", { type: "checkbox", checked: jid && state.selected.has(jid), disabled: !jid, ariaLabel: "select " + (jid || "entry") });
      box.addEventListener("change", () => (box.checked ? state.selected.add(jid) : state.selected.delete(jid)));
      const one = (verb) => base + "/jobs/" + encodeURIComponent(jid || "") + "/" + verb;
      const cells = [
        box,
        timeCell(entry.score_ms, now),
        // A suspended durable job sleeps in the scheduled set: said so, with why.
        entry.suspended ? el("span", {}, entry.job || "", " ", el("span", { class: "badge warn", title: "a durable job, suspended until this time", text: "suspended: " + entry.suspended })) : entry.job || el("em", { text: "unparsed" }),
        jobLink(jid),
        queueLink(entry.queue),
        clip(entry.unparsed || json(entry.args), 60),
      ];
      if (set !== "scheduled") cells.push(el("span", { class: "error-text" }, clip(entry.error || "", 120)), String(entry.attempt ?? "–"));
      cells.push(
        el(
          "span",
          { class: "actions" },
          entry.runnable ? action(labels.retry, one("retry"), {}, { name: "retry", done: () => load(true) }) : null,
          action("Delete", one("delete"), {}, { name: "delete", danger: true, done: () => load(true) }),
        ),
      );
      return el("tr", { dataJid: jid || "" }, cells.map((c) => el("td", {}, c)));
    }

    function render() {
      const headers = ["", labels.when, "Job", "JID", "Queue", "Args"];
      if (set !== "scheduled") headers.push("Error", "Attempt");
      headers.push("");
      const now = Date.now();
      fill(list, table(headers, state.shown.map((e) => row(e, now)), filtering() ? "No job matches (in the entries examined so far)." : `${labels.title} is empty.`));
    }

    async function load(reset) {
      const query = new URLSearchParams(Object.entries(state.filters).filter(([, v]) => v));
      if (!filtering()) {
        // Paged by cursor: each page reads the same few entries however deep it is. The
        // cursors of the pages before are kept to go back.
        const here = state.cursors[state.cursors.length - 1];
        if (here) query.set("cursor", here);
        const page = await G.get(base + "?" + query.toString());
        state.shown = page.entries;
        render();
        const number = state.cursors.length;
        summary.textContent = G.plural(page.total, "job") + (state.filters.queue ? ` in queue ${state.filters.queue}` : "") + ` · page ${number} of ${Math.max(1, Math.ceil(page.total / page.per_page))}`;
        fill(
          pager,
          number > 1 ? el("button", { type: "button", text: "← Newer", onclick: () => { state.cursors.pop(); load(true); } }) : null,
          page.next_cursor ? el("button", { type: "button", text: "Older →", onclick: () => { state.cursors.push(page.next_cursor); load(true); } }) : null,
        );
        return;
      }
      if (reset) {
        state.shown = [];
        state.cursor = null;
        state.scanned = 0;
      }
      if (state.cursor) query.set("cursor", state.cursor);
      const page = await G.get(base + "?" + query.toString());
      state.shown = state.shown.concat(page.entries);
      state.cursor = page.next_cursor;
      state.scanned += page.scanned || 0;
      render();
      const matches = page.total_exact ? num(page.total) : `at least ${num(page.total)}`;
      summary.textContent = `${state.shown.length} of ${matches} matching ${page.total === 1 ? "job" : "jobs"} shown (of ${num(page.set_size)} in the set); ${num(state.scanned)} entries examined` + (state.cursor ? " (more to examine)" : "") + ". Live updates pause while filtering.";
      fill(pager, state.cursor ? el("button", { type: "button", text: "More", id: "more", onclick: () => loadOnce(false) }) : null);
    }

    // A filtered listing is read page by page on request; only the plain one refreshes live.
    const loadOnce = (reset) => load(reset).catch((error) => G.flash(error.message, "error"));
    if (filtering()) loadOnce(true);
    G.poll(async () => {
      if (!filtering()) await load(true);
    });
  }

  return { show };
})();
