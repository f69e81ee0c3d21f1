import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { writeFile } from "node:fs/promises";
import { readCtsConfig } from "../../src/cts/config/load.ts";
import { loadConfig } from "../../src/config/load.ts";
import { tempDir } from "../support/cts.ts";

const plain = (v: unknown) => JSON.parse(JSON.stringify(v));

/** A task block with the given extra lines (a schedule task, so no Consul data is needed). */
const task = (name: string, extra = "") => `task {
  name   = "${name}"
  module = "org/mod/x"
  condition "schedule" {
    cron = "* * * * *"
  }
${extra}}
`;

describe("cts's notifications block in a CTS HCL config", () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let n = 0;
  before(async () => ({ dir, cleanup } = await tempDir()));
  after(() => cleanup());

  async function load(text: string, ext = "hcl") {
    const file = join(dir, `c${++n}.${ext}`);
    await writeFile(file, text);
    return readCtsConfig([file], dir);
  }

  it("reads top-level webhooks and a task's own (that task's notifications only)", async () => {
    const r = await load(`notifications {
  link       = "https://cts.example.com:8558"
  queue_size = 50
  webhook "ops" {
    url        = "https://hooks.example.com/cts"
    secret_env = "CTS_WEBHOOK_SECRET"
    events     = ["failed", "recovered"]
    timeout    = "5s"
    retries    = 3
  }
}
${task("web", '  notifications {\n    webhook "web-team" {\n      url    = "https://hooks.slack.com/services/T/B/x"\n      format = "slack"\n    }\n  }\n')}${task("db")}`);
    assert.deepEqual(plain(r.config.notifications), {
      link: "https://cts.example.com:8558",
      queueSize: 50,
      webhooks: [
        { name: "ops", url: "https://hooks.example.com/cts", secretEnv: "CTS_WEBHOOK_SECRET", events: ["failed", "recovered"], timeout: "5s", retries: 3 },
        { name: "web-team", url: "https://hooks.slack.com/services/T/B/x", format: "slack", tasks: ["web"] },
      ],
    });
  });

  it("reads the same from JSON", async () => {
    const r = await load(JSON.stringify({ notifications: { webhook: { ops: { url: "https://hooks.example.com/cts", events: ["drift"] } } } }), "json");
    assert.deepEqual(plain(r.config.notifications), { webhooks: [{ name: "ops", url: "https://hooks.example.com/cts", events: ["drift"] }] });
  });

  it("refuses a wrong value with its file, line and fix", async () => {
    for (const [body, message] of [
      ['notifications {\n  webhook "ops" {\n    url = "https://h.example.com"\n    events = ["exploded"]\n  }\n}\n', /c\d+\.hcl:4: webhook "ops"\.events must be a list of "held", "guard_refused"/],
      ['notifications {\n  webhook "ops" {\n    url = "ftp://h.example.com"\n  }\n}\n', /c\d+\.hcl:3: webhook "ops"\.url must be an http\(s\) URL/],
      ['notifications {\n  queue_size = 0\n}\n', /c\d+\.hcl:2: notifications\.queue_size must be a whole number/],
      [task("web", '  notifications {\n    webhook "x" {\n      url = "https://h.example.com"\n      tasks = ["db"]\n    }\n  }\n'), /webhook "x"\.tasks: a task's webhook is that task's/],
      [task("web", '  notifications {\n    link = "https://cts.example.com"\n  }\n'), /notifications\.link is set for every task/],
      ['notifications {\n  webhook "ops" {\n    url = "https://h.example.com"\n    verify = true\n  }\n}\n', /verify/],
    ] as const) {
      await assert.rejects(load(body), (e: any) => {
        assert.equal(e.code, "CONFIG_INVALID");
        assert.match(e.message, message);
        return true;
      });
    }
  });

  it("passes loadConfig's validation (as `cts start -config-file x.hcl` loads it)", async () => {
    const file = join(dir, "whole.hcl");
    await writeFile(file, `notifications {\n  webhook "ops" {\n    url = "http://127.0.0.1:9/hook"\n  }\n}\n${task("web")}`);
    const loaded = await loadConfig(file);
    assert.equal(loaded.config.notifications?.webhooks[0]?.name, "ops");
  });
});
