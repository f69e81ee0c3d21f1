import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { clusterText } from "../../src/cli/cluster-status.ts";

describe("cts status --cluster", () => {
  it("lists the members and, in shared mode, the tasks by owner and the tasks nobody runs", () => {
    const text = clusterText({
      cluster_name: "prod",
      mode: "shared",
      leader: null,
      members: [
        { id: "cts-a", address: "http://a:8558", healthy: true },
        { id: "cts-b", address: "http://b:8558", healthy: false },
      ],
      tasks_by_member: { "cts-a": ["t1", "t2"], "cts-b": ["t3"] },
      unowned: ["t4"],
    });
    assert.match(text, /Cluster 'prod' \(shared mode/);
    assert.match(text, /cts-a\s+http:\/\/a:8558\s+healthy\s+2/);
    assert.match(text, /cts-b\s+http:\/\/b:8558\s+unhealthy\s+1/);
    assert.match(text, /==> cts-a: 2 tasks\n  t1\n  t2\n/);
    assert.match(text, /==> cts-b: 1 task\n  t3\n/);
    assert.match(text, /not running anywhere right now.*t4/);
  });

  it("shows the leader and each member's role in leader mode", () => {
    const text = clusterText({ cluster_name: "prod", leader: { id: "cts-a" }, members: [{ id: "cts-a", address: "", healthy: true, leader: true }] });
    assert.match(text, /leader mode: leader cts-a/);
    assert.match(text, /cts-a\s+-\s+healthy\s+leader/);
  });
});
