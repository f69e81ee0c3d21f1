import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { writeFile } from "node:fs/promises";
import { readCtsConfig } from "../../src/cts/config/load.ts";
import { vaultUseFor } from "../../src/config/vault-settings.ts";
import { ModuleTask } from "../../src/task/module-task.ts";
import { services } from "../../src/task/conditions.ts";
import {
  parseProviderTemplate,
  renderTemplate,
  taskTemplateDependencies,
  TemplateRenderError,
  TemplateSyntaxError,
  vaultSecret,
  type TemplateLookup,
} from "../../src/task/provider-templates.ts";
import { redact } from "../../src/log/logger.ts";
import { TemplateValues } from "../../src/watch/template-values.ts";
import type { VaultClient, VaultSecret } from "../../src/vault/client.ts";
import type { VaultSession } from "../../src/vault/session.ts";
import { tempDir } from "../support/cts.ts";
import { fakeClock } from "../support/fake-clock.ts";

const noEnv = (name: string) => `env:${name}`;
const lookup = (secrets: Record<string, Record<string, unknown>>, keys: Record<string, string> = {}): TemplateLookup => ({
  secret: (p) => secrets[p] ?? {},
  consulKey: (p) => keys[p],
});
const KV2 = { "secret/data/db": { data: { password: "kv2-pass", user: "app" }, metadata: { version: 3 } } };
const KV1 = { "kv/db": { password: "kv1-pass" } };

