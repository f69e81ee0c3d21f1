import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

// The structure of src/ as a check: imports run down the layers, and no files form a circle.
// ARCHITECTURE.md ("Layers") says what each layer is for; change both together.

const SRC = fileURLToPath(new URL("../../src", import.meta.url));

/** Top-level files of src/ grouped into parts; every other part is a folder of src/. */
const FILE_PARTS: Record<string, readonly string[]> = {
  public: ["index.ts", "testing.ts", "assertions.ts", "register.ts"],
  shared: ["version.ts", "source-loader.mjs", "tls-files.ts"],
};

/**
 * The layers, top to bottom. A file imports files of its own part and of parts in lower layers;
 * parts in one layer are independent of each other.
 */
const LAYERS: ReadonlyArray<readonly string[]> = [
  ["cli", "public"],
  ["daemon"],
  ["api", "ha", "doctor"],
  ["runtime", "notify"],
  ["state"],
  ["synth", "watch"],
  ["config"],
  ["task"],
  ["cdktf", "consul", "vault"],
  ["terraform", "tfc"],
  ["driver"],
  ["log", "trace"],
  ["secrets", "metrics"],
  ["time", "values"],
  ["errors", "shared"],
];

/** Imports allowed to run against the layers, each with its reason (ARCHITECTURE.md lists them too). */
const EXCEPTIONS: ReadonlyArray<{ from: string; to: string; why: string }> = [];

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sourceFiles(p));
    else if (/\.(ts|mts|mjs)$/.test(e.name)) out.push(p);
  }
  return out;
}

/** src-relative path with forward slashes ("runtime/run.ts"). */
const srcPath = (file: string) => relative(SRC, file).split(sep).join("/");

/**
 * Every import between files of src/: `import … from`, `export … from`, `import type`, and
 * `import("…")` with a literal, as TypeScript's own pre-processor reads them (comments and strings
 * that merely look like imports are not imports).
 */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const targets: string[] = [];
    for (const { fileName } of ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles) {
      if (!fileName.startsWith(".")) continue; // a package
      let target = resolve(dirname(file), fileName);
      if (!existsSync(target) && target.endsWith(".js")) target = target.replace(/\.js$/, ".ts");
      if (!target.startsWith(SRC + sep)) continue;
      assert.ok(existsSync(target), `${srcPath(file)} imports '${fileName}', which does not exist`);
      targets.push(srcPath(target));
    }
    graph.set(srcPath(file), targets);
  }
  return graph;
}

function partOf(path: string): string | undefined {
  // src/cts/<part>/: CTS compatibility kept in one place, each file in the layer of the part it serves.
  if (path.startsWith("cts/")) return path.split("/")[1];
  const slash = path.indexOf("/");
  if (slash >= 0) return path.slice(0, slash);
  return Object.entries(FILE_PARTS).find(([, files]) => files.includes(path))?.[0];
}

function layerOf(part: string): number {
  return LAYERS.findIndex((layer) => layer.includes(part));
}

/** Strongly connected groups of more than one file (or a file importing itself): the circles. */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** Imports that go to a higher layer or sideways to another part of the same layer. */
function againstTheLayers(graph: Map<string, string[]>): { from: string; to: string; text: string }[] {
  const out: { from: string; to: string; text: string }[] = [];
  for (const [from, targets] of graph) {
    const a = partOf(from)!;
    for (const to of targets) {
      const b = partOf(to)!;
      if (a === b) continue;
      const [la, lb] = [layerOf(a), layerOf(b)];
      if (lb > la) continue;
      const how = lb === la ? `${a}/ and ${b}/ share layer ${la + 1} and must not import each other` : `${b}/ (layer ${lb + 1}) sits above ${a}/ (layer ${la + 1})`;
      out.push({ from, to, text: `src/${from} imports src/${to}: ${how}` });
    }
  }
  return out;
}

describe("the layers of src/", () => {
  const graph = importGraph();

  it("reads the imports the code has, static and dynamic", () => {
    assert.ok([...graph.values()].flat().length > 500, "the scan finds the imports");
    assert.ok(graph.get("cli/run.ts")?.includes("daemon/compose.ts"), "a dynamic import('…') counts");
    assert.ok(graph.get("watch/types.ts")?.includes("consul/types.ts"), "an `import type` counts");
  });

  it("places every file of src/ in a part, and every part in exactly one layer", () => {
    for (const file of graph.keys()) {
      const part = partOf(file);
      assert.ok(part, `src/${file} belongs to no part: add it to FILE_PARTS in test/unit/layering.test.ts (and ARCHITECTURE.md)`);
      assert.equal(LAYERS.filter((l) => l.includes(part)).length, 1, `part '${part}' (src/${file}) must be in exactly one layer of LAYERS in test/unit/layering.test.ts (and ARCHITECTURE.md)`);
    }
  });

  it("has every import run down the layers, except the listed ones", () => {
    const allowed = (v: { from: string; to: string }) => EXCEPTIONS.some((e) => e.from === v.from && e.to === v.to);
    const wrong = againstTheLayers(graph).filter((v) => !allowed(v));
    assert.deepEqual(
      wrong.map((v) => v.text),
      [],
      "Move the imported code down (or the importing code up), or pass it in through an interface of the lower layer. ARCHITECTURE.md shows the layers.",
    );
  });

  it("lists only exceptions the code still has, each with its reason", () => {
    const actual = againstTheLayers(graph);
    for (const e of EXCEPTIONS) {
      assert.ok(e.why.length > 20, `the exception ${e.from} → ${e.to} says why`);
      assert.ok(actual.some((v) => v.from === e.from && v.to === e.to), `the exception ${e.from} → ${e.to} is gone from the code: remove it here and in ARCHITECTURE.md`);
    }
    assert.ok(EXCEPTIONS.length <= 3, "at most 3 exceptions");
  });

  it("has no files that import each other in a circle", () => {
    assert.deepEqual(circles(graph), [], "Files in a circle cannot be read bottom-up: move the shared piece into a file both import.");
  });

  it("finds a circle and an import against the layers when there is one", () => {
    const made = new Map([
      ["task/a.ts", ["task/b.ts"]],
      ["task/b.ts", ["runtime/c.ts", "task/a.ts"]],
      ["runtime/c.ts", []],
    ]);
    assert.deepEqual(circles(made), [["task/a.ts", "task/b.ts"]]);
    assert.deepEqual(
      againstTheLayers(made).map((v) => v.to),
      ["runtime/c.ts"],
    );
  });
});
