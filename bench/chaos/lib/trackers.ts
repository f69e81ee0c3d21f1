/** Background pollers for the kill -9 scenario: how long orphans live, how long a state lock stays held. */
import type { ConsulAgent } from "../../../test/support/consul.ts";
import { alive, type FoundProcess } from "./procs.ts";

/** Watches processes until they exit: how long each outlived its parent's kill. */
export function orphanLifetimes(everyMs = 250) {
  const tracked = new Map<number, { p: FoundProcess; from: number; goneAt?: number }>();
  const timer = setInterval(() => {
    const now = performance.now();
    for (const t of tracked.values()) if (t.goneAt === undefined && !alive(t.p.pid)) t.goneAt = now;
  }, everyMs);
  return {
    /** Starts the clock of processes found after a kill at `killedAt`; returns those not tracked before. */
    add(procs: FoundProcess[], killedAt: number): FoundProcess[] {
      const fresh = procs.filter((p) => !tracked.has(p.pid));
      for (const p of fresh) tracked.set(p.pid, { p, from: killedAt });
      return fresh;
    },
    /** Longest life after the kill among `procs`, in ms (Infinity while one still runs). */
    longest(procs: FoundProcess[]): number {
      const now = performance.now();
      return Math.max(0, ...procs.map((p) => tracked.get(p.pid)).filter((t) => !!t).map((t) => (t.goneAt === undefined && alive(t.p.pid) ? Infinity : (t.goneAt ?? now) - t.from)));
    },
    /** "tofu 4.2 s, provider still running" for `procs` (the longest-lived of each kind). */
    byKind(procs: FoundProcess[]): string {
      const kinds = [...new Set(procs.map((p) => p.kind))];
      return kinds
        .map((k) => {
          const life = this.longest(procs.filter((p) => p.kind === k));
          return `${k} ${Number.isFinite(life) ? `${(life / 1000).toFixed(1)} s` : "still running"}`;
        })
        .join(", ");
    },
    /** Tracked processes still running. */
    running: () => [...tracked.values()].filter((t) => alive(t.p.pid)).map((t) => t.p),
    stop: () => clearInterval(timer),
  };
}

/**
 * Polls the Consul KV keys of Terraform state locks under `prefix` (the consul backend keeps
 * `<path>-env:<workspace>/.lock` with the holder's session); records when a lock is seen free.
 */
export function stateLockWatch(consul: ConsulAgent, prefix: string, everyMs = 250) {
  const freeAt: number[] = [];
  let held = false;
  let stopped = false;
  const keys = new Set<string>();
  const sessions = new Map<string, string>();
  const poll = async () => {
    while (!stopped) {
      let now = false;
      try {
        const entries = (await consul.api("GET", `/v1/kv/${prefix}?recurse`)) as Array<{ Key: string; Session?: string }> | undefined;
        for (const e of entries ?? []) {
          if (!e.Key.endsWith("/.lock")) continue;
          keys.add(e.Key);
          if (e.Session) now = true;
          if (e.Session && !sessions.has(e.Session)) {
            sessions.set(e.Session, "?");
            // The lock's session decides when Consul frees it: its TTL (and lock-delay) matter.
            void consul
              .api("GET", `/v1/session/info/${e.Session}`)
              .then((info: Array<{ TTL?: string; LockDelay?: number; Behavior?: string }> | undefined) => {
                const i = info?.[0];
                sessions.set(e.Session!, i ? `TTL ${i.TTL || "none"}, lock-delay ${(i.LockDelay ?? 0) / 1e9} s, behavior ${i.Behavior}` : "gone");
              })
              .catch(() => undefined);
          }
        }
      } catch {
        /* 404: no keys under the prefix yet, or Consul busy: treat as not held */
      }
      if (held && !now) freeAt.push(performance.now());
      held = now;
      await new Promise((r) => setTimeout(r, everyMs));
    }
  };
  const loop = poll();
  return {
    /** When the lock was first seen free after `t` (undefined: not yet). */
    freedAfter: (t: number) => freeAt.find((x) => x > t),
    isHeld: () => held,
    keys: () => [...keys],
    /** The sessions that held a lock, with their TTL and lock-delay. */
    sessions: () => [...new Set(sessions.values())],
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}
