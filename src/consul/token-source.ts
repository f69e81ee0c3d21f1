import type { ConsulTransport } from "./transport.ts";

/**
 * A Consul token that lives somewhere else (a Vault secret, CTS #825): the client's first call
 * waits for it, and a new value is used from the next call on, as a rotated token file's is.
 */
export interface ConsulTokenSource {
  /** Where the token comes from, for log lines and errors (never the value): "the Vault secret 'secret/data/cts'". */
  readonly origin: string;
  /** The current value; rejects with the reason it cannot be had (a catalogued error). */
  current(): Promise<string>;
  /** Tells `onToken` every later value; returns the unsubscribe. */
  follow(onToken: (token: string) => void): () => void;
  close(): void;
}

/**
 * The transport behind a gate: until the first token is had, every call waits for it. A failed
 * attempt fails the calls waiting on it and the next call tries again (Vault down at start must
 * not leave the daemon without Consul for good). Calls after the first token go straight through.
 */
export function gatedTransport(transport: ConsulTransport, source: ConsulTokenSource, use: (token: string) => void): ConsulTransport {
  let have = false;
  let pending: Promise<void> | undefined;
  const gate = (): Promise<void> | undefined => {
    if (have) return undefined;
    pending ??= source.current().then(
      (token) => {
        use(token);
        have = true;
        pending = undefined;
      },
      (err: unknown) => {
        pending = undefined;
        throw err;
      },
    );
    return pending;
  };
  return {
    ...transport,
    async call(desc, scope, opts, run, mapError) {
      const g = gate();
      if (g) await g;
      return transport.call(desc, scope, opts, run, mapError);
    },
    get(describe, scope, opts, path, query) {
      const g = gate();
      return g ? g.then(() => transport.get(describe, scope, opts, path, query)) : transport.get(describe, scope, opts, path, query);
    },
  };
}
