import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CtsError, ERROR_CATALOGUE, isErrorCode } from "../../src/errors/cts-error.ts";
import { ERRORS_PAGE, errorTable, tableIn } from "../../scripts/error-table.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

async function sources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await sources(p)));
    else if (/\.(ts|mts)$/.test(e.name)) out.push(p);
  }
  return out;
}

/** Every `new CtsError("CODE", "category"` in src/ and examples/ (the code and category as written). */
async function constructions(): Promise<{ file: string; code: string; category: string }[]> {
  const found: { file: string; code: string; category: string }[] = [];
  for (const file of [...(await sources(join(ROOT, "src"))), ...(await sources(join(ROOT, "examples")))]) {
    const text = await readFile(file, "utf8");
    for (const m of text.matchAll(/new CtsError\(\s*"([A-Z][A-Z0-9_]*)",\s*"([a-z]+)"/g)) found.push({ file, code: m[1]!, category: m[2]! });
  }
  return found;
}

describe("the error catalogue", () => {
  it("lists every code cts constructs, with the category written at each place", async () => {
    const found = await constructions();
    assert.ok(found.length > 50, "the scan finds the constructions");
    for (const c of found) {
      assert.ok(isErrorCode(c.code), `${c.file}: ${c.code} is not in src/errors/catalogue.ts`);
      assert.equal(c.category, ERROR_CATALOGUE[c.code as keyof typeof ERROR_CATALOGUE].category, `${c.file}: ${c.code} is "${c.category}" here but "${ERROR_CATALOGUE[c.code as keyof typeof ERROR_CATALOGUE].category}" in the catalogue`);
    }
  });

  it("gives every code a fix that says what to do", () => {
    for (const [code, entry] of Object.entries(ERROR_CATALOGUE)) {
      assert.match(code, /^[A-Z][A-Z0-9_]+$/);
      assert.ok(entry.fix.length > 20 && /[.)]$/.test(entry.fix), `${code}: the fix is a sentence`);
    }
  });

  it("is listed code by code, with its fix, in the error table of docs/errors.md", async () => {
    const page = await readFile(ERRORS_PAGE, "utf8");
    const table = new Set([...page.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \| (usage|external|internal) \|/gm)].map((m) => `${m[1]} ${m[2]}`));
    for (const [code, entry] of Object.entries(ERROR_CATALOGUE)) assert.ok(table.has(`${code} ${entry.category}`), `docs/errors.md's error table lacks | \`${code}\` | ${entry.category} |`);
    assert.equal(table.size, Object.keys(ERROR_CATALOGUE).length, "docs/errors.md lists no code the catalogue lacks");
    assert.deepEqual(tableIn(page).lines, errorTable(), "docs/errors.md's table differs from the catalogue: run `node --import tsx scripts/error-table.ts --write`");
  });

  it("gives an error the catalogue's category and exit code", () => {
    const err = new CtsError("TASK_NOT_FOUND", "internal", "no task 'x'");
    assert.equal(err.category, "usage");
    assert.equal(err.exitCode, 2);
  });
});
