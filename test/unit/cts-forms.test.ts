import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { readCtsConfig } from "../../src/cts/config/load.ts";
import type { CtsConfig } from "../../src/config/types.ts";
import { serviceRegistrationProblems } from "../../src/config/service-registration.ts";
import { consulTransportProblems } from "../../src/config/consul-transport.ts";
import { consulAuthProblems } from "../../src/config/consul-connection.ts";
import { tempDir } from "../support/cts.ts";
import { taskFromHcl } from "../../src/cli/task-file.ts";
import { Testing, type ModuleTask } from "../../src/index.ts";

// Every spelling CTS v0.9.0 accepts (its docs, its tests, HCL 1's equivalences), loaded from HCL
// text, with the config it must give (CTS-SOURCE-NOTES §1).

const plain = (v: unknown) => JSON.parse(JSON.stringify(v));
const PROVIDER = 'terraform_provider "local" {}\n';
/** A task around `inner` (its condition and inputs), using the provider above. */
const task = (inner: string, head = '  module = "./m"\n') => `task {\n  name = "t"\n${head}  providers = ["local"]\n${inner}\n}\n`;
const SERVICES = '  condition "services" {\n    names = ["web"]\n  }';

interface Case {
  name: string;
  hcl: string;
  /** What part of the loaded config to compare. */
  pick: (c: CtsConfig) => unknown;
  want: unknown;
  /** A warning the load must give. */
  warning?: RegExp;
}

