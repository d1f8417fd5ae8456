// Gator dashboard: what every page shares. Data from the API reaches the DOM only through
// textContent and attributes set one by one (never innerHTML), so a job's args or error text
// cannot inject markup. Every URL is relative, so the dashboard works under any mount prefix.
"use strict";

const G = (() => {
  const meta = (name) => {
    const tag = document.querySelector(`meta[name="${name}"]`);
    return tag ? tag.content : "";
  };
  const csrf = meta("gator-csrf");
  const readOnly = meta("gator-read-only") === "true";

  async function answer(response) {
    let body = null;
    try {
      body = await response.json();
    } catch (_) {
      body = { error: response.statusText || "no answer", code: "http" };
    }
    if (!response.ok) {
      const error = new Error(body.error || response.statusText);
      error.code = body.code;
      error.status = response.status;
      throw error;
    }
    return body;
  }

  /** GET a JSON API path (relative, e.g. "api/overview"). */
  async function get(path) {
    return answer(await fetch(path, { headers: { Accept: "application/json" }, credentials: "same-origin" }));
  }

  /** POST JSON to an API path, with the CSRF token the server gave this page. */
  async function post(path, body) {
    return answer(
      await fetch(path, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json", "X-Gator-Csrf": csrf },
        body: JSON.stringify(body || {}),
      }),
    );
  }

  /** An element: attrs are set as properties (text, className, href, ...) or data-*; children are nodes or strings (as text). */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "text") node.textContent = String(value);
      else if (key === "class") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (key.startsWith("data")) node.setAttribute(key.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase()), value);
      else if (key in node) node[key] = value;
      else node.setAttribute(key, value);
    }
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function fill(node, ...children) {
    node.replaceChildren();
    for (const child of children.flat(Infinity)) {
      if (child !== undefined && child !== null && child !== false) node.append(child);
    }
  }

  const byId = (id) => document.getElementById(id);

  /** A table: headers, then one array of cells (nodes or strings) per row; `empty` when no rows. */
  function table(headers, rows, empty) {
    if (!rows.length) return el("p", { class: "empty", text: empty || "Nothing here." });
    return el(
      "table",
      {},
      el("thead", {}, el("tr", {}, headers.map((h) => el("th", { text: h })))),
      el("tbody", {}, rows.map((cells) => (cells instanceof Node ? cells : el("tr", {}, cells.map((c) => el("td", {}, c)))))),
    );
  }

  const num = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));

  /** 1234 ms → "1.2 s"; 90 000 → "1 m 30 s". */
  function duration(ms) {
    if (ms === null || ms === undefined) return "–";
    const s = Math.abs(ms) / 1000;
    if (s < 1) return `${Math.round(Math.abs(ms))} ms`;
    if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
    const m = Math.floor(s / 60);
    if (m < 60) return `${m} m ${Math.floor(s % 60)} s`;
    const h = Math.floor(m / 60);
    if (h < 48) return `${h} h ${m % 60} m`;
    return `${Math.floor(h / 24)} d ${h % 24} h`;
  }

  /** A time relative to now_ms: "3 m 2 s ago" or "in 5 s". */
  function relative(at, now) {
    if (!at) return "–";
    const delta = at - (now || Date.now());
    return delta >= 0 ? `in ${duration(delta)}` : `${duration(-delta)} ago`;
  }

  const when = (ms) => (ms ? new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC") : "–");

  /** A time cell: relative text, exact time on hover. */
  const timeCell = (ms, now) => el("time", { text: relative(ms, now), title: when(ms), dateTime: ms ? new Date(ms).toISOString() : "" });

  function bytes(n) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) {
      n /= 1024;
      i++;
    }
    return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
  }

  const json = (value) => JSON.stringify(value);
  const pretty = (value) => JSON.stringify(value, null, 2);

  /** Shortened text with the whole in its tooltip. */
  function clip(text, max) {
    text = text === null || text === undefined ? "" : String(text);
    return el("span", { class: "clip", title: text, text: text.length > (max || 80) ? text.slice(0, max || 80) + "…" : text });
  }

  // A jid shown by its end: jids are UUIDv7, whose start is the time, the same for jobs
  // dispatched together.
  const jobLink = (jid) => (jid ? el("a", { href: "job?jid=" + encodeURIComponent(jid), class: "jid", title: jid, text: jid.length > 14 ? "…" + jid.slice(-12) : jid }) : "–");
  const plural = (n, word) => `${num(n)} ${word}${n === 1 ? "" : "s"}`;
  const queueLink = (name) => el("a", { href: "queue?name=" + encodeURIComponent(name), text: name });
  const params = () => new URLSearchParams(location.search);

  let flashTimer = null;
  /** A short message at the top of the page. */
  function flash(text, kind) {
    const box = byId("flash");
    if (!box) return;
    box.textContent = text;
    box.className = "flash " + (kind || "ok");
    box.hidden = false;
    clearTimeout(flashTimer);
    flashTimer = setTimeout(() => (box.hidden = true), 5000);
  }

  /**
   * POSTs a bulk action, then again as long as the answer says what is left (each request
   * does a bounded part: the jids it handed back in `remaining`, or `next_cursor` of a sweep
   * of every entry); the answers summed up.
   */
  async function postAll(path, body) {
    const total = { done: 0, missing: [] };
    let next = body;
    while (next) {
      const result = await post(path, next);
      total.done += result.done || 0;
      total.missing.push(...(result.missing || []));
      if (result.remaining && result.remaining.length) next = { ...next, jids: result.remaining };
      else if (result.next_cursor) next = { ...next, cursor: result.next_cursor };
      else next = null;
    }
    return total;
  }

  /** A button that POSTs (hidden in read-only mode); asks first if `question` is given; then calls `done`. With `follow`, a bulk action is followed to its end (postAll). */
  function action(label, path, body, options) {
    const opts = options || {};
    if (readOnly) return null;
    return el("button", {
      type: "button",
      class: "act " + (opts.danger ? "danger" : ""),
      text: label,
      title: opts.title || "",
      dataAction: opts.name || label.toLowerCase(),
      onclick: async (event) => {
        const button = event.currentTarget;
        if (opts.question && !window.confirm(opts.question)) return;
        button.disabled = true;
        try {
          const sent = typeof body === "function" ? body() : body;
          const result = await (opts.follow ? postAll : post)(path, sent);
          flash(opts.said ? opts.said(result) : `${label}: done`, "ok");
          if (opts.done) await opts.done(result);
        } catch (error) {
          flash(`${label} failed: ${error.message}`, "error");
        } finally {
          button.disabled = false;
        }
      },
    });
  }

  /**
   * Calls `refresh` now and every 2 s while the tab is visible; pauses when it is hidden and
   * refreshes at once when it shows again. Shows the state in the header's "live" badge.
   */
  function poll(refresh) {
    const badge = byId("live");
    let timer = null;
    let running = false;
    async function tick() {
      clearTimeout(timer);
      if (document.hidden) return;
      if (!running) {
        running = true;
        try {
          await refresh();
          if (badge) {
            badge.textContent = "live";
            badge.className = "live";
            badge.title = "Refreshed " + new Date().toLocaleTimeString();
          }
        } catch (error) {
          if (badge) {
            badge.textContent = error.status === 503 ? "redis down" : "error";
            badge.className = "live down";
            badge.title = error.message;
          }
        } finally {
          running = false;
        }
      }
      timer = setTimeout(tick, 2000);
    }
    document.addEventListener("visibilitychange", () => {
      if (document.hidden) {
        clearTimeout(timer);
        if (badge) {
          badge.textContent = "paused";
          badge.className = "live paused";
        }
      } else {
        tick();
      }
    });
    tick();
    return tick;
  }

  /** A form's fields as an object of non-empty strings. */
  function formValues(form) {
    const values = {};
    for (const [key, value] of new FormData(form).entries()) {
      if (String(value).trim() !== "") values[key] = String(value).trim();
    }
    return values;
  }

  return { plural, get, post, el, fill, byId, table, num, duration, relative, when, timeCell, bytes, json, pretty, clip, jobLink, queueLink, params, flash, action, poll, formValues, readOnly };
})();
