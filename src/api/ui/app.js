// cts dashboard: vanilla JS, no dependencies, no network beyond this API. Data is rendered with
// textContent only (task names, errors and plans come from Consul and Terraform: untrusted).
"use strict";

const TOKEN_KEY = "cts-token";
let state = { tasks: [], cluster: null, token_required: false };
let reloadTimer;

const $ = (sel) => document.querySelector(sel);
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null) node.append(c instanceof Node ? c : String(c));
  return node;
}
function svg(tag, attrs, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  for (const c of children) node.append(c instanceof Node ? c : String(c));
  return node;
}

function duration(ms) {
  if (!(ms >= 0)) return "-";
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  return `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, "0")}s`;
}
const when = (iso) => (iso ? new Date(iso).toLocaleString() : "-");
// Terraform's plan symbols, as `cts status --events` prints them.
const ACTION_SYMBOL = { create: "+", delete: "-", update: "~", replace: "-/+", read: "<=" };
const changes = (c) => (c ? `+${c.add} ~${c.change} -${c.destroy}` : "");
const eventMs = (e) => Date.parse(e.end_time) - Date.parse(e.start_time);
const counted = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

function notice(text) {
  $("#notice").textContent = text || "";
}

async function load() {
  try {
    const res = await fetch("/ui/state", { headers: { accept: "application/json" } });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    state = await res.json();
    // An open history is read again (a run may have ended); the others are read when opened.
    for (const name of [...history.keys()]) if (!historyOpen.has(name)) history.delete(name);
    for (const name of historyOpen) loadHistory(name);
    render();
  } catch (err) {
    notice(`Cannot read the state: ${err.message}`);
  }
}
// Several events in a burst (a run ending, the next starting) cost one reload.
function reloadSoon() {
  clearTimeout(reloadTimer);
  reloadTimer = setTimeout(load, 100);
}

