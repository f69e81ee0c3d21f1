import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { loadDaemonConfig } from "../../src/synth/daemon-config.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import { loadConfig } from "../../src/config/load.ts";
import { DeclaredTask } from "../../src/task/declaration.ts";
import { ModuleTask } from "../../src/task/module-task.ts";
import type { TaskRef } from "../../src/synth/task-ref.ts";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { redact, redactSecret } from "../../src/log/logger.ts";
import { REDACTED } from "../../src/secrets/redactor.ts";
import { deferred } from "../support/waits.ts";
import { encodings, secretArbitrary, wellFormed } from "../fixtures/secret-encodings.ts";

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/configs/${name}`, import.meta.url));
const loadedHere = () => Object.keys(createRequire(import.meta.url).cache);
const instance = (id: string) => ({ id, name: "web", address: "10.0.0.1", port: 80, tags: [], meta: {}, node: "n1", nodeAddress: "10.0.0.1", datacenter: "dc1", namespace: "", partition: "", status: "passing", nodeMeta: {}, serviceTaggedAddresses: {}, kind: "" });

describe("a daemon's config", () => {
  it("is evaluated in the synthesis worker: the main thread gets plain declarations and never loads cdktf or provider bindings", async () => {
    const { loaded, synthesizer } = await loadDaemonConfig(fixture("valid.ts"));
    try {
      assert.deepEqual(loaded.config.tasks.map((t) => [t.name, t.constructor.name]), [["members", "MemberList"], ["api-members", "MemberList"]]);
      assert.ok(loaded.config.tasks.every((t) => t instanceof DeclaredTask), "task classes are stand-ins on the main thread");
      assert.deepEqual(loaded.config.bufferPeriod, { min: "1s", max: "4s" });
      assert.equal(synthesizer.running(), true, "the worker that loaded the config stays for the first synthesis");
      const ref: TaskRef = { kind: "config", configFile: loaded.file, name: "members" };
      const result = await synthesizer.synth(ref, { services: [instance("web-1")] } as never, {});
      assert.match(result.json, /10\.0\.0\.1:80/);
      const leaked = loadedHere().filter((f) => /[\\/](cdktf|@cdktf[\\/]provider-[^\\/]+|constructs)[\\/]/.test(f));
      assert.deepEqual(leaked, [], "cdktf, constructs and provider bindings stay in the worker");
    } finally {
      await synthesizer.close();
    }
  });

  it("with module tasks only, ends the worker at once and builds their root modules on the main thread", async () => {
    const { loaded, synthesizer } = await loadDaemonConfig(fixture("modules-only.ts"));
    try {
      assert.equal(synthesizer.running(), false);
      const [task] = loaded.config.tasks;
      assert.ok(task instanceof ModuleTask);
      const ref: TaskRef = { kind: "config", configFile: loaded.file, name: "echo", module: { name: "echo", module: "../../../modules/cts-echo", condition: task.condition, variables: { greeting: "hi" } } };
      const ours = await synthesizer.synth(ref, { services: [instance("web-1")] } as never, { configDir: loaded.dir });
      assert.equal(synthesizer.running(), false, "a module task never starts the worker");
      const full = await loadConfig(fixture("modules-only.ts"));
      const theirs = await inProcessSynthesizer((n) => full.config.tasks.find((t) => t.name === n)).synth(ref, { services: [instance("web-1")] } as never, { configDir: full.dir });
      assert.equal(ours.json, theirs.json, "the same root module as from the config's own ModuleTask");
    } finally {
      await synthesizer.close();
    }
  });

  it("that does not validate fails with the file and every problem, and leaves no worker running", async () => {
    await assert.rejects(loadDaemonConfig(fixture("bad.ts")), (err: Error & { code?: string }) => {
      assert.equal(err.code, "CONFIG_INVALID");
      assert.match(err.message, /bad\.ts/);
      assert.match(err.message, /consul\.address/);
      return true;
    });
  });

  it("refuses a setting that is not plain data, naming it", async () => {
    await assert.rejects(loadDaemonConfig(fixture("function-setting.ts")), (err: Error & { code?: string }) => {
      assert.equal(err.code, "CONFIG_INVALID");
      assert.match(err.message, /function-setting\.ts: 'consul' holds a value that is not plain data/);
      return true;
    });
  });

  it("from CTS files hands the {{ env }} values it read to the main thread before it resolves: every log line redacts them", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-env-secrets-"));
    // As the environment holds them: no NUL, and a lone surrogate became U+FFFD.
    const secrets = fc.sample(secretArbitrary({ noNul: true }).map(wellFormed), { numRuns: 5 }).map((s, i) => `${i}-${process.pid}-${s}`);
    // A value that ends in whitespace (a seed that once failed: its trailing space went with it).
    secrets.push(`5-${process.pid}-ends-in-space\b2 `);
    const names = secrets.map((_, i) => `CTS_TEST_ENV_SECRET_${process.pid}_${i}`);
    try {
      secrets.forEach((s, i) => (process.env[names[i]!] = s));
      const file = join(dir, "cts.hcl");
      await writeFile(
        file,
        `consul {
  address = "127.0.0.1:8500"
}
terraform_provider "local" {
${names.slice(0, 3).map((n, i) => `  key_${i} = "{{ env \\"${n}\\" }}"`).join("\n")}
  task_env {
${names.slice(3).map((n, i) => `    VAR_${i} = "prefix-{{ env \\"${n}\\" }}"`).join("\n")}
  }
}
task {
  name      = "echo"
  module    = "${fileURLToPath(new URL("../../modules/cts-echo", import.meta.url))}"
  providers = ["local"]
  condition "services" {
    names = ["web"]
  }
}
`,
      );
      const { synthesizer } = await loadDaemonConfig(file);
      await synthesizer.close();
      for (const s of secrets) {
        for (const [name, form] of Object.entries(encodings(s))) {
          // A secret that ends in whitespace is redacted with it: "x <secret> y" may become "x [redacted]y".
          const out = redact(`x ${form} y`);
          assert.match(out, new RegExp(`^x ${REDACTED.replace(/[[\]]/g, "\\$&")} ?y$`), `${name} of ${JSON.stringify(s)}: ${JSON.stringify(out)}`);
        }
      }
    } finally {
      for (const n of names) delete process.env[n];
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("from CTS files hands {{ with secret }} and {{ key }} templates to the main thread as templates: nothing is read while loading", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-vault-templates-"));
    try {
      const file = join(dir, "cts.hcl");
      await writeFile(
        file,
        `vault {
  address = "http://127.0.0.1:1"
}
terraform_provider "local" {
  token = "{{ with secret \\"secret/data/db\\" }}{{ .Data.data.pw }}{{ end }}"
  task_env {
    COLOR = "{{ key \\"cfg/color\\" }}"
  }
}
task {
  name      = "echo"
  module    = "${fileURLToPath(new URL("../../modules/cts-echo", import.meta.url))}"
  providers = ["local"]
  condition "services" {
    names = ["web"]
  }
}
`,
      );
      const { loaded, synthesizer } = await loadDaemonConfig(file);
      await synthesizer.close();
      const task = loaded.config.tasks[0] as unknown as ModuleTask;
      assert.deepEqual(task.providers[0]!.config, { token: { ctsTemplate: [{ secret: "secret/data/db", field: ["data", "pw"] }] } });
      assert.deepEqual(task.providers[0]!.taskEnv, { COLOR: { ctsTemplate: [{ consulKey: "cfg/color" }] } });
      assert.equal(loaded.config.vault?.address, "http://127.0.0.1:1");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("hands the main thread's secrets to the worker, before and after it started: a task's own output is redacted", async () => {
    const before = `main-thread-secret-${process.pid}-<&>"`;
    const later = `registered-later-${process.pid}-\u2028`;
    process.env.CTS_TEST_CHATTY = before;
    process.env.CTS_TEST_CHATTY_LATER = later;
    redactSecret(before);
    const out: string[] = [];
    // Resolved by the capture below once the worker's last lines reached this thread.
    const printed = deferred();
    const seen = (chunk: unknown) => {
      out.push(String(chunk));
      if (out.join("").includes("chatty done") && out.join("").includes("stderr CTS_TEST_CHATTY_LATER")) printed.resolve();
      return true;
    };
    const writes = [process.stdout.write, process.stderr.write] as const;
    // The worker's stdout and stderr are piped into the main thread's streams (which the test
    // runner reports through too: everything else goes on).
    const capture = (write: (typeof writes)[number], stream: NodeJS.WriteStream) =>
      ((chunk: unknown, ...rest: unknown[]) => (String(chunk).includes("chatty") ? seen(chunk) : (write as (...a: unknown[]) => boolean).call(stream, chunk, ...rest))) as typeof process.stdout.write;
    process.stdout.write = capture(writes[0], process.stdout);
    process.stderr.write = capture(writes[1], process.stderr);
    const { loaded, synthesizer } = await loadDaemonConfig(fixture("chatty.ts"));
    try {
      redactSecret(later);
      await synthesizer.synth({ kind: "config", configFile: loaded.file, name: "chatty" }, { services: [] } as never, {});
      await printed.promise;
    } finally {
      process.stdout.write = writes[0];
      process.stderr.write = writes[1];
      await synthesizer.close();
      delete process.env.CTS_TEST_CHATTY;
      delete process.env.CTS_TEST_CHATTY_LATER;
    }
    const text = out.join("");
    assert.match(text, /chatty CTS_TEST_CHATTY=\[redacted\]/);
    assert.match(text, /chatty CTS_TEST_CHATTY_LATER=\[redacted\]/);
    assert.match(text, /chatty stderr CTS_TEST_CHATTY_LATER=\[redacted\]/);
    assert.ok(!text.includes(before) && !text.includes(later), text);
  });
});
