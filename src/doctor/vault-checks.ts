import type { VaultUse } from "../config/vault-settings.ts";
import { messageOf } from "../errors/cts-error.ts";
import { knownSecrets } from "../secrets/redactor.ts";
import { createVaultClient, type VaultClient } from "../vault/client.ts";
import { fail, pass, type CheckResult } from "./check.ts";

/** What the Vault checks need: how the config uses Vault (undefined: no vault block, no VAULT_ADDR) and the secret paths the tasks' templates read. */
export interface VaultDoctorInput {
  use: VaultUse | undefined;
  /** Each secret path a template reads, with the tasks that read it. */
  paths: Map<string, string[]>;
  /** The client (tests); default: one made from `use.settings`. */
  client?: VaultClient;
}

const TOKEN_FIX = "give cts a valid token: vault { token = \"…\" }, VAULT_TOKEN, vault_agent_token_file or ~/.vault-token (a token Vault knows and that has not expired)";
const NOT_CHECKED = (what: string) => `not checked: ${what}`;

/**
 * `cts doctor` for Vault, in order: the server answers at the configured address with the
 * configured TLS (`vault`), the token is valid (`vault-token`, lookup-self), and the token may read
 * each secret path the tasks' templates use (`vault-read:<path>`, from sys/capabilities-self, so no
 * secret is read and no lease is made; a token without that permission gets a plain read).
 * Nothing when the config has no Vault and no template reads a secret. No detail carries the token
 * or a value (every text passes the redactor).
 */
export async function checkVault(input: VaultDoctorInput): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  const add = (r: CheckResult) => out.push({ ...r, detail: knownSecrets.redact(r.detail), ...(r.fix ? { fix: knownSecrets.redact(r.fix) } : {}) });
  const paths = [...input.paths.keys()].sort();
  const readNames = paths.map((p) => `vault-read:${p}`);
  const skipRest = (why: string, fix: string, names: string[]) => names.forEach((n) => add(fail(n, NOT_CHECKED(why), fix)));
  const { use } = input;
  if (!use) {
    if (paths.length) add(fail("vault", `a template reads the Vault secret${paths.length > 1 ? "s" : ""} ${paths.map((p) => `'${p}'`).join(", ")}, and no Vault is configured`, "add a vault { address = \"…\" } block (vault: { address } in a TypeScript config) or set VAULT_ADDR"));
    return out;
  }
  const address = use.settings.address;
  let client: VaultClient;
  try {
    client = input.client ?? createVaultClient(use.settings);
  } catch (err) {
    add(fail("vault", messageOf(err), "fix vault.tls: the CA file or folder, certificate and key must be readable PEM files"));
    skipRest("Vault's TLS settings cannot be used", "fix the vault check first", ["vault-token", ...readNames]);
    return out;
  }
  try {
    const tls = address.startsWith("https:") ? (use.settings.tls?.verify === false ? ", TLS without verifying the certificate" : ", TLS verified") : ", plain HTTP";
    if (use.unwrap) {
      // Unwrapping uses the wrapping token up: the daemon could not start after the doctor.
      add(pass("vault", `${address} is configured${tls}; not called: the token is wrapped (unwrap_token), and unwrapping it here would use it up`));
      return out;
    }
    if (!use.settings.token) {
      add(pass("vault", `${address} is configured${tls}`));
      add(fail("vault-token", "no Vault token is configured", TOKEN_FIX));
      skipRest("no token", "fix the vault-token check first", readNames);
      return out;
    }
    let tokenOk = false;
    try {
      const info = await client.lookupSelf();
      add(pass("vault", `${address} answers${tls}`));
      add(pass("vault-token", `the token is valid (${info.ttl > 0 ? `${info.ttl}s left${info.renewable ? ", renewable" : ", not renewable"}` : "no expiry"})`));
      tokenOk = true;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === "VAULT_UNREACHABLE") {
        add(fail("vault", messageOf(err), tlsFix(address)));
        skipRest("Vault is not reachable", "fix the vault check first", ["vault-token", ...readNames]);
        return out;
      }
      add(pass("vault", `${address} answers${tls}`));
      add(fail("vault-token", code === "VAULT_TOKEN_INVALID" ? "Vault does not accept the token (403 on auth/token/lookup-self: unknown, expired or revoked)" : messageOf(err), TOKEN_FIX));
    }
    if (!tokenOk) {
      skipRest("the token is not valid", "fix the vault-token check first", readNames);
      return out;
    }
    if (!paths.length) return out;
    let caps: Record<string, string[]> | undefined;
    try {
      caps = await client.capabilities(paths);
    } catch {
      caps = undefined; // a token without the default policy may not ask: read instead
    }
    for (const path of paths) {
      const tasks = input.paths.get(path)!;
      const used = `read by task${tasks.length > 1 ? "s" : ""} ${tasks.map((t) => `'${t}'`).join(", ")}`;
      const denied = () => fail(`vault-read:${path}`, `the token may not read '${path}' (${used})`, `grant it in a policy of the token: path "${path}" { capabilities = ["read"] }`);
      if (caps) {
        const c = caps[path] ?? [];
        add(c.includes("root") || c.includes("read") ? pass(`vault-read:${path}`, `the token may read '${path}' (${used})`) : denied());
        continue;
      }
      try {
        await client.read(path);
        add(pass(`vault-read:${path}`, `'${path}' was read (${used})`));
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code === "VAULT_PERMISSION_DENIED") add(denied());
        else if (code === "VAULT_SECRET_NOT_FOUND") add(fail(`vault-read:${path}`, `Vault has no secret at '${path}' (${used})`, "write the secret, or fix the path in the template (KV v2 paths read <mount>/data/<name>)"));
        else add(fail(`vault-read:${path}`, messageOf(err), "read Vault's answer; check Vault's logs"));
      }
    }
    return out;
  } finally {
    if (!input.client) client.close();
  }
}

function tlsFix(address: string): string {
  return address.startsWith("https:")
    ? "start Vault or fix vault.address (VAULT_ADDR); for a certificate error set vault.tls ca_cert or ca_path (VAULT_CACERT, VAULT_CAPATH) to the CA that signed Vault's certificate"
    : "start Vault or fix vault.address (VAULT_ADDR); if Vault listens with TLS, write https:// and set vault.tls ca_cert or ca_path";
}
