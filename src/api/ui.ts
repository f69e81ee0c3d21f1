import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Context, MiddlewareHandler } from "hono";
import { streamSSE } from "hono/streaming";
import { knownSecrets } from "../secrets/redactor.ts";
import type { Condition, TaskInputs } from "../task/conditions.ts";
import type { TaskView } from "../runtime/interfaces.ts";
import { classModuleLabel, driftToCts, heldToApi, outputsToApi } from "../cts/api/shape.ts";
import type { ApiController, ConsulState } from "./deps.ts";
import type { ApiApp, ApiEnv } from "./env.ts";
import { ApiError } from "./http-error.ts";
import { pageWithState } from "./ui-page.ts";
import { allow, queryParams } from "./request-target.ts";

/** What the dashboard reads. */
export interface UiDeps {
  controller: ApiController;
  /** HA cluster status (members, leader); absent without high availability. */
  cluster?: () => Promise<Record<string, unknown>>;
  /** Whether Consul answers: while it does not, the page shows a banner and every status as stale. */
  consul?: ConsulState;
  /** Whether task-changing calls need the bearer token (the page then asks for it). */
  tokenRequired: boolean;
}

/** One edge of the dashboard's graph: a Consul source feeding a task. */
export interface UiSource {
  kind: "service" | "catalog" | "kv" | "nodes" | "intentions" | "config" | "schedule";
  /** Service name (or `regexp:…`), KV path, or cron expression. */
  name: string;
  /** The condition triggers runs; inputs only add data. */
  role: "condition" | "input";
}

