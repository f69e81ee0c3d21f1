import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import type { Command } from "commander";
import { CtsError } from "../errors.ts";
import { render } from "../render.ts";
import { taskNameProblem } from "../task/validate.ts";
import { completePackageJson, newPackageJson } from "./init-package.ts";

interface InitFlags {
  service: string;
  task: string;
  force?: boolean;
}

/** `cts init [dir]`: scaffolds a whole project (package.json, tsconfig, config, a task and its test). */
export function registerInit(program: Command): void {
  program
    .command("init")
    .description("Create a cts project: package.json, tsconfig.json, cts.config.ts, a first task and its unit test")
    .argument("[dir]", "where to create it", ".")
    .option("--service <name>", "the service the first task watches", "web")
    .option("--task <name>", "the first task's name", "web-members")
    .option("--force", "overwrite files that exist (package.json is only ever completed, never replaced)")
    .action(async (dir: string, flags: InitFlags) => {
      const problem = taskNameProblem(flags.task);
      if (problem) throw new CtsError("USAGE", "usage", `--task ${problem}`);
      if (!/^[A-Za-z0-9_.-]+$/.test(flags.service)) throw new CtsError("USAGE", "usage", `--service '${flags.service}' is not a Consul service name. Use letters, digits, '.', '_' and '-'.`);
      await scaffold(resolve(dir), flags, (line) => process.stdout.write(`${line}\n`));
    });
}

/** Writes the project files into `root`, skipping (and reporting) every file that already exists. */
export async function scaffold(root: string, flags: InitFlags, say: (line: string) => void): Promise<void> {
  const className = flags.task.replace(/(^|[-_])(\w)/g, (_, __, c: string) => c.toUpperCase()).replace(/[^A-Za-z0-9]/g, "") + "Task";
  const data = { className, fileName: flags.task, taskName: flags.task, service: flags.service, workingDir: "sync-tasks" };
  const files: Array<[string, string]> = [
    ["tsconfig.json", "init/tsconfig.json.hbs"],
    ["cts.config.ts", "init/cts.config.ts.hbs"],
    [`tasks/${flags.task}.ts`, "init/task.ts.hbs"],
    [`test/${flags.task}.test.ts`, "init/task.test.ts.hbs"],
    [".gitignore", "init/gitignore.hbs"],
  ];
  const show = (path: string) => {
    const rel = relative(process.cwd(), path);
    return rel.startsWith("..") ? path : rel || ".";
  };
  await mkdir(root, { recursive: true });

  const pkgPath = join(root, "package.json");
  if (!existsSync(pkgPath)) {
    await writeFile(pkgPath, newPackageJson(root));
    say(`created ${show(pkgPath)}`);
  } else {
    const done = completePackageJson(await readFile(pkgPath, "utf8"));
    if (done.added.length) {
      await writeFile(pkgPath, done.text);
      say(`updated ${show(pkgPath)}: added ${done.added.join(", ")}`);
    } else say(`skipped ${show(pkgPath)}: it has everything cts needs`);
    for (const w of done.warnings) say(`warning: ${w}`);
  }

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
