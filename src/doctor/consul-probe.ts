import type { CallDescription } from "../consul/api-error.ts";
import type { ConsulClient } from "../consul/client.ts";
import type { Answer, CommonCallOptions, PackageClient } from "../consul/package.ts";
import { replyOf, statusOf } from "../consul/transport.ts";
import { CtsError, messageOf } from "../errors/cts-error.ts";

/** What Consul answered to one probe: its HTTP status and body as text. */
export interface ProbeAnswer {
  status: number;
  body: string;
}

/** The calls doctor makes to see what the token may do; any HTTP answer is a result, not an error. */
export interface ConsulProbe {
  /** `GET /v1/status/leader` (answers any token). */
  leader(): Promise<ProbeAnswer>;
  /** `GET /v1/agent/self`: resolves the token, so Consul refuses an unknown one ("ACL not found"). */
  agentSelf(): Promise<ProbeAnswer>;
  /** `PUT /v1/kv/<key>`. */
  putKey(key: string, value: string): Promise<ProbeAnswer>;
  /** `DELETE /v1/kv/<key>`. */
  deleteKey(key: string): Promise<ProbeAnswer>;
  /** `PUT /v1/session/create` of a short session that deletes its locks' keys. */
  createSession(name: string, ttl: string): Promise<ProbeAnswer>;
  /** `PUT /v1/session/destroy/<id>`. */
  destroySession(id: string): Promise<ProbeAnswer>;
  /** Consul's URL for messages (never carries the token). */
  url(): string;
}

const PROBE_TIMEOUT_MS = 5_000;

/**
 * The probes on the process's Consul client (the `consul` package's public API, same TLS, token and
 * sockets as the daemon). `stateToken` is the token Terraform keeps state with when the backend
 * block sets its own (`access_token`): the KV and session probes use it.
 */
export function createConsulProbe(consul: ConsulClient, opts: { stateToken?: string } = {}): ConsulProbe {
  const as = opts.stateToken ? { token: opts.stateToken } : {};
  // An HTTP answer (even 403) is kept for the check to judge; only "no answer" is an error.
  const answered = (err: unknown, call: CallDescription): CtsError =>
    new CtsError("CONSUL_UNREACHABLE", "external", messageOf(err), { cause: err, detail: { status: statusOf(err), reply: replyOf(err), url: call.url } });
  const probe = async <T>(what: string, run: (c: PackageClient, common: CommonCallOptions) => Promise<Answer<T>>): Promise<ProbeAnswer> => {
    try {
      const r = await consul.call({ what, permission: "" }, {}, { timeoutMs: PROBE_TIMEOUT_MS }, run, answered);
      return { status: r.status, body: bodyText(r.data) };
    } catch (err) {
      if (err instanceof CtsError && typeof err.detail.status === "number") return { status: err.detail.status, body: String(err.detail.reply ?? "") };
      throw err;
    }
  };
  return {
    url: () => consul.url(),
    leader: () => probe("GET /v1/status/leader", (c, common) => c.status.leader(common)),
    agentSelf: () => probe("GET /v1/agent/self", (c, common) => c.agent.self(common)),
    putKey: (key, value) => probe(`PUT /v1/kv/${key}`, (c, common) => c.kv.set({ key, value, ...common, ...as })),
    deleteKey: (key) => probe(`DELETE /v1/kv/${key}`, (c, common) => c.kv.del({ key, ...common, ...as })),
    createSession: (name, ttl) => probe("PUT /v1/session/create", (c, common) => c.session.create({ name, ttl, behavior: "delete", ...common, ...as })),
    destroySession: (id) => probe(`PUT /v1/session/destroy/${id}`, (c, common) => c.session.destroy({ id, ...common, ...as })),
  };
}

/** The answer as Consul wrote it: the package has already decoded JSON, so encode it back. */
function bodyText(data: unknown): string {
  if (data === undefined || data === null) return "";
  if (Buffer.isBuffer(data)) return data.toString("utf8");
  return JSON.stringify(data);
}
