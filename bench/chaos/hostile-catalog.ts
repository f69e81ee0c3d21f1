/**
 * 5. Hostile catalog data and secrets (issue #23): the fault probe's abuse thrown at a real
 * `cts watch`, and what holds.
 *  a. Catalog payloads (Terraform/cdktf injection, JSON break-outs, quotes, control characters,
 *     `<>&`, U+2028, long strings, seeded generated ones) in meta values, tags and names, written by
 *     a task class five ways and by two ModuleTasks: every file compared byte for byte with what
 *     Consul holds; a canary file a live `${file()}` would read.
 *  b. Service names Consul registers but cannot serve (newline, NUL, tab, U+2028): the other
 *     services' tasks still apply; warnings and cts_consul_skipped_services_total.
 *  c. Secrets from `{{ env }}` in a CTS provider block, printed by Terraform: every log line at
 *     TRACE in both formats, the events, the API and /ui/state searched in every spelling.
 *  d. A request body nested 5,000 deep: 400, nothing stored, the API keeps answering.
 */
import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startConsul, type ConsulAgent } from "../../test/support/consul.ts";
import { startCtsProcess, type CtsProcess } from "../../test/support/cts-process.ts";
import { waitFor } from "../../test/support/cts.ts";
import { http } from "../../test/support/api.ts";
import { encodings } from "../../test/fixtures/secret-encodings.ts";
import { leaks, PROBE_PATHS, probeSecrets, REDACTED, writeSecretProbe } from "../../test/fixtures/secret-probe.ts";
import { quote } from "../../src/values/quote.ts";
import { lit } from "../lib/config.ts";
import { writeChaosConfig } from "./lib/config.ts";
import { errorSamples, mbRange, rssSampler, secs } from "./lib/observe.ts";
import { describe, killAll, processesUnder } from "./lib/procs.ts";
import { expectedContent, held, hostileInstances, nfcHeld, ODD_NAMES, PREFIX, type Held } from "./lib/hostile-payloads.ts";
import { HOSTILE_WAYS } from "./tasks.ts";
import type { ScenarioFn } from "./lib/types.ts";

const ECHO_MODULE = fileURLToPath(new URL("../../modules/cts-echo", import.meta.url));
const RECORD_MODULE = fileURLToPath(new URL("../../test/fixtures/cts-modules/record", import.meta.url));
const TASKS = { files: "hostile-files", module: "hostile-module", catalog: "hostile-catalog" } as const;
/** The tasks whose condition reads each service's health, so they must skip the odd names. */
const HEALTH_TASKS = [TASKS.files, TASKS.module];
const FIRST_RUN_LIMIT_MS = 150_000;
/** A secret with every character the issue names, next to the generated ones. */
const FIXED_SECRET = `fixed<&>"\\'\${x}%{y}\u2028z`;

interface TaskEvent {
  success: boolean;
  error: { message: string } | null;
}

const ok = (b: boolean) => (b ? "✅" : "❌");

/** Events of every task, newest first. */
async function eventsOf(api: string): Promise<Record<string, TaskEvent[]>> {
  const res = await http(api, "GET", "/v1/status/tasks?include=events");
  return Object.fromEntries(Object.entries((res.body ?? {}) as Record<string, { events?: TaskEvent[] }>).map(([k, v]) => [k, v.events ?? []]));
}

async function apiOf(d: CtsProcess): Promise<string> {
  const { line } = await d.waitForLine(/api: listening on/, 120_000);
  return /listening on (https?:\/\/[\w.:[\]]+)/.exec(line)![1]!;
}

/** Every file under `dir`, recursively. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

/** Where two texts part: "at character 12: …"got"… instead of …"want"…" (the rest cut to 60 characters). */
function firstDifference(got: string, want: string): string {
  let i = 0;
  while (i < got.length && i < want.length && got[i] === want[i]) i++;
  const around = (t: string) => quote(t.slice(Math.max(0, i - 20), i + 40));
  return `at character ${i} of ${want.length}: …${around(got)}… instead of …${around(want)}…`;
}

