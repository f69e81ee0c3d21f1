import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createController } from "../../src/daemon/compose.ts";
import { createLogger } from "../../src/log/logger.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import { services } from "../../src/task/conditions.ts";
import { ModuleTask } from "../../src/task/module-task.ts";
import { vaultSecret } from "../../src/task/provider-templates.ts";
import type { RunTemplates } from "../../src/runtime/run.ts";
import type { RunResult, TaskWorkspace } from "../../src/terraform/types.ts";
import { fakeWatcher } from "../support/fake-watcher.ts";

/** Template values the test sets by hand (the runtime's RunTemplates interface). */
function fakeTemplates() {
  const secrets = new Map<string, Record<string, unknown>>([["secret/data/db", { data: { pw: "first-password" }, metadata: { version: 1 } }]]);
  const subscribers: Array<() => void> = [];
  const store: RunTemplates = {
    ensure: async () => {},
    digest: (deps) => JSON.stringify([...deps].map((d) => ("secret" in d ? secrets.get(d.secret) : null))),
    subscribe: (_deps, onChange) => {
      subscribers.push(onChange);
      return () => subscribers.splice(subscribers.indexOf(onChange), 1);
    },
    secret: (path) => secrets.get(path)!,
    consulKey: () => undefined,
  };
  return {
    store,
    subscribers,
    /** The secret rotated: a new value, and the subscribers told (as the store's refresh does). */
    rotate(pw: string) {
      secrets.set("secret/data/db", { data: { pw }, metadata: { version: 2 } });
      for (const s of [...subscribers]) s();
    },
  };
}

function setup() {
  const task = new ModuleTask({
    name: "db",
    condition: services({ names: ["web"] }),
    module: "./m",
    bufferPeriod: false,
    providers: [{ name: "pg", taskEnv: { PGPASSWORD: vaultSecret("secret/data/db", "pw") } }],
  });
  const w = fakeWatcher();
  const templates = fakeTemplates();
  const envs: Array<Record<string, string>> = [];
  const ok: RunResult = { changesPresent: true, summary: { add: 0, change: 1, destroy: 0 }, output: "" };
  const controller = createController({
    loaded: { config: { tasks: [task] }, file: "/x/cts.config.ts", dir: "/x" },
    reader: { read: async () => [] as never },
    driver: {
      taskDir: (t: string) => `/nonexistent/${t}`,
      async apply(ws: TaskWorkspace) {
        envs.push(ws.env ?? {});
        return ok;
      },
      plan: async () => ok,
      destroy: async () => ok,
    },
    synthesizer: inProcessSynthesizer(() => task),
    log: createLogger({ write: () => {} }),
    watcher: w.watcher,
    retries: 0,
    templates: templates.store,
  });
  return { controller, w, templates, envs };
}

describe("a task whose provider reads a Vault secret", () => {
  it("gets the value in its Terraform environment only, re-runs when the value changes, and skips a run when it did not", async () => {
    const { controller, w, templates, envs } = setup();
    w.set([{ id: "a" }], false);
    await controller.watch();
    await controller.idle();
    assert.equal(envs.length, 1);
    assert.equal(envs[0]!.PGPASSWORD, "first-password");
    assert.equal(templates.subscribers.length, 1, "the task's triggers follow the secret");

    // Same data, same secret: the JSON and the values are the same, no Terraform.
    w.set([{ id: "a" }]);
    await controller.idle();
    assert.equal(envs.length, 1);

    // The secret rotated: the same JSON, yet the task applies with the new value.
    templates.rotate("second-password");
    await controller.idle();
    assert.equal(envs.length, 2);
    assert.equal(envs[1]!.PGPASSWORD, "second-password");
    await controller.stop(100);
    assert.equal(templates.subscribers.length, 0, "stopping ends the task's hold on the secret");
  });
});
