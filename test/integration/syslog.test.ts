import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startCtsProcess } from "../support/cts-process.ts";
import { tempDir, writeConfig } from "../support/cts.ts";
import { startSyslogListener, type SyslogListener } from "../support/syslog-listener.ts";
import { openSyslog } from "../../src/log/syslog.ts";
import { createLogger, redactSecret } from "../../src/log/logger.ts";
import { readCtsConfig } from "../../src/cts/config/load.ts";
import { CtsError } from "../../src/errors/cts-error.ts";

// go-syslog's local format: <PRI>Mmm dd hh:mm:ss name[pid]: message (time.Stamp, no hostname).
const HEADER = /^<(\d+)>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d ([^[]+)\[(\d+)\]: (.*)$/s;

describe("syslog {}: log lines to the local syslog socket, as CTS writes them", () => {
  let tmp: { dir: string; cleanup(): Promise<void> };
  let listener: SyslogListener;

  before(async () => {
    tmp = await tempDir();
    listener = await startSyslogListener(tmp.dir);
  });
  after(async () => {
    await listener?.stop();
    await tmp?.cleanup();
  });

  it("sends each line with go-syslog's header at NOTICE of the facility, secrets redacted", async () => {
    const writer = openSyslog({ facility: "local3", name: "cts-test", socket: listener.path }, (m) => assert.fail(m));
    const log = createLogger({ write: (line) => writer.write(line) });
    redactSecret("syslog-secret-0123456789");
    log.warn("token is syslog-secret-0123456789 here", { task: "web" });
    const text = await listener.waitFor(/token is/);
    await writer.close();
    const m = HEADER.exec(text);
    assert.ok(m, text);
    assert.equal(Number(m[1]), 19 * 8 + 5, "LOCAL3 (19) × 8 + NOTICE (5), whatever the line's level, as CTS");
    assert.equal(m[2], "cts-test");
    assert.equal(Number(m[3]), process.pid);
    assert.match(m[4]!, /^\d{4}-\d\d-\d\dT[\d:.]+Z \[WARN\] token is \[redacted\] here task=web$/);
    assert.doesNotMatch(text, /syslog-secret/);
  });

  it("refuses to start without a syslog socket, as CTS does, and an unknown facility", () => {
    assert.throws(() => openSyslog({ socket: join(tmp.dir, "no-such-socket") }, () => {}), (e: unknown) => e instanceof CtsError && e.code === "SYSLOG_UNAVAILABLE" && /is not a socket: is a syslog daemon running\?/.test(e.message));
    assert.throws(() => openSyslog({ facility: "LOCAL9", socket: listener.path }, () => {}), /syslog facility 'LOCAL9' is not known/);
  });

  it("maps CTS's block: on when enabled, or when facility/name is set; off for an empty block or enabled = false", async () => {
    const read = async (block: string) => {
      const file = join(tmp.dir, `s-${Math.random().toString(36).slice(2)}.hcl`);
      await writeFile(file, block);
      return (await readCtsConfig([file], tmp.dir)).config.syslog;
    };
    assert.equal(await read("syslog {}\n"), undefined);
    assert.equal(await read('syslog {\n  enabled = false\n  facility = "LOCAL1"\n}\n'), undefined);
    assert.deepEqual(await read("syslog {\n  enabled = true\n}\n"), { enabled: true });
    assert.deepEqual(await read('syslog {\n  facility = "local2"\n}\n'), { enabled: true, facility: "local2" });
    assert.deepEqual(await read('syslog {\n  name = "cts-a"\n}\n'), { enabled: true, name: "cts-a" });
    await assert.rejects(read('syslog {\n  facility = "LOCAL8"\n}\n'), /:2: syslog facility 'LOCAL8' is not known/);
  });

  describe("a running daemon", () => {
    let consul: ConsulAgent;
    before(async () => {
      consul = await startConsul();
    });
    after(async () => {
      await consul?.stop();
    });

    it("writes its lines to syslog as well as stderr, up to the last one at stop", async () => {
      const dir = join(tmp.dir, "daemon");
      await mkdir(dir);
      const file = await writeConfig(dir, {
        consulAddress: consul.address,
        tasks: [],
        extra: `syslog: { facility: "LOCAL0", name: "cts-daemon", socket: ${JSON.stringify(listener.path)} },`,
      });
      const cts = startCtsProcess(file);
      try {
        // After this line the daemon has its signal handlers (a SIGTERM before them ends it at once).
        await cts.waitForLine(/ctrl: executing all tasks once through/, 60_000);
        const listening = await listener.waitFor(/cts-daemon\[\d+\]: .*api: listening on/);
        assert.equal(HEADER.exec(listening)?.[1], String(16 * 8 + 5));
        assert.equal(HEADER.exec(listening)?.[3], String(cts.pid));
      } finally {
        const code = await cts.terminate();
        assert.equal(code, 0, cts.logs());
      }
      await listener.waitFor(/cts-daemon\[\d+\]: .*\[INFO\] stopped$/);
      assert.equal(listener.messages.filter((m) => /stopped$/.test(m)).length, 1);
    });
  });
});
