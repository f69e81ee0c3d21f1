import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import { anchors, inlineCode, linkTargets, pageLines } from "../support/markdown.ts";
import { normalizeStartArgs } from "../../src/cli/start-args.ts";
import { ctsTaskArgv } from "../../src/cts/cli/flags.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");

/** The pages a reader follows from the README: the README, docs/, and the READMEs it links to. */
const PAGES = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`), "ARCHITECTURE.md", "examples/README.md", "bench/README.md", "test/support/tfc-server/README.md"];

/** Languages of fenced blocks that hold shell commands ("" is a bare fence). */
const SHELL = new Set(["", "sh", "bash", "shell", "console"]);

/** A command shown in the docs, split into words, with where it is shown. */
interface Shown {
  where: string;
  words: string[];
  /** Inline code in prose: usage syntax (`[--json]`, `watch|once`), so only names are checked. */
  usage: boolean;
}

/** The words of one shell command as the docs show it, without env assignments, `sudo`, `npx` or `node bin/cts.js`. */
function commandWords(segment: string): string[] {
  const words = segment.trim().split(/\s+/).filter(Boolean);
  while (words.length && (/^[A-Z_][A-Z0-9_]*=/.test(words[0]!) || ["$", "sudo", "npx"].includes(words[0]!))) words.shift();
  if (words[0] === "node" && words[1]?.endsWith("bin/cts.js")) words.splice(0, 2, "cts");
  return words;
}

/** Every `cts …` and `npm …` command in fenced shell blocks, and in inline code that starts with one. */
function shownCommands(): Shown[] {
  const shown: Shown[] = [];
  for (const page of PAGES) {
    for (const { line, text, fence } of pageLines(read(page))) {
      const where = `${page}:${line}`;
      if (fence !== undefined) {
        if (!SHELL.has(fence)) continue;
        const command = text.replace(/(^|\s)#.*$/, "");
        for (const segment of command.split(/&&|\|\||;|\|/)) shown.push({ where, words: commandWords(segment), usage: false });
      } else {
        for (const code of inlineCode(text)) shown.push({ where, words: commandWords(code), usage: true });
      }
    }
  }
  return shown.filter((s) => s.words[0] === "cts" || s.words[0] === "npm");
}

/** The CLI as src/cli/main.ts builds it: every registrar main.ts imports, applied to one program. */
async function cli(): Promise<Command> {
  const main = read("src/cli/main.ts");
  const registrars = [
    ...[...main.matchAll(/import\("\.\/([\w-]+\.ts)"\)\)\.(register\w+)/g)].map((m) => ({ file: m[1]!, name: m[2]! })),
    ...[...main.matchAll(/import \{ (register\w+) \} from "\.\/([\w-]+\.ts)"/g)].map((m) => ({ file: m[2]!, name: m[1]! })),
  ];
  assert.ok(registrars.length >= 8, `found the registrars in src/cli/main.ts (${registrars.map((r) => r.name).join(", ")})`);
  const program = new Command().name("cts");
  const done = new Set<string>();
  for (const { file, name } of registrars) {
    if (done.has(name)) continue;
    done.add(name);
    const module = (await import(`../../src/cli/${file}`)) as Record<string, (p: Command) => void>;
    module[name]!(program);
  }
  return program;
}

/** The option spellings a command accepts. */
function optionNames(command: Command): Set<string> {
  const names = new Set(["--help", "-h"]);
  for (const o of command.options) for (const n of [o.long, o.short]) if (n) names.add(n);
  return names;
}

/** What is wrong with a `cts …` command as shown, or undefined when the CLI defines it. */
function ctsProblem(program: Command, shown: Shown): string | undefined {
  const [, name, ...rest] = shown.words;
  if (!name || !/^[a-z][a-z|-]*$/.test(name)) return undefined; // `cts …`, `cts <command>`: no command named
  for (const alternative of name.split("|")) {
    const command = program.commands.find((c) => c.name() === alternative);
    if (!command) return `\`cts ${alternative}\` is not a command of the CLI (${program.commands.map((c) => c.name()).join(", ")})`;
    let target = command;
    let args = rest;
    if (command.commands.length && args[0] && /^[a-z]/.test(args[0])) {
      const sub = command.commands.find((c) => c.name() === args[0]);
      if (!sub) return `\`cts ${alternative} ${args[0]}\` is not a command of the CLI (${command.commands.map((c) => c.name()).join(", ")})`;
      target = sub;
      args = args.slice(1);
    }
    // CTS's spellings (`-config-file`, `-http-addr`) are rewritten before parsing, as main.ts does.
    const argv = ctsTaskArgv(normalizeStartArgs(["node", "cts", alternative, ...(target === command ? [] : [target.name()]), ...args.map((a) => a.replace(/^\[|\]$/g, ""))]));
    const known = optionNames(target);
    for (const word of argv.slice(3)) {
      if (word === "--") break;
      const option = /^(--?[a-zA-Z][\w-]*)(=.*)?$/.exec(word)?.[1];
      if (option && !known.has(option)) return `\`cts ${alternative}${target === command ? "" : ` ${target.name()}`}\` has no option ${option} (it has ${[...known].join(", ")})`;
    }
  }
  return undefined;
}

