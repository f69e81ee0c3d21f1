import { createHmac, randomBytes } from "node:crypto";
import { backoffDelay } from "../time/backoff.ts";
import { systemClock, unrefTimer, type Clock } from "../time/clock.ts";
import { followBlockingQuery } from "../consul/blocking-query.ts";
import type { ConsulApi } from "../consul/client.ts";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import { redactSecret } from "../log/logger.ts";
import { dependencyId, type TemplateDependency, type TemplateLookup } from "../task/provider-templates.ts";
import type { VaultClient } from "../vault/client.ts";
import type { VaultSession } from "../vault/session.ts";

/** What the store logs (never a value). */
export interface TemplateLog {
  debug(msg: string): void;
  warn(msg: string): void;
}

export interface TemplateValuesOptions {
  /** The Vault client and its token's session; absent when no Vault is configured. */
  vault?: { client: VaultClient; session: VaultSession };
  /** For `{{ key }}`. */
  consul: Pick<ConsulApi, "kv">;
  /** Keep values fresh and tell subscribers of changes (the daemon); false: read once (once, inspect). */
  watch: boolean;
  /** A secret without a lease is read again after 85–95 % of this (CTS/consul-template: 5 min). */
  defaultLeaseMs: number;
  log: TemplateLog;
  random?: () => number;
  /** Timers of re-reads, renewals and the key watches' pacing (default: the real clock; tests pass a fake). */
  clock?: Clock;
}

interface Entry {
  dep: TemplateDependency;
  /** A secret's `.Data`, or a key's value (undefined: no such key). */
  value?: Record<string, unknown> | string | undefined;
  loaded: boolean;
  loading?: Promise<void>;
  listeners: Set<() => void>;
  abort: AbortController;
  timer?: unknown;
  following?: boolean;
  /** Read once, no longer kept fresh: the next use reads it again. */
  stale?: boolean;
}

/**
 * The current values of the templates tasks use (`{{ with secret }}`, `{{ key }}`, `vaultSecret()`),
 * read on first use, then, in the daemon, kept fresh as CTS does: a secret with a renewable lease is
 * renewed at a third of its lease, any other secret is read again after 85–95 % of its lease (of
 * `defaultLeaseMs` when it has none, as KV v2 secrets), and a Consul key is followed with a
 * blocking query. A value that changed tells its subscribers (the triggers of the tasks using it).
 * Every value read is registered with the redactor before anything else sees it.
 */
export class TemplateValues implements TemplateLookup {
  private readonly entries = new Map<string, Entry>();
  private readonly key = randomBytes(32);
  private closed = false;
  private readonly clock: Clock;

  constructor(private readonly opts: TemplateValuesOptions) {
    this.clock = opts.clock ?? systemClock;
  }

  /** Reads the values not read yet (and in watch mode starts keeping them fresh). */
  async ensure(deps: Iterable<TemplateDependency>, signal?: AbortSignal): Promise<void> {
    await Promise.all([...deps].map((d) => this.load(this.entry(d), signal)));
  }

  /** Tells `onChange` when one of these values changes; reading them starts now. Returns the unsubscribe. */
  subscribe(deps: Iterable<TemplateDependency>, onChange: () => void): () => void {
    const list = [...deps].map((d) => this.entry(d));
    for (const e of list) {
      e.listeners.add(onChange);
      // Start keeping it fresh even before a run needs it; a failure is reported when a run reads it.
      this.load(e).catch(() => {});
    }
    return () => {
      for (const e of list) {
        e.listeners.delete(onChange);
        // No task uses it any more (deleted, disabled, given to another member): stop keeping it
        // fresh; the value stays for a run in flight, and the next use reads it again.
        if (e.listeners.size === 0 && this.opts.watch) {
          e.abort.abort();
          e.abort = new AbortController();
          if (e.timer !== undefined) this.clock.clearTimeout(e.timer);
          e.following = false;
          e.stale = true;
        }
      }
    };
  }

