import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CtsError } from "../../src/errors/cts-error.ts";
import { createInitSteps } from "../../src/terraform/init-steps.ts";
import type { Operation, TextResult } from "../../src/terraform/operation.ts";

/** An operation that answers each command from `answer` and records the arguments. */
function fakeOperation(answer: (args: string[]) => TextResult) {
  const calls: string[] = [];
  const op = {
    task: "web",
    commandName: (args: string[]) => `terraform ${args.slice(0, args[0] === "workspace" ? 2 : 1).join(" ")}`,
    text: async (args: string[]) => {
      calls.push(args.filter((a) => a !== "-no-color" && !a.startsWith("-lock-timeout")).join(" "));
      return answer(args);
    },
  };
  return { op: op as unknown as Operation, calls };
}

const ok: TextResult = { exitCode: 0, lines: [] };

describe("making sure a task's workspace exists", () => {
  it("selects or creates it with one command", async () => {
    const { op, calls } = fakeOperation(() => ok);
    await createInitSteps(60_000).ensureWorkspace(op);
    assert.deepEqual(calls, ["workspace select -or-create web"]);
  });

  it("falls back to select, then new, for a Terraform without -or-create, and remembers that", async () => {
    const { op, calls } = fakeOperation((args) => {
      if (args.includes("-or-create")) return { exitCode: 1, lines: ["flag provided but not defined: -or-create"] };
      if (args[1] === "select") return { exitCode: 1, lines: ['Workspace "web" doesn\'t exist.'] };
      return ok;
    });
    const steps = createInitSteps(60_000);
    await steps.ensureWorkspace(op);
    await steps.ensureWorkspace(op);
    assert.deepEqual(calls, ["workspace select -or-create web", "workspace select web", "workspace new web", "workspace select web", "workspace new web"]);
  });

  it("fails with TERRAFORM_FAILED naming the command when the backend refuses", async () => {
    const { op } = fakeOperation(() => ({ exitCode: 1, lines: ["Error: Failed to get existing workspaces: connection refused"] }));
    await assert.rejects(createInitSteps(60_000).ensureWorkspace(op), (err: unknown) => {
      assert.ok(err instanceof CtsError);
      assert.equal(err.code, "TERRAFORM_FAILED");
      assert.match(err.message, /terraform workspace select/);
      assert.match(err.message, /connection refused/);
      return true;
    });
  });
});
