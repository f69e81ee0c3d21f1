import { backoffDelay } from "../time/backoff.ts";
import { messageOf } from "../errors/cts-error.ts";
import type { VaultClient } from "./client.ts";

/** What the session logs (the token never: only what happened to it). */
export interface SessionLog {
  debug(msg: string): void;
  info(msg: string): void;
  warn(msg: string): void;
}

/** A started session: `ready` settles once the token is usable (unwrapped, looked up). */
export interface VaultSession {
  readonly ready: Promise<void>;
  /** Renewals of the token so far (for `cts` logs and tests). */
  renewals(): number;
  close(): void;
}

export interface SessionOptions {
  /** The token is a wrapping token: unwrap it first (CTS's unwrap_token). */
  unwrap: boolean;
  /** Keep the token alive with renew-self at half its TTL (CTS's renew_token). */
  renew: boolean;
  log: SessionLog;
}

/**
 * The token's life while cts runs: unwrapped once at start when asked, then, when it may be
 * renewed and has a TTL, renewed at half of what is left (as consul-template does). A failed
 * renewal is retried with backoff and logged; reads keep using the token meanwhile.
 */
export function startVaultSession(client: VaultClient, opts: SessionOptions): VaultSession {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  let renewals = 0;
  const abort = new AbortController();
  const schedule = (ms: number, fn: () => void) => {
    if (closed) return;
    timer = setTimeout(fn, Math.min(Math.max(ms, 250), 2 ** 31 - 1));
    timer.unref?.();
  };
  const renewLoop = (ttlSeconds: number, failures = 0) =>
    schedule(failures ? backoffDelay({ baseMs: 1000, maxMs: 60_000 }, failures) : (ttlSeconds * 1000) / 2, () => {
      client.renewSelf(abort.signal).then(
        (info) => {
          renewals++;
          opts.log.debug(`vault: renewed the token (ttl ${info.ttl}s)`);
          if (info.renewable && info.ttl > 0) renewLoop(info.ttl);
          else opts.log.info("vault: the token cannot be renewed any further; cts keeps using it until Vault refuses it");
        },
        (err) => {
          if (closed) return;
          opts.log.warn(`vault: renewing the token failed: ${messageOf(err)}; trying again`);
          renewLoop(ttlSeconds, failures + 1);
        },
      );
    });
  const ready = (async () => {
    if (opts.unwrap) {
      await client.unwrapToken(abort.signal);
      opts.log.info("vault: unwrapped the token");
    }
    if (!opts.renew) return;
    let info;
    try {
      info = await client.lookupSelf(abort.signal);
    } catch (err) {
      // A token without the default policy may not look itself up: reads may still work.
      opts.log.warn(`vault: looking up the token failed (${messageOf(err)}); it is not renewed. Give it the default policy or set renew_token = false.`);
      return;
    }
    if (info.renewable && info.ttl > 0) renewLoop(info.ttl);
    else opts.log.debug("vault: the token has no TTL or cannot be renewed; it is not renewed");
  })();
  // Whoever awaits `ready` sees the failure; an unhandled rejection must not end the process.
  ready.catch(() => {});
  return {
    ready,
    renewals: () => renewals,
    close() {
      closed = true;
      abort.abort();
      if (timer) clearTimeout(timer);
    },
  };
}
