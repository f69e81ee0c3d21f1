import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import type { Command } from "commander";
import { CtsError } from "../errors/cts-error.ts";
import { render } from "../values/render.ts";
import { taskNameProblem } from "../task/validate.ts";
import { CDK_NAMES, type CdkName } from "../cdktf/cdk-library.ts";
import { completePackageJson, newPackageJson } from "./init-package.ts";

interface InitFlags {
  service: string;
  /** The CDK library the project's tasks use (default cdktf). */
  cdk?: string;
  /** Default: `<service>-members`. */
  task?: string;
  force?: boolean;
}

/** `cts init [dir]`: scaffolds a whole project (package.json, tsconfig, config, a task and its test). */
export function registerInit(program: Command): void {
  program
    .command("init")
    .description("Create a cts project: package.json, tsconfig.json, cts.config.ts, a first task and its unit test")
    .argument("[dir]", "where to create it", ".")
    .option("--service <name>", "the service the task watches; in a project that has a config, adds a task for it", "web")
    .option("--task <name>", "the task's name (default: <service>-members)")
    .option("--force", "overwrite files that exist (package.json is only ever completed, never replaced)")
    .option("--cdk <library>", "the CDK the tasks are written with: cdktf, or cdktn (CDK Terrain, cdktf's maintained fork); default: the one package.json depends on, else cdktf")
    .action(async (dir: string, flags: InitFlags) => {
      if (flags.cdk !== undefined && !CDK_NAMES.includes(flags.cdk as CdkName)) throw new CtsError("USAGE", "usage", `--cdk '${flags.cdk}' is not a CDK cts synthesizes with. Use cdktf or cdktn.`);
      if (!/^[A-Za-z0-9_.-]+$/.test(flags.service)) throw new CtsError("USAGE", "usage", `--service '${flags.service}' is not a Consul service name. Use letters, digits, '.', '_' and '-'.`);
      const problem = taskNameProblem(flags.task ?? `${flags.service}-members`);
      if (problem) throw new CtsError("USAGE", "usage", `--task ${problem}`);
      // Every file is written before a line is printed: a reader that goes away (`cts init | head`)
      // cannot leave the project half made.
      const lines: string[] = [];
      try {
        await scaffold(resolve(dir), flags, (line) => lines.push(line));
      } finally {
        if (lines.length) process.stdout.write(`${lines.join("\n")}\n`);
      }
    });
}

/** Writes the project files into `root`, skipping (and reporting) every file that already exists. */
export async function scaffold(root: string, flags: InitFlags, say: (line: string) => void): Promise<void> {
  const taskName = flags.task ?? `${flags.service}-members`;
  const className = taskClassName(taskName);
  const data = { className, fileName: taskName, taskName, service: flags.service, workingDir: "sync-tasks" };
  const cdk = (flags.cdk as CdkName | undefined) ?? (await projectCdk(join(root, "package.json")));
  // cdktn's example task keeps its data in terraform_data, built into Terraform: there is no
  // @cdktn/provider-local, and it needs no provider at all.
  const flavour = cdk === "cdktn" ? ".cdktn" : "";
  const files: Array<[string, string]> = [
    ["tsconfig.json", "init/tsconfig.json.hbs"],
    ["cts.config.ts", "init/cts.config.ts.hbs"],
    [`tasks/${taskName}.ts`, `init/task${flavour}.ts.hbs`],
    [`test/${taskName}.test.ts`, `init/task${flavour}.test.ts.hbs`],
    [".gitignore", "init/gitignore.hbs"],
  ];
  const show = (path: string) => {
    const rel = relative(process.cwd(), path);
    return rel.startsWith("..") ? path : rel || ".";
  };
  await mkdir(root, { recursive: true });

  const pkgPath = join(root, "package.json");
  if (!existsSync(pkgPath)) {
    await writeFile(pkgPath, newPackageJson(root, cdk));
    say(`created ${show(pkgPath)}`);
  } else {
    const done = completePackageJson(await readFile(pkgPath, "utf8"), await javaScriptFiles(root), cdk);
    // Nothing is written when the package needs the user's decision: the project stays as it was.
    if (done.problem) throw new CtsError("INIT_PACKAGE_TYPE", "usage", `${show(pkgPath)}: ${done.problem}`);
    if (done.added.length || done.changed.length) {
      await writeFile(pkgPath, done.text);
      say(`updated ${show(pkgPath)}:${done.added.length ? ` added ${done.added.join(", ")}` : ""}`);
      for (const c of done.changed) say(`  changed ${c}`);
    } else say(`skipped ${show(pkgPath)}: it has everything cts needs`);
  }

  const configPath = join(root, "cts.config.ts");
  const configExisted = existsSync(configPath);
  for (const [name, template] of files) {
    const path = join(root, name);
    if (existsSync(path) && !flags.force) {
      say(`skipped ${show(path)}: it exists (pass --force to overwrite it)`);
      continue;
    }
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, render({ file: template }, data));
    say(`created ${show(path)}`);
  }
  if (configExisted && !flags.force) await addTaskToConfig(configPath, className, taskName, say, show);
  say(
    [
      "",
      "Next:",
      ...(root === process.cwd() ? [] : [`  cd ${show(root)}`]),
      "  npm install             # cdktf-sync, the provider bindings, TypeScript",
      "  npx tsc --noEmit        # type-check the config and the tasks",
      "  npm test                # the task's unit test (no Consul or Terraform needed)",
      "  npx cts doctor          # Consul, token permissions, Terraform binary, providers, ports",
      "  npx cts synth --stdout  # the Terraform JSON the task produces from Consul's data",
      "  npx cts once            # run every task once (npx cts watch: keep running)",
    ].join("\n"),
  );
}

