import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureTaskDir, writeTaskFiles } from "../../src/terraform/working-dir.ts";

describe("task working directories", () => {
  let root: string;
  before(async () => {
    root = await mkdtemp(join(tmpdir(), "cts-wd-"));
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("writes main.tf.json and extra files, and removes extra files a later run no longer gives", async () => {
    const dir = await ensureTaskDir(root, "api");
    await writeTaskFiles(dir, "api", "{}", { "a.auto.tfvars.json": "{}", "b.tf.json": "{}" });
    await writeTaskFiles(dir, "api", '{"x":1}', { "a.auto.tfvars.json": '{"y":2}' });
    assert.equal(await readFile(join(dir, "main.tf.json"), "utf8"), '{"x":1}');
    assert.equal(await readFile(join(dir, "a.auto.tfvars.json"), "utf8"), '{"y":2}');
    await assert.rejects(stat(join(dir, "b.tf.json")), { code: "ENOENT" });
  });

  it("refuses a symlink planted at a file name, naming it, and writes nothing through it", async () => {
    const dir = await ensureTaskDir(root, "api");
    const victim = join(root, "victim.txt");
    await writeFile(victim, "untouched");
    await writeTaskFiles(dir, "api", "{}");
    await rm(join(dir, "main.tf.json"));
    await symlink(victim, join(dir, "main.tf.json"));
    await assert.rejects(writeTaskFiles(dir, "api", "{}"), (err: any) => err.code === "WORKING_DIR_UNUSABLE" && err.message.includes(join(dir, "main.tf.json")));
    assert.equal(await readFile(victim, "utf8"), "untouched");
  });

  it("refuses a task folder that is a symlink", async () => {
    await mkdir(join(root, "elsewhere"));
    await symlink(join(root, "elsewhere"), join(root, "linked"));
    await assert.rejects(ensureTaskDir(root, "linked"), (err: any) => err.code === "WORKING_DIR_UNUSABLE" && err.message.includes(join(root, "linked")));
  });

  it("refuses extra file names that leave the task folder", async () => {
    const dir = await ensureTaskDir(root, "api");
    await assert.rejects(writeTaskFiles(dir, "api", "{}", { "../x.tf.json": "{}" }), (err: any) => err.code === "FILE_NAME_INVALID" && err.task === "api");
  });
});
