import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { commandFailure, isProviderBroken, parseLockInfo } from "../../src/terraform/failures.ts";
import { parseGroupFile } from "../../src/terraform/group-file.ts";
import { createRwLock } from "../../src/terraform/rw-lock.ts";
import { counter, deferred, settled, type Deferred } from "../support/waits.ts";

describe("plugin cache lock", () => {
  it("runs shared jobs side by side but an exclusive job alone", async () => {
    const lock = createRwLock();
    const events: string[] = [];
    const started = counter();
    const gates = new Map<string, Deferred<void>>();
    // Each job records its start, then holds the lock until the test opens its gate.
    const job = (name: string) => async () => {
      const gate = deferred();
      gates.set(name, gate);
      events.push(`${name}+`);
      started.add();
      await gate.promise;
      events.push(`${name}-`);
    };
    const all = Promise.all([lock.shared(job("a")), lock.shared(job("b")), lock.exclusive(job("init")), lock.shared(job("c"))]);
    await started.reached(2);
    assert.deepEqual(events, ["a+", "b+"], "both shared jobs hold the lock at once; init and the shared job behind it wait");
    gates.get("a")!.resolve();
    await settled();
    assert.deepEqual(events, ["a+", "b+", "a-"], "init still waits for b");
    gates.get("b")!.resolve();
    await started.reached(3);
    assert.deepEqual(events, ["a+", "b+", "a-", "b-", "init+"], "init runs once no shared job holds the lock");
    await settled();
    assert.equal(events.includes("c+"), false, "a shared job that came after a waiting init runs after it");
    gates.get("init")!.resolve();
    await started.reached(4);
    gates.get("c")!.resolve();
    await all;
    assert.deepEqual(events, ["a+", "b+", "a-", "b-", "init+", "init-", "c+", "c-"]);
  });

  it("releases the lock when a job fails", async () => {
    const lock = createRwLock();
    await assert.rejects(lock.exclusive(async () => Promise.reject(new Error("init failed"))), /init failed/);
    assert.equal(await lock.shared(async () => 7), 7);
  });
});

const LOCKED = `Error: Error acquiring the state lock

Error message: Lock Info:
  ID:        9a4c7c0e-1111-2222-3333-444455556666
  Path:      consul-terraform-sync/terraform-env:web
  Operation: OperationTypeApply
  Who:       cts@host-a
  Version:   1.12.6
  Created:   2026-11-23 12:00:00.000000000 +0000 UTC
  Info:      consul session: 1234

OpenTofu acquires a state lock to protect the state from being written`;

describe("state lock failures", () => {
  it("reads who holds the lock from Terraform's Lock Info", () => {
    assert.deepEqual(parseLockInfo(LOCKED), {
      ID: "9a4c7c0e-1111-2222-3333-444455556666",
      Path: "consul-terraform-sync/terraform-env:web",
      Operation: "OperationTypeApply",
      Who: "cts@host-a",
      Version: "1.12.6",
      Created: "2026-11-23 12:00:00.000000000 +0000 UTC",
      Info: "consul session: 1234",
    });
  });

  it("turns a lock failure into TERRAFORM_STATE_LOCKED that names the holder and force-unlock", () => {
    const err = commandFailure("web", { command: "tofu apply", exitCode: 1, errors: "Error acquiring the state lock", hint: "Fix the task's configuration." }, LOCKED, 90_000);
    assert.equal(err.code, "TERRAFORM_STATE_LOCKED");
    assert.equal(err.category, "external");
    assert.match(err.message, /locked by cts@host-a/);
    assert.match(err.message, /tofu force-unlock 9a4c7c0e-1111-2222-3333-444455556666/);
    assert.match(err.message, /within 1m30s/);
    assert.doesNotMatch(err.message, /Fix the task's configuration/);
    assert.equal((err.detail.lock as { Who: string }).Who, "cts@host-a");
  });

  it("does not wait out a state lock that Consul's ACLs refused: it is TERRAFORM_FAILED with the ACL hint", () => {
    const errors =
      "Error acquiring the state lock: Error lock state: Unexpected response code: 403 (Permission denied: token with AccessorID 'x' lacks permission 'key:write' on \"consul-terraform-sync/terraform-env:web/.lock\")";
    const err = commandFailure("web", { command: "tofu workspace new", exitCode: 1, errors, hint: "Check the backend." }, errors, 90_000);
    assert.equal(err.code, "TERRAFORM_FAILED");
    assert.match(err.message, /ACL token/);
  });

  it("keeps other failures TERRAFORM_FAILED", () => {
    const err = commandFailure("web", { command: "tofu apply", exitCode: 1, errors: "Unsupported argument", hint: "Fix it." }, "Unsupported argument", 90_000);
    assert.equal(err.code, "TERRAFORM_FAILED");
  });
});

describe("provider failures", () => {
  it("blames the plugin cache, not the state backend, when a provider cannot be started", () => {
    const errors = "fork/exec /w/.terraform/providers/registry.opentofu.org/hashicorp/local/2.5.2/linux_amd64/terraform-provider-local_v2.9.0: no such file or directory";
    assert.ok(isProviderBroken(errors));
    const err = commandFailure("web", { command: "tofu workspace new", exitCode: 1, errors, hint: "Check that the state backend is reachable." }, errors, 90_000);
    assert.doesNotMatch(err.message, /state backend/);
    assert.match(err.message, /plugin cache/);
  });
});

describe("process group records", () => {
  it("keeps plausible groups and drops junk", () => {
    const f = parseGroupFile(JSON.stringify({ owner: { pid: 12, start: "99" }, groups: [{ pgid: 400, task: "web", command: "tofu apply" }, { pgid: 1 }, { pgid: "x" }] }));
    assert.deepEqual(f?.groups.map((g) => g.pgid), [400]);
    assert.equal(parseGroupFile("not json"), undefined);
  });
});
