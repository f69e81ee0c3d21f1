import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

const UNIT = fileURLToPath(new URL(".", import.meta.url));

/**
 * What a unit test must not do: sleep, poll against a deadline, or measure elapsed time. A unit test
 * waits for an event (a promise a fake resolves, a counter, `controller.whenIdle()`) or moves a fake
 * clock (test/support/fake-clock.ts); see test/support/waits.ts.
 */
const FORBIDDEN: Array<[RegExp, string]> = [
  [/(?<![.\w])setTimeout\s*\(/, "a timer (sleep): wait for an event, or pass a fake clock"],
  [/(?<![.\w])setInterval\s*\(/, "a polling timer: wait for an event"],
  [/\bDate\.now\s*\(/, "wall-clock time: use a fake clock's now()"],
  [/\bperformance\.now\s*\(/, "wall-clock time: use a fake clock's now()"],
  [/\bprocess\.hrtime\b/, "wall-clock time: use a fake clock's now()"],
  [/["']node:timers\/promises["']/, "a sleep: wait for an event, or pass a fake clock"],
  [/(?<![.\w])waitFor\s*\(/, "polling against a deadline (test/support/cts.ts is for integration tests)"],
];

describe("unit tests and time", () => {
  it("no unit test sleeps, polls against a deadline or reads the wall clock", async () => {
    const found: string[] = [];
    for (const name of (await readdir(UNIT)).filter((n) => n.endsWith(".ts")).sort()) {
      if (name === "unit-test-timing.test.ts") continue; // this file names the patterns
      const lines = (await readFile(UNIT + name, "utf8")).split("\n");
      lines.forEach((line, i) => {
        if (/^\s*(\/\/|\*)/.test(line)) return;
        for (const [pattern, why] of FORBIDDEN) if (pattern.test(line)) found.push(`test/unit/${name}:${i + 1}: ${why}\n    ${line.trim()}`);
      });
    }
    assert.deepEqual(found, [], `\n${found.join("\n")}`);
  });
});
