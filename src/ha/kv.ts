import { CtsError, messageOf } from "../errors/cts-error.ts";
import type { CallDescription } from "../consul/api-error.ts";
import type { ConsulClient } from "../consul/client.ts";
import type { TxnOperation } from "../consul/package.ts";
import { replyOf, statusOf, type CallOptions } from "../consul/transport.ts";
import { consulDuration } from "./settings.ts";

/** One KV entry, value decoded to UTF-8. */
export interface KvItem {
  key: string;
  value: string;
  /** The session holding the key, if any. */
  session?: string;
  modifyIndex: bigint;
}

/** A blocking read's answer. */
export interface KvRead<T> {
  data: T;
  index: bigint;
}

/** One operation of a Consul transaction. */
export type TxnOp =
  | { verb: "set"; key: string; value: string }
  | { verb: "delete"; key: string }
  | { verb: "delete-tree"; key: string }
  | { verb: "check-session"; key: string; session: string };

/** How long blocking reads wait at most (Consul adds up to wait/16 of jitter). */
export const BLOCKING_WAIT_MS = 60_000;
/** Consul's default limit on the operations of one transaction. */
export const TXN_MAX_OPS = 64;
/** A cut-off agent must not hang a renewal past the fence: every exchange is bounded. */
const PLAIN_TIMEOUT_MS = 10_000;

/** HA's own error codes for Consul failures (HA_CONSUL_FAILED with the status, timeout, unreachable). */
function haError(timeoutMs: number) {
  return (err: unknown, call: CallDescription): CtsError => {
    if (err instanceof CtsError) return err;
    const status = statusOf(err);
    if (status !== undefined) {
      const reply = replyOf(err);
      if (/Invalid Session TTL/i.test(reply))
        return new CtsError(
          "HA_SESSION_TTL",
          "usage",
          `Consul refused the session TTL: ${reply}. Raise highAvailability.cluster.storage.sessionTtl (Consul's minimum is 10s unless the agent sets session_ttl_min).`,
          { cause: err, detail: { status } },
        );
      const permission = status === 403 ? " The token needs key:write on the HA prefix and session:write on this node (docs/clustering.md 'High availability')." : "";
      return new CtsError("HA_CONSUL_FAILED", "external", `Consul at ${call.url} answered ${status} to ${call.what}${reply ? `: ${reply}` : ""}.${permission}`, {
        cause: err,
        // The reply tells "no leader" apart (isUnavailable in consul/reachability.ts).
        detail: { status, ...(reply ? { reply } : {}) },
      });
    }
    if ((err as { isTimeout?: boolean }).isTimeout)
      return new CtsError("HA_CONSUL_TIMEOUT", "external", `Consul at ${call.url} did not answer ${call.what} within ${timeoutMs} ms`, { cause: err });
    return new CtsError("HA_CONSUL_UNREACHABLE", "external", `Consul at ${call.url} is unreachable (${call.what}): ${messageOf(err)}`, { cause: err });
  };
}

function toItem(e: { Key: string; Value: string | null; Session?: string; ModifyIndex: number }): KvItem {
  return { key: e.Key, value: e.Value ?? "", ...(e.Session ? { session: e.Session } : {}), modifyIndex: BigInt(e.ModifyIndex) };
}

/**
 * KV, session and transaction calls of high availability, through the `consul` package's public
 * API on the process's one Consul client (its sockets, token and TLS). The client is the daemon's:
 * HA does not close it.
 */
export class HaKv {
  private readonly scope: { namespace?: string };

  constructor(
    readonly consul: Pick<ConsulClient, "call">,
    namespace?: string,
  ) {
    this.scope = namespace ? { namespace } : {};
  }

  private opts(o: { index?: bigint; signal?: AbortSignal; timeoutMs?: number }): CallOptions {
    const block = o.index !== undefined && o.index > 0n;
    return { ...(block ? { index: o.index, wait: BLOCKING_WAIT_MS } : {}), ...(o.signal ? { signal: o.signal } : {}), timeoutMs: o.timeoutMs ?? PLAIN_TIMEOUT_MS };
  }

