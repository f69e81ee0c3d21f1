import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The files `npm pack` puts in the package (without building it: the README links no build output). */
function packedFiles(): Promise<string[]> {
  return new Promise((resolve, reject) =>
    execFile("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`npm pack --dry-run failed: ${stderr}`));
      const [pack] = JSON.parse(stdout.slice(stdout.indexOf("["))) as Array<{ files: Array<{ path: string }> }>;
      resolve(pack!.files.map((f) => f.path));
    }),
  );
}

/** Every relative link target of a Markdown text (images too), without its #anchor. */
function relativeLinks(markdown: string): string[] {
  const targets = [...markdown.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g), ...markdown.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/gm)].map((m) => m[1]!);
  return [...new Set(targets.filter((t) => !/^([a-z][a-z0-9+.-]*:|#)/i.test(t)).map((t) => decodeURI(t.split("#")[0]!).replace(/^\.\//, "").replace(/\/$/, "")))];
}

describe("the README on the registry page", () => {
  it("links only files the npm package ships (docs/, examples/, ARCHITECTURE.md …)", { timeout: 120_000 }, async () => {
    const files = await packedFiles();
    const links = relativeLinks(await readFile(new URL("README.md", `file://${ROOT}`), "utf8"));
    assert.ok(links.some((l) => l.startsWith("docs/")), "the README links the docs");
    const dead = links.filter((l) => !files.includes(l) && !files.some((f) => f.startsWith(`${l}/`)));
    assert.deepEqual(dead, [], `README links that the package does not ship: ${dead.join(", ")}. Add them to "files" in package.json, or link what ships.`);
  });

  it("finds inline, image and reference links, and leaves out web addresses and anchors", () => {
    assert.deepEqual(relativeLinks('[a](docs/a.md#x) ![p](./docs/p.png) [w](https://x.io/y) [h](#top) [d](examples/firewall/)\n[ref]: docs/r.md "t"'), ["docs/a.md", "docs/p.png", "examples/firewall", "docs/r.md"]);
  });
});