const CASES: Case[] = [
  // terraform_provider task_env: attribute, block, one-line block, quoted names (HCL 1).
  { name: "task_env = { X = \"y\" }", hcl: `terraform_provider "local" {\n  task_env = { X = "y" }\n}\n${task(SERVICES)}`, pick: (c) => (c.tasks[0] as any).providers[0].taskEnv, want: { X: "y" } },
  { name: "task_env { X = \"y\" } (block)", hcl: `terraform_provider "local" {\n  task_env {\n    X = "y"\n  }\n}\n${task(SERVICES)}`, pick: (c) => (c.tasks[0] as any).providers[0].taskEnv, want: { X: "y" } },
  { name: "task_env { \"X\" = \"y\" } (one line, quoted name)", hcl: `terraform_provider "local" {\n  task_env { "X" = "y" }\n}\n${task(SERVICES)}`, pick: (c) => (c.tasks[0] as any).providers[0].taskEnv, want: { X: "y" } },
  { name: "task_env { \"A\" = \"1\", \"B\" = \"2, 3\" } (several items on one line, HCL 1)", hcl: `terraform_provider "local" {\n  task_env { "A" = "1", "B" = "2, 3" }\n}\n${task(SERVICES)}`, pick: (c) => (c.tasks[0] as any).providers[0].taskEnv, want: { A: "1", B: "2, 3" } },
  { name: "buffer_period { min = \"6s\", max = \"9s\" } (one line)", hcl: PROVIDER + task(`${SERVICES}\n  buffer_period { min = "6s", max = "9s" }`), pick: (c) => (c.tasks[0] as any).bufferPeriod, want: { min: "6s", max: "9s" } },
  { name: "task_env block with quoted names on their lines", hcl: `terraform_provider "local" {\n  task_env {\n    "A_B" = "1"\n    "C" = "2"\n  }\n}\n${task(SERVICES)}`, pick: (c) => (c.tasks[0] as any).providers[0].taskEnv, want: { A_B: "1", C: "2" } },
  { name: "a quoted '{ \"x\" =' inside a string stays as written", hcl: `terraform_provider "local" {\n  note = "{ \\"x\\" = 1 }"\n}\n${task(SERVICES)}`, pick: (c) => (c.tasks[0] as any).providers[0].config, want: { note: '{ "x" = 1 }' } },
  // terraform_provider blocks: labelled block, attribute form, list form (HCL 1 / JSON).
  { name: "terraform_provider \"local\" { … }", hcl: `terraform_provider "local" {\n  a = "1"\n}\n${task(SERVICES)}`, pick: (c) => (c.tasks[0] as any).providers[0].config, want: { a: "1" } },
  { name: "terraform_provider = { local = { … } }", hcl: `terraform_provider = { local = { a = "1" } }\n${task(SERVICES)}`, pick: (c) => (c.tasks[0] as any).providers[0].config, want: { a: "1" } },
  { name: "terraform_provider = [{ local = { … } }]", hcl: `terraform_provider = [{ local = { a = "1" } }]\n${task(SERVICES)}`, pick: (c) => (c.tasks[0] as any).providers[0].config, want: { a: "1" } },
  // Map-valued keys as attributes or blocks.
  { name: "cts_user_defined_meta = { … }", hcl: PROVIDER + task('  condition "services" {\n    names = ["web"]\n    cts_user_defined_meta = { team = "a" }\n  }'), pick: (c) => (c.tasks[0]!.condition as any).query.userMeta, want: { team: "a" } },
  { name: "cts_user_defined_meta { … } (block)", hcl: PROVIDER + task('  condition "services" {\n    names = ["web"]\n    cts_user_defined_meta {\n      team = "a"\n    }\n  }'), pick: (c) => (c.tasks[0]!.condition as any).query.userMeta, want: { team: "a" } },
  { name: "node_meta { … } (block)", hcl: PROVIDER + task('  condition "catalog-services" {\n    regexp = ""\n    node_meta {\n      rack = "r1"\n    }\n  }'), pick: (c) => (c.tasks[0]!.condition as any).query, want: { regexp: "", nodeMeta: { rack: "r1" } } },
  { name: "module_input cts_user_defined_meta { … } (block)", hcl: PROVIDER + task('  condition "schedule" {\n    cron = "* * * * *"\n  }\n  module_input "services" {\n    names = ["db"]\n    cts_user_defined_meta {\n      k = "v"\n    }\n  }'), pick: (c) => (c.tasks[0]!.inputs as any).services.query.userMeta, want: { k: "v" } },
  // Blocks in attribute form (HCL 1).
  { name: "condition = { services = { … } }", hcl: PROVIDER + task('  condition = { services = { names = ["web"] } }'), pick: (c) => plain(c.tasks[0]!.condition), want: { kind: "services", query: { passingOnly: true, names: ["web"] } } },
  { name: "buffer_period = { min = \"7s\" }", hcl: PROVIDER + task(`${SERVICES}\n  buffer_period = { min = "7s" }`), pick: (c) => (c.tasks[0] as any).bufferPeriod, want: { min: "7s" } },
  { name: "consul = { address = … }", hcl: `consul = { address = "127.0.0.1:8501" }\n${PROVIDER}${task(SERVICES)}`, pick: (c) => c.consul?.address, want: "127.0.0.1:8501" },
  { name: "driver = { terraform = { … } }", hcl: `driver = { terraform = { log = true } }\n${PROVIDER}${task(SERVICES)}`, pick: (c) => c.driver?.terraform?.log, want: true },
  { name: "required_providers { local { source = … } } (nested blocks)", hcl: `driver "terraform" {\n  required_providers {\n    local {\n      source = "hashicorp/local"\n    }\n  }\n}\n${PROVIDER}${task(SERVICES)}`, pick: (c) => (c.tasks[0] as any).providers[0].source, want: "hashicorp/local" },
  { name: "required_providers { local = \"2.4.0\" } (version shorthand, as CTS's tests)", hcl: `driver "terraform" {\n  required_providers {\n    local = "2.4.0"\n  }\n}\n${PROVIDER}${task(SERVICES)}`, pick: (c) => (c.tasks[0] as any).providers[0].version, want: "2.4.0" },
  // Deprecated aliases, with CTS's warnings.
  { name: "source (deprecated alias of module)", hcl: PROVIDER + task(SERVICES, '  source = "./old"\n'), pick: (c) => (c.tasks[0] as any).module, want: "./old", warning: /:4: 'source' in a task block is deprecated since CTS 0\.5\.0: write module = "…" instead\./ },
  { name: "source and module both set: module wins", hcl: PROVIDER + task(SERVICES, '  module = "./new"\n  source = "./old"\n'), pick: (c) => (c.tasks[0] as any).module, want: "./new", warning: /the task sets both 'source' and 'module'; 'module' \(\.\/new\) is used/ },
  { name: "source_input (deprecated alias of module_input)", hcl: PROVIDER + task('  condition "schedule" {\n    cron = "* * * * *"\n  }\n  source_input "consul-kv" {\n    path = "a/b"\n  }'), pick: (c) => plain((c.tasks[0]!.inputs as any).kv), want: { kind: "consul-kv", query: { path: "a/b", recurse: false } }, warning: /the 'source_input' block is deprecated since CTS 0\.5\.0: write module_input "consul-kv"/ },
  { name: "source_includes_var (deprecated alias of use_as_module_input)", hcl: PROVIDER + task('  condition "catalog-services" {\n    regexp = "^web"\n    source_includes_var = false\n  }'), pick: (c) => (c.tasks[0] as any).useAsModuleInput, want: false, warning: /'source_includes_var' is deprecated since CTS 0\.5\.0: write use_as_module_input = false/ },
  { name: "services list without a condition: the services condition", hcl: PROVIDER + task('  services = ["web", "api"]'), pick: (c) => plain(c.tasks[0]!.condition), want: { kind: "services", query: { passingOnly: true, names: ["web", "api"] } }, warning: /the task 'services' list is deprecated since CTS 0\.5\.0/ },
  { name: "services list with another condition: the services module input", hcl: PROVIDER + task('  services = ["web"]\n  condition "schedule" {\n    cron = "* * * * *"\n  }'), pick: (c) => plain((c.tasks[0]!.inputs as any).services), want: { kind: "services", query: { passingOnly: true, names: ["web"] } }, warning: /:6: the task 'services' list is deprecated/ },
  {
    name: "services list naming service blocks by id and by name (their datacenter, namespace, filter, meta)",
    hcl: `service {\n  name = "web"\n  id = "web-dc2"\n  datacenter = "dc2"\n  filter = "Service.Tags contains \\"x\\""\n  cts_user_defined_meta = { team = "a" }\n}\nservice {\n  name = "api"\n  datacenter = "dc2"\n  filter = "Service.Tags contains \\"x\\""\n  cts_user_defined_meta { team = "a" }\n}\n${PROVIDER}${task('  services = ["web-dc2", "api"]')}`,
    pick: (c) => plain(c.tasks[0]!.condition),
    want: { kind: "services", query: { passingOnly: true, names: ["web", "api"], datacenter: "dc2", filter: 'Service.Tags contains "x"', userMeta: { team: "a" } } },
    warning: /:19: the task 'services' list is deprecated/,
  },
  {
    name: "services list whose service blocks differ: each service queried with its own block's settings, as CTS",
    hcl: `service {\n  name = "web"\n  datacenter = "dc2"\n  cts_user_defined_meta = { team = "a" }\n}\nservice {\n  name = "web"\n  id = "web-dc3"\n  datacenter = "dc3"\n  filter = "Service.Tags contains \\"x\\""\n}\n${PROVIDER}${task('  services = ["web", "web-dc3", "api"]')}`,
    pick: (c) => plain(c.tasks[0]!.condition),
    want: {
      kind: "services",
      query: {
        passingOnly: true,
        names: ["web", "api"],
        each: [{ name: "web", datacenter: "dc2", userMeta: { team: "a" } }, { name: "web", datacenter: "dc3", filter: 'Service.Tags contains "x"' }, { name: "api" }],
      },
    },
    warning: /the task 'services' list is deprecated/,
  },
  // consul.service_registration, consul.transport, syslog, API tls.ca_path.
  { name: "service_registration { … } with default_check { … }", hcl: `consul {\n  service_registration {\n    enabled = true\n    service_name = "cts-a"\n    address = "10.0.0.1"\n    namespace = "ns"\n    default_check {\n      enabled = true\n      address = "https://cts:8558"\n    }\n  }\n}\n${PROVIDER}${task(SERVICES)}`, pick: (c) => c.consul?.serviceRegistration, want: { serviceName: "cts-a", address: "10.0.0.1", namespace: "ns", defaultCheck: { address: "https://cts:8558" } } },
  { name: "service_registration = { enabled = false } (attribute form)", hcl: `consul {\n  service_registration = { enabled = false }\n}\n${PROVIDER}${task(SERVICES)}`, pick: (c) => c.consul?.serviceRegistration, want: { enabled: false } },
  { name: "default_check { enabled = false }", hcl: `consul {\n  service_registration {\n    default_check {\n      enabled = false\n    }\n  }\n}\n${PROVIDER}${task(SERVICES)}`, pick: (c) => c.consul?.serviceRegistration, want: { defaultCheck: false } },
  { name: "transport { … } in Node's terms (ms)", hcl: `consul {\n  transport {\n    dial_keep_alive = "15s"\n    dial_timeout = "1m"\n    disable_keep_alives = true\n    idle_conn_timeout = "500ms"\n    max_idle_conns_per_host = 7\n    tls_handshake_timeout = "3s"\n  }\n}\n${PROVIDER}${task(SERVICES)}`, pick: (c) => c.consul?.transport, want: { keepAliveMsecs: 15_000, connectTimeoutMs: 60_000, keepAlive: false, freeSocketTimeoutMs: 500, maxFreeSockets: 7, tlsHandshakeTimeoutMs: 3_000 } },
  { name: "transport max_idle_conns: a warning naming the key", hcl: `consul {\n  transport {\n    max_idle_conns = 10\n  }\n}\n${PROVIDER}${task(SERVICES)}`, pick: (c) => c.consul?.transport, want: undefined, warning: /:3: 'consul\.transport\.max_idle_conns' has no effect: Node's HTTP agent limits idle sockets per host only/ },
  { name: "syslog { facility = … } (implicitly on)", hcl: `syslog {\n  facility = "LOCAL5"\n  name = "cts-x"\n}\n${PROVIDER}${task(SERVICES)}`, pick: (c) => c.syslog, want: { enabled: true, facility: "LOCAL5", name: "cts-x" } },
  { name: "syslog { enabled = true }", hcl: `syslog {\n  enabled = true\n}\n${PROVIDER}${task(SERVICES)}`, pick: (c) => c.syslog, want: { enabled: true } },
  { name: "syslog {} (off: nothing set)", hcl: `syslog {}\n${PROVIDER}${task(SERVICES)}`, pick: (c) => c.syslog, want: undefined },
  { name: "consul { auth { username password } } (implicitly on)", hcl: `consul {\n  auth {\n    username = "cts"\n    password = "pw"\n  }\n}\n${PROVIDER}${task(SERVICES)}`, pick: (c) => c.consul?.auth, want: { username: "cts", password: "pw" } },
  { name: "consul { auth { enabled = false } } with credentials: off", hcl: `consul {\n  auth {\n    enabled = false\n    username = "cts"\n    password = "pw"\n  }\n}\n${PROVIDER}${task(SERVICES)}`, pick: (c) => c.consul?.auth, want: undefined },
  { name: "consul { tls { ca_path = … } }", hcl: `consul {\n  tls {\n    ca_path = "/etc/consul/cas"\n  }\n}\n${PROVIDER}${task(SERVICES)}`, pick: (c) => c.consul?.tls, want: { enabled: true, caPath: "/etc/consul/cas" } },
  { name: "tls { ca_path = … } for the API", hcl: `tls {\n  enabled = true\n  cert = "/c.pem"\n  key = "/k.pem"\n  verify_incoming = true\n  ca_path = "/etc/cts/cas"\n}\n${PROVIDER}${task(SERVICES)}`, pick: (c) => c.api?.tls, want: { certFile: "/c.pem", keyFile: "/k.pem", caPath: "/etc/cts/cas", verifyIncoming: true } },
];

// mapstructure's weak typing (CTS decodes with WeaklyTypedInput).
CASES.push(
  { name: "keys in another case (LOG_LEVEL, Consul { Address })", hcl: `LOG_LEVEL = "debug"\nConsul {\n  Address = "10.0.0.2:8500"\n}\n${PROVIDER}${task(SERVICES)}`, pick: (c) => c.consul?.address, want: "10.0.0.2:8500" },
  { name: "enabled = \"false\" (a string for a bool)", hcl: PROVIDER + task(SERVICES, '  module = "./m"\n  enabled = "false"\n'), pick: (c) => c.tasks[0]!.enabled, want: false },
  { name: "recurse = 1 (a number for a bool)", hcl: PROVIDER + task('  condition "consul-kv" {\n    path = "a"\n    recurse = 1\n  }'), pick: (c) => (c.tasks[0]!.condition as any).query.recurse, want: true },
  { name: "port = \"8600\" (a string for a number)", hcl: `port = "8600"\n${PROVIDER}${task(SERVICES)}`, pick: (c) => c.api?.port, want: 8600 },
  { name: "id = 7 (a number for a string)", hcl: `id = 7\n${PROVIDER}${task(SERVICES)}`, pick: (c) => c.id, want: "7" },
  { name: "providers = \"local\" (one value for a list)", hcl: PROVIDER + 'task {\n  name = "t"\n  module = "./m"\n  providers = "local"\n' + SERVICES + "\n}\n", pick: (c) => (c.tasks[0] as any).providers.map((p: { name: string }) => p.name), want: ["local"] },
  { name: "names = \"web\" (one value for a list)", hcl: PROVIDER + task('  condition "services" {\n    names = "web"\n  }'), pick: (c) => (c.tasks[0]!.condition as any).query.names, want: ["web"] },
);

// HCL 1 strings (hashicorp/hcl v1, which CTS reads its config with): `${…}` and `%{…}` are text, kept
// as written (no escape decoded inside `${…}`, `$${` stays `$${`); escapes are Go's; heredocs are text.
const desc = (c: CtsConfig) => c.tasks[0]!.description;
const withDesc = (d: string) => PROVIDER + task(SERVICES, `  module = "./m"\n  description = ${d}\n`);
CASES.push(
  { name: 'description = "${…} %{…}" (HCL 1: text as written)', hcl: withDesc('"deploy ${var.x} %{ if y }z%{ endif }"'), pick: desc, want: "deploy ${var.x} %{ if y }z%{ endif }" },
  { name: 'description = "$${x} %%{y}" (HCL 1 has no $$ escape: both stay)', hcl: withDesc('"$${x} %%{y} $$${z}"'), pick: desc, want: "$${x} %%{y} $$${z}" },
  { name: 'description with a quote and escapes inside ${…} (copied as written)', hcl: withDesc('"a ${lookup("k", "\\t")} \\"b\\""'), pick: desc, want: 'a ${lookup("k", "\\t")} "b"' },
  { name: "description with Go's escapes (\\x41 \\101 \\a \\v \\U0001F600)", hcl: withDesc('"\\x41\\101\\a\\v\\U0001F600"'), pick: desc, want: "AA\x07\v\u{1F600}" },
  { name: "description = <<EOF heredoc with ${…} and \\n (text as written)", hcl: withDesc("<<EOF\nline ${x} $${y} \\n %{z}\nEOF"), pick: desc, want: "line ${x} $${y} \\n %{z}\n" },
  { name: "description = <<-EOF heredoc: the end marker's indentation removed", hcl: withDesc("<<-EOF\n    one ${x}\n      two\n    EOF"), pick: desc, want: "one ${x}\n  two\n" },
  { name: "description = <<-EOF heredoc with a line less indented than its end marker: kept as written", hcl: withDesc("<<-EOF\n    one\n  two\n    EOF"), pick: desc, want: "    one\n  two\n" },
  { name: 'condition "services" filter with ${…} (HCL 1: text)', hcl: PROVIDER + task('  condition "services" {\n    names = ["web"]\n    filter = "Service.Meta.v == \\"${x}\\""\n  }'), pick: (c) => (c.tasks[0]!.condition as any).query.filter, want: 'Service.Meta.v == "${x}"' },
  { name: 'condition "consul-kv" path with ${…} and %{…} (HCL 1: text)', hcl: PROVIDER + task('  condition "consul-kv" {\n    path = "app/${env}/%{x}"\n  }'), pick: (c) => (c.tasks[0]!.condition as any).query.path, want: "app/${env}/%{x}" },
  { name: "terraform_provider attribute with ${…}, $${…} and %{…} (HCL 1: text)", hcl: `terraform_provider "local" {\n  token = "\${x} $\${y} %{z}"\n  nested = { a = ["\${b}"] }\n}\n${task(SERVICES)}`, pick: (c) => (c.tasks[0] as any).providers[0].config, want: { token: "${x} $${y} %{z}", nested: { a: ["${b}"] } } },
  { name: "task_env value with ${…} (HCL 1: text)", hcl: `terraform_provider "local" {\n  task_env { "HOME_DIR" = "\${HOME}/x" }\n}\n${task(SERVICES)}`, pick: (c) => (c.tasks[0] as any).providers[0].taskEnv, want: { HOME_DIR: "${HOME}/x" } },
);

const REFUSED: Array<{ name: string; hcl: string; error: RegExp }> = [
  { name: "a services list and condition \"services\" together", hcl: PROVIDER + task(`  services = ["api"]\n${SERVICES}`), error: /:6: task 't': the 'services' list and condition "services" both watch services/ },
  { name: "a services list and module_input \"services\" together", hcl: PROVIDER + task('  services = ["api"]\n  condition "schedule" {\n    cron = "* * * * *"\n  }\n  module_input "services" {\n    names = ["db"]\n  }'), error: /the 'services' list and module_input "services" both provide services/ },
  { name: "a check address without a scheme", hcl: `consul {\n  service_registration {\n    default_check {\n      address = "cts:8558"\n    }\n  }\n}\n${PROVIDER}${task(SERVICES)}`, error: /:4: service_registration\.default_check\.address 'cts:8558' uses cts:; the check needs http:\/\/ or https:\/\/\./ },
  { name: "a transport duration that is not one", hcl: `consul {\n  transport {\n    dial_timeout = "soon"\n  }\n}\n${PROVIDER}${task(SERVICES)}`, error: /:3: consul\.transport\.dial_timeout 'soon' is not a duration/ },
  { name: "a bool that Go cannot parse", hcl: `syslog {\n  enabled = "yes"\n}\n${PROVIDER}${task(SERVICES)}`, error: /:2: 'syslog\.enabled' 'yes' is not a boolean\. Write true or false\./ },
  { name: "an unknown syslog facility", hcl: `syslog {\n  facility = "LOCAL8"\n}\n${PROVIDER}${task(SERVICES)}`, error: /:2: syslog facility 'LOCAL8' is not known/ },
  { name: "an escape HCL 1 does not have (\\q)", hcl: withDesc('"a\\qb"'), error: /:5: '\\q' is not an escape in a string\. CTS config files are HCL 1, whose escapes are/ },
  { name: "a bad value after a ${…} that spans lines (its line number stays)", hcl: `${withDesc('"a ${b\n}"')}syslog {\n  enabled = "yes"\n}\n`, error: /:13: 'syslog\.enabled' 'yes' is not a boolean/ },
  { name: "a map key written twice (attribute and block)", hcl: PROVIDER + task('  condition "services" {\n    names = ["web"]\n    cts_user_defined_meta = { a = "1" }\n    cts_user_defined_meta {\n      b = "2"\n    }\n  }'), error: /:9: 'task\.condition\.cts_user_defined_meta' is set twice/ },
];

describe("every spelling CTS accepts loads with CTS's meaning", () => {
  let tmp: { dir: string; cleanup(): Promise<void> };
  let n = 0;
  const load = async (hcl: string) => {
    const file = join(tmp.dir, `c${n++}.hcl`);
    await writeFile(file, hcl);
    return readCtsConfig([file], tmp.dir);
  };
  before(async () => {
    tmp = await tempDir("cts-forms-");
  });
  after(async () => {
    await tmp?.cleanup();
  });

  for (const c of CASES)
    it(c.name, async () => {
      const r = await load(c.hcl);
      assert.deepEqual(plain(c.pick(r.config) ?? null), plain(c.want ?? null));
      if (c.warning) assert.ok(r.warnings.some((w) => c.warning!.test(w)), `no warning like ${c.warning} in:\n${r.warnings.join("\n")}`);
      else assert.deepEqual(r.warnings, []);
    });

  for (const c of REFUSED)
    it(`refuses ${c.name}, naming the line`, async () => {
      await assert.rejects(load(c.hcl), (e: any) => e.code === "CONFIG_INVALID" && c.error.test(e.message));
    });

  it("keeps HCL 2 strings in task files: a ${ there is refused with the fix", async () => {
    const text = 'task {\n  name = "t"\n  module = "./m"\n  description = "deploy ${var.x}"\n}\n';
    await assert.rejects(taskFromHcl(text, "t.hcl"), (e: any) => e.code === "TASK_FILE_INVALID" && /^t\.hcl:4:\d+: '\$\{' starts a template, which task files do not support\. Write '\$\$\{'/.test(e.message));
  });
});

describe("a ${…} in a CTS config reaches Terraform as text, never as an expression (as CTS's escaped HCL)", () => {
  it("keeps the provider value literal in TF_VAR_<provider> and a variable file's value literal in main.tf.json", async () => {
    const tmp = await tempDir("cts-forms-tf-");
    try {
      // variable_files are HCL 2 (.tfvars), where `$${` is the literal spelling.
      await writeFile(join(tmp.dir, "v.tfvars"), 'greeting = "hi $${name} %%{x}"\n');
      const file = join(tmp.dir, "c.hcl");
      const hcl = `terraform_provider "local" {\n  token = "\${x} $\${y} %{z}"\n  task_env { "T" = "\${HOME}" }\n}\n${task(SERVICES, `  module = "./m"\n  description = "\${d}"\n  variable_files = ["${join(tmp.dir, "v.tfvars")}"]\n`)}`;
      await writeFile(file, hcl);
      const t = (await readCtsConfig([file], tmp.dir)).config.tasks[0] as ModuleTask;
      const result = Testing.synthTaskResult(t, { services: [] });
      const out = JSON.parse(result.json);
      // Terraform reads `$${` as a literal `${` (and `$$${` as `$${`): the module gets the text.
      assert.equal(out.module.t.greeting, "hi $${name} %%{x}");
      assert.deepEqual(out.provider.local, [{ token: "${var.local.token}" }]);
      assert.doesNotMatch(result.json, /\$\{(x|y|z|d|HOME)\}/);
      assert.deepEqual(t.environment(), { TF_VAR_local: '{"token" = "$${x} $$${y} %%{z}"}', T: "${HOME}" });
    } finally {
      await tmp.cleanup();
    }
  });
});

describe("the TypeScript config's consul.auth", () => {
  it("names a missing user name or a password that is not a string", () => {
    assert.deepEqual(consulAuthProblems({ username: "cts", password: "pw" }), []);
    assert.deepEqual(consulAuthProblems({ password: "pw" }).map((p) => p.field), ["consul.auth.username"]);
    assert.deepEqual(consulAuthProblems({ username: "cts", password: 7 }).map((p) => p.field), ["consul.auth.password"]);
  });
});

describe("the TypeScript config's serviceRegistration and transport", () => {
  it("names each bad field and the fix", () => {
    assert.deepEqual(serviceRegistrationProblems({ serviceName: "", defaultCheck: { address: "ftp://x" } }), [
      { field: "consul.serviceRegistration.serviceName", message: "must be a non-empty string." },
      { field: "consul.serviceRegistration.defaultCheck.address", message: "'ftp://x' uses ftp:; the check needs http:// or https://." },
    ]);
    assert.deepEqual(consulTransportProblems({ keepAlive: 1 as unknown as boolean, maxSockets: 3 } as never), [
      { field: "consul.transport.keepAlive", message: "must be true or false." },
      { field: "consul.transport.maxSockets", message: "is not a setting. Use keepAliveMsecs, connectTimeoutMs, keepAlive, freeSocketTimeoutMs, maxFreeSockets, tlsHandshakeTimeoutMs." },
    ]);
  });
});