/** The spellings a secret is searched for: those of the fault tests, and its base64 (standard and URL-safe, unpadded). */
function secretForms(s: string): Record<string, string> {
  const b64 = Buffer.from(s).toString("base64").replace(/=+$/, "");
  return { ...encodings(s), base64: b64, base64url: b64.replace(/\+/g, "-").replace(/\//g, "_") };
}

// ── a + b + d: one daemon with the payloads and the odd names ──────────────────────────────────

async function hostileData(ctx: Parameters<ScenarioFn>[0], consul: ConsulAgent, seed: number) {
  const dir = join(ctx.tmp, "data");
  const out = join(dir, "out");
  await mkdir(join(dir, "canary"), { recursive: true });
  const canary = join(dir, "canary", "canary.txt");
  const canaryText = `canary-${randomBytes(12).toString("hex")}`;
  await writeFile(canary, canaryText);

  const instances = hostileInstances(canary, ctx.sizes.hostileGenerated, seed);
  for (const h of instances) await consul.register({ Name: h.name, ID: h.id, Address: "10.9.0.1", Port: 80, Meta: { v: h.v }, Tags: h.tags });
  for (const [k, name] of ODD_NAMES.entries()) await consul.register({ Name: name, ID: `odd-${k}`, Address: "10.9.0.2", Port: 80, Meta: { v: "odd" }, Tags: ["odd"] });
  // What Consul holds is the truth (it turns a lone surrogate into U+FFFD, for one).
  const agent = (await consul.api("GET", "/v1/agent/services")) as Record<string, { ID: string; Service: string; Meta?: Record<string, string>; Tags?: string[] }>;
  const truth: Held[] = instances.map((h) => held(agent[h.id]!));
  const altered = instances.filter((h, i) => h.v !== truth[i]!.v || h.name !== truth[i]!.name).length;
  const catalog = Object.fromEntries(Object.entries((await consul.api("GET", "/v1/catalog/services")) as Record<string, string[]>).filter(([n]) => n.startsWith(PREFIX)));
  ctx.log(`${instances.length} hostile instances (${instances.filter((h) => h.origin === "generated").length} generated, seed ${seed}) and ${ODD_NAMES.length} odd names registered`);

  const echoOut = join(dir, "module-services.json");
  const recordOut = join(dir, "module-catalog.json");
  const config = await writeChaosConfig({
    dir,
    consulAddress: consul.address,
    backend: { local: { path: join(dir, "terraform.tfstate") } },
    tasks: [
      `new HostileFiles(${lit(TASKS.files)}, ${lit(out)}, ${lit(`^${PREFIX}`)})`,
      `new ModuleTask({ name: ${lit(TASKS.module)}, condition: services({ regexp: ${lit(`^${PREFIX}`)} }), module: ${lit(ECHO_MODULE)}, variables: { output_path: ${lit(echoOut)} } })`,
      `new ModuleTask({ name: ${lit(TASKS.catalog)}, condition: catalogServices({ regexp: ${lit(`^${PREFIX}`)} }), module: ${lit(RECORD_MODULE)}, variables: { prefix: "p", out: ${lit(recordOut)} } })`,
    ],
  });
  const started = performance.now();
  const d = startCtsProcess(config, { name: "cts-hostile", args: ["--log-level", "info"] });
  ctx.onCleanup(async () => void (await d.terminate()));
  const api = await apiOf(d);
  const rss = rssSampler(d.pid!);
  // A task that never finishes a run counts as failed; the checks below still run.
  let firstSyncMs = NaN;
  try {
    await waitFor(
      async () => {
        const e = await eventsOf(api);
        return Object.values(TASKS).every((t) => (e[t]?.length ?? 0) > 0);
      },
      FIRST_RUN_LIMIT_MS,
      "a finished run of each hostile task",
    );
    firstSyncMs = performance.now() - started;
  } catch (err) {
    ctx.log(String(err));
  }
  const events = await eventsOf(api);
  const unfinished = Object.values(TASKS).filter((t) => !events[t]?.length);
  ctx.log(`first runs ${Number.isFinite(firstSyncMs) ? `done in ${secs(firstSyncMs)}` : `not all done in ${secs(FIRST_RUN_LIMIT_MS)}`}: ${Object.values(TASKS).map((t) => `${t} ${!events[t]?.length ? "no run finished" : events[t]![0]!.success ? "ok" : "failed"}`).join(", ")}`);

  // a. Every file byte for byte. OpenTofu (cty) turns every string into Unicode NFC, so a file may
  // differ from Consul's text only by that; anything else is a mismatch.
  const mismatches: string[] = [];
  const nfcOnly: string[] = [];
  const compare = (what: string, got: string | undefined, exact: string, normalized: string) => {
    if (got === undefined) mismatches.push(`${what}: missing`);
    else if (got === exact) return;
    else if (got === normalized) nfcOnly.push(what);
    else mismatches.push(`${what}: ${firstDifference(got, normalized)}`);
  };
  let filesChecked = 0;
  for (const h of truth)
    for (const way of HOSTILE_WAYS) {
      filesChecked++;
      const raw = await readFile(join(out, way, h.id)).catch(() => undefined);
      // Bytes first: invalid UTF-8 would be hidden by decoding.
      const got = raw && (Buffer.from(raw.toString("utf8")).equals(raw) ? raw.toString("utf8") : "<not UTF-8>");
      const exact = expectedContent(way, h);
      compare(`${way}/${h.id}`, got, exact, way === "keys" ? expectedContent(way, nfcHeld(h)) : exact.normalize("NFC"));
    }
  // The ModuleTasks: values compared exactly after parsing (Terraform's jsonencode decides the bytes).
  let moduleValues = 0;
  try {
    const echo = Object.values(JSON.parse(await readFile(echoOut, "utf8")) as Record<string, { id: string; name: string; meta: Record<string, string>; tags: string[] }>);
    for (const h of truth) {
      const got = echo.find((s) => s.id === h.id);
      moduleValues += 2 + h.tags.length;
      const view = (x: { name: string; v: string | undefined; tags: string[] }) => JSON.stringify([x.name, x.v, x.tags]);
      const n = nfcHeld(h);
      compare(`${TASKS.module}/${h.id}`, got && view({ name: got.name, v: got.meta.v, tags: got.tags }), view(h), view(n));
    }
    const extra = echo.filter((s) => !truth.some((h) => h.id === s.id));
    if (extra.length) mismatches.push(`${TASKS.module}: unexpected services ${extra.map((s) => quote(s.name)).join(", ")}`);
  } catch (err) {
    mismatches.push(`${TASKS.module}: ${String(err).slice(0, 200)}`);
  }
  let catalogKeys = 0;
  try {
    const got = (JSON.parse(await readFile(recordOut, "utf8")) as { catalog_services: Record<string, string[]> }).catalog_services;
    const norm = (m: Record<string, string[]>, f = (x: string) => x) => {
      const by = new Map<string, Set<string>>();
      for (const [k, v] of Object.entries(m)) by.set(f(k), new Set([...(by.get(f(k)) ?? []), ...v.map(f)]));
      return JSON.stringify([...by].map(([k, v]) => [k, [...v].sort()]).sort((a, b) => ((a[0] as string) < (b[0] as string) ? -1 : 1)));
    };
    catalogKeys = Object.keys(catalog).length;
    moduleValues += catalogKeys;
    compare(`${TASKS.catalog} (catalog_services)`, norm(got), norm(catalog), norm(catalog, (x) => x.normalize("NFC")));
  } catch (err) {
    mismatches.push(`${TASKS.catalog}: ${String(err).slice(0, 200)}`);
  }
  // Live interpolation: a file showing what no payload holds (the canary, the hostname, the working dir).
  const host = (await readFile("/etc/hostname", "utf8").catch(() => hostname())).trim() || hostname();
  const tells = [canaryText, host, join(dir, "sync-tasks")];
  const allFiles = [...(await filesUnder(out)), echoOut, recordOut];
  const expectedText = new Map(truth.flatMap((h) => HOSTILE_WAYS.map((w) => [join(out, w, h.id), expectedContent(w, h)] as const)));
  const live: string[] = [];
  for (const f of allFiles) {
    const text = await readFile(f, "utf8").catch(() => "");
    const want = expectedText.get(f) ?? "";
    for (const t of tells) if (text.includes(t) && !want.includes(t)) live.push(`${f.slice(dir.length + 1)} shows ${t === canaryText ? "the canary" : t === host ? "the hostname" : "the working dir"}`);
  }
  const failedEvents = Object.fromEntries(Object.values(TASKS).map((t) => [t, (events[t] ?? []).filter((e) => !e.success).length + (unfinished.includes(t) ? 1 : 0)]));
  const taskFailures = Object.values(failedEvents).reduce((a, b) => a + b, 0) + d.logs().split("\n").filter((l) => /attempt \d+ failed, retrying/.test(l)).length;

  // b. Odd names: warnings (once per task and name) and the metric.
  const lines = d.logs().split("\n");
  const warnings = Object.fromEntries(HEALTH_TASKS.map((t) => [t, ODD_NAMES.map((n) => lines.filter((l) => l.includes(`task '${t}': skipped service ${quote(n)}:`)).length)]));
  const forged = lines.filter((l) => /^(line|nul|tab|ls)\b/.test(l)).length;
  const metricsText = (await http(api, "GET", "/metrics")).text;
  const skippedMetric = Object.fromEntries(Object.values(TASKS).map((t) => [t, Number(new RegExp(`^cts_consul_skipped_services_total\\{[^}]*task="${t}"[^}]*\\} (\\d+)`, "m").exec(metricsText)?.[1] ?? 0)]));
  const appliedWithOthers = HEALTH_TASKS.every((t) => events[t]?.[0]?.success === true);
  const oddInCatalogTask = ODD_NAMES.filter((n) => n in catalog).length;

  // d. A body nested 5,000 deep.
  const nest = (n: number) => '{"a":'.repeat(n) + "1" + "}".repeat(n);
  const body = `{"task":{"name":"deep","module":${lit(ECHO_MODULE)},"condition":{"services":{"names":["${PREFIX}0"]}},"variables":{"output_path":${lit(join(dir, "deep.json"))},"v":${nest(5000)}}}}`;
  const t0 = performance.now();
  const post = await http(api, "POST", "/v1/tasks", body);
  const postMs = performance.now() - t0;
  const patch = await http(api, "PATCH", `/v1/tasks/${TASKS.module}`, `{"variables":{"v":${nest(5000)}}}`);
  const getDeep = await http(api, "GET", "/v1/tasks/deep");
  const list = await http(api, "GET", "/v1/tasks");
  const getModule = await http(api, "GET", `/v1/tasks/${TASKS.module}`);
  const status = await http(api, "GET", "/v1/status/tasks");
  const listed = ((list.body?.tasks ?? []) as Array<{ name: string }>).map((t) => t.name);
  const deep = {
    post: post.status,
    postMessage: String(post.body?.error?.message ?? post.text).slice(0, 160),
    postMs,
    patch: patch.status,
    getDeep: getDeep.status,
    list: list.status,
    listedDeep: listed.includes("deep"),
    getModule: getModule.status,
    status: status.status,
  };
  const deepOk = deep.post === 400 && deep.patch === 400 && deep.getDeep === 404 && deep.list === 200 && !deep.listedDeep && deep.getModule === 200 && deep.status === 200 && d.running();

  const mem = rss.stop();
  const alive = d.running();
  await d.terminate();
  const left = processesUnder(join(dir, "sync-tasks"));
  killAll(left);
  return { dir, instances, truth, unfinished, altered, filesChecked, moduleValues, catalogKeys, mismatches, nfcOnly, live, failedEvents, taskFailures, warnings, forged, skippedMetric, appliedWithOthers, oddInCatalogTask, deep, deepOk, firstSyncMs, mem, alive, left, lines };
}

// ── c: secrets from {{ env }} printed by Terraform, at TRACE in both log formats ───────────────

async function secretsRun(ctx: Parameters<ScenarioFn>[0], consul: ConsulAgent, seed: number) {
  const secrets = [FIXED_SECRET, ...probeSecrets(seed, ctx.sizes.hostileSecrets)];
  const dir = join(ctx.tmp, "secrets");
  await mkdir(dir, { recursive: true });
  const { config, env } = await writeSecretProbe(dir, consul, secrets);
  const runs: Array<{ format: string; lines: number; bytes: number; answers: number; answerBytes: number; marks: number; leaks: string[]; notJson: number; probeFailed: boolean; carrierOk: boolean }> = [];
  for (const format of ["text", "json"] as const) {
    const d = startCtsProcess(config, { name: `cts-secrets-${format}`, env, args: ["--log-level", "trace", "--log-format", format] });
    ctx.onCleanup(async () => void (await d.terminate()));
    const api = await apiOf(d);
    // The probe's writes fail with the secrets in Terraform's error; the carrier applies with them in its provider block.
    const events = (await waitFor(
      async () => {
        const e = await eventsOf(api);
        return e.probe?.some((x) => !x.success) && (e.carrier?.length ?? 0) > 0 ? e : undefined;
      },
      FIRST_RUN_LIMIT_MS,
      "a failed run of 'probe' and a run of 'carrier'",
    ))!;
    const found: string[] = [];
    let answers = 0;
    let answerBytes = 0;
    let marks = 0;
    for (const path of [...PROBE_PATHS, "/v1/status/tasks/carrier?include=events", "/metrics"]) {
      const res = await http(api, "GET", path);
      answers++;
      answerBytes += Buffer.byteLength(res.text);
      marks += res.text.split(REDACTED).length - 1;
      found.push(...leaks(res.text, secrets, secretForms).map((l) => `${path}: ${l}`));
    }
    await d.terminate();
    const logs = d.logs();
    const lines = logs.split("\n").filter(Boolean);
    let notJson = 0;
    for (const [n, l] of lines.entries()) {
      const got = leaks(l, secrets, secretForms);
      if (got.includes("not valid JSON") || (format === "json" && !l.startsWith("{"))) notJson++;
      found.push(...got.filter((x) => x !== "not valid JSON").map((x) => `${format} log line ${n + 1}: ${x}`));
    }
    // A secret across a line break.
    found.push(...leaks(logs, secrets, secretForms).filter((x) => x !== "not valid JSON").map((x) => `${format} log as a whole: ${x}`));
    marks += logs.split(REDACTED).length - 1;
    runs.push({ format, lines: lines.length, bytes: Buffer.byteLength(logs), answers, answerBytes, marks, leaks: [...new Set(found)], notJson, probeFailed: !!events.probe?.some((x) => !x.success), carrierOk: !!events.carrier?.[0]?.success });
    ctx.log(`secrets, ${format} logs: ${lines.length} lines, ${answers} API answers, ${marks} redactions, ${runs.at(-1)!.leaks.length} leaks`);
  }
  const left = processesUnder(join(dir, "work"));
  killAll(left);
  return { secrets, runs, left };
}

export const run: ScenarioFn = async (ctx) => {
  const seed = ctx.sizes.hostileSeed || Date.now() % 2 ** 31;
  ctx.log(`seed ${seed} (replay with --hostile-seed=${seed})`);
  const consul = await startConsul();
  ctx.onCleanup(() => consul.stop());

  const a = await hostileData(ctx, consul, seed);
  const s = await secretsRun(ctx, consul, seed);

  const payloadsOk = a.mismatches.length === 0 && a.live.length === 0 && a.taskFailures === 0;
  const warnTotal = Object.values(a.warnings).flat().reduce((x, y) => x + y, 0);
  const oddOk = a.appliedWithOthers && Object.values(a.warnings).every((w) => w.every((n) => n === 1)) && HEALTH_TASKS.every((t) => a.skippedMetric[t] === ODD_NAMES.length) && a.forged === 0;
  const leakTotal = s.runs.reduce((x, r) => x + r.leaks.length, 0);
  const secretsOk = leakTotal === 0 && s.runs.every((r) => r.probeFailed && r.carrierOk && r.marks > 0 && (r.format === "text" || r.notJson === 0));
  const orphans = [...a.left, ...s.left];
  const linesScanned = s.runs.reduce((x, r) => x + r.lines, 0);
  const verdicts = [
    `${ok(payloadsOk)} payloads: ${a.mismatches.length} mismatches, ${a.live.length} live, ${a.taskFailures} failures`,
    `${ok(oddOk)} odd names skipped`,
    `${ok(secretsOk)} secrets: ${leakTotal} leaks`,
    `${ok(a.deepOk)} deep body → ${a.deep.post}`,
  ];
    const generated = a.instances.filter((h) => h.origin === "generated").length;
  const nameful = a.instances.filter((h) => h.origin === "known" && h.name !== `${PREFIX}${h.id.slice(2)}`).length;

  return {
    title: "Hostile catalog data and secrets",
    method:
      `One Consul dev agent. **Payloads**: ${a.instances.length} service instances (${a.instances.length - generated} from the fault probe of issue #23: \`\${file("/etc/hostname")}\`, \`\${file(<canary>)}\`, \`%{ if }\`/\`%{ for }\` directives, \`\${path.cwd}\`, \`$\${\` escapes, \`\${TfToken[TOKEN.1]}\` and list/map/number-token text, \`", "admin": true, "x": "\`, quotes and backslashes, newline/CR/CRLF/NUL/tab, \`<>&\`, U+2028/2029, handlebars text, cts's old placeholder characters, a 512-byte meta value and 8 KiB tags; ${generated} generated by fast-check from seed ${seed}) carry the payload in meta \`v\` and their tags, and ${nameful} also in their service name (those Consul can serve). A real \`cts watch\` (info level, local state) runs three tasks on \`^${PREFIX}\`: a task class writing each instance's name, meta and tags five ways (${HOSTILE_WAYS.join(", ")}: a plain attribute, \`JSON.stringify\` in task code, \`Fn.jsonencode\` with the tags as map keys, \`Fn.join\`, a handlebars template with \`{{json}}\`), a ModuleTask (modules/cts-echo: \`jsonencode(var.services)\`) and a catalog-services ModuleTask (the names as map keys). Every file is compared byte for byte with what Consul holds (read back from /v1/agent/services), module outputs value for value; a file showing the canary file's random content, the hostname or the working dir counts as a live interpolation. ` +
      `**Odd names**: ${ODD_NAMES.length} more services under the same prefix whose names hold a newline, NUL, tab or U+2028 (Consul registers them and answers 400 to their health). ` +
      `**Secrets**: ${s.secrets.length} values (\`${FIXED_SECRET.replace(/\u2028/g, "\\u2028")}\` and ${s.secrets.length - 1} generated from the same seed over the full Unicode range) in \`{{ env }}\` of a CTS \`terraform_provider\` block (test/fixtures/secret-probe.ts, as test/faults/secret-forms.test.ts): the provider is never configured, and the same values as catalog meta make a module's file writes fail with them in Terraform's error. \`cts watch --log-level trace\` once with text and once with JSON logs (Terraform's log on); every log line, the log as a whole and ${s.runs[0]?.answers ?? 0} API answers (events, tasks, /ui/state, /metrics) are searched for each value raw, JSON-escaped (\`\\u003c\`), Go-quoted, HCL-quoted, \`\\uXXXX\`-escaped, URL-encoded, JSON inside JSON, and base64. ` +
      `**Deep body**: \`POST /v1/tasks\` whose \`variables\` nest 5,000 objects deep, and the same \`PATCH\` on an existing task.`,
    figures: {
      scenario: "5. Hostile data",
      changes: `${a.instances.length} payloads, ${ODD_NAMES.length} odd names, ${s.secrets.length} secrets`,
      runs: `${Object.values(TASKS).filter((t) => a.failedEvents[t] === 0).length}/3 tasks applied`,
      errors: String(a.taskFailures),
      orphans: orphans.length ? describe(orphans) : "0",
      rss: mbRange(a.mem),
      recovery: Number.isFinite(a.firstSyncMs) ? `first sync ${secs(a.firstSyncMs)}` : `${a.unfinished.join(", ")}: no run in ${secs(FIRST_RUN_LIMIT_MS)}`,
      verdict: [...verdicts, ...(orphans.length ? [`❌ ${orphans.length} processes left`] : [])].join("; "),
    },
    tables: [
      {
        title: "a. Catalog payloads",
        columns: ["Measure", "Value"],
        rows: [
          ["Payloads registered (known / generated, seed)", `${a.instances.length} (${a.instances.length - generated} / ${generated}, seed ${seed}); ${nameful} also in the service name; ${a.altered} changed by Consul itself (lone surrogates → U+FFFD)`],
          ["Files checked byte for byte (5 ways × instances)", a.filesChecked],
          ["Module values checked (name, meta, tags per service; catalog-services keys)", `${a.moduleValues} (${a.catalogKeys} catalog names)`],
          ["Mismatches", a.mismatches.length],
          ["Outputs that differ only by Unicode NFC (OpenTofu normalizes every string)", `${a.nfcOnly.length}${a.nfcOnly.length ? ` (${a.nfcOnly.slice(0, 6).join(", ")}${a.nfcOnly.length > 6 ? ", …" : ""})` : ""}`],
          ["Live interpolations (canary, hostname or working dir in a file)", a.live.length],
          ["Task failures (failed runs + retried attempts; a task with no finished run counts 1)", `${a.taskFailures} (${Object.entries(a.failedEvents).map(([t, n]) => `${t} ${n}`).join(", ")})`],
          ["Verdict", `${ok(payloadsOk)} ${payloadsOk ? "every file holds what Consul holds, byte for byte up to OpenTofu's NFC normalization; nothing evaluated" : "see the notes"}`],
        ],
      },
      {
        title: "b. Service names Consul cannot serve",
        columns: ["Measure", "Value"],
        rows: [
          ["Odd names registered", ODD_NAMES.map(quote).join(", ")],
          ["Tasks reading health applied with the other services", a.appliedWithOthers ? "yes (both)" : "no"],
          ["Warnings per task and name (want 1 each)", HEALTH_TASKS.map((t) => `${t}: ${a.warnings[t]!.join("/")}`).join("; ") + ` (${warnTotal} in all)`],
          ["cts_consul_skipped_services_total", Object.entries(a.skippedMetric).map(([t, n]) => `${t} ${n}`).join(", ")],
          ["Log lines a newline in a name started", a.forged],
          ["Odd names as keys of the catalog-services task (data, not skipped)", `${a.oddInCatalogTask} of ${ODD_NAMES.length}, each exactly as Consul holds it`],
          ["Verdict", `${ok(oddOk)} ${oddOk ? "skipped with one warning each, counted, the others applied" : "see the notes"}`],
        ],
      },
      {
        title: "c. Secrets at TRACE level",
        columns: ["Log format", "Log lines scanned", "Log size", "API answers scanned", "[redacted] marks", "Lines not JSON", "Leaks"],
        rows: s.runs.map((r) => [r.format, r.lines, `${(r.bytes / 2 ** 20).toFixed(1)} MiB`, `${r.answers} (${(r.answerBytes / 1024).toFixed(0)} KiB)`, r.marks, r.format === "json" ? r.notJson : "–", r.leaks.length]),
        notes: [`${ok(secretsOk)} ${linesScanned} log lines and ${s.runs.reduce((x, r) => x + r.answers, 0)} API answers scanned for ${s.secrets.length} secrets in ${Object.keys(secretForms(FIXED_SECRET)).length} spellings each (+ decoded JSON): ${leakTotal} leaks.`],
      },
      {
        title: "d. Request body nested 5,000 deep",
        columns: ["Request", "Answer"],
        rows: [
          ["POST /v1/tasks (variables 5,000 deep)", `${a.deep.post} in ${a.deep.postMs.toFixed(0)} ms: ${a.deep.postMessage}`],
          [`PATCH /v1/tasks/${TASKS.module} (5,000 deep)`, a.deep.patch],
          ["GET /v1/tasks/deep afterwards", a.deep.getDeep],
          ["GET /v1/tasks / lists 'deep'", `${a.deep.list} / ${a.deep.listedDeep ? "yes" : "no"}`],
          [`GET /v1/tasks/${TASKS.module}, GET /v1/status/tasks`, `${a.deep.getModule}, ${a.deep.status}`],
          ["Verdict", `${ok(a.deepOk)} ${a.deepOk ? "refused before anything was stored; the API keeps answering" : "see the table"}`],
        ],
      },
    ],
    notes: [
      ...a.mismatches.slice(0, 8).map((m) => `mismatch: ${m}`),
      ...a.live.slice(0, 5).map((m) => `live: ${m}`),
      ...s.runs.flatMap((r) => r.leaks.slice(0, 5).map((l) => `leak: ${l}`)),
      ...(a.alive ? [] : ["the hostile-data daemon died"]),
      ...errorSamples(a.lines, 6, 260).map((x) => `log: ${x}`),
    ],
    data: {
      seed,
      instances: a.instances.length,
      generated,
      nameful,
      alteredByConsul: a.altered,
      filesChecked: a.filesChecked,
      moduleValues: a.moduleValues,
      mismatches: a.mismatches,
      nfcOnly: a.nfcOnly,
      live: a.live,
      failedEvents: a.failedEvents,
      taskFailures: a.taskFailures,
      oddNames: { warnings: a.warnings, skippedMetric: a.skippedMetric, appliedWithOthers: a.appliedWithOthers, forgedLines: a.forged, inCatalogTask: a.oddInCatalogTask },
      secrets: { count: s.secrets.length, runs: s.runs },
      deepBody: a.deep,
      firstSyncMs: a.firstSyncMs,
      rss: a.mem,
      orphans,
    },
  };
};