/** The library an existing project's package.json depends on: cdktn if it has cdktn and not cdktf. */
async function projectCdk(pkgPath: string): Promise<CdkName> {
  try {
    const pkg = JSON.parse(await readFile(pkgPath, "utf8")) as Record<string, Record<string, string> | undefined>;
    const deps = { ...pkg.dependencies, ...pkg.devDependencies };
    return "cdktn" in deps && !("cdktf" in deps) ? "cdktn" : "cdktf";
  } catch {
    return "cdktf"; // no package.json yet (or one completePackageJson will report on)
  }
}

/** `web-members` → `WebMembersTask`. */
function taskClassName(taskName: string): string {
  return taskName.replace(/(^|[-_.])(\w)/g, (_, __, c: string) => c.toUpperCase()).replace(/[^A-Za-z0-9]/g, "") + "Task";
}

/** JavaScript files `"type"` governs (the project's root and one level down, not node_modules or dot folders). */
async function javaScriptFiles(root: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string, depth: number) => {
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
      if (entry.isDirectory() && depth < 1) await walk(join(dir, entry.name), depth + 1);
      else if (entry.isFile() && entry.name.endsWith(".js")) found.push(relative(root, join(dir, entry.name)));
    }
  };
  await walk(root, 0);
  return found.sort();
}

// The tasks line of the config `cts init` writes: one line, an array of `new XTask()`.
const OUR_TASKS_LINE = /^( {2}tasks: \[)((?:new [A-Za-z0-9_]+\(\)(?:, )?)*)(\],)$/m;

/**
 * Adds the new task to an existing config: edited in place when it is the config `cts init` wrote
 * (its tasks line still reads as generated), otherwise the lines to add are printed.
 */
async function addTaskToConfig(path: string, className: string, taskName: string, say: (line: string) => void, show: (path: string) => string): Promise<void> {
  const text = await readFile(path, "utf8");
  const importLine = `import { ${className} } from "./tasks/${taskName}.ts";`;
  if (text.includes(importLine) && new RegExp(`new ${className}\\(`).test(text)) {
    say(`skipped ${show(path)}: it already runs ${className}`);
    return;
  }
  const tasks = OUR_TASKS_LINE.exec(text);
  const imports = [...text.matchAll(/^import .*;$/gm)];
  if (!tasks || imports.length === 0) {
    say(`${show(path)} is not the config cts init wrote; add the task to it yourself:`);
    say(`  ${importLine}`);
    say(`  tasks: [..., new ${className}()],`);
    return;
  }
  const last = imports[imports.length - 1]!;
  const afterImports = last.index! + last[0].length;
  let edited = text.includes(importLine) ? text : `${text.slice(0, afterImports)}\n${importLine}${text.slice(afterImports)}`;
  edited = edited.replace(OUR_TASKS_LINE, (_, open: string, list: string, close: string) => `${open}${list ? `${list}, ` : ""}new ${className}()${close}`);
  await writeFile(path, edited);
  say(`updated ${show(path)}: added ${className} to tasks`);
}