  /** A digest of the current values of `deps` (keyed per process: nothing a file holds reveals a value). */
  digest(deps: Iterable<TemplateDependency>): string {
    const h = createHmac("sha256", this.key);
    for (const d of [...deps].sort((a, b) => (dependencyId(a) < dependencyId(b) ? -1 : 1))) {
      const e = this.entries.get(dependencyId(d));
      h.update(dependencyId(d)).update("\0").update(JSON.stringify(significant(e?.value) ?? null)).update("\0");
    }
    return h.digest("hex").slice(0, 32);
  }

  secret(path: string): Record<string, unknown> {
    const e = this.entries.get(dependencyId({ secret: path }));
    if (!e?.loaded || typeof e.value !== "object") throw new CtsError("CTS_INTERNAL", "internal", `the Vault secret '${path}' was not read before rendering`);
    return e.value;
  }

  consulKey(path: string): string | undefined {
    const e = this.entries.get(dependencyId({ consulKey: path }));
    if (!e?.loaded) throw new CtsError("CTS_INTERNAL", "internal", `the Consul key '${path}' was not read before rendering`);
    return typeof e.value === "string" ? e.value : undefined;
  }

  close(): void {
    this.closed = true;
    for (const e of this.entries.values()) {
      e.abort.abort();
      if (e.timer !== undefined) this.clock.clearTimeout(e.timer);
    }
    this.entries.clear();
  }

  private entry(dep: TemplateDependency): Entry {
    const id = dependencyId(dep);
    let e = this.entries.get(id);
    if (!e) this.entries.set(id, (e = { dep, loaded: false, listeners: new Set(), abort: new AbortController() }));
    return e;
  }

  private load(e: Entry, signal?: AbortSignal): Promise<void> {
    if (e.loaded && !e.stale) return Promise.resolve();
    e.loading ??= (async () => {
      try {
        if ("secret" in e.dep) await this.readSecret(e, e.dep.secret, true);
        else await this.readKey(e, e.dep.consulKey);
      } finally {
        e.loading = undefined;
      }
    })();
    return signal ? Promise.race([e.loading, aborted(signal)]) : e.loading;
  }

  private vault(): NonNullable<TemplateValuesOptions["vault"]> {
    const v = this.opts.vault;
    if (!v) throw new CtsError("CONFIG_INVALID", "usage", "a template reads a Vault secret, and no Vault is configured. Add a vault {} block with its address (or set VAULT_ADDR).");
    return v;
  }

  /** Reads a secret; on the first read a failure is thrown, later ones are logged and retried. */
  private async readSecret(e: Entry, path: string, first: boolean, failures = 0): Promise<void> {
    const { client, session } = this.vault();
    let lease: { leaseId: string; leaseDuration: number; renewable: boolean };
    // The signal of this read: a task letting go of the value aborts it (and gives the entry a new one).
    const signal = e.abort.signal;
    try {
      await session.ready;
      const s = await client.read(path, signal);
      // KV v2's metadata (times, versions) is not secret; its fields and any other secret's data are.
      registerSecrets(isKv2(s.data) ? s.data.data : s.data);
      // A KV v2 secret written again with the same fields is no change (only its metadata moved).
      const changed = e.loaded && JSON.stringify(significant(e.value)) !== JSON.stringify(significant(s.data));
      e.value = s.data;
      e.loaded = true;
      e.stale = false;
      lease = s;
      if (signal.aborted) return;
      if (changed) this.changed(e, `the Vault secret '${path}' changed`);
    } catch (err) {
      if (first || this.closed || signal.aborted) throw err;
      this.opts.log.warn(`vault: reading '${path}' again failed: ${messageOf(err)}; the last value is kept, trying again`);
      this.later(e, backoffDelay({ baseMs: 1000, maxMs: 60_000 }, failures + 1, this.opts.random), () => this.readSecret(e, path, false, failures + 1));
      return;
    }
    this.scheduleSecret(e, path, lease);
  }

