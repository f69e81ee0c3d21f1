import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { CtsError } from "../errors.ts";
import { render } from "../render.ts";
import { taskNameProblem } from "../task/validate.ts";

/** `cts init`: scaffolds cts.config.ts and a first task class from templates/init. */
export function registerInit(program: Command): void {
  program
    .command("init")
    .description("Create cts.config.ts and a first task class")
    .argument("[dir]", "where to create them", ".")
    .option("--service <name>", "the service the first task watches", "web")
    .option("--task <name>", "the first task's name", "web-members")
    .option("--force", "overwrite existing files")
    .action(async (dir: string, flags: { service: string; task: string; force?: boolean }) => {
      const problem = taskNameProblem(flags.task);
      if (problem) throw new CtsError("USAGE", "usage", `--task ${problem}`);
      const root = resolve(dir);
      const className = flags.task.replace(/(^|[-_])(\w)/g, (_, __, c: string) => c.toUpperCase()).replace(/[^A-Za-z0-9]/g, "") + "Task";
      const fileName = flags.task;
      const data = { className, fileName, taskName: flags.task, service: flags.service, consulAddress: process.env.CONSUL_HTTP_ADDR ?? "127.0.0.1:8500" };
      const files: Array<[string, string]> = [
        [join(root, "cts.config.ts"), render({ file: "init/cts.config.ts.hbs" }, data)],
        [join(root, "tasks", `${fileName}.ts`), render({ file: "init/task.ts.hbs" }, data)],
      ];
      for (const [path] of files)
        if (existsSync(path) && !flags.force) throw new CtsError("FILE_EXISTS", "usage", `${path} already exists. Pass --force to overwrite it.`);
      await mkdir(join(root, "tasks"), { recursive: true });
      for (const [path, text] of files) {
        await writeFile(path, text);
        process.stdout.write(`created ${path}\n`);
      }
      process.stdout.write(`\nNext: review the task, then run \`cts synth --stdout\` to see the Terraform JSON it produces.\n`);
    });
}