describe("CTS templates in terraform_provider blocks", () => {
  it("keeps a string without templates as it is and resolves {{ env }} at once", () => {
    assert.equal(parseProviderTemplate("us-east-1", noEnv), "us-east-1");
    assert.equal(parseProviderTemplate('{{ env "REGION" }}-x', noEnv), "env:REGION-x");
  });

  it("reads {{ with secret }} … {{ .Data.data.k }} … {{ end }} from a KV v2 secret, with text around and inside", () => {
    const v = parseProviderTemplate('user={{ with secret "secret/data/db" }}{{ .Data.data.user }}:{{ .Data.data.password }}{{ end }}!', noEnv);
    assert.deepEqual(v, { ctsTemplate: ["user=", { secret: "secret/data/db", field: ["data", "user"] }, ":", { secret: "secret/data/db", field: ["data", "password"] }, "!"] });
    assert.equal(renderTemplate(v as any, lookup(KV2)), "user=app:kv2-pass!");
  });

  it("reads {{ .Data.k }} from a KV v1 secret and trims spaces with {{- and -}} as Go templates do", () => {
    const v = parseProviderTemplate('{{- with secret "kv/db" -}}  {{ .Data.password }}  {{- end -}}', noEnv);
    assert.equal(renderTemplate(v as any, lookup(KV1)), "kv1-pass");
  });

  it("reads {{ key }} from Consul KV, and says which key is missing", () => {
    const v = parseProviderTemplate('{{ key "cfg/region" }}', noEnv);
    assert.deepEqual(v, { ctsTemplate: [{ consulKey: "cfg/region" }] });
    assert.equal(renderTemplate(v as any, lookup({}, { "cfg/region": "eu" })), "eu");
    assert.throws(() => renderTemplate(v as any, lookup({})), (e: unknown) => e instanceof TemplateRenderError && /the Consul key 'cfg\/region' does not exist/.test((e as Error).message));
  });

  it("says which field a secret lacks", () => {
    const v = parseProviderTemplate('{{ with secret "secret/data/db" }}{{ .Data.data.token }}{{ end }}', noEnv);
    assert.throws(() => renderTemplate(v as any, lookup(KV2)), /the Vault secret 'secret\/data\/db' has no \.Data\.data\.token/);
  });

  for (const [text, message] of [
    ['{{ secret "kv/db" }}', /'\{\{ secret "kv\/db" \}\}' is not a template cts supports/],
    ['{{ with secret "kv/db" }}{{ .Data.password | toUpper }}{{ end }}', /'\{\{ \.Data\.password \| toUpper \}\}' is not a template cts supports/],
    ['{{ with secret "kv/db" }}{{ .Data.password }}', /has no \{\{ end \}\}/],
    ["{{ .Data.password }}", /outside \{\{ with secret/],
    ["{{ end }}", /without a \{\{ with secret/],
    ['{{ with secret "a" }}{{ with secret "b" }}{{ end }}{{ end }}', /inside another \{\{ with secret \}\}/],
  ] as const) {
    it(`refuses ${text}`, () => {
      assert.throws(() => parseProviderTemplate(text, noEnv), (e: unknown) => e instanceof TemplateSyntaxError && message.test((e as Error).message));
    });
  }

  it("vaultSecret() reads KV v2 (.Data.data.k) or KV v1 (.Data.k) by the answer's shape", () => {
    assert.equal(renderTemplate(vaultSecret("secret/data/db", "password"), lookup(KV2)), "kv2-pass");
    assert.equal(renderTemplate(vaultSecret("kv/db", "password"), lookup(KV1)), "kv1-pass");
  });

  it("a module task's provider settings and task_env are rendered only into its environment, each rendered text a secret", () => {
    const task = new ModuleTask({
      name: "t",
      condition: services({ names: ["web"] }),
      module: "./m",
      providers: [{ name: "aws", config: { region: "eu", secret_key: vaultSecret("secret/data/db", "password") }, taskEnv: { DB_USER: vaultSecret("kv/db", "password") } }],
    });
    assert.deepEqual([...taskTemplateDependencies(task).keys()], ["vault:secret/data/db", "vault:kv/db"]);
    const json = JSON.stringify(task.terraformJson({ services: [] } as any));
    assert.ok(!json.includes("kv2-pass") && json.includes("${var.aws.secret_key}"), json);
    assert.match(json, /"secret_key = string"|secret_key = string/);
    const env = task.environment(lookup({ ...KV2, ...KV1 }));
    assert.equal(env.TF_VAR_aws, '{"region" = "eu", "secret_key" = "kv2-pass"}');
    assert.equal(env.DB_USER, "kv1-pass");
    assert.equal(redact("got kv2-pass and kv1-pass"), "got [redacted] and [redacted]");
  });

  it("maps CTS's vault {} block (tls with ca_path, renew_token, unwrap_token, namespace) and applies CTS's env fallbacks", async () => {
    const { dir, cleanup } = await tempDir("cts-vault-");
    try {
      await writeFile(
        join(dir, "v.hcl"),
        `vault {
  address      = "https://vault.example.com:8200"
  namespace    = "team-a"
  token        = "hvs.from-config"
  renew_token  = false
  unwrap_token = true
  tls {
    ca_path     = "/etc/vault/cas"
    server_name = "vault.internal"
    verify      = false
  }
  transport {
    max_idle_conns = 5
  }
}
`,
      );
      const r = await readCtsConfig([join(dir, "v.hcl")], dir);
      assert.deepEqual(r.config.vault, {
        address: "https://vault.example.com:8200",
        token: "hvs.from-config",
        namespace: "team-a",
        renewToken: false,
        unwrapToken: true,
        tls: { caPath: "/etc/vault/cas", serverName: "vault.internal", verify: false },
      });
      assert.ok(r.warnings.some((w) => /'max_idle_conns' is accepted and has no effect/.test(w)));
      const use = vaultUseFor(r.config, {});
      assert.deepEqual(use, {
        settings: { address: "https://vault.example.com:8200", token: "hvs.from-config", namespace: "team-a", tls: { caPath: "/etc/vault/cas", serverName: "vault.internal", verify: false } },
        unwrap: true,
        renew: false,
        defaultLeaseMs: 300_000,
      });
      // Nothing set in the block: VAULT_ADDR, VAULT_TOKEN; renew_token defaults to true with a token.
      assert.deepEqual(vaultUseFor({ vault: {} }, { VAULT_ADDR: "http://127.0.0.1:8200", VAULT_TOKEN: "hvs.from-env", VAULT_CACERT: "/ca.pem" }), {
        settings: { address: "http://127.0.0.1:8200", token: "hvs.from-env", tls: { caCert: "/ca.pem" } },
        unwrap: false,
        renew: true,
        defaultLeaseMs: 300_000,
      });
      assert.equal(vaultUseFor({}, {}), undefined);
      await writeFile(join(dir, "off.hcl"), 'vault {\n  enabled = false\n  address = "http://x:8200"\n}\n');
      assert.equal((await readCtsConfig([join(dir, "off.hcl")], dir)).config.vault, undefined);
      await writeFile(join(dir, "bad.hcl"), 'vault {\n  adress = "http://x:8200"\n}\n');
      await assert.rejects(readCtsConfig([join(dir, "bad.hcl")], dir), (e: any) => e.code === "CONFIG_INVALID" && /bad\.hcl:2: 'adress'/.test(e.message));
    } finally {
      await cleanup();
    }
  });
});

/** A Vault behind the client interface: answers from a map, counts reads. */
function fakeVault(secrets: Map<string, VaultSecret>): VaultClient & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    async read(path) {
      reads.push(path);
      const s = secrets.get(path);
      if (!s) throw Object.assign(new Error(`Vault denied '${path}' (403).`), { code: "VAULT_PERMISSION_DENIED" });
      return structuredClone(s);
    },
    renewLease: async () => {
      throw new Error("not leased");
    },
    renewSelf: async () => ({ ttl: 0, renewable: false }),
    lookupSelf: async () => ({ ttl: 0, renewable: false }),
    capabilities: async (paths) => Object.fromEntries(paths.map((p) => [p, secrets.has(p) ? ["read"] : ["deny"]])),
    unwrapToken: async () => {},
    token: () => "t",
    setToken() {},
    close() {},
  };
}

const session: VaultSession = { ready: Promise.resolve(), renewals: () => 0, close() {} };
const quiet = { debug() {}, warn() {} };

describe("the template values a run reads", () => {
  it("reads each secret once for all tasks, renders from the store, and gives a keyed digest that changes with the value", async () => {
    const secrets = new Map<string, VaultSecret>([["secret/data/db", { data: { data: { password: "first-pass" }, metadata: {} }, leaseId: "", leaseDuration: 0, renewable: false }]]);
    const vault = fakeVault(secrets);
    const store = new TemplateValues({ vault: { client: vault, session }, consul: { kv: async () => ({ data: [], index: 1n }) }, watch: false, defaultLeaseMs: 300_000, log: quiet });
    const deps = [{ secret: "secret/data/db" }];
    await Promise.all([store.ensure(deps), store.ensure(deps)]);
    assert.deepEqual(vault.reads, ["secret/data/db"]);
    assert.equal(renderTemplate(vaultSecret("secret/data/db", "password"), store), "first-pass");
    assert.equal(redact("first-pass"), "[redacted]");
    const digest = store.digest(deps);
    assert.doesNotMatch(digest, /first-pass/);
    const other = new TemplateValues({ vault: { client: vault, session }, consul: { kv: async () => ({ data: [], index: 1n }) }, watch: false, defaultLeaseMs: 300_000, log: quiet });
    secrets.set("secret/data/db", { data: { data: { password: "second-pass" }, metadata: {} }, leaseId: "", leaseDuration: 0, renewable: false });
    await other.ensure(deps);
    assert.notEqual(other.digest(deps), digest);
    store.close();
    other.close();
  });

  it("fails a read of a path the token may not read, and reads it again next time", async () => {
    const vault = fakeVault(new Map());
    const store = new TemplateValues({ vault: { client: vault, session }, consul: { kv: async () => ({ data: [], index: 1n }) }, watch: false, defaultLeaseMs: 300_000, log: quiet });
    await assert.rejects(store.ensure([{ secret: "secret/data/denied" }]), /denied 'secret\/data\/denied'/);
    await assert.rejects(store.ensure([{ secret: "secret/data/denied" }]), /denied/);
    assert.equal(vault.reads.length, 2);
    store.close();
  });

  it("refuses a secret when no Vault is configured, naming the fix", async () => {
    const store = new TemplateValues({ consul: { kv: async () => ({ data: [], index: 1n }) }, watch: false, defaultLeaseMs: 300_000, log: quiet });
    await assert.rejects(store.ensure([{ secret: "kv/db" }]), (e: any) => e.code === "CONFIG_INVALID" && /no Vault is configured/.test(e.message));
    store.close();
  });
});

describe("the template values the daemon keeps fresh", () => {
  it("reads a secret without a lease again and tells the subscribers of a changed field, not of a KV v2 rewrite with the same fields", async () => {
    const answers = [
      { data: { data: { pw: "one-pass" }, metadata: { version: 1 } } },
      { data: { data: { pw: "one-pass" }, metadata: { version: 2 } } },
      { data: { data: { pw: "two-pass" }, metadata: { version: 3 } } },
    ];
    let reads = 0;
    const client: VaultClient = {
      ...fakeVault(new Map()),
      read: async () => ({ ...answers[Math.min(reads++, answers.length - 1)]!, leaseId: "", leaseDuration: 0, renewable: false }),
    };
    const clock = fakeClock();
    const store = new TemplateValues({ vault: { client, session }, consul: { kv: async () => ({ data: [], index: 1n }) }, watch: true, defaultLeaseMs: 300_000, log: quiet, clock });
    const changes: string[] = [];
    const off = store.subscribe([{ secret: "secret/data/db" }], () => {
      changes.push(renderTemplate(vaultSecret("secret/data/db", "pw"), store));
      off();
    });
    await clock.runUntil(() => changes.length > 0, "a change told");
    // Each re-read came after 85–95 % of the 5-minute default lease (KV v2 has none).
    assert.ok(clock.now() >= 2 * 0.85 * 300_000 && clock.now() <= 2 * 0.95 * 300_000, `at ${clock.now()} ms`);
    assert.deepEqual(changes, ["two-pass"], "told once, with the new field");
    assert.ok(reads >= 3);
    store.close();
  });

  it("renews a renewable lease at a third of it, reads the secret again when the renewal no longer grants enough, and tells the subscribers of the new value", async () => {
    const calls: string[] = [];
    let reads = 0;
    const grants = [30, 4];
    const client: VaultClient = {
      ...fakeVault(new Map()),
      read: async (path) => {
        calls.push(`read ${path}`);
        return { data: { password: reads++ === 0 ? "lease-one" : "lease-two" }, leaseId: `db/creds/${reads}`, leaseDuration: 30, renewable: true };
      },
      renewLease: async (leaseId) => {
        calls.push(`renew ${leaseId}`);
        return { data: {}, leaseId, leaseDuration: grants.shift() ?? 4, renewable: true };
      },
    };
    const clock = fakeClock();
    const store = new TemplateValues({ vault: { client, session }, consul: { kv: async () => ({ data: [], index: 1n }) }, watch: true, defaultLeaseMs: 300_000, log: quiet, clock });
    const changes: Array<{ value: string; at: number }> = [];
    const off = store.subscribe([{ secret: "db/creds/app" }], () => {
      changes.push({ value: renderTemplate(vaultSecret("db/creds/app", "password"), store), at: clock.now() });
      off();
    });
    await clock.runUntil(() => changes.length > 0, "a change told");
    // Renewed at 10 s (a third of 30 s), granted 30 s: renewed again at 20 s, granted 4 s (< 10 s): read anew.
    assert.deepEqual(calls, ["read db/creds/app", "renew db/creds/1", "renew db/creds/1", "read db/creds/app"]);
    assert.deepEqual(changes, [{ value: "lease-two", at: 20_000 }]);
    store.close();
  });

  it("reads a secret again when renewing its lease fails (the lease was revoked)", async () => {
    const calls: string[] = [];
    let reads = 0;
    const client: VaultClient = {
      ...fakeVault(new Map()),
      read: async () => {
        calls.push("read");
        return { data: { password: reads++ === 0 ? "revoked-one" : "revoked-two" }, leaseId: "db/creds/x", leaseDuration: 9, renewable: true };
      },
      renewLease: async () => {
        calls.push("renew");
        throw new Error("lease not found");
      },
    };
    const clock = fakeClock();
    const store = new TemplateValues({ vault: { client, session }, consul: { kv: async () => ({ data: [], index: 1n }) }, watch: true, defaultLeaseMs: 300_000, log: quiet, clock });
    const changes: string[] = [];
    const off = store.subscribe([{ secret: "db/creds/app" }], () => {
      changes.push(renderTemplate(vaultSecret("db/creds/app", "password"), store));
      off();
    });
    await clock.runUntil(() => changes.length > 0, "a change told");
    assert.deepEqual(calls, ["read", "renew", "read"]);
    assert.deepEqual(changes, ["revoked-two"]);
    store.close();
  });

  it("follows a Consul key with a blocking query and tells the subscribers when its value changes", async () => {
    const answers: Array<[bigint, string]> = [
      [5n, "blue"],
      [6n, "blue"],
      [7n, "green"],
    ];
    const indexes: bigint[] = [];
    let n = 0;
    const kv = (_req: unknown, opts: { index?: bigint; signal?: AbortSignal } = {}) => {
      indexes.push(opts.index ?? 0n);
      const a = answers[n++];
      if (a) return Promise.resolve({ data: [{ Key: "cfg/color", Value: a[1] }], index: a[0] });
      // Then it blocks until the store stops.
      return new Promise<never>((_, reject) => opts.signal?.addEventListener("abort", () => reject(Object.assign(new Error("aborted"), { name: "AbortError" }))));
    };
    const clock = fakeClock();
    const store = new TemplateValues({ consul: { kv }, watch: true, defaultLeaseMs: 300_000, log: quiet, clock });
    await store.ensure([{ consulKey: "cfg/color" }]);
    assert.equal(store.consulKey("cfg/color"), "blue");
    let told = 0;
    store.subscribe([{ consulKey: "cfg/color" }], () => told++);
    await clock.runUntil(() => told > 0, "a change told");
    assert.equal(told, 1);
    assert.equal(store.consulKey("cfg/color"), "green");
    assert.deepEqual(indexes.slice(0, 3), [0n, 5n, 6n], "each read blocks on the last index");
    store.close();
  });
});