  private scheduleSecret(e: Entry, path: string, lease: { leaseId: string; leaseDuration: number; renewable: boolean }): void {
    if (!this.opts.watch) return;
    const random = this.opts.random ?? Math.random;
    const base = lease.leaseDuration > 0 ? lease.leaseDuration * 1000 : this.opts.defaultLeaseMs;
    if (lease.renewable && lease.leaseId) {
      this.later(e, base / 3, () =>
        this.vault()
          .client.renewLease(lease.leaseId, e.abort.signal)
          .then(
            (renewed) => {
              this.opts.log.debug(`vault: renewed the lease of '${path}'`);
              // A lease that can no longer grow is read anew before it ends.
              if (renewed.leaseDuration * 1000 < base / 3) return this.readSecret(e, path, false);
              this.scheduleSecret(e, path, { ...renewed, leaseId: renewed.leaseId || lease.leaseId });
            },
            () => this.readSecret(e, path, false),
          ),
      );
    } else this.later(e, base * (0.85 + random() * 0.1), () => this.readSecret(e, path, false));
  }

  private async readKey(e: Entry, path: string): Promise<void> {
    const apply = (value: string | undefined) => {
      if (value !== undefined) redactSecret(value);
      const changed = e.loaded && value !== e.value;
      e.value = value;
      e.loaded = true;
      e.stale = false;
      if (changed) this.changed(e, `the Consul key '${path}' changed`);
    };
    const first = await this.opts.consul.kv({ path }, { signal: e.abort.signal });
    apply(valueOf(first.data, path));
    if (!this.opts.watch || e.following) return;
    e.following = true;
    let start = first.index;
    void followBlockingQuery(
      {
        read: (index, signal) => this.opts.consul.kv({ path }, { index: index === 0n ? start : index, signal }).then((r) => ((start = 0n), r)),
        answered: (r) => apply(valueOf(r.data, path)),
        failed: (err, failures) => {
          if (failures === 1 || failures % 10 === 0) this.opts.log.warn(`consul: watching the key '${path}' for a template failed: ${messageOf(err)}; trying again`);
          return undefined;
        },
      },
      e.abort.signal,
      undefined,
      this.opts.random,
      this.clock,
    );
  }

  private changed(e: Entry, what: string): void {
    this.opts.log.debug(`templates: ${what}; re-running the tasks that use it`);
    for (const l of e.listeners) l();
  }

  private later(e: Entry, ms: number, fn: () => unknown): void {
    if (this.closed || e.abort.signal.aborted) return;
    e.timer = this.clock.setTimeout(() => void Promise.resolve(fn()).catch(() => {}), Math.min(Math.max(ms, 100), 2 ** 31 - 1));
    unrefTimer(e.timer);
  }
}

/** Every string of a secret's data is a secret (a field rendered alone, or inside a longer text). */
function registerSecrets(v: unknown, depth = 0): void {
  if (depth > 64) return;
  if (typeof v === "string") redactSecret(v);
  else if (Array.isArray(v)) for (const x of v) registerSecrets(x, depth + 1);
  else if (v && typeof v === "object") for (const x of Object.values(v)) registerSecrets(x, depth + 1);
}

/** What a change is judged on: a KV v2 secret's fields, any other value as it is. */
function significant(v: Record<string, unknown> | string | undefined): unknown {
  return v && typeof v === "object" && isKv2(v) ? v.data : v;
}

function isKv2(data: Record<string, unknown>): data is { data: Record<string, unknown>; metadata: unknown } {
  return typeof data.data === "object" && data.data !== null && typeof data.metadata === "object" && data.metadata !== null;
}

function valueOf(list: Array<{ Key: string; Value: string | null }>, path: string): string | undefined {
  const key = path.replace(/^\/+/, "");
  const e = list.find((x) => x.Key === key);
  return e ? (e.Value ?? "") : undefined;
}

function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const fail = () => reject(new CtsError("TERRAFORM_CANCELLED", "external", "was cancelled while reading template values; nothing was changed."));
    if (signal.aborted) fail();
    else signal.addEventListener("abort", fail, { once: true });
  });
}