  private desc(what: string): Omit<CallDescription, "url"> {
    return { what, permission: "key:write on the HA prefix and session:write on this node" };
  }

  /** Reads one key; blocks while its index is `index`. A missing key is `undefined`. */
  async get(key: string, opts: { index?: bigint; signal?: AbortSignal } = {}): Promise<KvRead<KvItem | undefined>> {
    const o = this.opts(opts);
    const r = await this.consul.call(this.desc(`reading '${key}'`), this.scope, o, (c, common) => c.kv.get({ key, ...common }), haError(o.timeoutMs!));
    const e = Array.isArray(r.data) ? r.data[0] : r.data;
    return { data: e ? toItem(e) : undefined, index: r.index };
  }

  /** Reads every key under a prefix; blocks while the prefix's index is `index`. */
  async list(prefix: string, opts: { index?: bigint; signal?: AbortSignal } = {}): Promise<KvRead<KvItem[]>> {
    const o = this.opts(opts);
    const r = await this.consul.call(this.desc(`reading '${prefix}'`), this.scope, o, (c, common) => c.kv.get({ key: prefix, recurse: true, ...common }), haError(o.timeoutMs!));
    const list = r.data === undefined || r.data === null ? [] : Array.isArray(r.data) ? r.data : [r.data];
    return { data: list.map(toItem), index: r.index };
  }

  /** Writes a key (no session). */
  async put(key: string, value: string): Promise<void> {
    const o = this.opts({});
    await this.consul.call(this.desc(`writing '${key}'`), this.scope, o, (c, common) => c.kv.set({ key, value, ...common }), haError(o.timeoutMs!));
  }

  /** Deletes a key, or a whole prefix with `recurse`. */
  async delete(key: string, recurse = false, timeoutMs?: number): Promise<void> {
    const o = this.opts({ ...(timeoutMs ? { timeoutMs } : {}) });
    await this.consul.call(this.desc(`deleting '${key}'`), this.scope, o, (c, common) => c.kv.del({ key, ...(recurse ? { recurse } : {}), ...common }), haError(o.timeoutMs!));
  }

  /** Tries to take the lock `key` with `session`; true when this session holds it now. */
  async acquire(key: string, session: string, value: string, timeoutMs?: number): Promise<boolean> {
    const o = this.opts({ ...(timeoutMs ? { timeoutMs } : {}) });
    const r = await this.consul.call(this.desc(`acquiring the lock '${key}'`), this.scope, o, (c, common) => c.kv.set({ key, value, acquire: session, ...common }), haError(o.timeoutMs!));
    return r.data === true;
  }

  /** Releases the lock `key` held by `session` (no lock delay applies to a release). */
  async release(key: string, session: string, timeoutMs?: number): Promise<boolean> {
    const o = this.opts({ ...(timeoutMs ? { timeoutMs } : {}) });
    const r = await this.consul.call(this.desc(`releasing the lock '${key}'`), this.scope, o, (c, common) => c.kv.set({ key, value: "", release: session, ...common }), haError(o.timeoutMs!));
    return r.data === true;
  }

  /**
   * Runs operations atomically. Returns false when a check failed (Consul's 409), e.g. the
   * session no longer holds the lock: nothing was written.
   */
  async txn(ops: TxnOp[]): Promise<boolean> {
    const body: TxnOperation[] = ops.map((op) => {
      switch (op.verb) {
        case "set":
          return { KV: { Verb: "set", Key: op.key, Value: Buffer.from(op.value, "utf8").toString("base64") } };
        case "delete":
        case "delete-tree":
          return { KV: { Verb: op.verb, Key: op.key } };
        case "check-session":
          return { KV: { Verb: "check-session", Key: op.key, Session: op.session } };
      }
    });
    const o = this.opts({});
    try {
      await this.consul.call(this.desc("a KV transaction"), this.scope, o, (c, common) => c.transaction.create(body, common), haError(o.timeoutMs!));
      return true;
    } catch (err) {
      if (err instanceof CtsError && err.detail.status === 409) return false;
      throw err;
    }
  }

