import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import { redactSecret } from "../log/logger.ts";
import { parseDuration } from "../time/duration.ts";
import type { VaultSettings } from "../vault/client.ts";
import type { CtsConfig } from "./types.ts";

/** How cts uses Vault: where it is, and what happens to the token. */
export interface VaultUse {
  settings: VaultSettings;
  unwrap: boolean;
  renew: boolean;
  /** A secret without a lease is read again after about this long (CTS: 5 min). */
  defaultLeaseMs: number;
}

const FIVE_MINUTES = 5 * 60_000;

/**
 * The Vault a config describes, CTS's env fallbacks applied (config/vault.go): enabled when an
 * address is set here or in VAULT_ADDR; the token from vault_agent_token_file, then token, then
 * VAULT_TOKEN, then ~/.vault-token; renew_token defaults to true when there is a token and no agent
 * file (VAULT_RENEW_TOKEN overrides the default). Undefined when no Vault is configured.
 */
export function vaultUseFor(config: Pick<CtsConfig, "vault">, env: NodeJS.ProcessEnv = process.env): VaultUse | undefined {
  const v = config.vault;
  const address = v?.address ?? env.VAULT_ADDR;
  if (!address) return undefined;
  let token: string | undefined;
  if (v?.agentTokenFile) {
    try {
      token = readFileSync(v.agentTokenFile, "utf8").trim();
    } catch (cause) {
      throw new CtsError("CONFIG_INVALID", "usage", `vault.vault_agent_token_file: '${v.agentTokenFile}' cannot be read (${messageOf(cause)}). Point it at Vault Agent's token sink.`, { cause });
    }
  } else token = v?.token ?? env.VAULT_TOKEN ?? homeToken();
  if (token) redactSecret(token);
  const envRenew = env.VAULT_RENEW_TOKEN === undefined ? undefined : /^(1|true|t|yes)$/i.test(env.VAULT_RENEW_TOKEN);
  const renew = v?.renewToken ?? envRenew ?? (Boolean(token) && !v?.agentTokenFile);
  const t = v?.tls ?? {};
  const skip = env.VAULT_SKIP_VERIFY === undefined ? undefined : /^(1|true|t|yes)$/i.test(env.VAULT_SKIP_VERIFY);
  const tls = {
    ...((t.caCert ?? env.VAULT_CACERT) ? { caCert: t.caCert ?? env.VAULT_CACERT } : {}),
    ...((t.caPath ?? env.VAULT_CAPATH) ? { caPath: t.caPath ?? env.VAULT_CAPATH } : {}),
    ...((t.cert ?? env.VAULT_CLIENT_CERT) ? { cert: t.cert ?? env.VAULT_CLIENT_CERT } : {}),
    ...((t.key ?? env.VAULT_CLIENT_KEY) ? { key: t.key ?? env.VAULT_CLIENT_KEY } : {}),
    ...((t.serverName ?? env.VAULT_TLS_SERVER_NAME) ? { serverName: t.serverName ?? env.VAULT_TLS_SERVER_NAME } : {}),
    ...(t.verify === false || skip === true ? { verify: false } : {}),
  };
  const namespace = v?.namespace ?? env.VAULT_NAMESPACE;
  const url = /^https?:\/\//.test(address) ? address : `${tls.caCert || tls.caPath || tls.cert ? "https" : "http"}://${address}`;
  return {
    settings: { address: url, ...(token ? { token } : {}), ...(namespace ? { namespace } : {}), ...(Object.keys(tls).length ? { tls } : {}) },
    unwrap: v?.unwrapToken === true,
    renew,
    defaultLeaseMs: leaseMs(v?.defaultLeaseDuration),
  };
}

function leaseMs(text: string | undefined): number {
  if (text === undefined) return FIVE_MINUTES;
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) throw new CtsError("DURATION_INVALID", "usage", `vault.defaultLeaseDuration: '${text}' is not a duration. Write e.g. "5m" or "30s".`);
  return ms;
}

function homeToken(): string | undefined {
  try {
    return readFileSync(join(homedir(), ".vault-token"), "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}
