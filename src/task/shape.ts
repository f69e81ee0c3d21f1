import { CtsError } from "../errors/cts-error.ts";
import type { Problem } from "../errors/problems.ts";

// Task classes are written by users and loaded without a type-check (tsx strips types), so the
// mistakes tsc would catch arrive here at run time: each one gets a message naming the class and
// the fix instead of a TypeError from deep inside the runtime.

/** The name of an object's class, for messages ("WebPool"), or a description of the value. */
export function className(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object") return typeof value;
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === "string" && name !== "" ? name : "an anonymous class";
}

const EXAMPLE = 'super({ name: "web-pool", condition: services({ names: ["web"] }) })';

/**
 * The error for `super()` called without options. Class fields (`name = "x"`) are assigned only
 * after Task's constructor returned, so a class that declares them still reaches here without a name.
 */
export function missingOptionsError(task: object): CtsError {
  const cls = className(task);
  const source = String((task as { constructor?: unknown }).constructor ?? "");
  const fields = ["name", "condition"].filter((f) => new RegExp(`(?:^|[{;}])\\s*(?:(?:override|readonly|public|declare)\\s+)*${f}\\s*[=;:!}]`, "m").test(source));
  const why = fields.length
    ? `it declares ${fields.map((f) => `'${f}'`).join(" and ")} as class field${fields.length > 1 ? "s" : ""}, which are set only after Task's constructor ran. Remove the field${fields.length > 1 ? "s" : ""} and pass them to super() instead`
    : "its constructor must pass the task's options to Task";
  return new CtsError("TASK_SHAPE_INVALID", "usage", `Task class '${cls}' was constructed without options: ${why}: constructor() { ${EXAMPLE}; }`, {
    detail: { class: cls, ...(fields.length ? { classFields: fields } : {}) },
  });
}

/** Problems with how a value in `tasks` was built (not a task, no synthesize, bad options object). */
export function shapeProblems(value: unknown): Problem[] {
  if (typeof value === "function") {
    const name = (value as { name?: string }).name || "MyTask";
    return [{ field: "", message: `is the class ${name}, not an instance. Write \`new ${name}()\`.` }];
  }
  const cls = className(value);
  if (!value || typeof value !== "object")
    return [{ field: "", message: `is ${cls === "undefined" || cls === "null" ? cls : `a ${cls}`}, not a task. Put instances in the list: tasks: [new MyTask()].` }];
  const v = value as { synthesize?: unknown };
  const p: Problem[] = [];
  if (typeof v.synthesize !== "function")
    p.push({ field: "synthesize", message: `is missing: class ${cls} must define synthesize(scope, input), the method that builds the task's resources. Extend Task from "cdktf-sync" and add it.` });
  return p;
}

/** Problems with duplicate task names (fields `tasks[i].name`), naming both classes. */
export function duplicateNameProblems(tasks: ReadonlyArray<unknown>): Problem[] {
  const seen = new Map<string, number>();
  const p: Problem[] = [];
  tasks.forEach((task, i) => {
    if (!task || typeof task !== "object" || typeof (task as { name?: unknown }).name !== "string") return;
    const name = (task as { name: string }).name;
    const prev = seen.get(name);
    if (prev === undefined) {
      seen.set(name, i);
      return;
    }
    const a = className(tasks[prev]);
    const b = className(task);
    const hint =
      a === b && a !== "ModuleTask"
        ? `Both are ${a}: give its constructor a name parameter (constructor(name: string) { super({ name, … }) }) and pass different names.`
        : "Rename one of them.";
    p.push({ field: `tasks[${i}].name`, message: `'${name}' is also the name of tasks[${prev}] (classes ${a} and ${b}); task names must be unique. ${hint}` });
  });
  return p;
}
