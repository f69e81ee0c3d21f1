// The assertions here are checked by `tsc` (run first by `npm test`): a wrong access is a compile error.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { ConsulKvCondition, ScheduleCondition, ServicesCondition, TaskInput } from "../../src/index.ts";

type KvOnly = TaskInput<ConsulKvCondition>;
type KvAndServices = TaskInput<ConsulKvCondition, { services: ServicesCondition }>;
type Scheduled = TaskInput<ScheduleCondition, { kv: ConsulKvCondition }>;

function typeChecks(kvOnly: KvOnly, both: KvAndServices, sched: Scheduled) {
  void kvOnly.kv;
  // @ts-expect-error a KV-triggered task without a services input has no input.services
  void kvOnly.services;
  void both.services[0]?.address;
  void sched.kv;
  // @ts-expect-error a schedule task has no catalogServices
  void sched.catalogServices;
  // @ts-expect-error instances are read-only
  both.services[0]!.port = 1;
}

describe("task input typing", () => {
  it("follows from the condition and inputs (checked by tsc)", () => {
    assert.equal(typeof typeChecks, "function");
  });
});
