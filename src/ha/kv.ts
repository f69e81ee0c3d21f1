import { CtsError } from "../errors.ts";
import type { ConsulAnswer, ConsulHttp } from "./consul-http.ts";
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

const encode = (k: string) => k.split("/").map(encodeURIComponent).join("/");

function fail(what: string, res: ConsulAnswer, http: ConsulHttp): CtsError {
  const reply = res.body.trim().slice(0, 300);
  const permission = res.status === 403 ? " The token needs key:write on the HA prefix and session:write on this node (see src/ha/README.md)." : "";
  return new CtsError("HA_CONSUL_FAILED", "external", `Consul at ${http.url()} answered ${res.status} to ${what}${reply ? `: ${reply}` : ""}.${permission}`, {
    detail: { status: res.status },
  });
}

function items(body: string): KvItem[] {
  const raw = JSON.parse(body || "[]") as Array<{ Key: string; Value: string | null; Session?: string; ModifyIndex: number }>;
  return raw.map((e) => ({
    key: e.Key,
    value: e.Value ? Buffer.from(e.Value, "base64").toString("utf8") : "",
    ...(e.Session ? { session: e.Session } : {}),
    modifyIndex: BigInt(e.ModifyIndex),
  }));
}

/** KV, session and transaction calls on one ConsulHttp. */
export class HaKv {
  constructor(readonly http: ConsulHttp) {}

  private blocking(index: bigint | undefined, signal?: AbortSignal) {
    const wait = BLOCKING_WAIT_MS;
    const block = index !== undefined && index > 0n;
    return {
      query: block ? { index: String(index), wait: `${wait}ms` } : {},
      timeoutMs: block ? wait + wait / 16 + 10_000 : 10_000,
      ...(signal ? { signal } : {}),
    };
  }

  /** Reads one key; blocks while its index is `index`. A missing key is `undefined`. */
  async get(key: string, opts: { index?: bigint; signal?: AbortSignal } = {}): Promise<KvRead<KvItem | undefined>> {
    const b = this.blocking(opts.index, opts.signal);
    const res = await this.http.call("GET", `/v1/kv/${encode(key)}`, b);
    if (res.status === 404) return { data: undefined, index: res.index };
    if (res.status !== 200) throw fail(`reading '${key}'`, res, this.http);
    return { data: items(res.body)[0], index: res.index };
  }

  /** Reads every key under a prefix; blocks while the prefix's index is `index`. */
  async list(prefix: string, opts: { index?: bigint; signal?: AbortSignal } = {}): Promise<KvRead<KvItem[]>> {
    const b = this.blocking(opts.index, opts.signal);
    const res = await this.http.call("GET", `/v1/kv/${encode(prefix)}`, { ...b, query: { ...b.query, recurse: "true" } });
    if (res.status === 404) return { data: [], index: res.index };
    if (res.status !== 200) throw fail(`reading '${prefix}'`, res, this.http);
    return { data: items(res.body), index: res.index };
  }

  /** Writes a key (no session). */
  async put(key: string, value: string): Promise<void> {
    const res = await this.http.call("PUT", `/v1/kv/${encode(key)}`, { body: value });
    if (res.status !== 200) throw fail(`writing '${key}'`, res, this.http);
  }

  /** Deletes a key, or a whole prefix with `recurse`. */
  async delete(key: string, recurse = false, timeoutMs?: number): Promise<void> {
    const res = await this.http.call("DELETE", `/v1/kv/${encode(key)}`, { ...(recurse ? { query: { recurse: "true" } } : {}), ...(timeoutMs ? { timeoutMs } : {}) });
    if (res.status !== 200) throw fail(`deleting '${key}'`, res, this.http);
  }

  /** Tries to take the lock `key` with `session`; true when this session holds it now. */
  async acquire(key: string, session: string, value: string, timeoutMs?: number): Promise<boolean> {
    const res = await this.http.call("PUT", `/v1/kv/${encode(key)}`, { query: { acquire: session }, body: value, ...(timeoutMs ? { timeoutMs } : {}) });
    if (res.status !== 200) throw fail(`acquiring the lock '${key}'`, res, this.http);
    return res.body.trim() === "true";
  }

  /** Releases the lock `key` held by `session` (no lock delay applies to a release). */
  async release(key: string, session: string, timeoutMs?: number): Promise<boolean> {
    const res = await this.http.call("PUT", `/v1/kv/${encode(key)}`, { query: { release: session }, ...(timeoutMs ? { timeoutMs } : {}) });
    if (res.status !== 200) throw fail(`releasing the lock '${key}'`, res, this.http);
    return res.body.trim() === "true";
  }

  /**
   * Runs operations atomically. Returns false when a check failed (Consul's 409), e.g. the
   * session no longer holds the lock: nothing was written.
   */
  async txn(ops: TxnOp[]): Promise<boolean> {
    const body = ops.map((op) => {
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
    const res = await this.http.call("PUT", "/v1/txn", { body });
    if (res.status === 200) return true;
    if (res.status === 409) return false;
    throw fail("a KV transaction", res, this.http);
  }

  /**
   * Creates a session tied to no health check: only its TTL (or an explicit destroy) ends it,
   * which is what makes the fencing arithmetic in the README hold.
   */
  async createSession(name: string, ttlMs: number, lockDelayMs: number): Promise<string> {
    const res = await this.http.call("PUT", "/v1/session/create", {
      body: { Name: name, TTL: consulDuration(ttlMs), LockDelay: consulDuration(lockDelayMs), Behavior: "release", NodeChecks: [], ServiceChecks: [] },
    });
    if (res.status !== 200) {
      if (/Invalid Session TTL/i.test(res.body))
        throw new CtsError(
          "HA_SESSION_TTL",
          "usage",
          `Consul refused the session TTL ${consulDuration(ttlMs)}: ${res.body.trim()}. Raise highAvailability.cluster.storage.sessionTtl (Consul's minimum is 10s unless the agent sets session_ttl_min).`,
        );
      throw fail("creating a session", res, this.http);
    }
    return (JSON.parse(res.body) as { ID: string }).ID;
  }

  /** Renews a session: "ok", or "gone" when Consul no longer knows it (it was invalidated). */
  async renewSession(id: string, timeoutMs: number): Promise<"ok" | "gone"> {
    const res = await this.http.call("PUT", `/v1/session/renew/${encodeURIComponent(id)}`, { timeoutMs });
    if (res.status === 404) return "gone";
    if (res.status !== 200) throw fail("renewing the session", res, this.http);
    const list = JSON.parse(res.body || "null") as unknown[] | null;
    return list && list.length > 0 ? "ok" : "gone";
  }

  /** Destroys a session (its locks are released; lock delay applies to them). */
  async destroySession(id: string, timeoutMs = 5_000): Promise<void> {
    const res = await this.http.call("PUT", `/v1/session/destroy/${encodeURIComponent(id)}`, { timeoutMs });
    if (res.status !== 200) throw fail("destroying the session", res, this.http);
  }

  /** Instances of a service with a tag, with their checks (non-blocking). */
  async healthService(service: string, tag: string): Promise<Array<{ Service: { ID: string; Address: string; Port: number; Tags: string[] | null }; Node: { Address: string }; Checks: Array<{ Status: string }> }>> {
    // Self-registrations live in the agent's namespace, not the HA storage namespace.
    const res = await this.http.call("GET", `/v1/health/service/${encodeURIComponent(service)}`, { query: { tag }, namespace: false });
    if (res.status !== 200) throw fail(`reading the health of '${service}'`, res, this.http);
    return JSON.parse(res.body || "[]");
  }
}
