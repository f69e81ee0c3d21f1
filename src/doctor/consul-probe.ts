import { CtsError, messageOf } from "../errors.ts";
import type { ConsulConnection } from "../consul/connection.ts";
import { withBody } from "../consul/package.ts";
import { createConsulTransport, replyOf, statusOf } from "../consul/transport.ts";

/** What Consul answered to one probe: its HTTP status and body as text. */
export interface ProbeAnswer {
  status: number;
  body: string;
}

/** The raw calls doctor makes to see what the token may do; any HTTP answer is a result, not an error. */
export interface ConsulProbe {
  call(method: "GET" | "PUT" | "DELETE", path: string, opts?: { body?: unknown; timeoutMs?: number }): Promise<ProbeAnswer>;
  /** Consul's URL for messages (never carries the token). */
  url(): string;
  close(): void;
}

/** A probe on the one Consul transport (same TLS, token and socket handling as the daemon). */
export function createConsulProbe(conn: ConsulConnection): ConsulProbe {
  const transport = createConsulTransport(conn);
  // An HTTP answer (even 403) is kept for the check to judge; only "no answer" is an error.
  const answered = (err: unknown): CtsError =>
    new CtsError("CONSUL_UNREACHABLE", "external", messageOf(err), { cause: err, detail: { status: statusOf(err), reply: replyOf(err) } });
  return {
    url: () => transport.url(),
    close: () => transport.close(),
    async call(method, path, opts = {}) {
      try {
        const r = await transport.call(
          { what: `${method} ${path}`, permission: "" },
          {},
          { timeoutMs: opts.timeoutMs ?? 5_000 },
          (c, common) => {
            const req = { name: `doctor ${method}`, path: path.replace(/^\/v1/, ""), type: "text" as const, ...(opts.body !== undefined ? { body: typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body) } : {}), ctx: common.ctx, timeout: common.timeout };
            return method === "GET" ? c._get(req, withBody) : method === "PUT" ? c._put(req, withBody) : c._delete(req, withBody);
          },
          answered,
        );
        return { status: r.status, body: bodyText(r.data) };
      } catch (err) {
        if (err instanceof CtsError && typeof err.detail.status === "number") return { status: err.detail.status, body: String(err.detail.reply ?? "") };
        throw err;
      }
    },
  };
}

/** The answer as Consul wrote it: the package has already decoded JSON, so encode it back. */
function bodyText(data: unknown): string {
  if (data === undefined || data === null) return "";
  if (Buffer.isBuffer(data)) return data.toString("utf8");
  return JSON.stringify(data);
}
