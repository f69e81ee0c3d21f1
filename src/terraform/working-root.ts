import { CtsError, messageOf } from "../errors/cts-error.ts";
import { folderError } from "../driver/safe-files.ts";
import { childPath, validateTaskName } from "../driver/task-name.ts";
import { takeOverCtsFiles, takeOverLine } from "../cts/terraform/takeover.ts";
import { recoverWorkingDir } from "./recovery.ts";
import type { TaskWorkspace } from "./types.ts";
import { ensureTaskDir, writeTaskFiles } from "./working-dir.ts";

/**
 * The driver's working dir: one folder per task under `root`. Before the first task uses it, what
 * a crashed daemon left there is cleaned up (recovery.ts); a file-system failure is a
 * WORKING_DIR_UNUSABLE error naming the folder, the cause and the fix.
 */
export class WorkingRoot {
  private recovered: Promise<void> | undefined;
  /** Folders already checked for CTS's files (once per folder per driver). */
  private readonly checked = new Set<string>();

  constructor(
    readonly root: string,
    private readonly killGraceMs: number,
    private readonly notice: (line: string) => void,
    private readonly taskNotice: (task: string, line: string) => void = (task, line) => notice(`task '${task}': ${line}`),
    /** Tasks with a folder of their own elsewhere (name → absolute folder). */
    private readonly own: Record<string, string> = {},
  ) {}

  /**
   * On the first operation of a task in this driver: when its folder holds the root module
   * Consul-Terraform-Sync generated, moves CTS's files aside (src/cts/terraform/takeover.ts), logged once.
   */
  takeOver(dir: string, task: string): Promise<void> {
    if (this.checked.has(dir)) return Promise.resolve();
    return this.filesStep(task, async () => {
      const done = takeOverCtsFiles(dir, task);
      this.checked.add(dir);
      if (done) this.taskNotice(task, takeOverLine(done));
    });
  }

  /** The task's folder, created when missing (start-up clean-up done first, once per driver). */
  async prepare(task: string): Promise<string> {
    const dir = await this.filesStep(task, () => ensureTaskDir(this.root, task, this.ownDir(task)));
    await (this.recovered ??= recoverWorkingDir(this.root, this.killGraceMs, this.notice, this.own).catch((err: unknown) => this.notice(`start-up clean-up failed: ${messageOf(err)}`)));
    return dir;
  }

  /** Writes the task's main.tf.json and extra files into its folder. */
  writeFiles(dir: string, ws: TaskWorkspace): Promise<void> {
    return this.filesStep(ws.task, () => writeTaskFiles(dir, ws.task, ws.json, ws.files));
  }

  /** Absolute folder of a task (its own, or `<root>/<task>`); throws TASK_NAME_INVALID for bad names. */
  taskDir(task: string): string {
    validateTaskName(task);
    return this.folderOf(task);
  }

  /** The task's folder without judging the name (only refusing a path outside root): to find what works there. */
  folderOf(task: string): string {
    return this.ownDir(task) ?? childPath(this.root, task, task);
  }

  private ownDir(task: string): string | undefined {
    return Object.hasOwn(this.own, task) ? this.own[task] : undefined;
  }

  /**
   * Turns a file-system failure while preparing the task folder into WORKING_DIR_UNUSABLE: the
   * folder, the cause and the fix (the safe writes already say which file).
   */
  private async filesStep<T>(task: string, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err) {
      if (err instanceof CtsError) throw err;
      throw folderError("prepare the working directory", this.folderOf(task), err, task);
    }
  }
}
