import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { pageWithState, summaryText } from "../../src/api/ui-page.ts";

const INDEX = readFileSync(new URL("../../src/api/ui/index.html", import.meta.url), "utf8");
const HOSTILE = `</script><script>alert(1)</script><img src=x onerror=alert(2)>`;

const state = {
  tasks: [
    { name: "web", description: HOSTILE, module: "(task class WebPool)", status: "successful", enabled: true, stale: null, drift: { status: "in-sync", changes: { add: 0, change: 0, destroy: 0 } }, held: null, events: [{ success: true, outcome: "applied", changes: { add: 1, change: 0, destroy: 0 }, start_time: "2026-01-01T00:00:00.000Z", end_time: "2026-01-01T00:00:01.500Z" }] },
    { name: "api", status: "errored", enabled: false, events: [{ success: false, outcome: "failed", error: { message: HOSTILE } }] },
  ],
  token_required: false,
};

describe("the dashboard page's first paint (the state rendered in by the server)", () => {
  it("has the summary and a row per task with its status, last run, duration and drift, before any script runs", () => {
    const html = pageWithState(INDEX, state);
    assert.match(html, /<span id="summary">2 tasks · 1 successful, 1 errored<\/span>/);
    assert.match(html, /<tr data-task="web">.*<span class="pill successful">successful<\/span>.*<td class="last-run"><span class="applied">applied<\/span> \+1 ~0 -0.*<td class="duration">1\.5 s<\/td>.*<span class="pill in-sync">in-sync<\/span>/s);
    assert.match(html, /<tr data-task="api">.*<span class="pill errored">errored<\/span> <span class="pill disabled">disabled<\/span>.*<span class="failed">failed<\/span>/s);
    assert.doesNotMatch(html, /loading…/);
  });

  it("carries the whole state for the script as a JSON block that no text can close or run", () => {
    const html = pageWithState(INDEX, state);
    const block = /<script type="application\/json" id="initial-state">(.*?)<\/script>/s.exec(html);
    assert.ok(block, "the state block is there");
    assert.deepEqual(JSON.parse(block[1]!), state, "the script reads back exactly the state");
    assert.equal(html.split(HOSTILE).length, 1, "the hostile text appears nowhere as written");
    assert.ok(html.includes("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;"), "escaped in the row");
    assert.equal((html.match(/<script/g) ?? []).length, 2, "the page's own script and the data block only");
  });

  it("counts in the right number, as the script does", () => {
    assert.equal(summaryText([{ status: "successful" }]), "1 task · 1 successful");
    assert.equal(summaryText([]), "0 tasks · ");
  });
});