// Static files: read once; they live next to this file (copied to dist/api/ui by the build).
const ASSETS: Record<string, { file: string; type: string }> = {
  "/ui": { file: "index.html", type: "text/html; charset=utf-8" },
  "/ui/": { file: "index.html", type: "text/html; charset=utf-8" },
  "/ui/app.js": { file: "app.js", type: "text/javascript; charset=utf-8" },
  "/ui/app.css": { file: "app.css", type: "text/css; charset=utf-8" },
};
// Nothing from elsewhere: no CDN, no inline script (so an injected string cannot run), no framing.
// The style sheet is inlined (one round trip less before the first paint) and allowed by its hash.
const csp = (styleHash: string) =>
  `default-src 'none'; script-src 'self'; style-src 'self' 'sha256-${styleHash}'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
const SSE_PING_MS = 15_000;

function sourcesOf(condition: Condition, inputs: TaskInputs | undefined): UiSource[] {
  const of = (c: Condition, role: UiSource["role"]): UiSource[] => {
    switch (c.kind) {
      case "services":
        return (c.query.names?.length ? c.query.names : [`regexp:${c.query.regexp ?? ""}`]).map((name) => ({ kind: "service" as const, name, role }));
      case "catalog-services":
        return [{ kind: "catalog", name: `regexp:${c.query.regexp}`, role }];
      case "consul-kv":
        return [{ kind: "kv", name: c.query.recurse ? `${c.query.path} (recursive)` : c.query.path, role }];
      case "nodes":
        return [{ kind: "nodes", name: c.query.filter ? `filter:${c.query.filter}` : "all", role }];
      case "intentions":
        return [{ kind: "intentions", name: c.query.destination ?? "all", role }];
      case "config-entries":
        return [{ kind: "config", name: c.query.name ? `${c.query.kind}/${c.query.name}` : c.query.kind, role }];
      case "schedule":
        return [{ kind: "schedule", name: c.cron, role }];
    }
  };
  const ins = [inputs?.services, inputs?.kv, inputs?.nodes, inputs?.intentions, inputs?.configEntries].filter((c): c is NonNullable<typeof c> => c !== undefined);
  return [...of(condition, "condition"), ...ins.flatMap((c) => of(c, "input"))];
}

function taskOf(v: TaskView, ctrl: ApiController): Record<string, unknown> {
  return {
    name: v.name,
    description: v.description,
    enabled: v.enabled,
    status: v.status,
    // While Consul is unreachable: status "unknown", and the last status it had (as `cts status`).
    stale: v.stale ? { since: v.stale.since, last_status: v.stale.lastStatus, reason: v.stale.reason } : null,
    running: v.running,
    origin: v.origin,
    module: typeof v.module === "string" ? v.module : classModuleLabel(v.className),
    sources: sourcesOf(v.condition as Condition, v.inputs as TaskInputs),
    // Task chains: the tasks it runs after (empty when none).
    after: [...(v.after ?? [])],
    drift: driftToCts(v) ?? null,
    held: v.held ? heldToApi(v.held) : null,
    events: ctrl.events.list(v.name),
    // Beyond CTS: the latest Terraform outputs (sensitive values redacted) and how many runs the history keeps (the page loads them from /v1/tasks/{name}/runs).
    outputs: ((o) => (o ? outputsToApi(o) : null))(ctrl.taskOutputs?.(v.name)),
    runs_kept: ctrl.taskRuns?.(v.name).length ?? 0,
  };
}

/**
 * The read-only dashboard at /ui: the page and its assets, `/ui/state` (everything the page shows,
 * in one answer, with whether Consul answers) and `/ui/events` (server-sent events when a run or
 * drift check starts or ends, and when Consul is lost or back).
 * Changing things goes through the ordinary API routes, with the token when one is configured.
 * `guard`: the checks every route takes (normal path, browser guard, token).
 */
export function mountUi(app: ApiApp, deps: UiDeps, guard: MiddlewareHandler<ApiEnv>[]): { close(): void } {
  const dir = new URL("./ui/", import.meta.url);
  const files = new Map(Object.values(ASSETS).map((a) => [a.file, readFileSync(new URL(a.file, dir))]));
  const css = files.get("app.css")!.toString("utf8");
  files.set("index.html", Buffer.from(files.get("index.html")!.toString("utf8").replace('<link rel="stylesheet" href="/ui/app.css">', () => `<style>${css}</style>`)));
  const CSP = csp(createHash("sha256").update(css).digest("base64"));
  const open = new Set<() => void>();
  const ctrl = deps.controller;

  app.all("/ui/*", allow("GET"), queryParams(), ...guard);
  const asset = (c: Context<ApiEnv>) => {
    const a = ASSETS[c.req.path]!;
    return c.body(files.get(a.file)!, 200, { "content-type": a.type, "content-security-policy": CSP, "x-content-type-options": "nosniff", "cache-control": "no-cache", "referrer-policy": "no-referrer" });
  };
  // The page comes with its state rendered in (ui-page.ts): its first paint shows the tasks, not "loading…".
  const page = async (c: Context<ApiEnv>) => {
    const html = pageWithState(files.get("index.html")!.toString("utf8"), await uiState());
    return c.body(html, 200, { "content-type": ASSETS["/ui"]!.type, "content-security-policy": CSP, "x-content-type-options": "nosniff", "cache-control": "no-store", "referrer-policy": "no-referrer" });
  };
  for (const path of Object.keys(ASSETS)) {
    if (ASSETS[path]!.file === "index.html") app.get(path, page);
    else app.get(path, asset);
  }

  /** Everything the page shows, secrets redacted: `/ui/state`, and rendered into the page itself. */
  const uiState = async () => {
    const tasks = ctrl.taskNames().flatMap((n) => ctrl.view(n) ?? []).map((v) => taskOf(v, ctrl));
    let cluster: Record<string, unknown> | null = null;
    if (deps.cluster) cluster = await deps.cluster().catch((err: Error) => ({ error: err.message }));
    const r = deps.consul;
    const consul = r ? { reachable: r.reachable, ...(r.reachable ? {} : { since: r.lostSince ?? null, reason: r.reason ?? null }) } : null;
    return knownSecrets.redactDeep({ tasks, cluster, consul, token_required: deps.tokenRequired, time: new Date().toISOString() });
  };
  app.get("/ui/state", async (c) => c.body(JSON.stringify(await uiState()), 200, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" }));

  app.get("/ui/events", (c) => {
    const res = streamSSE(c, async (stream) => {
      const send = (event: string, data: unknown) => void stream.writeSSE({ event, data: JSON.stringify(data) }).catch(() => undefined);
      await new Promise<void>((resolve) => {
        const off = ctrl.onActivity((a) => send(a.type === "start" ? "run-start" : "run-end", a));
        // Consul lost or back: the page reloads its state (banner, stale statuses) at once.
        const offConsul = deps.consul?.onChange?.((reachable) => send("consul", { reachable }));
        const ping = setInterval(() => send("ping", {}), SSE_PING_MS);
        ping.unref();
        const end = () => {
          clearInterval(ping);
          off();
          offConsul?.();
          open.delete(end);
          resolve();
        };
        open.add(end);
        stream.onAbort(end);
        send("hello", {});
      });
    });
    // One stream per connection: when it ends (the server stops), the socket goes too, instead of
    // idling in keep-alive and holding the server's close for its grace period.
    res.headers.set("connection", "close");
    return res;
  });

  app.get("/ui/*", (c) => {
    throw new ApiError(404, `no route for '${c.req.path.slice(0, 200)}'.`);
  });

  return {
    // Open event streams would hold the server's close for its whole grace period.
    close: () => {
      for (const end of [...open]) end();
    },
  };
}
