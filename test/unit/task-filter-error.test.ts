import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CtsError } from "../../src/errors/cts-error.ts";
import { filterSite, taskFilterError } from "../../src/task/filter-error.ts";
import type { Source } from "../../src/consul/types.ts";

/** Consul's answer to a filter with a selector it does not know, as the client reports it. */
const refused = (filter: string) =>
  new CtsError("CONSUL_BAD_REQUEST", "usage", "Consul rejected reading the health of service 'web' as invalid (HTTP 500).", {
    detail: { status: 500, url: `http://127.0.0.1:8500/v1/health/service/web?filter=${encodeURIComponent(filter)}`, reply: 'Failed to create boolean expression evaluator: Selector "Service.Tag" is not valid' },
  });
const source = (filter: string): Source => ({ kind: "services", query: { names: ["web"], filter } }) as Source;

describe("a filter Consul refuses is the task's configuration error", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "cts-filter-"));
    await mkdir(join(dir, "tasks"));
    await writeFile(join(dir, "cts.config.ts"), `import { AllowList } from "./tasks/allow-list.ts";\nexport default defineConfig({ tasks: [new AllowList()] });\n`);
    await writeFile(join(dir, "tasks", "allow-list.ts"), `export class AllowList extends Task {\n  constructor() {\n    super({ name: "allow-list", condition: services({ names: ["web"], filter: 'Service.Tag contains "prod"' }) });\n  }\n}\n`);
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("names the task's filter, where it is written (through the config's imports), Consul's reason and the selector meant", () => {
    const err = taskFilterError("allow-list", source('Service.Tag contains "prod"'), refused('Service.Tag contains "prod"'), [join(dir, "cts.config.ts")], dir);
    assert.ok(err instanceof CtsError);
    assert.equal(err.code, "TASK_FILTER_INVALID");
    assert.equal(err.category, "usage");
    assert.equal(err.task, "allow-list");
    assert.match(err.message, /^Task 'allow-list': Consul refuses the filter "Service\.Tag contains \\"prod\\"" of the task's services query \(at tasks\/allow-list\.ts:3:80\): Failed to create boolean expression evaluator: Selector "Service\.Tag" is not valid\. Did you mean Service\.Tags\? Fix the filter in the task's options/);
  });

  it("finds a filter written as an escaped string (HCL, double quotes) and says nothing of a place it cannot find", async () => {
    await writeFile(join(dir, "tasks.hcl"), `task "web" {\n  condition "services" {\n    filter = "Service.Tag contains \\"prod\\""\n  }\n}\n`);
    assert.equal(filterSite('Service.Tag contains "prod"', [join(dir, "tasks.hcl")], dir), "tasks.hcl:3:15");
    const err = taskFilterError("api-task", source("Service.Tag == x"), refused("Service.Tag == x"), [], dir) as CtsError;
    assert.doesNotMatch(err.message, /\(at /);
  });

  it("leaves every other error as it is: a bad datacenter, a denied read, a task without a filter", () => {
    const dc = new CtsError("CONSUL_BAD_REQUEST", "usage", "no path to datacenter", { detail: { status: 400, url: "http://x/v1/health/service/web?dc=nope", reply: "No path to datacenter" } });
    assert.equal(taskFilterError("t", source("Service.Tags contains \"prod\""), dc), dc);
    const denied = new CtsError("CONSUL_PERMISSION_DENIED", "external", "denied", { detail: { status: 403 } });
    assert.equal(taskFilterError("t", source("x"), denied), denied);
    const none = refused("x");
    assert.equal(taskFilterError("t", { kind: "services", query: { names: ["web"] } } as Source, none), none);
  });
});
