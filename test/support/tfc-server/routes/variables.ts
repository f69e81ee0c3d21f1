import type { Context, Hono } from "hono";
import { workspaceFor } from "../access.ts";
import { newId } from "../ids.ts";
import { ApiError, document, type Env, notFound, requestData, type ServerContext, variableResource } from "../jsonapi.ts";
import type { Variable } from "../store.ts";

const CATEGORIES = ["terraform", "env"];

/** Workspace variables: list, create, update, delete (sensitive values never read back). */
export function variableRoutes(app: Hono<Env>, ctx: ServerContext): void {
  const { store } = ctx;

  app.get("/api/v2/workspaces/:id/vars", (c) => {
    const ws = workspaceFor(c, ctx, c.req.param("id"));
    return document(c, { data: store.variablesOf(ws.id).map(variableResource) });
  });

  app.post("/api/v2/workspaces/:id/vars", async (c) => {
    const ws = workspaceFor(c, ctx, c.req.param("id"));
    const { attributes: a } = await requestData(c);
    const key = String(a.key ?? "");
    const category = String(a.category ?? "");
    if (!key) throw new ApiError(422, "invalid attribute", "Key can't be blank", "/data/attributes/key");
    if (!CATEGORIES.includes(category)) throw new ApiError(422, "invalid attribute", "Category must be terraform or env", "/data/attributes/category");
    if (store.variablesOf(ws.id).some((v) => v.key === key && v.category === category)) {
      if ((ctx.variants.duplicateVariableStatus ?? 422) === 500) throw new ApiError(500, "internal server error");
      throw new ApiError(422, "invalid attribute", "Key has already been taken", "/data/attributes/key");
    }
    const v: Variable = {
      id: newId("var"),
      workspaceId: ws.id,
      key,
      value: a.value === null || a.value === undefined ? "" : String(a.value),
      description: String(a.description ?? ""),
      category: category as Variable["category"],
      hcl: a.hcl === true,
      sensitive: a.sensitive === true,
    };
    store.variables.set(v.id, v);
    return document(c, { data: variableResource(v) }, 201);
  });

  const find = (c: Context<Env>) => {
    const ws = workspaceFor(c, ctx, c.req.param("id")!);
    const v = store.variables.get(c.req.param("varId")!);
    if (!v || v.workspaceId !== ws.id) throw notFound();
    return v;
  };

  app.patch("/api/v2/workspaces/:id/vars/:varId", async (c) => {
    const v = find(c);
    const { attributes: a } = await requestData(c);
    if (a.sensitive === false && v.sensitive) throw new ApiError(422, "invalid attribute", "Sensitive can't be changed back to false", "/data/attributes/sensitive");
    const key = a.key === undefined ? v.key : String(a.key);
    const category = a.category === undefined ? v.category : String(a.category);
    if (!CATEGORIES.includes(category)) throw new ApiError(422, "invalid attribute", "Category must be terraform or env", "/data/attributes/category");
    if (store.variablesOf(v.workspaceId).some((o) => o.id !== v.id && o.key === key && o.category === category)) throw new ApiError(422, "invalid attribute", "Key has already been taken", "/data/attributes/key");
    v.key = key;
    v.category = category as Variable["category"];
    if (a.value !== undefined) v.value = a.value === null ? "" : String(a.value);
    if (a.description !== undefined) v.description = String(a.description);
    if (a.hcl !== undefined) v.hcl = a.hcl === true;
    if (a.sensitive === true) v.sensitive = true;
    return document(c, { data: variableResource(v) });
  });

  app.delete("/api/v2/workspaces/:id/vars/:varId", (c) => {
    store.variables.delete(find(c).id);
    return c.body(null, 204);
  });
}
