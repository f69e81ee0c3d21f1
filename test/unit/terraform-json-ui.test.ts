import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MAX_RESOURCE_CHANGES, parseUiLine, UiStream } from "../../src/terraform/json-ui.ts";
import { needsReinit, textErrors } from "../../src/terraform/failures.ts";

const line = (o: unknown) => JSON.stringify(o);
const applyStream = [
  line({ "@level": "info", "@message": "OpenTofu 1.12.6", type: "version", tofu: "1.12.6", ui: "1.2" }),
  line({ "@level": "info", "@message": "local_file.a: Plan to create", type: "planned_change", change: { action: "create" } }),
  line({ "@level": "info", "@message": "Plan: 1 to add, 0 to change, 0 to destroy.", type: "change_summary", changes: { add: 1, change: 0, import: 0, remove: 0, operation: "plan" } }),
  line({ "@level": "info", "@message": "local_file.a: Creating...", type: "apply_start" }),
  line({ "@level": "info", "@message": "local_file.a: Creation complete after 0s [id=abc]", type: "apply_complete" }),
  line({ "@level": "info", "@message": "Apply complete! Resources: 1 added, 0 changed, 0 destroyed.", type: "change_summary", changes: { add: 1, change: 0, remove: 0, operation: "apply" } }),
  line({ "@level": "info", "@message": "Outputs: 0", type: "outputs", outputs: {} }),
];

describe("JSON UI stream", () => {
  it("renders each message as its human line and drops the version banner", () => {
    const s = new UiStream();
    for (const l of applyStream) s.push(l);
    assert.deepEqual(s.lines, [
      "local_file.a: Plan to create",
      "Plan: 1 to add, 0 to change, 0 to destroy.",
      "local_file.a: Creating...",
      "local_file.a: Creation complete after 0s [id=abc]",
      "Apply complete! Resources: 1 added, 0 changed, 0 destroyed.",
      "Outputs: 0",
    ]);
    assert.equal(s.plannedChanges, 1);
  });

  it("keeps the planned changes by address and action, noops left out, at most MAX_RESOURCE_CHANGES", () => {
    const s = new UiStream();
    const planned = (addr: string, action: string) => line({ type: "planned_change", "@message": `${addr}: Plan to ${action}`, change: { resource: { addr, resource_type: "local_file" }, action } });
    for (const l of [planned("local_file.a", "create"), planned('local_file.b["x"]', "replace"), planned("local_file.c", "noop"), planned("local_file.d", "delete")]) s.push(l);
    assert.deepEqual(s.resourceChanges, [
      { address: "local_file.a", action: "create" },
      { address: 'local_file.b["x"]', action: "replace" },
      { address: "local_file.d", action: "delete" },
    ]);
    const many = new UiStream();
    for (let i = 0; i < MAX_RESOURCE_CHANGES + 5; i++) many.push(planned(`local_file.r${i}`, "create"));
    assert.equal(many.resourceChanges.length, MAX_RESOURCE_CHANGES);
    assert.equal(many.plannedChanges, MAX_RESOURCE_CHANGES + 5);
  });

  it("takes the apply summary over the plan summary it starts with", () => {
    const s = new UiStream();
    for (const l of applyStream) s.push(l);
    assert.deepEqual(s.summary("apply"), { add: 1, change: 0, destroy: 0 });
    assert.deepEqual(s.summary("missing"), { add: 0, change: 0, destroy: 0 });
  });

  it("maps a destroy summary's `remove` to destroy", () => {
    const ev = parseUiLine(line({ type: "change_summary", "@message": "Destroy complete! Resources: 2 destroyed.", changes: { add: 0, change: 0, remove: 2, operation: "destroy" } }));
    assert.deepEqual(ev, { kind: "summary", summary: { add: 0, change: 0, destroy: 2, operation: "destroy" }, lines: ["Destroy complete! Resources: 2 destroyed."] });
  });

  it("renders diagnostics like Terraform and summarises only the errors", () => {
    const s = new UiStream();
    s.push(line({ type: "diagnostic", "@level": "warning", diagnostic: { severity: "warning", summary: "Deprecated", detail: "old" } }));
    const rendered = s.push(
      line({
        type: "diagnostic",
        "@level": "error",
        "@message": "Error: Unsupported argument",
        diagnostic: { severity: "error", summary: "Unsupported argument", detail: 'An argument named "bogus"\nis not expected here.', range: { filename: "main.tf.json", start: { line: 3 } } },
      }),
    );
    assert.deepEqual(rendered, ["Error: Unsupported argument", "  on main.tf.json line 3", '  An argument named "bogus"', "  is not expected here."]);
    assert.equal(s.errorText(), 'Unsupported argument: An argument named "bogus" is not expected here.');
  });

  it("keeps lines that are not JSON as plain text", () => {
    assert.deepEqual(parseUiLine("panic: runtime error"), { kind: "message", type: "text", lines: ["panic: runtime error"] });
    assert.equal(parseUiLine("   "), undefined);
  });
});

describe("text-mode errors", () => {
  it("starts at the first Error: line and strips box drawing", () => {
    assert.equal(textErrors(["Initializing...", "", "╷", "│ Error: Failed to query", "│ ", "│ no provider found", "╵"]), "Error: Failed to query no provider found");
  });

  it("falls back to the last lines when no Error: line exists", () => {
    assert.equal(textErrors(["a", "b"]), "a b");
  });

  it("recognises failures a fresh init repairs", () => {
    assert.ok(needsReinit('Backend initialization required, please run "tofu init"'));
    assert.ok(needsReinit("Required plugins are not installed"));
    assert.ok(needsReinit('Workspace "web" doesn\'t exist.'));
    assert.ok(!needsReinit('Unsupported argument: An argument named "bogus" is not expected here.'));
  });
});

describe("durations in messages", () => {
  it("reads like people write them", async () => {
    const { formatDuration } = await import("../../src/terraform/failures.ts");
    assert.equal(formatDuration(800), "800ms");
    assert.equal(formatDuration(1500), "1.5s");
    assert.equal(formatDuration(45_000), "45s");
    assert.equal(formatDuration(30 * 60_000), "30m");
    assert.equal(formatDuration(90_000), "1m30s");
  });
});