/** What is wrong with an `npm …` command as shown, or undefined when package.json has its script. */
function npmProblem(scripts: Record<string, string>, shown: Shown): string | undefined {
  const [, verb, script] = shown.words;
  const name = verb === "run" || verb === "run-script" ? script : verb === "test" || verb === "start" ? verb : undefined;
  if (name === undefined || /[<…]/.test(name)) return undefined; // npm ci, npm install, npm run <script>
  return name in scripts ? undefined : `\`npm run ${name}\` is not a script of package.json (${Object.keys(scripts).join(", ")})`;
}

describe("the docs", () => {
  let program: Command;
  const shown = shownCommands();
  before(async () => {
    program = await cli();
  });

  it("link only to files that exist, and to headings those pages have", () => {
    const broken: string[] = [];
    let checked = 0;
    for (const page of PAGES) {
      for (const { line, text, fence } of pageLines(read(page))) {
        if (fence !== undefined) continue;
        for (const target of linkTargets(text)) {
          if (/^[a-z][a-z+.-]*:/i.test(target)) continue; // https:, mailto:
          checked++;
          const [path, anchor] = target.split("#", 2) as [string, string | undefined];
          const file = path ? resolve(ROOT, dirname(page), decodeURI(path)) : join(ROOT, page);
          if (!existsSync(file)) broken.push(`${page}:${line}: ${target} — no file ${relative(ROOT, file)}`);
          else if (anchor && file.endsWith(".md") && !anchors(readFileSync(file, "utf8")).has(anchor)) {
            broken.push(`${page}:${line}: ${target} — ${relative(ROOT, file)} has no heading #${anchor}`);
          }
        }
      }
    }
    assert.ok(checked > 50, `the scan finds the links (${checked})`);
    assert.deepEqual(broken, []);
  });

  it("show only `cts` commands and options the CLI defines", () => {
    const cts = shown.filter((s) => s.words[0] === "cts");
    assert.ok(cts.filter((s) => !s.usage).length >= 5 && cts.filter((s) => s.usage).length >= 20, "the scan finds the commands in fenced blocks and in prose");
    const wrong = cts.flatMap((s) => {
      const problem = ctsProblem(program, s);
      return problem ? [`${s.where}: ${problem}`] : [];
    });
    assert.deepEqual(wrong, []);
  });

  it("show only `npm run` scripts that package.json has", () => {
    const scripts = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts;
    const npm = shown.filter((s) => s.words[0] === "npm");
    assert.ok(npm.some((s) => s.words[1] === "run"), "the scan finds npm run commands");
    const wrong = npm.flatMap((s) => {
      const problem = npmProblem(scripts, s);
      return problem ? [`${s.where}: ${problem}`] : [];
    });
    assert.deepEqual(wrong, []);
  });

  it("say why each dependency is there", () => {
    const pkg = JSON.parse(read("package.json")) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
    const page = read("docs/contributing.md");
    const start = page.indexOf("## Dependencies and why each is there");
    assert.ok(start >= 0, "docs/contributing.md has the section");
    const end = page.indexOf("\n## ", start + 1);
    const section = page.slice(start, end < 0 ? undefined : end);
    const missing = [...Object.keys(pkg.dependencies), ...Object.keys(pkg.devDependencies)].filter((name) => !section.includes(`\`${name}\``));
    assert.deepEqual(missing, [], "every package of package.json is named (in backquotes) in docs/contributing.md's dependency section");
  });

  it("keep the README a front door that links every page of docs/", () => {
    const readme = read("README.md");
    assert.ok(readme.split("\n").length <= 250, `README.md has ${readme.split("\n").length} lines; move detail into docs/`);
    for (const page of PAGES.filter((p) => p.startsWith("docs/"))) assert.ok(readme.includes(`(${page})`), `README.md links ${page}`);
    assert.match(readme, /`npm run demo`/, "the README shows the command that runs the demo");
    assert.match(readme, /`npm test`/, "the README shows the command that runs the tests");
  });
});
