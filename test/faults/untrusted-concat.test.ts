import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { startConsul, type ConsulAgent } from "../support/consul.ts";
import { startRuntime, tempDir, writeConfig } from "../support/cts.ts";
import { caseArbitrary, instancesFor } from "../fixtures/untrusted-arbitraries.ts";
import { expectedContent, type ConcatCase } from "../fixtures/untrusted-cases.ts";

const CASES_MODULE = fileURLToPath(new URL("../fixtures/untrusted-cases.ts", import.meta.url));
const HOSTNAME = '{file("/etc/hostname")}';

/** Payloads found by probes: each once made Terraform read a file or fail every apply. */
const KNOWN: Array<{ c: ConcatCase; values: string[] }> = [
  { c: { shape: "handlebars", lits: [] }, values: ["$", HOSTNAME] },
  { c: { shape: "join", lits: [] }, values: ["$", HOSTNAME] },
  { c: { shape: "mixed", lits: ["", "{x}"] }, values: ["$"] },
  { c: { shape: "mixed", lits: ["$", ""] }, values: [HOSTNAME] },
  { c: { shape: "handlebars", lits: [] }, values: ["%", "{ if true }y%{ endif }"] },
  { c: { shape: "plus", lits: [] }, values: ["${TfToken[TOKEN.1]}", "#{TfToken[TOKEN.2]}", "&{TfToken[TOKEN.3]}", "$", "{TfToken[TOKEN.1]}", "&", "{TfToken[TOKEN.2]}"] },
  { c: { shape: "plus", lits: [] }, values: ["\uE000", "$\uE000", "{\uE001", "\uE001\uE000{", "$", "\uE000{"] },
  { c: { shape: "plus", lits: [] }, values: ["$$", "{", "$$${x}", "%%", "{~ y}"] },
  { c: { shape: "mixed", lits: ["", '${"T"}', "$${lit}"] }, values: ["US$", "$"] },
  { c: { shape: "fnJoin", lits: [""] }, values: ["$", "{path.cwd}"] },
  // cdktf writes function arguments in quotes without escaping `"`: a quote once ended the literal.
  { c: { shape: "fnJoin", lits: [","] }, values: ['a"), file("/etc/hostname"), ("', 'b\\"c'] },
  { c: { shape: "fnFormat", lits: ["-"] }, values: ['q"r', "c\\d"] },
  { c: { shape: "fnFormat", lits: ["-"] }, values: ["$", "%{ if true }"] },
];

describe("catalog strings combined by task code land byte for byte, as Terraform normalizes them (NFC) (one real apply)", () => {
  let consul: ConsulAgent;
  let tmp: { dir: string; cleanup(): Promise<void> };
  const seed = Date.now() % 2 ** 31;
  const generated = fc.sample(caseArbitrary({ keys: false }), { numRuns: 100, seed }); // Consul refuses such meta keys
  const cases = [...KNOWN, ...generated];

  before(async () => {
    consul = await startConsul();
    tmp = await tempDir();
  });
  after(async () => {
    await consul?.stop();
    await tmp?.cleanup();
  });

  it(`applies ${cases.length} combinations (seed ${seed}) and every file holds exactly the raw values`, { timeout: 300_000 }, async () => {
    for (const [i, { c, values }] of cases.entries())
      for (const inst of instancesFor(i, c.shape, values)) await consul.register({ Name: inst.name, ID: inst.id, Port: 80, Meta: inst.meta, ...(inst.tags ? { Tags: inst.tags } : {}) });
    const out = join(tmp.dir, "out");
    const spec = JSON.stringify(cases.map((x) => x.c));
    const config = await writeConfig(tmp.dir, { consulAddress: consul.address, tasks: [`new ConcatCases("concat", ${JSON.stringify(out)}, ${spec})`] });
    await writeFile(config, `import { ConcatCases } from ${JSON.stringify(CASES_MODULE)};\n${await readFile(config, "utf8")}`);

    const rt = await startRuntime(config, { mode: "once" });
    try {
      const [outcome] = await rt.controller.once();
      assert.equal(outcome!.ok, true, outcome!.error?.message);
    } finally {
      await rt.close();
    }
    for (const [i, { c, values }] of cases.entries()) {
      const got = await readFile(join(out, `case-${i}.txt`), "utf8");
      // Terraform normalizes every string to Unicode NFC (checked with tofu): that much of a change is Terraform's.
      assert.equal(got, expectedContent(c, values).normalize("NFC"), `case ${i} (seed ${seed}): ${JSON.stringify({ c, values })}`);
    }
  });
});
