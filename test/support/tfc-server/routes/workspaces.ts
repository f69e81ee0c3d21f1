import type { Context, Hono } from "hono";
import { organizationFor, workspaceFor } from "../access.ts";
import { ApiError, document, type Env, notFound, paginate, requestBody, requestData, type ServerContext, workspaceResource } from "../jsonapi.ts";
import type { Workspace } from "../store.ts";
import type { RunQueue } from "../executor/run-queue.ts";

const NAME = /^[A-Za-z0-9_-]{1,90}$/;
const TAG = /^[a-z0-9][a-z0-9:_-]{0,254}$/i;
const MODES = ["remote", "local", "agent"] as const;

/** Workspaces: create, read (by name or id), list (search[tags], search[name]), update, tags, locks. */
export function workspaceRoutes(app: Hono<Env>, ctx: ServerContext, queue: RunQueue): void {
  const { store } = ctx;

  app.get("/api/v2/organizations/:org/workspaces", (c) => {
    const org = organizationFor(c, ctx, c.req.param("org"));
    const tags = (c.req.query("search[tags]") ?? "").split(",").map((t) => t.trim()).filter(Boolean);
    const name = c.req.query("search[name]");
    const found = [...store.workspaces.values()].filter((ws) => ws.organization === org.name && tags.every((t) => ws.tags.includes(t)) && (!name || ws.name.includes(name)));
    const page = paginate(c, found);
    return document(c, { ...page, data: page.data.map((ws) => workspaceResource(ws, ctx)) });
  });

  app.post("/api/v2/organizations/:org/workspaces", async (c) => {
    const org = organizationFor(c, ctx, c.req.param("org"));
    const { attributes: a, relationships: r } = await requestData(c);
    const name = String(a.name ?? "");
    if (!NAME.test(name)) throw new ApiError(422, "invalid attribute", "Name may only contain letters, numbers, '-' and '_', at most 90", "/data/attributes/name");
    if (store.workspaceByName(org.name, name)) {
      const status = ctx.variants.duplicateWorkspaceStatus ?? 422;
      throw new ApiError(status, status === 409 ? "conflict" : "invalid attribute", "Name has already been taken", "/data/attributes/name");
    }
    const tags = tagNames(a, r);
    const ws = store.addWorkspace(org.name, name, { description: String(a.description ?? ""), autoApply: a["auto-apply"] === true, tags: [] });
    try {
      applySettings(ctx, ws, a, r);
    } catch (err) {
      store.workspaces.delete(ws.id);
      throw err;
    }
    addTags(ws, tags);
    return document(c, { data: workspaceResource(ws, ctx) }, 201);
  });

  const byName = (c: Context<Env>) => {
    const org = organizationFor(c, ctx, c.req.param("org")!);
    const ws = store.workspaceByName(org.name, c.req.param("name")!);
    if (!ws) throw notFound();
    return ws;
  };
  const byId = (c: Context<Env>) => workspaceFor(c, ctx, c.req.param("id")!);

  app.get("/api/v2/organizations/:org/workspaces/:name", (c) => document(c, { data: workspaceResource(byName(c), ctx) }));
  app.get("/api/v2/workspaces/:id", (c) => document(c, { data: workspaceResource(byId(c), ctx) }));

  const update = async (c: Context<Env>, ws: Workspace) => {
    const { attributes: a, relationships: r } = await requestData(c);
    if (a.name !== undefined && a.name !== ws.name) {
      if (!NAME.test(String(a.name))) throw new ApiError(422, "invalid attribute", "Name is invalid", "/data/attributes/name");
      if (store.workspaceByName(ws.organization, String(a.name))) throw new ApiError(422, "invalid attribute", "Name has already been taken", "/data/attributes/name");
      ws.name = String(a.name);
    }
    if (a.description !== undefined) ws.description = String(a.description);
    if (a["auto-apply"] !== undefined) ws.autoApply = a["auto-apply"] === true;
    applySettings(ctx, ws, a, r);
    addTags(ws, tagNames(a, r));
    ws.updatedAt = new Date().toISOString();
    return document(c, { data: workspaceResource(ws, ctx) });
  };
  app.patch("/api/v2/organizations/:org/workspaces/:name", (c) => update(c, byName(c)));
  app.patch("/api/v2/workspaces/:id", (c) => update(c, byId(c)));

  app.get("/api/v2/workspaces/:id/relationships/tags", (c) => {
    const ws = byId(c);
    return document(c, paginate(c, ws.tags.map((name) => ({ id: `tag-${name}`, type: "tags", attributes: { name } }))));
  });
  app.post("/api/v2/workspaces/:id/relationships/tags", async (c) => {
    const ws = byId(c);
    const body = await requestBody(c);
    if (!Array.isArray(body.data)) throw new ApiError(422, "invalid attribute", "data must be a list of tags", "/data");
    addTags(ws, body.data.map((t: any) => String(t?.attributes?.name ?? "")));
    return c.body(null, 204);
  });

  app.post("/api/v2/workspaces/:id/actions/lock", async (c) => {
    const ws = byId(c);
    const body = await requestBody(c);
    if (ws.lockedBy) throw new ApiError(409, "conflict", "Unable to lock workspace. The workspace is already locked.");
    ws.lockedBy = { type: "users", id: c.get("grant")!.userId };
    ws.lockReason = String(body.reason ?? "");
    return document(c, { data: workspaceResource(ws, ctx) });
  });
  app.post("/api/v2/workspaces/:id/actions/unlock", (c) => {
    const ws = byId(c);
    if (!ws.lockedBy) throw new ApiError(409, "conflict", "Unable to unlock workspace. The workspace is not locked.");
    if (ws.lockedBy.type !== "users" || ws.lockedBy.id !== c.get("grant")!.userId) throw new ApiError(409, "conflict", "Unable to unlock workspace. The workspace is locked by another user or a run; force-unlock it.");
    ws.lockedBy = undefined;
    queue.schedule(ws.id);
    return document(c, { data: workspaceResource(ws, ctx) });
  });
  app.post("/api/v2/workspaces/:id/actions/force-unlock", (c) => {
    const ws = byId(c);
    if (!ws.lockedBy) throw new ApiError(409, "conflict", "Unable to unlock workspace. The workspace is not locked.");
    ws.lockedBy = undefined;
    queue.schedule(ws.id);
    return document(c, { data: workspaceResource(ws, ctx) });
  });
}

