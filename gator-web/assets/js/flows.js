// Chains and workflows that have not finished; a workflow's steps on click.
"use strict";
(() => {
  const { el, fill, byId, num, table, timeCell, queueLink, jobLink } = G;
  let open = G.params().get("workflow");

  function progress(f) {
    if (f.steps === null) return `${num(f.waiting)} steps waiting`;
    return `${num(f.done)} done, ${num(f.failed)} failed, ${num(f.waiting)} waiting of ${num(f.steps)}`;
  }

  async function showWorkflow() {
    if (!open) return;
    const w = await G.get("api/workflows/" + encodeURIComponent(open));
    byId("workflow-panel").hidden = false;
    byId("workflow-id").textContent = `${w.id} (${w.state})`;
    fill(byId("workflow"), table(["Step", "JID", "Queue", "After", "State"], w.steps.map((s) => [s.job, jobLink(s.jid), queueLink(s.queue), String(s.parents.length), s.state.state]), "No steps."));
  }

  async function refresh() {
    const flows = await G.get("api/flows");
    const now = Date.now();
    fill(
      byId("flows"),
      table(
        ["Kind", "Id", "Queue", "Started", "Progress"],
        flows.map((f) => [
          f.kind,
          f.kind === "workflow" ? el("a", { href: "flows?workflow=" + encodeURIComponent(f.id), text: f.id, onclick: (e) => { e.preventDefault(); open = f.id; showWorkflow(); } }) : f.id,
          queueLink(f.queue),
          timeCell(f.created_at_ms, now),
          progress(f),
        ]),
        "No chain or workflow is in flight.",
      ),
    );
    await showWorkflow();
  }

  G.poll(refresh);
})();
