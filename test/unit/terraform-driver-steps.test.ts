import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CtsError } from "../../src/errors/cts-error.ts";
import { LocalDriver, type LocalDriverParts } from "../../src/terraform/driver.ts";
import { failedError } from "../../src/terraform/failures.ts";
import type { ChangeKind } from "../../src/terraform/plan-apply.ts";
import { launchedProviders } from "../../src/terraform/warm-providers.ts";

const NO_CHANGE = { changesPresent: false, summary: { add: 0, change: 0, destroy: 0 }, output: "No changes." };
const needsInit = () => failedError("web", { command: "tofu apply", exitCode: 1, errors: "Error: Backend initialization required", hint: "" });

/**
 * A local driver made of recording parts: each part notes the step it was asked for, and the main
 * command answers with what `answers` gives for its n-th call.
 */
function driverWith(answers: Array<() => Promise<typeof NO_CHANGE>>, extra: Partial<LocalDriverParts> = {}) {
  const steps: string[] = [];
  let calls = 0;
  const op = {
    task: "web",
    dir: "/work/web",
    commandName: (args: string[]) => `tofu ${args.join(" ")}`,
    throwIfAborted: () => steps.push("check cancelled"),
    pause: async () => {},
    dispose: () => steps.push("dispose"),
  };
  const parts = {
    folders: {
      prepare: async () => (steps.push("folder"), op.dir),
      takeOver: async () => void steps.push("take over CTS's files"),
      writeFiles: async () => void steps.push("files"),
    },
    runner: { operation: () => op, env: () => ({}), phase: (_task: string, phase: string, step: () => Promise<unknown>) => (steps.push(`timed ${phase}`), step()) },
    initializer: { ensure: async () => (steps.push("init if needed"), true), again: async () => void steps.push("init again") },
    changes: { run: (kind: ChangeKind) => (steps.push(kind), answers[calls++]!()) },
    providers: launchedProviders,
    waitForLocks: (_op: unknown, step: () => Promise<unknown>) => step(),
    ...extra,
  } as unknown as LocalDriverParts;
  return { driver: new LocalDriver(parts), steps };
}

describe("the local driver's steps", () => {
  it("prepares the folder, takes over CTS's files, writes its own, initializes when needed, then runs the timed command", async () => {
    const { driver, steps } = driverWith([async () => NO_CHANGE]);
    const result = await driver.plan({ task: "web", json: "{}" });
    assert.deepEqual(result, { ...NO_CHANGE, initialized: true });
    assert.deepEqual(steps, ["folder", "check cancelled", "take over CTS's files", "files", "init if needed", "timed plan", "plan", "dispose"]);
  });

  it("re-initializes once when the working dir needs a fresh init, and lets a second failure stand", async () => {
    const repaired = driverWith([() => Promise.reject(needsInit()), async () => NO_CHANGE]);
    assert.equal((await repaired.driver.apply({ task: "web", json: "{}" })).initialized, true);
    assert.deepEqual(repaired.steps.slice(5), ["timed apply", "apply", "init again", "timed apply", "apply", "dispose"]);

    const broken = driverWith([() => Promise.reject(needsInit()), () => Promise.reject(needsInit())]);
    await assert.rejects(broken.driver.apply({ task: "web", json: "{}" }), (err: unknown) => err instanceof CtsError && err.code === "TERRAFORM_FAILED");
    assert.equal(broken.steps.filter((s) => s === "init again").length, 1);
  });

  it("refuses a bad task name before touching anything", async () => {
    const { driver, steps } = driverWith([]);
    await assert.rejects(driver.apply({ task: "../etc", json: "{}" }), (err: unknown) => err instanceof CtsError && err.code === "TASK_NAME_INVALID");
    assert.deepEqual(steps, []);
  });

  it("scrubs secrets from the result and from the error that leave it", async () => {
    const redact = (t: string) => t.replaceAll("s3cr3t", "[redacted]");
    const leaky = { ...NO_CHANGE, output: "token = s3cr3t" };
    const ok = driverWith([async () => leaky], { redact });
    assert.equal((await ok.driver.plan({ task: "web", json: "{}" })).output, "token = [redacted]");

    const failing = driverWith([() => Promise.reject(failedError("web", { command: "tofu apply", exitCode: 1, errors: "invalid key s3cr3t", hint: "" }))], { redact });
    await assert.rejects(failing.driver.apply({ task: "web", json: "{}" }), (err: unknown) => err instanceof CtsError && !err.message.includes("s3cr3t") && err.message.includes("[redacted]"));
  });
});
