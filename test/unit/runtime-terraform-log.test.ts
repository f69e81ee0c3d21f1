import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createLogger } from "../../src/log/logger.ts";
import { terraformOutputLog } from "../../src/daemon/driver-setup.ts";

describe("Terraform's own output in the daemon's log", () => {
  const capture = (level: "info" | "debug") => {
    const lines: string[] = [];
    return { lines, log: createLogger({ level, write: (l) => lines.push(l) }) };
  };

  it("is left out at info level by default, as CTS does without `log = true`", () => {
    const info = capture("info");
    terraformOutputLog({}, info.log)("web", "Apply complete! Resources: 1 added, 0 changed, 0 destroyed.");
    assert.deepEqual(info.lines, []);
    const debug = capture("debug");
    terraformOutputLog({}, debug.log)("web", "Apply complete! Resources: 1 added, 0 changed, 0 destroyed.");
    assert.match(debug.lines[0]!, /\[DEBUG\] \[web\] Apply complete!.* task=web/);
  });

  it("is logged at info level with driver.terraform.log: true", () => {
    const info = capture("info");
    terraformOutputLog({ log: true }, info.log)("web", "local_file.members: Creating...");
    assert.match(info.lines[0]!, /\[INFO\] \[web\] local_file\.members: Creating\.\.\. task=web/);
  });
});
