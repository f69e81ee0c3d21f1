import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { chmod, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DataResource } from "cdktf";
import { Task, Testing, services, type TaskScope } from "../../src/index.ts";

describe("synthesis starts no Terraform process", () => {
  let dir: string;
  let savedPath: string | undefined;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "cts-nobin-"));
    for (const bin of ["terraform", "tofu"]) {
      const p = join(dir, bin);
      await writeFile(p, `#!/bin/sh\ntouch "${dir}/ran-${bin}"\necho 'Terraform v1.9.0'\n`);
      await chmod(p, 0o755);
    }
    savedPath = process.env.PATH;
    process.env.PATH = `${dir}:${savedPath}`;
  });
  after(async () => {
    process.env.PATH = savedPath;
    await rm(dir, { recursive: true, force: true });
  });

  it("even for terraform_data resources, which cdktf validates by running `terraform version`", () => {
    class WithData extends Task {
      constructor() {
        super({ name: "with-data", condition: services({ names: ["web"] }) });
      }
      synthesize(scope: TaskScope): void {
        for (let i = 0; i < 3; i++) new DataResource(scope, `d${i}`, { input: { i } });
      }
    }
    const out = Testing.synthTask(new WithData());
    assert.equal(Object.keys(out.resource.terraform_data).length, 3);
    return readdir(dir).then((files) => assert.deepEqual(files.filter((f) => f.startsWith("ran-")), []));
  });
});
