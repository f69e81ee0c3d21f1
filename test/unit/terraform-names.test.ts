import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { childPath, validateTaskName } from "../../src/driver/task-name.ts";
import { validateFileName } from "../../src/terraform/names.ts";
import { createTerraformDriver } from "../../src/terraform/driver.ts";

const refused = (fn: () => unknown, code: string) => assert.throws(fn, (err: any) => err.code === code && err.category === "usage");

describe("task names", () => {
  it("accepts CTS-style names", () => {
    for (const name of ["web-lb", "task_1", "Web.Lb", "a", "x~y"]) validateTaskName(name);
  });

  it("refuses names that could escape the working directory or break a workspace", () => {
    for (const name of ["", ".", "..", "../x", "a/b", "a\\b", ".hidden", "a b", "tab\there", "nl\n", "nul\u0000", "del\u007f", "semi?colon", "pct%", "ünï"]) {
      refused(() => validateTaskName(name), "TASK_NAME_INVALID");
    }
  });

  it("explains what is wrong and how to name a task", () => {
    assert.throws(() => validateTaskName("../etc"), /cannot be used: .*path separator.*letters, digits/);
  });

  it("refuses extra file names that escape the task folder or replace main.tf.json", () => {
    validateFileName("t", "terraform.tfvars.json", ["main.tf.json"]);
    refused(() => validateFileName("t", "main.tf.json", ["main.tf.json"]), "FILE_NAME_INVALID");
    refused(() => validateFileName("t", "../main.tf.json", ["main.tf.json"]), "FILE_NAME_INVALID");
    refused(() => validateFileName("t", ".terraform", ["main.tf.json"]), "FILE_NAME_INVALID");
  });

  it("never resolves a child path outside the root", () => {
    assert.equal(childPath("/srv/cts", "web", "web"), "/srv/cts/web");
    refused(() => childPath("/srv/cts", "../web", "web"), "TASK_NAME_INVALID");
    refused(() => childPath("/srv/cts", "a/b", "web"), "TASK_NAME_INVALID");
  });

  it("makes the driver refuse a bad task name before running anything", async () => {
    const root = await mkdtemp(join(tmpdir(), "cts-names-"));
    try {
      const driver = createTerraformDriver({ binary: "/nonexistent/tofu", workingDir: root });
      await assert.rejects(driver.apply({ task: "../escape", json: "{}" }), (err: any) => err.code === "TASK_NAME_INVALID");
      assert.throws(() => driver.taskDir(".."), (err: any) => err.code === "TASK_NAME_INVALID");
      assert.equal(driver.taskDir("web"), join(root, "web"));
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
