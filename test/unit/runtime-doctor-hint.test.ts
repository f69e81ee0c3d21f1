import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createController } from "../../src/daemon/compose.ts";
import { CtsError } from "../../src/errors/cts-error.ts";
import { createLogger } from "../../src/log/logger.ts";
import { inProcessSynthesizer } from "../../src/synth/synthesizer.ts";
import { MemberList } from "../fixtures/tasks.ts";

describe("a failed run's log line", () => {
  it("points at `cts doctor` when doctor checks the cause (no Terraform binary), and not for a task's own error", async () => {
    const task = new MemberList("members", "/tmp/m.txt");
    const lines: string[] = [];
    let err: CtsError = new CtsError("TERRAFORM_NOT_FOUND", "usage", "could not run 'tofu': ENOENT. Install OpenTofu.", { task: "members" });
    const controller = createController({
      loaded: { config: { tasks: [task] }, file: "/x/cts.config.ts", dir: "/x" },
      reader: { read: async () => [] as never },
      driver: {
        taskDir: (t: string) => `/tmp/cts-doctor-hint/${t}`,
        apply: async () => {
          throw err;
        },
        plan: async () => {
          throw err;
        },
        destroy: async () => {
          throw err;
        },
      },
      synthesizer: inProcessSynthesizer(() => task),
      log: createLogger({ write: (l: string) => void lines.push(l) }),
      retries: 0,
    });
    await controller.once();
    assert.ok(lines.some((l) => /task 'members': .*could not run 'tofu'.* Run `cts doctor`/.test(l)), lines.join("\n"));
    lines.length = 0;
    err = new CtsError("TASK_SYNTH_INVALID", "usage", "resource 'x' is wrong", { task: "members" });
    await controller.once();
    assert.ok(lines.some((l) => /resource 'x' is wrong/.test(l)) && !lines.some((l) => /cts doctor/.test(l)), lines.join("\n"));
    await controller.stop(100);
  });
});
