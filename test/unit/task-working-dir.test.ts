import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../src/config/load.ts";
import { workingDirProblems } from "../../src/config/working-dirs.ts";
import { declareTask, taskFromDeclaration } from "../../src/task/declaration.ts";
import { ModuleTask } from "../../src/task/module-task.ts";
import { services } from "../../src/task/conditions.ts";
import { ownWorkingDirs, taskWorkingDir } from "../../src/synth/paths.ts";
import { recoverWorkingDir } from "../../src/terraform/recovery.ts";
import { PLAN_FILE } from "../../src/terraform/working-dir.ts";
import { WorkingRoot } from "../../src/terraform/working-root.ts";

const task = (name: string, workingDir?: string) => new ModuleTask({ name, condition: services({ names: ["web"] }), module: "./m", ...(workingDir !== undefined ? { workingDir } : {}) });

describe("a task's own working dir (CTS's task working_dir)", () => {
  it("is taken from the config's folder when relative; other tasks keep <root>/<name>", () => {
    assert.equal(taskWorkingDir("/srv/cts/sync-tasks", "/srv/cts", task("a", "legacy/a")), "/srv/cts/legacy/a");
    assert.equal(taskWorkingDir("/srv/cts/sync-tasks", "/srv/cts", task("a", "/var/lib/cts-a")), "/var/lib/cts-a");
    assert.equal(taskWorkingDir("/srv/cts/sync-tasks", "/srv/cts", task("b")), "/srv/cts/sync-tasks/b");
    assert.deepEqual(ownWorkingDirs("/srv/cts", [task("a", "legacy/a"), task("b")]), { a: "/srv/cts/legacy/a" });
  });

  it("crosses to the daemon's main thread with the task's declaration", () => {
    assert.equal(taskFromDeclaration(declareTask(task("a", "legacy/a"))).workingDir, "legacy/a");
  });

  it("is refused when two tasks share a folder, one is inside another, or it holds the root or the config", () => {
    const at = (tasks: ModuleTask[]) => workingDirProblems("/srv/cts", "/srv/cts/sync-tasks", tasks, "/srv/cts/cts.config.ts").map((p) => `${p.field} ${p.message}`);
    assert.deepEqual(at([task("a", "x"), task("b", "y"), task("c")]), []);
    assert.match(at([task("a", "x"), task("b", "x")]).join("\n"), /tasks\[1\]\.workingDir '\/srv\/cts\/x' is also the working dir of task 'a'/);
    assert.match(at([task("a", "sync-tasks/b"), task("b")]).join("\n"), /tasks\[0\]\.workingDir '\/srv\/cts\/sync-tasks\/b' is also the working dir of task 'b'/, "another task's default folder");
    assert.match(at([task("a", "x"), task("b", "x/inner")]).join("\n"), /one is inside the other/);
    assert.match(at([task("a", "sync-tasks")]).join("\n"), /is the working root/);
    assert.match(at([task("a", "/srv")]).join("\n"), /is the working root .* or holds it/);
    const elsewhere = workingDirProblems("/srv/cts", "/var/lib/cts", [task("a", ".")], "/srv/cts/cts.config.ts");
    assert.match(elsewhere.map((p) => p.message).join("\n"), /'\/srv\/cts' holds the config file's folder/);
  });

  it("is refused when it is not a folder path", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-wd-"));
    try {
      await writeFile(join(dir, "cts.hcl"), 'task {\n  name = "a"\n  module = "./m"\n  working_dir = ""\n  condition "services" {\n    names = ["web"]\n  }\n}\n');
      await assert.rejects(loadConfig(join(dir, "cts.hcl"), dir), /cts\.hcl:4.*working_dir must be a folder path/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("is read from CTS's task working_dir, relative to where cts starts, and checked like the others", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-wd-"));
    try {
      const hcl = (wdA: string, wdB: string) =>
        ["a", "b"].map((n, i) => `task {\n  name = "${n}"\n  module = "./m"\n  working_dir = "${i === 0 ? wdA : wdB}"\n  condition "services" {\n    names = ["web"]\n  }\n}\n`).join("");
      await writeFile(join(dir, "cts.hcl"), hcl("legacy/a", "legacy/b"));
      const loaded = await loadConfig(join(dir, "cts.hcl"), dir);
      assert.deepEqual(loaded.config.tasks.map((t) => t.workingDir), [join(dir, "legacy/a"), join(dir, "legacy/b")]);
      await writeFile(join(dir, "cts.hcl"), hcl("legacy/a", "legacy/a"));
      await assert.rejects(loadConfig(join(dir, "cts.hcl"), dir), /cts\.hcl:12: task 'b': working_dir '.*legacy\/a' is also the working dir of task 'a'/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("is where the driver makes the task's folder and writes its files", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-wd-"));
    try {
      const own = join(dir, "elsewhere", "a");
      const root = new WorkingRoot(join(dir, "sync-tasks"), 1000, () => {}, undefined, { a: own });
      assert.equal(root.taskDir("a"), own);
      assert.equal(root.taskDir("b"), join(dir, "sync-tasks", "b"));
      assert.equal(await root.prepare("a"), own);
      await root.writeFiles(own, { task: "a", json: "{}" });
      assert.equal(await readFile(join(own, "main.tf.json"), "utf8"), "{}");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("is cleaned at start-up like the others: a plan file a crashed run left there is removed", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cts-wd-"));
    try {
      const own = join(dir, "elsewhere", "a");
      await mkdir(own, { recursive: true });
      await writeFile(join(own, PLAN_FILE), "plan with secrets");
      const lines: string[] = [];
      await recoverWorkingDir(join(dir, "sync-tasks"), 1000, (l) => lines.push(l), { a: own });
      assert.equal(existsSync(join(own, PLAN_FILE)), false);
      assert.deepEqual(lines, ["removed the plan file a previous run left in 'a'"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
