import type { CtsConfig } from "../config/types.ts";
import { vaultUseFor } from "../config/vault-settings.ts";
import { watchTokenFile } from "../consul/token-file.ts";
import type { Logger } from "../log/logger.ts";
import { createVaultClient, type VaultClient } from "../vault/client.ts";
import { startVaultSession, type VaultSession } from "../vault/session.ts";

/**
 * The process's one use of Vault (when configured: `vault {}` or VAULT_ADDR): one client, one token
 * session (unwrapped once, renewed once) shared by the Consul token (`consul.token` from Vault) and
 * the task templates. Two sessions on one token would each renew it, and a response-wrapped token
 * can be unwrapped only once.
 */
export interface VaultConnection {
  client: VaultClient;
  /** Starts on first use: a config that reads no secret never calls Vault. */
  session: VaultSession;
  close(): void;
}

export function vaultConnectionFor(config: CtsConfig, opts: { watch: boolean; log: Logger }): VaultConnection | undefined {
  const use = vaultUseFor(config);
  if (!use) return undefined;
  const { log } = opts;
  const client = createVaultClient(use.settings);
  let started: VaultSession | undefined;
  const session: VaultSession = {
    get ready() {
      started ??= startVaultSession(client, { unwrap: use.unwrap, renew: use.renew && opts.watch, log });
      return started.ready;
    },
    renewals: () => started?.renewals() ?? 0,
    close: () => started?.close(),
  };
  // Vault Agent rewrites its sink file when it renews or re-authenticates: the next read uses the new token.
  const agentFile = config.vault?.agentTokenFile;
  const stopFileWatch =
    agentFile && opts.watch
      ? watchTokenFile(agentFile, client.token() ?? "", (token) => {
          client.setToken(token);
          log.info(`vault: the token in ${agentFile} changed; using the new one`);
        })
      : undefined;
  return {
    client,
    session,
    close() {
      stopFileWatch?.();
      session.close();
      client.close();
    },
  };
}
