// The dashboard's first paint: the page arrives with the state it shows (the summary and a row per
// task rendered on the server, the whole state as a JSON block the script starts from), instead of
// an empty shell that waits for /ui/state. Every value is escaped: task names, descriptions and
// errors come from configs, Consul and Terraform (untrusted). The JSON block is data, not a script
// (`type="application/json"`): the page's CSP, which allows no inline script, does not run it.

/** What the page shows of a task (the fields of /ui/state's tasks this rendering reads). */
interface PageTask {
  name: string;
  description?: string;
  module?: string;
  status: string;
  enabled: boolean;
  stale?: { last_status?: string } | null;
  drift?: { status?: string; changes?: Changes } | null;
  held?: unknown;
  events: Array<{ success?: boolean; outcome?: string; changes?: Changes; start_time?: string; end_time?: string }>;
}
type Changes = { add: number; change: number; destroy: number };

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const esc = (value: unknown) => String(value ?? "").replace(/[&<>"']/g, (c) => ESCAPES[c]!);
const changes = (c: Changes | undefined) => (c ? ` +${c.add} ~${c.change} -${c.destroy}` : "");
const counted = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** The summary line, as the script writes it: "2 tasks · 1 successful, 1 errored". */
export function summaryText(tasks: readonly Pick<PageTask, "status">[]): string {
  const counts = new Map<string, number>();
  for (const t of tasks) counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
  return `${counted(tasks.length, "task")} · ${[...counts].map(([k, v]) => `${v} ${k}`).join(", ")}`;
}

function row(t: PageTask): string {
  const last = t.events[0];
  const word = last ? (last.success ? last.outcome || "ok" : last.outcome === "held" || last.outcome === "rejected" ? last.outcome : "failed") : "";
  const ms = last?.start_time && last.end_time ? Date.parse(last.end_time) - Date.parse(last.start_time) : NaN;
  const duration = ms >= 0 ? (ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`) : "-";
  return (
    `<tr data-task="${esc(t.name)}">` +
    `<td class="wrap"><strong>${esc(t.name)}</strong>${t.description ? `<div><small>${esc(t.description)}</small></div>` : ""}${t.module ? `<div><small>${esc(t.module)}</small></div>` : ""}</td>` +
    `<td class="status"><span class="pill ${esc(t.status)}">${esc(t.status)}</span>${t.stale ? ` <span class="pill stale">stale</span><div class="stale-box"><small>last: ${esc(t.stale.last_status)}</small></div>` : ""}${t.enabled ? "" : ' <span class="pill disabled">disabled</span>'}${t.held ? ' <span class="pill held">held</span>' : ""}</td>` +
    `<td class="last-run">${last ? `<span class="${esc(word)}">${esc(word)}</span>${esc(changes(last.changes))}<div><small>${esc(last.end_time)}</small></div>` : '<span class="muted">never</span>'}</td>` +
    `<td class="duration">${esc(duration)}</td>` +
    `<td class="drift-cell">${t.drift ? `<span class="pill ${esc(t.drift.status)}">${esc(t.drift.status)}</span>${esc(changes(t.drift.changes))}` : '<span class="muted">off</span>'}</td>` +
    `<td></td></tr>`
  );
}

/** The JSON of the state, safe inside a `<script>` element (no `</script>`, no HTML comment, no line separators). */
function jsonBlock(state: unknown): string {
  return JSON.stringify(state).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

/** index.html with `state` (the body of /ui/state, already redacted) rendered into it. */
export function pageWithState(html: string, state: { tasks: readonly object[] }): string {
  const tasks = state.tasks as PageTask[];
  const rows = tasks.length ? tasks.map(row).join("") : '<tr><td colspan="6" class="muted">no tasks</td></tr>';
  return html
    .replace('<span id="summary"></span>', () => `<span id="summary">${esc(summaryText(tasks))}</span>`)
    .replace(/(<table id="tasks">[\s\S]*?<tbody>)[\s\S]*?(<\/tbody>)/, (_, open: string, close: string) => `${open}${rows}${close}`)
    .replace("</body>", () => `<script type="application/json" id="initial-state">${jsonBlock(state)}</script>\n</body>`);
}
