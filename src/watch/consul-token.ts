import { vaultUseFor } from "../config/vault-settings.ts";
import type { CtsConfig } from "../config/types.ts";
import type { ConsulTokenSource } from "../consul/token-source.ts";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import { isTemplateValue, renderTemplate, templateDependencies, TemplateRenderError, type TemplateValue } from "../task/provider-templates.ts";
import type { Clock } from "../time/clock.ts";
import { createVaultClient, type VaultClient } from "../vault/client.ts";
import { startVaultSession, type VaultSession } from "../vault/session.ts";
import { TemplateValues, type TemplateLog } from "./template-values.ts";

export interface ConsulTokenOptions {
  /** Keep the secret fresh and tell the client of a new token (the daemon); false: read once. */
  watch: boolean;
  log: TemplateLog & { info(msg: string): void };
  clock?: Clock;
  /** The process's Vault client and token session (the daemon shares one with the task templates); without it, one of its own. */
  vault?: { client: VaultClient; session: VaultSession };
}

/**
 * The Consul token a config takes from Vault (`consul.token = vaultSecret(…)`, or a CTS config's
 * `{{ with secret }}` in `consul { token }`, CTS #825), or undefined when the token is plain.
 * Read on the Consul client's first call; in the daemon kept fresh as every template value is (a
 * renewable lease renewed, any other secret read again before its lease or the default lease
 * ends), and a new value handed to the client, which uses it from its next call on — no restart.
 * It reads before anything else does; given the process's Vault connection it uses that one (one
 * token session: a wrapped token is unwrapped once, a token renewed once), otherwise its own.
 */
export function consulTokenFromVault(config: CtsConfig, opts: ConsulTokenOptions): ConsulTokenSource | undefined {
  const template = config.consul?.token;
  if (!isTemplateValue(template)) return undefined;
  const paths = [...templateDependencies(template).values()];
  const origin = `the Vault secret ${paths.map((d) => ("secret" in d ? `'${d.secret}'` : `'${d.consulKey}'`)).join(", ")}`;
  if (paths.some((d) => "consulKey" in d))
    throw new CtsError("CONFIG_INVALID", "usage", "consul.token cannot come from a Consul key: cts needs the token to read Consul. Take it from a Vault secret (vaultSecret(path, field), or {{ with secret }} in a CTS config), a token file, or CONSUL_HTTP_TOKEN.");
  const use = vaultUseFor(config);
  if (!use) throw new CtsError("CONFIG_INVALID", "usage", `consul.token reads ${origin}, and no Vault is configured. Add a vault {} block with its address (or set VAULT_ADDR).`);
  const own = opts.vault === undefined;
  const client = opts.vault?.client ?? createVaultClient(use.settings);
  const session = opts.vault?.session ?? startVaultSession(client, { unwrap: use.unwrap, renew: use.renew && opts.watch, log: opts.log });
  const values = new TemplateValues({
    vault: { client, session },
    // Never asked: a Consul key is refused above.
    consul: { kv: () => Promise.reject(new CtsError("CTS_INTERNAL", "internal", "consul.token cannot read Consul")) },
    watch: opts.watch,
    defaultLeaseMs: use.defaultLeaseMs,
    log: opts.log,
    ...(opts.clock ? { clock: opts.clock } : {}),
  });
  const render = (): string => tokenText(template, values, origin);
  return {
    origin,
    async current() {
      try {
        await values.ensure(paths);
      } catch (err) {
        throw err instanceof CtsError ? new CtsError(err.code, err.category, `consul.token: ${err.message}`, { cause: err, detail: err.detail }) : err;
      }
      return render();
    },
    follow(onToken) {
      return values.subscribe(paths, () => {
        try {
          onToken(render());
        } catch (err) {
          opts.log.warn(`consul: ${origin} changed, and no token can be taken from it (${messageOf(err)}); the last token is kept`);
        }
      });
    },
    close() {
      values.close();
      // A shared connection is closed by its owner.
      if (!own) return;
      session.close();
      client.close();
    },
  };
}

/** The token's text, or why the secret holds none. */
function tokenText(template: TemplateValue, values: TemplateValues, origin: string): string {
  let text: string;
  try {
    text = renderTemplate(template, values).trim();
  } catch (err) {
    if (err instanceof TemplateRenderError) throw new CtsError("VAULT_SECRET_NOT_FOUND", "usage", `consul.token: ${err.message}. Write the token into that field, or fix the field consul.token names.`);
    throw err;
  }
  if (!text) throw new CtsError("VAULT_SECRET_NOT_FOUND", "usage", `consul.token: ${origin} gives an empty token. Write the token into the field consul.token names.`);
  return text;
}
