import { CtsError } from "../errors/cts-error.ts";
import { many, one, toVariable } from "./jsonapi.ts";
import type { Transport } from "./transport.ts";
import type { Variable, VariableInput } from "./types.ts";
import { enc } from "./workspaces.ts";

/** Workspace variables (terraform and env; HCL; sensitive ones never read back). */
export class Variables {
  constructor(private readonly t: Transport) {}

  /** Every variable of a workspace. */
  async list(workspaceId: string, signal?: AbortSignal): Promise<Variable[]> {
    const path = `/api/v2/workspaces/${enc(workspaceId)}/vars`;
    return many(await this.t.json({ method: "GET", path, signal, idempotent: true }), { method: "GET", path }).map(toVariable);
  }

  /** Creates a variable. */
  async create(workspaceId: string, input: VariableInput, signal?: AbortSignal): Promise<Variable> {
    const path = `/api/v2/workspaces/${enc(workspaceId)}/vars`;
    return toVariable(one(await this.t.json({ method: "POST", path, body: document(input), signal }), { method: "POST", path }));
  }

  /** Updates a variable's fields. */
  async update(workspaceId: string, variableId: string, input: Partial<VariableInput>, signal?: AbortSignal): Promise<Variable> {
    const path = `/api/v2/workspaces/${enc(workspaceId)}/vars/${enc(variableId)}`;
    return toVariable(one(await this.t.json({ method: "PATCH", path, body: document(input, variableId), signal, idempotent: true }), { method: "PATCH", path }));
  }

  /** Deletes a variable. */
  async delete(workspaceId: string, variableId: string, signal?: AbortSignal): Promise<void> {
    await this.t.call({ method: "DELETE", path: `/api/v2/workspaces/${enc(workspaceId)}/vars/${enc(variableId)}`, signal, idempotent: true });
  }

  /**
   * Sets a variable: updates the one with the same key and category, else creates it. A create
   * refused as a duplicate (servers answer 422, 409 or even 500) is answered by listing again.
   */
  async set(workspaceId: string, input: VariableInput, signal?: AbortSignal): Promise<Variable> {
    const same = (v: Variable) => v.key === input.key && v.category === input.category;
    const existing = (await this.list(workspaceId, signal)).find(same);
    if (existing) return this.update(workspaceId, existing.id, input, signal);
    try {
      return await this.create(workspaceId, input, signal);
    } catch (err) {
      if (!(err instanceof CtsError) || !["TFC_INVALID", "TFC_CONFLICT", "TFC_SERVER_ERROR"].includes(err.code)) throw err;
      const raced = (await this.list(workspaceId, signal)).find(same);
      if (!raced) throw err;
      return this.update(workspaceId, raced.id, input, signal);
    }
  }
}

function document(input: Partial<VariableInput>, id?: string) {
  const attributes: Record<string, unknown> = {};
  for (const k of ["key", "value", "category", "description", "hcl", "sensitive"] as const) if (input[k] !== undefined) attributes[k] = input[k];
  return { data: { type: "vars", ...(id ? { id } : {}), attributes } };
}
