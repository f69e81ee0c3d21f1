import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import type { z } from "zod";
import { catalogServices, configEntries, consulKv, intentions, ModuleTask, nodes, schedule, services, Task } from "../../src/task/checked.ts";
import { defineConfig } from "../../src/config/define-config.ts";
import { Testing } from "../../src/index.ts";
import { testInputSchema } from "../../src/testing.ts";
import { TEST_INPUT_ITEM_SCHEMAS } from "../../src/synth/test-input-schema.ts";
import { loadConfig } from "../../src/config/load.ts";
import { parseTask } from "../../src/api/task-request.ts";
import { parsePatchBody } from "../../src/api/task-patch.ts";
import { CtsError } from "../../src/errors/cts-error.ts";
import { suggestKey } from "../../src/errors/unknown-options.ts";
import { TASK_OPTION_SCHEMAS } from "../../src/task/option-schemas.ts";
import { CONFIG_OPTION_SCHEMAS } from "../../src/config/option-schemas.ts";
import { taskFromDeclaration } from "../../src/task/declaration.ts";
import { PUBLIC_API } from "../support/cts.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const THIS_FILE = relative(process.cwd(), fileURLToPath(import.meta.url));
const SOURCE = readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n");

/** `file:line:column` of the first `marker` in this file, as the error names it. */
function here(marker: string): string {
  const line = SOURCE.findIndex((l) => l.includes(marker));
  return `${THIS_FILE}:${line + 1}:${SOURCE[line]!.indexOf(marker) + 1}`;
}

/** The OPTION_UNKNOWN error `fn` throws. */
function unknownOption(fn: () => unknown): CtsError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof CtsError, String(err));
    assert.equal(err.code, "OPTION_UNKNOWN", err.message);
    return err;
  }
  assert.fail("the options were accepted");
}

class AnyTask extends Task {
  constructor(options: object) {
    super(options as never);
  }
  synthesize(): void {}
}

const named = { name: "t", condition: { kind: "services", query: { names: ["web"] } } };