  /**
   * Creates a session tied to no health check: only its TTL (or an explicit destroy) ends it,
   * which is what makes the fencing arithmetic in the README hold. `checks: []` makes the package
   * send `Checks: []`, which Consul reads as "no node checks" (without it the session would be
   * tied to serfHealth).
   */
  async createSession(name: string, ttlMs: number, lockDelayMs: number): Promise<string> {
    const o = this.opts({});
    const r = await this.consul.call(
      this.desc(`creating a session (TTL ${consulDuration(ttlMs)})`),
      this.scope,
      o,
      (c, common) => c.session.create({ name, ttl: consulDuration(ttlMs), lockdelay: consulDuration(lockDelayMs), behavior: "release", checks: [], ...common }),
      haError(o.timeoutMs!),
    );
    return r.data!.ID;
  }

  /** Renews a session: "ok", or "gone" when Consul no longer knows it (it was invalidated). */
  async renewSession(id: string, timeoutMs: number): Promise<"ok" | "gone"> {
    const o = this.opts({ timeoutMs });
    try {
      const r = await this.consul.call(this.desc("renewing the session"), this.scope, o, (c, common) => c.session.renew({ id, ...common }), haError(timeoutMs));
      return Array.isArray(r.data) && r.data.length > 0 ? "ok" : "gone";
    } catch (err) {
      if (err instanceof CtsError && err.detail.status === 404) return "gone";
      throw err;
    }
  }

  /** Every live session named `name`: its id and the node it was created on. */
  async sessionsNamed(name: string): Promise<Array<{ id: string; node: string }>> {
    const o = this.opts({});
    const r = await this.consul.call(this.desc("listing the sessions"), this.scope, o, (c, common) => c.session.list(common), haError(o.timeoutMs!));
    return (Array.isArray(r.data) ? r.data : []).filter((s) => s && s.Name === name && typeof s.ID === "string").map((s) => ({ id: s.ID, node: String(s.Node ?? "") }));
  }

  /** Destroys a session (its locks are released; lock delay applies to them). */
  async destroySession(id: string, timeoutMs = 5_000): Promise<void> {
    const o = this.opts({ timeoutMs });
    await this.consul.call(this.desc("destroying the session"), this.scope, o, (c, common) => c.session.destroy({ id, ...common }), haError(timeoutMs));
  }

  /** Instances of a service with a tag, with their checks (non-blocking). */
  async healthService(service: string, tag: string): Promise<Array<{ Service: { ID: string; Address: string; Port: number; Tags: string[] | null }; Node: { Address: string }; Checks: Array<{ Status: string; Output?: string }> }>> {
    const o = this.opts({});
    // Self-registrations live in the agent's namespace, not the HA storage namespace.
    const r = await this.consul.call(this.desc(`reading the health of '${service}'`), {}, o, (c, common) => c.health.service({ service, tag, ...common }), haError(o.timeoutMs!));
    return (r.data ?? []) as Awaited<ReturnType<HaKv["healthService"]>>;
  }

  /** Like healthService, as a blocking read: waits while the index is `index`. */
  async healthServiceAt(service: string, tag: string, opts: { index?: bigint; signal?: AbortSignal } = {}): Promise<KvRead<Awaited<ReturnType<HaKv["healthService"]>>>> {
    const o = this.opts(opts);
    const r = await this.consul.call(this.desc(`watching the health of '${service}'`), {}, o, (c, common) => c.health.service({ service, tag, ...common }), haError(o.timeoutMs!));
    return { data: (r.data ?? []) as Awaited<ReturnType<HaKv["healthService"]>>, index: r.index };
  }
}
