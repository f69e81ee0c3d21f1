import { CtsError } from "../errors/cts-error.ts";
import { many, nextPage, one, toWorkspace } from "./jsonapi.ts";
import type { Transport } from "./transport.ts";
import type { Workspace, WorkspaceSettings } from "./types.ts";

/** Reading, creating and changing workspaces; tags; locks. */
export class Workspaces {
  constructor(private readonly t: Transport) {}

  /** The workspace of `organization` named `name`, or undefined when there is none (404). */
  async read(organization: string, name: string, signal?: AbortSignal): Promise<Workspace | undefined> {
    const path = `/api/v2/organizations/${enc(organization)}/workspaces/${enc(name)}`;
    const doc = await this.t.json({ method: "GET", path, signal, idempotent: true, accept: [404] });
    return doc === undefined ? undefined : toWorkspace(one(doc, { method: "GET", path }));
  }

  /** A workspace by id. */
  async readById(id: string, signal?: AbortSignal): Promise<Workspace> {
    const path = `/api/v2/workspaces/${enc(id)}`;
    return toWorkspace(one(await this.t.json({ method: "GET", path, signal, idempotent: true }), { method: "GET", path }));
  }

  /** Every workspace of an organization carrying all of `tags` (search[tags]), all pages. */
  async list(organization: string, filter: { tags?: string[]; name?: string } = {}, signal?: AbortSignal): Promise<Workspace[]> {
    const path = `/api/v2/organizations/${enc(organization)}/workspaces`;
    const out: Workspace[] = [];
    for (let page: number | undefined = 1; page !== undefined; ) {
      const query = { "search[tags]": filter.tags?.length ? filter.tags.join(",") : undefined, "search[name]": filter.name, "page[number]": String(page), "page[size]": "100" };
      const doc = await this.t.json({ method: "GET", path, query, signal, idempotent: true });
      out.push(...many(doc, { method: "GET", path }).map(toWorkspace));
      page = nextPage(doc);
    }
    return out;
  }

  /** Creates a workspace (name required) with its settings and tags. */
  async create(organization: string, settings: WorkspaceSettings & { name: string }, signal?: AbortSignal): Promise<Workspace> {
    const path = `/api/v2/organizations/${enc(organization)}/workspaces`;
    const doc = await this.t.json({ method: "POST", path, body: document(settings), signal });
    return toWorkspace(one(doc, { method: "POST", path }));
  }

  /**
   * The workspace, created with `settings` (and `forCreate`'s) when missing. A create that fails because another
   * instance created it meanwhile (422 or 409, as servers differ) is answered by reading again.
   */
  async ensure(
    organization: string,
    settings: WorkspaceSettings & { name: string },
    signal?: AbortSignal,
    /** Settings only a new workspace needs, worked out only when one is created (e.g. a looked-up default version). */
    forCreate?: () => Promise<WorkspaceSettings>,
  ): Promise<{ workspace: Workspace; created: boolean }> {
    const found = await this.read(organization, settings.name, signal);
    if (found) return { workspace: found, created: false };
    try {
      const extra = forCreate ? await forCreate() : {};
      return { workspace: await this.create(organization, { ...extra, ...settings }, signal), created: true };
    } catch (err) {
      if (!(err instanceof CtsError) || !["TFC_INVALID", "TFC_CONFLICT"].includes(err.code)) throw err;
      const again = await this.read(organization, settings.name, signal);
      if (!again) throw err;
      return { workspace: again, created: false };
    }
  }

  /** Changes settings (PATCH); tags given here are added, never removed. */
  async update(id: string, settings: WorkspaceSettings, signal?: AbortSignal): Promise<Workspace> {
    const path = `/api/v2/workspaces/${enc(id)}`;
    const doc = await this.t.json({ method: "PATCH", path, body: document(settings), signal, idempotent: true });
    return toWorkspace(one(doc, { method: "PATCH", path }));
  }

  /** Adds tags to a workspace (existing ones are kept). */
  async addTags(id: string, tags: string[], signal?: AbortSignal): Promise<void> {
    if (!tags.length) return;
    const body = { data: tags.map((name) => ({ type: "tags", attributes: { name } })) };
    await this.t.call({ method: "POST", path: `/api/v2/workspaces/${enc(id)}/relationships/tags`, body, signal, idempotent: true });
  }

  /** Locks the workspace (TFC_CONFLICT when it is locked already). */
  async lock(id: string, reason: string, signal?: AbortSignal): Promise<Workspace> {
    const path = `/api/v2/workspaces/${enc(id)}/actions/lock`;
    return toWorkspace(one(await this.t.json({ method: "POST", path, body: { reason }, signal }), { method: "POST", path }));
  }

  /** Unlocks a workspace this token locked (TFC_CONFLICT when it is not locked, or by someone else). */
  async unlock(id: string, signal?: AbortSignal): Promise<Workspace> {
    const path = `/api/v2/workspaces/${enc(id)}/actions/unlock`;
    return toWorkspace(one(await this.t.json({ method: "POST", path, signal }), { method: "POST", path }));
  }

  /** Unlocks a workspace whoever locked it (TFC_CONFLICT when it is not locked). */
  async forceUnlock(id: string, signal?: AbortSignal): Promise<Workspace> {
    const path = `/api/v2/workspaces/${enc(id)}/actions/force-unlock`;
    return toWorkspace(one(await this.t.json({ method: "POST", path, signal }), { method: "POST", path }));
  }
}

/** A path segment. */
export function enc(s: string): string {
  return encodeURIComponent(s);
}

function document(s: WorkspaceSettings) {
  const attributes: Record<string, unknown> = {};
  if (s.name !== undefined) attributes.name = s.name;
  if (s.description !== undefined) attributes.description = s.description;
  if (s.executionMode !== undefined) attributes["execution-mode"] = s.executionMode;
  if (s.autoApply !== undefined) attributes["auto-apply"] = s.autoApply;
  if (s.terraformVersion !== undefined) attributes["terraform-version"] = s.terraformVersion;
  const relationships: Record<string, unknown> = {};
  if (s.agentPoolId !== undefined) relationships["agent-pool"] = { data: { type: "agent-pools", id: s.agentPoolId } };
  if (s.tags?.length) relationships.tags = { data: s.tags.map((name) => ({ type: "tags", attributes: { name } })) };
  return { data: { type: "workspaces", attributes, ...(Object.keys(relationships).length ? { relationships } : {}) } };
}