describe("an option key a factory, a task or the config does not take is refused", () => {
  it("services() with `fitler` fails with OPTION_UNKNOWN, the line of the key, and `filter` as the key meant", () => {
    const err = unknownOption(() =>
      services({
        names: ["web", "api"],
        // @ts-expect-error the typo under test
        fitler: 'Service.Tags contains "prod"',
      }),
    );
    assert.equal(err.exitCode, 2);
    assert.equal(err.detail.at, here("fitler: 'Service"));
    assert.match(err.message, /^services\(\): 'fitler' is not an option \(at .*\)\. Did you mean 'filter'\? services\(\) takes names, regexp, .*filter/);
    assert.deepEqual(err.detail.options, [{ field: "fitler", at: here("fitler: 'Service"), suggestion: "filter" }]);
  });

  it("a task's nested options (guards, bufferPeriod) are checked at `super()`, each unknown key named with its path and line", () => {
    class Guarded extends Task {
      constructor() {
        super({
          name: "guarded",
          condition: services({ names: ["web"] }),
          // @ts-expect-error the typo under test
          guards: { maxDestory: 1 },
          // @ts-expect-error the typo under test
          bufferPeriod: { mn: "1s" },
        });
      }
      synthesize(): void {}
    }
    const err = unknownOption(() => new Guarded());
    assert.match(err.message, /Task 'guarded' \(class Guarded\): 'guards\.maxDestory' is not an option \(at [^)]*\)\. Did you mean 'guards\.maxDestroy'\? guards takes maxDestroy, maxDestroyPercent, neverEmpty, check\./);
    assert.match(err.message, /'bufferPeriod\.mn' is not an option .* Did you mean 'bufferPeriod\.min'\?/);
    const fields = (err.detail.options as Array<{ field: string; at: string }>).map((o) => [o.field, o.at]);
    assert.deepEqual(fields.sort(), [["bufferPeriod.mn", here('mn: "1s"')], ["guards.maxDestory", here("maxDestory: 1")]].sort());
    assert.ok(String((err.detail.userStack as string[])[0]).startsWith(`new Guarded (${THIS_FILE}:`), String(err.detail.userStack));
  });

  it("a condition written by hand, without its factory, is checked by the task", () => {
    const err = unknownOption(() => new AnyTask({ name: "t", condition: { kind: "consul-kv", query: { path: "a", recurce: true } } }));
    assert.match(err.message, /'condition\.query\.recurce' is not an option .*Did you mean 'condition\.query\.recurse'\?/);
  });

  it("ModuleTask's options and its providers are checked, snake_case keys pointed at their camelCase spelling", () => {
    assert.match(unknownOption(() => new ModuleTask({ ...named, modul: "./m" } as never)).message, /'modul' is not an option .*Did you mean 'module'\?/);
    const err = unknownOption(() => new ModuleTask({ ...named, module: "./m", use_as_module_input: false } as never));
    assert.match(err.message, /Did you mean 'useAsModuleInput'\?/);
    assert.match(unknownOption(() => new ModuleTask({ ...named, module: "./m", providers: [{ name: "local", task_env: {} }] } as never)).message, /'providers\[0\]\.task_env' is not an option .*Did you mean 'providers\[0\]\.taskEnv'\?/);
  });

  it("defineConfig() checks every nested object (consul.tls, driver.terraform …)", () => {
    const err = unknownOption(() => defineConfig({ tasks: [], consul: { tls: { caFil: "/ca.pem" } }, driver: { terraform: { workingdir: "x" } } } as never));
    assert.match(err.message, /defineConfig\(\): 'consul\.tls\.caFil' is not an option .*Did you mean 'consul\.tls\.caFile'\? consul\.tls takes enabled, caFile/);
    assert.match(err.message, /'driver\.terraform\.workingdir' is not an option .*Did you mean 'driver\.terraform\.workingDir'\?/);
  });

  it("a key with no near known key is refused without a guess", () => {
    const err = unknownOption(() => services({ names: ["web"], colourScheme: "dark" } as never));
    assert.doesNotMatch(err.message, /Did you mean/);
    assert.deepEqual(err.detail.options, [{ field: "colourScheme", at: here('colourScheme: "dark"') }]);
  });

  it("an own `__proto__` key is refused like any other", () => {
    const options = JSON.parse('{"names":["web"],"__proto__":{"filter":"x"}}') as object;
    assert.match(unknownOption(() => services(options as never)).message, /'__proto__' is not an option/);
  });

  it("Testing meets the error when the test builds the task", () => {
    class Typo extends Task {
      constructor() {
        super({ name: "typo", condition: services({ names: ["web"], passing_only: false } as never) });
      }
      synthesize(): void {}
    }
    const err = unknownOption(() => Testing.synthTask(new Typo(), { services: [{ name: "web" }] }));
    assert.match(err.message, /Did you mean 'passingOnly'\?/);
  });

  it("Testing refuses a misspelt field of its input (an instance's `tag` would test an untagged instance)", () => {
    class Prod extends Task {
      constructor() {
        super({ name: "prod", condition: services({ names: ["web"], filter: 'Service.Tags contains "prod"' }) });
      }
      synthesize(): void {}
    }
    const err = unknownOption(() =>
      Testing.taskInput(new Prod(), {
        services: [
          // @ts-expect-error the typo under test
          { name: "web", tag: ["prod"] },
        ],
      }),
    );
    assert.match(err.message, /^Testing's input: 'services\[0\]\.tag' is not an option \(at [^)]*\)\. Did you mean 'services\[0\]\.tags'\?/);
    assert.equal(err.detail.at, here('tag: ["prod"]'));
  });

  it("cts's own rebuilds from checked data (the daemon's main thread) take the data as it is", () => {
    const task = taskFromDeclaration({ kind: "module", spec: { ...named, module: "./m", fileVariables: { a: 1 } } as never });
    assert.deepEqual((task as { fileVariables?: unknown }).fileVariables, { a: 1 });
  });

  it("the daemon's main thread (its modules, the task rebuilds) never loads zod: only the public entry and the config loader's check do", async () => {
    const hook = `export async function resolve(s, c, next) { const r = await next(s, c); if (r.url.includes("/zod/")) process._rawDebug("zod loaded"); return r; }`;
    const main = `import { register } from "node:module"; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});
await import("./src/cli/run.ts"); await import("./src/daemon/compose.ts"); await import("./src/config/load.ts");
const { taskFromDeclaration } = await import("./src/task/declaration.ts");
taskFromDeclaration({ kind: "class", className: "WebPool", options: { name: "web", condition: { kind: "services", query: { names: ["web"] } } } });
process._rawDebug("main thread done"); await import("./src/index.ts");`;
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ["--conditions=cts-source", "--import", "tsx", "--input-type=module", "-e", main], { cwd: ROOT, timeout: 120_000 }, (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(`${stdout}${stderr}`),
      ),
    );
    assert.match(out, /main thread done\n(.|\n)*zod loaded/, out);
    assert.doesNotMatch(out.slice(0, out.indexOf("main thread done")), /zod loaded/, out);
  });

  it("`instanceof` the public Task and ModuleTask holds for tasks cts builds from checked data; a subclass keeps the usual test", () => {
    const rebuilt = taskFromDeclaration({ kind: "module", spec: { ...named, module: "./m" } as never });
    assert.ok(rebuilt instanceof ModuleTask && rebuilt instanceof Task);
    const declared = taskFromDeclaration({ kind: "class", className: "WebPool", options: named as never });
    assert.ok(declared instanceof Task && !(declared instanceof ModuleTask) && !(declared instanceof AnyTask));
    assert.ok(new AnyTask(named) instanceof AnyTask && new AnyTask(named) instanceof Task);
  });

  it("a config exported without defineConfig() is checked when it loads, naming the key's line in the config file", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-strict-"));
    try {
      const file = join(dir, "cts.config.ts");
      await writeFile(file, `import { services } from ${JSON.stringify(PUBLIC_API)};\nvoid services;\nexport default {\n  tasks: [],\n  consul: { adress: "127.0.0.1:8500" },\n};\n`);
      await assert.rejects(loadConfig(file), (err: CtsError) => {
        assert.equal(err.code, "OPTION_UNKNOWN");
        assert.equal(err.detail.at, `${file}:5:13`);
        assert.match(err.message, /'consul\.adress' is not an option .*Did you mean 'consul\.address'\?/);
        return true;
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("the API refuses an unknown key of a task with the key meant (400)", () => {
    const task = { name: "t", module: "./m", condition: { services: { names: ["web"], fitler: "x" } } };
    assert.throws(
      () => parseTask(task),
      (err: Error & { status?: number }) => err.status === 400 && /task\.condition\.services\.fitler is not a known field \(did you mean `filter`\?\)/.test(err.message),
    );
  });
});

describe("the API's task changes", () => {
  it("PATCH names the key meant for a misspelt one", () => {
    assert.throws(
      () => parsePatchBody({ enabeld: false }, "web"),
      (err: Error & { status?: number }) => err.status === 400 && /unsupported keys: enabeld \(did you mean `enabled`\?\)\. PATCH takes: enabled,/.test(err.message),
    );
  });
});

describe("suggestKey", () => {
  it("takes the same key up to case, '_' and '-', else the nearest within the edit limit", () => {
    assert.equal(suggestKey("passing_only", ["names", "passingOnly"]), "passingOnly");
    assert.equal(suggestKey("fitler", ["names", "filter"]), "filter");
    assert.equal(suggestKey("colour", ["names", "filter"]), undefined);
    assert.equal(suggestKey("", ["names"]), undefined);
  });
});

// ---- every option type: a random unknown key is refused (a typo with its suggestion); every known key is accepted ----

const cron = "* * * * *";
const inTask = (extra: object) => new AnyTask({ name: "t", condition: schedule({ cron }), ...extra });
const inConfig = (extra: object) => defineConfig({ tasks: [], ...extra } as never);
const testedWith = (input: object) => Testing.taskInput(new AnyTask({ name: "t", condition: schedule({ cron }) }), input as never);

/** How an object of each option type reaches the public entry that checks it, and the keys it needs. */
const REACH: Record<keyof typeof TASK_OPTION_SCHEMAS | keyof typeof CONFIG_OPTION_SCHEMAS | keyof typeof TEST_INPUT_ITEM_SCHEMAS | "TestInput", { base: object; put(o: object): unknown }> = {
  ServicesOptions: { base: { names: ["web"] }, put: (o) => services(o as never) },
  ServicesQuery: { base: { names: ["web"] }, put: (o) => new AnyTask({ name: "t", condition: { kind: "services", query: o } }) },
  ServiceQueryEntry: { base: { name: "web" }, put: (o) => services({ names: ["web"], each: [o as never] }) },
  CountThreshold: { base: { above: 1 }, put: (o) => services({ names: ["web"], trigger: o as never }) },
  CatalogServicesQuery: { base: {}, put: (o) => catalogServices(o as never) },
  KvQuery: { base: { path: "a" }, put: (o) => consulKv(o as never) },
  NodesQuery: { base: {}, put: (o) => nodes(o as never) },
  IntentionsQuery: { base: {}, put: (o) => intentions(o as never) },
  ConfigEntriesQuery: { base: { kind: "service-defaults" }, put: (o) => configEntries(o as never) },
  ScheduleOptions: { base: { cron }, put: (o) => schedule(o as never) },
  ServicesCondition: { base: { kind: "services", query: { names: ["web"] } }, put: (o) => new AnyTask({ name: "t", condition: o }) },
  CatalogServicesCondition: { base: { kind: "catalog-services", query: { regexp: "" } }, put: (o) => new AnyTask({ name: "t", condition: o }) },
  ConsulKvCondition: { base: { kind: "consul-kv", query: { path: "a" } }, put: (o) => new AnyTask({ name: "t", condition: o }) },
  NodesCondition: { base: { kind: "nodes", query: {} }, put: (o) => new AnyTask({ name: "t", condition: o }) },
  IntentionsCondition: { base: { kind: "intentions", query: {} }, put: (o) => new AnyTask({ name: "t", condition: o }) },
  ConfigEntriesCondition: { base: { kind: "config-entries", query: { kind: "service-defaults" } }, put: (o) => new AnyTask({ name: "t", condition: o }) },
  ScheduleCondition: { base: { kind: "schedule", cron }, put: (o) => new AnyTask({ name: "t", condition: o }) },
  TaskInputs: { base: {}, put: (o) => inTask({ inputs: o }) },
  BufferPeriodOption: { base: { min: "1s" }, put: (o) => inTask({ bufferPeriod: o }) },
  DriftCheckOption: { base: { every: "30m" }, put: (o) => inTask({ driftCheck: o }) },
  PlanGuards: { base: { maxDestroy: 1 }, put: (o) => inTask({ guards: o }) },
  TerraformCloudWorkspaceOption: { base: {}, put: (o) => inTask({ terraformCloudWorkspace: o }) },
  SecretSource: { base: { env: "TOKEN" }, put: (o) => inTask({ secrets: { token: o } }) },
  TaskOptions: { base: { name: "t", condition: { kind: "schedule", cron } }, put: (o) => new AnyTask(o) },
  ModuleProvider: { base: { name: "local" }, put: (o) => new ModuleTask({ ...named, module: "./m", providers: [o] } as never) },
  ModuleTaskOptions: { base: { ...named, module: "./m" }, put: (o) => new ModuleTask(o as never) },
  CtsConfig: { base: { tasks: [] }, put: (o) => defineConfig(o as never) },
  ConsulConfig: { base: {}, put: (o) => inConfig({ consul: o }) },
  ConsulTlsConfig: { base: {}, put: (o) => inConfig({ consul: { tls: o } }) },
  ConsulAuth: { base: { username: "u" }, put: (o) => inConfig({ consul: { auth: o } }) },
  ServiceRegistrationConfig: { base: {}, put: (o) => inConfig({ consul: { serviceRegistration: o } }) },
  DefaultCheck: { base: {}, put: (o) => inConfig({ consul: { serviceRegistration: { defaultCheck: o } } }) },
  ConsulTransportConfig: { base: {}, put: (o) => inConfig({ consul: { transport: o } }) },
  SyslogOptions: { base: {}, put: (o) => inConfig({ syslog: o }) },
  VaultConfig: { base: {}, put: (o) => inConfig({ vault: o }) },
  TlsFileSettings: { base: {}, put: (o) => inConfig({ vault: { tls: o } }) },
  DriverConfig: { base: {}, put: (o) => inConfig({ driver: o }) },
  TerraformDriverConfig: { base: {}, put: (o) => inConfig({ driver: { terraform: o } }) },
  CommandTimeouts: { base: {}, put: (o) => inConfig({ driver: { terraform: { commandTimeouts: o } } }) },
  WarmProviders: { base: {}, put: (o) => inConfig({ driver: { terraform: { warmProviders: o } } }) },
  TerraformCloudDriverConfig: { base: {}, put: (o) => inConfig({ driver: { terraformCloud: o } }) },
  TerraformCloudWorkspaces: { base: {}, put: (o) => inConfig({ driver: { terraformCloud: { workspaces: o } } }) },
  RequiredProvider: { base: {}, put: (o) => inConfig({ driver: { terraformCloud: { requiredProviders: { aws: o } } } }) },
  ApiConfig: { base: {}, put: (o) => inConfig({ api: o }) },
  ApiTlsConfig: { base: {}, put: (o) => inConfig({ api: { tls: o } }) },
  HighAvailabilityConfig: { base: {}, put: (o) => inConfig({ highAvailability: o }) },
  HaClusterConfig: { base: { name: "c" }, put: (o) => inConfig({ highAvailability: { cluster: o } }) },
  HaStorageConfig: { base: {}, put: (o) => inConfig({ highAvailability: { cluster: { name: "c", storage: o } } }) },
  HaInstanceConfig: { base: {}, put: (o) => inConfig({ highAvailability: { cluster: { name: "c" }, instance: o } }) },
  RunHistoryOption: { base: {}, put: (o) => inConfig({ history: o }) },
  NotificationsConfig: { base: {}, put: (o) => inConfig({ notifications: o }) },
  WebhookConfig: { base: { url: "https://hooks.example/x" }, put: (o) => inConfig({ notifications: { webhooks: [o] } }) },
  TestInput: { base: {}, put: (o) => testedWith(o) },
  InstanceInput: { base: { name: "web" }, put: (o) => testedWith({ services: [o] }) },
  CheckInput: { base: { status: "passing" }, put: (o) => testedWith({ services: [{ name: "web", checks: [o] }] }) },
  NodeInput: { base: { node: "n1" }, put: (o) => testedWith({ nodes: [o] }) },
  IntentionInput: { base: { sourceName: "a", destinationName: "b" }, put: (o) => testedWith({ intentions: [o] }) },
};

const SCHEMAS: Record<string, z.ZodObject> = { ...TASK_OPTION_SCHEMAS, ...CONFIG_OPTION_SCHEMAS, ...TEST_INPUT_ITEM_SCHEMAS, TestInput: testInputSchema };

/** Edit distance with swaps of neighbours, written out again here so the test does not trust the code it checks. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  return d[a.length]![b.length]!;
}

/** One edit of a key: a letter inserted, deleted, replaced, or two neighbours swapped. */
const typoOf = (keys: readonly string[]) =>
  fc
    .record({ key: fc.constantFrom(...keys), op: fc.constantFrom("insert", "delete", "replace", "swap"), at: fc.nat(), letter: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz_") })
    .map(({ key, op, at, letter }) => {
      const i = at % (key.length + 1);
      const j = Math.min(i, key.length - 1);
      if (op === "insert") return key.slice(0, i) + letter + key.slice(i);
      if (op === "delete") return key.slice(0, j) + key.slice(j + 1);
      if (op === "replace") return key.slice(0, j) + letter + key.slice(j + 1);
      return j + 1 < key.length ? key.slice(0, j) + key[j + 1] + key[j] + key.slice(j + 2) : key + letter;
    })
    .filter((typo) => typo !== "" && !keys.includes(typo));

describe("every option type (property)", () => {
  it("the table reaches every option type there is a schema for", () => {
    assert.deepEqual(Object.keys(REACH).sort(), Object.keys(SCHEMAS).sort());
  });

  for (const [name, { base, put }] of Object.entries(REACH)) {
    const known = Object.keys(SCHEMAS[name]!.shape);
    describe(name, () => {
      it("accepts every known key", () => {
        put(base);
        for (const key of known) put({ ...base, [key]: (base as Record<string, unknown>)[key] });
      });

      it("refuses a random unknown key, naming it and the keys the object takes", () => {
        fc.assert(
          fc.property(
            fc.string({ minLength: 1, maxLength: 24 }).filter((k) => !known.includes(k)),
            (key) => {
              const err = unknownOption(() => put({ ...base, [key]: 1 }));
              const found = (err.detail.options as Array<{ field: string; suggestion?: string }>)[0]!;
              assert.ok(found.field === key || found.field.endsWith(`.${key}`), `${found.field} names ${key}`);
              assert.ok(err.message.includes(`takes ${known.join(", ")}.`), err.message);
              assert.equal(found.suggestion, suggestKey(key, known));
            },
          ),
          { numRuns: 40 },
        );
      });

      it("suggests a known key for a one-edit typo of one", () => {
        fc.assert(
          fc.property(typoOf(known), (typo) => {
            const err = unknownOption(() => put({ ...base, [typo]: 1 }));
            const suggestion = (err.detail.options as Array<{ suggestion?: string }>)[0]!.suggestion;
            assert.ok(suggestion !== undefined && known.includes(suggestion), `${typo}: no suggestion`);
            assert.ok(distance(typo.toLowerCase(), suggestion.toLowerCase()) <= 1, `${typo} → ${suggestion}`);
            assert.ok(err.message.includes(`Did you mean '`), err.message);
          }),
          { numRuns: 40 },
        );
      });
    });
  }
});