async function act(method, path, body, what) {
  notice("");
  const headers = { "content-type": "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.authorization = `Bearer ${token}`;
  try {
    const res = await fetch(path, { method, headers, body: JSON.stringify(body) });
    const json = await res.json().catch(() => ({}));
    if (!res.ok) {
      const msg = (json.error && json.error.message) || `HTTP ${res.status}`;
      notice(`${what} failed: ${msg}${res.status === 401 || res.status === 403 ? " (enter the API token above)" : ""}`);
    } else if (json.approve) {
      notice("");
      const a = json.approve;
      $("#notice").append(el("span", { class: a.outcome === "held" ? "warn" : "applied" }, a.outcome === "held" ? `${what}: the inputs changed; the new plan is held again` : `${what}: ${a.outcome} ${changes(a.summary)}`));
    } else if (json.reject) {
      notice("");
      $("#notice").append(el("span", { class: "warn" }, `${what}: discarded ${changes(json.reject.discarded.changes)}`));
    } else if (json.drift) {
      notice("");
      $("#notice").append(el("span", { class: json.drift.changes_present ? "drift" : "in-sync" }, `${what}: ${json.drift.status} ${changes(json.drift.changes)}`));
    }
  } catch (err) {
    notice(`${what} failed: ${err.message}`);
  }
  reloadSoon();
}

/** A failed event's word: held and rejected plans are decisions, not failures. */
function outcomeWord(e) {
  return e.outcome === "held" || e.outcome === "rejected" ? e.outcome : "failed";
}

function taskRow(t) {
  const last = t.events[0];
  const name = encodeURIComponent(t.name);
  const d = t.drift;
  const canChange = !state.token_required || !!sessionStorage.getItem(TOKEN_KEY);
  return el(
    "tr",
    { "data-task": t.name, "data-event": last ? last.id : "", "data-running": t.running ? "true" : "false" },
    el(
      "td",
      { class: "wrap" },
      el("strong", {}, t.name),
      t.description ? el("div", {}, el("small", {}, t.description)) : null,
      el("div", {}, el("small", {}, t.module)),
      t.after && t.after.length ? el("div", { class: "after" }, el("small", {}, `runs after ${t.after.join(", ")}`)) : null,
    ),
    el(
      "td",
      { class: "status" },
      el("span", { class: `pill ${t.status}` }, t.status),
      " ",
      // Consul unreachable: the last status is stale (as `cts status` shows it).
      t.stale ? el("span", { class: "pill stale", title: t.stale.reason }, "stale") : null,
      t.stale ? el("div", { class: "stale-box" }, el("small", {}, `last: ${t.stale.last_status}`)) : null,
      t.enabled ? null : el("span", { class: "pill disabled" }, "disabled"),
      t.running ? el("div", { class: "running" }, "running") : null,
      t.held
        ? el(
            "div",
            { class: "held-box" },
            el("span", { class: "pill held" }, "held"),
            " ",
            changes(t.held.changes),
            ...t.held.reasons.map((r) => el("div", { class: "held-reason" }, el("small", {}, r))),
            el("div", {}, el("small", {}, `since ${when(t.held.held_at)}`)),
          )
        : null,
    ),
    el("td", { class: "last-run" }, last ? [el("span", { class: last.success ? last.outcome || "applied" : outcomeWord(last) }, last.success ? last.outcome || "ok" : outcomeWord(last)), " ", changes(last.changes), el("div", {}, el("small", {}, when(last.end_time)))] : el("span", { class: "muted" }, "never")),
    el("td", { class: "duration" }, last ? duration(eventMs(last)) : "-"),
    el(
      "td",
      { class: "drift-cell" },
      d
        ? [
            el("span", { class: `pill ${d.status}` }, d.status),
            " ",
            changes(d.changes),
            el("div", {}, el("small", {}, d.enabled ? `every ${d.every}${d.correct ? ", corrects" : ""}` : "on demand")),
            d.checked_at ? el("div", {}, el("small", {}, when(d.checked_at))) : null,
            d.error ? el("div", { class: "bad" }, el("small", {}, d.error)) : null,
          ]
        : el("span", { class: "muted" }, "off"),
    ),
    el(
      "td",
      {},
      el(
        "div",
        { class: "actions" },
        el("button", { disabled: !canChange || !t.enabled, title: "apply now", "data-action": "run", onclick: () => act("PATCH", `/v1/tasks/${name}?run=now`, { enabled: true }, `Run ${t.name}`) }, "Run"),
        el("button", { disabled: !canChange, "data-action": "toggle", onclick: () => act("PATCH", `/v1/tasks/${name}`, { enabled: !t.enabled }, `${t.enabled ? "Disable" : "Enable"} ${t.name}`) }, t.enabled ? "Disable" : "Enable"),
        el("button", { disabled: !canChange || !t.enabled, title: "plan against the last applied inputs", "data-action": "drift", onclick: () => act("POST", `/v1/tasks/${name}/drift`, {}, `Drift check of ${t.name}`) }, "Check drift"),
        t.held ? el("button", { disabled: !canChange || !t.enabled, title: "apply exactly the held plan", "data-action": "approve", onclick: () => act("POST", `/v1/tasks/${name}/approve`, {}, `Approve ${t.name}`) }, "Approve") : null,
        t.held ? el("button", { disabled: !canChange, title: "discard the held plan", "data-action": "reject", onclick: () => act("POST", `/v1/tasks/${name}/reject`, {}, `Reject ${t.name}`) }, "Reject") : null,
      ),
    ),
  );
}

function renderGraph() {
  const box = $("#graph");
  box.replaceChildren();
  const sources = [];
  const key = (s) => `${s.kind}:${s.name}`;
  for (const t of state.tasks) for (const s of t.sources) if (!sources.some((x) => key(x) === key(s))) sources.push(s);
  if (!state.tasks.length) return box.append(el("p", { class: "muted" }, "no tasks"));
  const rowH = 30, w = 760, nodeW = 250, top = 10;
  const height = top * 2 + Math.max(sources.length, state.tasks.length) * rowH;
  const g = svg("svg", { width: w, height, viewBox: `0 0 ${w} ${height}`, role: "img", "aria-label": "sources feeding tasks" });
  const y = (i) => top + i * rowH + 11;
  const label = { service: "service", catalog: "catalog", kv: "kv", nodes: "nodes", intentions: "intentions", config: "config", schedule: "cron" };
  state.tasks.forEach((t, ti) => {
    for (const s of t.sources) {
      const si = sources.findIndex((x) => key(x) === key(s));
      g.append(svg("path", { class: `edge ${s.role}`, d: `M${nodeW} ${y(si)} C${w / 2} ${y(si)}, ${w / 2} ${y(ti)}, ${w - nodeW} ${y(ti)}` }));
    }
  });
  sources.forEach((s, i) => {
    const n = svg("g", { class: "node source" }, svg("rect", { x: 0, y: y(i) - 11, width: nodeW, height: 22 }));
    n.append(svg("text", { x: 8, y: y(i) + 4 }, `${label[s.kind]}  ${s.name}`.slice(0, 38)));
    g.append(n);
  });
  state.tasks.forEach((t, i) => {
    const n = svg("g", { class: "node task" }, svg("rect", { x: w - nodeW, y: y(i) - 11, width: nodeW, height: 22 }));
    n.append(svg("text", { x: w - nodeW + 8, y: y(i) + 4 }, t.name.slice(0, 36)));
    g.append(n);
  });
  box.append(g, el("p", {}, el("small", {}, "solid: condition (triggers runs) · dashed: input (data only)")));
}

function renderEvents() {
  const box = $("#events");
  const open = new Set([...box.querySelectorAll("details[open]")].map((d) => d.dataset.task));
  box.replaceChildren(
    // The history sits beside its task's events, not inside them (its runs are details of their own).
    ...state.tasks.flatMap((t) => [
      el(
        "details",
        { "data-task": t.name, open: open.has(t.name) },
        el("summary", {}, `${t.name} `, el("small", {}, `(${counted(t.events.length, "event")})`)),
        t.events.length
          ? t.events.map((e) =>
              el(
                "div",
                { class: "event" },
                el("span", {}, when(e.end_time)),
                el("span", { class: e.success ? e.outcome || "applied" : "failed" }, e.success ? e.outcome || "ok" : "failed"),
                el("span", {}, duration(eventMs(e))),
                el(
                  "span",
                  {},
                  e.changes ? `${e.outcome === "drift" ? "plan found" : "changed"} ${changes(e.changes)}` : "",
                  e.drift ? (e.drift.corrected ? ` · corrected ${changes(e.drift.applied)}` : " · not corrected") : "",
                  e.error ? el("div", { class: "err" }, e.error.message) : null,
                  // An apply whose state was not saved (a stalled leader, another writer): never shown as a plain success.
                  e.state_not_saved && e.success ? el("div", { class: "err" }, `after an apply that could not save its state: ${e.state_not_saved}`) : null,
                  e.outside_state?.length ? el("div", { class: "err" }, `outside the saved state (import or delete): ${e.outside_state.map((o) => (o.id ? `${o.address} (id ${o.id})` : o.address)).join(", ")}`) : null,
                  // Terraform Cloud driver: the run's page (only http(s) links are made).
                  typeof e.run_url === "string" && /^https?:\/\//.test(e.run_url) ? el("div", {}, el("a", { href: e.run_url, target: "_blank", rel: "noopener noreferrer" }, "run in Terraform Cloud")) : null,
                  e.resources?.length ? el("ul", { class: "resources" }, e.resources.map((r) => el("li", { class: `action-${r.action}` }, `${ACTION_SYMBOL[r.action] ?? "*"} ${r.address} (${r.action})`))) : null,
                ),
              ),
            )
          : el("div", { class: "muted event" }, "no runs yet"),
        outputsBox(t),
      ),
      historyBox(t),
    ]),
  );
}

// A task's run history, loaded from /v1/tasks/{name}/runs when its "History" is opened (page by page).
const history = new Map();
const historyOpen = new Set();

async function loadHistory(name, before) {
  const headers = { accept: "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.authorization = `Bearer ${token}`;
  try {
    const q = before ? `&before=${encodeURIComponent(before)}` : "";
    const res = await fetch(`/v1/tasks/${encodeURIComponent(name)}/runs?limit=20${q}`, { headers });
    const body = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error((body.error && body.error.message) || `HTTP ${res.status}`);
    const earlier = before ? (history.get(name)?.runs ?? []) : [];
    history.set(name, { runs: [...earlier, ...body.runs], next: body.next, total: body.total });
  } catch (err) {
    history.set(name, { runs: [], error: err.message });
  }
  renderEvents();
}

function outputsBox(t) {
  if (!t.outputs) return null;
  const names = Object.keys(t.outputs.values).sort();
  return el(
    "div",
    { class: "outputs" },
    el("strong", {}, "Outputs"),
    " ",
    el("small", {}, `(${when(t.outputs.updated_at)})`),
    names.length
      ? el("table", { class: "outputs-table" }, names.map((n) => {
          const o = t.outputs.values[n];
          const text = typeof o.value === "string" ? o.value : JSON.stringify(o.value);
          return el("tr", { "data-output": n }, el("td", {}, n), el("td", { class: o.sensitive ? "muted" : "" }, text), el("td", {}, o.sensitive ? el("span", { class: "pill sensitive" }, "sensitive") : ""));
        }))
      : el("div", { class: "muted" }, "no outputs"),
  );
}

function historyBox(t) {
  const h = history.get(t.name);
  const box = el(
    "details",
    { class: "history", "data-history": t.name, open: historyOpen.has(t.name) },
    el("summary", {}, `History `, el("small", {}, `(${t.runs_kept} runs kept)`)),
  );
  box.addEventListener("toggle", () => {
    if (box.open) {
      historyOpen.add(t.name);
      if (!history.has(t.name)) loadHistory(t.name);
    } else historyOpen.delete(t.name);
  });
  if (!historyOpen.has(t.name)) return box;
  if (!h) return box.append(el("div", { class: "muted" }, "loading…")), box;
  if (h.error) return box.append(el("div", { class: "bad" }, `cannot read the history: ${h.error}`)), box;
  for (const r of h.runs)
    box.append(
      el(
        "details",
        { class: "run", "data-run": r.id },
        el(
          "summary",
          {},
          el("span", {}, when(r.start_time)),
          " ",
          el("span", { class: r.success ? r.outcome : outcomeWord(r) }, r.outcome),
          ` · ${r.trigger} · ${duration(r.duration_ms)} `,
          r.plan ? changes(r.plan.changes) : "",
        ),
        r.inputs_digest ? el("div", {}, el("small", {}, `inputs ${r.inputs_digest.slice(0, 16)}`)) : null,
        r.error ? el("div", { class: "err" }, r.error) : null,
        typeof r.run_url === "string" && /^https?:\/\//.test(r.run_url) ? el("div", {}, el("a", { href: r.run_url, target: "_blank", rel: "noopener noreferrer" }, "run in Terraform Cloud")) : null,
        r.plan?.resources?.length ? el("ul", { class: "resources" }, r.plan.resources.map((x) => el("li", { class: `action-${x.action}` }, `${ACTION_SYMBOL[x.action] ?? "*"} ${x.address} (${x.action})`))) : el("div", { class: "muted" }, "no resource changes"),
      ),
    );
  if (h.next) box.append(el("button", { "data-action": "older", onclick: () => loadHistory(t.name, h.next) }, `Older runs (${h.runs.length} of ${h.total})`));
  return box;
}

function renderCluster() {
  const c = state.cluster;
  $("#cluster-section").hidden = !c;
  if (!c) return;
  const box = $("#cluster");
  if (c.error) return box.replaceChildren(el("p", { class: "bad" }, `cannot read the cluster: ${c.error}`));
  box.replaceChildren(
    el("p", {}, `cluster ${c.cluster_name} · leader: `, el("strong", {}, c.leader ? `${c.leader.id} (${c.leader.address})` : "none")),
    el(
      "table",
      {},
      el("thead", {}, el("tr", {}, el("th", {}, "Member"), el("th", {}, "Address"), el("th", {}, "Role"), el("th", {}, "Healthy"))),
      el("tbody", {}, (c.members || []).map((m) => el("tr", { "data-member": m.id }, el("td", {}, m.id), el("td", {}, m.address), el("td", { class: m.leader ? "on" : "" }, m.leader ? "leader" : "follower"), el("td", { class: m.healthy ? "on" : "bad" }, String(m.healthy))))),
    ),
  );
}

function renderConsul() {
  const c = state.consul;
  const banner = $("#consul-banner");
  const down = !!c && c.reachable === false;
  banner.hidden = !down;
  if (!down) return banner.replaceChildren();
  banner.replaceChildren(
    `Consul unreachable since ${when(c.since)}`,
    c.reason ? el("div", {}, el("small", {}, c.reason)) : null,
    el("div", {}, el("small", {}, "Task statuses below are the last known ones (stale); nothing runs until Consul answers again.")),
  );
}

function render() {
  renderConsul();
  const counts = {};
  for (const t of state.tasks) counts[t.status] = (counts[t.status] || 0) + 1;
  $("#summary").textContent = `${counted(state.tasks.length, "task")} · ${Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(", ")}`;
  $("#tasks tbody").replaceChildren(...(state.tasks.length ? state.tasks.map(taskRow) : [el("tr", {}, el("td", { colspan: 6, class: "muted" }, "no tasks"))]));
  $("#token").placeholder = state.token_required ? "needed to change tasks" : "not needed (API has no token)";
  renderCluster();
  renderGraph();
  renderEvents();
}

function live() {
  const pill = $("#live");
  const source = new EventSource("/ui/events");
  const mark = (on, text) => {
    pill.className = `pill ${on ? "on" : "off"}`;
    pill.textContent = text;
  };
  source.addEventListener("open", () => mark(true, "live"));
  source.addEventListener("error", () => mark(false, "reconnecting…"));
  const onRun = (ev) => {
    const a = JSON.parse(ev.data);
    // Show "running" at once; the reload brings the event and the new status.
    const row = document.querySelector(`tr[data-task="${CSS.escape(a.task)}"]`);
    if (row && ev.type === "run-start") row.dataset.running = "true";
    reloadSoon();
  };
  source.addEventListener("run-start", onRun);
  source.addEventListener("run-end", onRun);
  source.addEventListener("hello", reloadSoon);
  source.addEventListener("consul", reloadSoon);
}

document.addEventListener("DOMContentLoaded", () => {
  $("#token").value = sessionStorage.getItem(TOKEN_KEY) || "";
  $("#token-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const v = $("#token").value.trim();
    if (v) sessionStorage.setItem(TOKEN_KEY, v);
    else sessionStorage.removeItem(TOKEN_KEY);
    render();
  });
  // The server rendered the state into the page (no wait for /ui/state before the first paint): start from it.
  const initial = document.getElementById("initial-state");
  if (initial) {
    try {
      state = JSON.parse(initial.textContent);
      render();
    } catch (err) {
      notice(`Cannot read the state in the page: ${err.message}`);
    }
  }
  load();
  live();
});