/** Tag names from `tag-names` (older API) and the `tags` relationship (current API). */
function tagNames(a: Record<string, unknown>, r: Record<string, any>): string[] {
  const names = Array.isArray(a["tag-names"]) ? a["tag-names"].map(String) : [];
  if (Array.isArray(r.tags?.data)) names.push(...r.tags.data.map((t: any) => String(t?.attributes?.name ?? "")));
  return names;
}

/** Adds tags (never removes any), 422 for an invalid name. */
function addTags(ws: Workspace, names: string[]): void {
  for (const name of names) if (!TAG.test(name)) throw new ApiError(422, "invalid attribute", `Tag name '${name}' may only contain letters, numbers, colons, hyphens and underscores`, "/data");
  for (const name of names) if (!ws.tags.includes(name.toLowerCase())) ws.tags.push(name.toLowerCase());
}

/** Execution mode, agent pool, Terraform version and the VCS flag, validated together as TFC does. */
function applySettings(ctx: ServerContext, ws: Workspace, a: Record<string, unknown>, r: Record<string, any>): void {
  const mode = (a["execution-mode"] ?? ws.executionMode) as Workspace["executionMode"];
  if (!MODES.includes(mode)) throw new ApiError(422, "invalid attribute", `Execution mode '${String(mode)}' is not one of remote, local, agent`, "/data/attributes/execution-mode");
  let poolId = ws.agentPoolId;
  if ("agent-pool" in r) poolId = r["agent-pool"]?.data?.id ?? undefined;
  else if ("agent-pool-id" in a) poolId = (a["agent-pool-id"] as string | null) ?? undefined;
  else if (a["execution-mode"] !== undefined && mode !== "agent") poolId = undefined; // leaving agent mode drops the pool
  if (mode === "agent" && !poolId) throw new ApiError(422, "invalid attribute", "Agent pool must be set when execution mode is agent", "/data/relationships/agent-pool");
  if (mode !== "agent" && poolId) throw new ApiError(422, "invalid attribute", "Agent pool can only be set when execution mode is agent", "/data/relationships/agent-pool");
  if (poolId) {
    const pool = ctx.store.agentPools.get(poolId);
    if (!pool || pool.organization !== ws.organization) throw new ApiError(422, "invalid attribute", `Agent pool '${poolId}' not found`, "/data/relationships/agent-pool");
  }
  if (a["terraform-version"] !== undefined) {
    const v = String(a["terraform-version"]);
    if (v !== "latest" && !/^\d+\.\d+\.\d+(-[\w.]+)?$/.test(v) && !/^[~<>=!]/.test(v)) throw new ApiError(422, "invalid attribute", `Terraform version '${v}' is invalid`, "/data/attributes/terraform-version");
    ws.terraformVersion = v;
  }
  if (a["vcs-repo"] !== undefined) ws.vcsRepo = a["vcs-repo"] ? { identifier: String((a["vcs-repo"] as any).identifier ?? "example/repo") } : undefined;
  ws.executionMode = mode;
  ws.agentPoolId = poolId;
}
