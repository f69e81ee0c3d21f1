import { readFile } from "node:fs/promises";
import { extname } from "node:path";
import { CtsError, messageOf } from "../errors/cts-error.ts";
import { attributesOf, parseHcl, type HclBlock, type HclBody, type HclValue } from "../config/hcl.ts";
import { readVariableFiles } from "./tfvars.ts";
import { isObject } from "../values/is-object.ts";

type Json = Record<string, unknown>;

// nodes, intentions and config-entries are cts's own (CTS has none), as in a CTS HCL config.
const OWN_TYPES: Record<string, string> = { nodes: "nodes", intentions: "intentions", "config-entries": "config_entries" };
const CONDITION_TYPES: Record<string, string> = {
  services: "services",
  "catalog-services": "catalog_services",
  "consul-kv": "consul_kv",
  ...OWN_TYPES,
  schedule: "schedule",
};
const INPUT_TYPES: Record<string, string> = { services: "services", "consul-kv": "consul_kv", ...OWN_TYPES };
const ATTRIBUTES = ["name", "description", "enabled", "module", "source", "version", "providers", "variables", "terraform_version", "cts_allow_empty", "cts_outputs", "cts_sensitive_outputs", "cts_after"];

/**
 * Reads a `--task-file`: JSON (`{"task":{...}}`, `{"task":[{...}]}` or a bare task, in the API's
 * shape) or HCL with one CTS `task` block. Returns the task in the API's JSON shape; the API
 * validates the fields.
 */
export async function readTaskFile(path: string): Promise<Json> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new CtsError("TASK_FILE_INVALID", "usage", `Cannot read task file '${path}': ${messageOf(err)}.`);
  }
  const ext = extname(path).toLowerCase();
  if (ext === ".json" || (ext !== ".hcl" && text.trimStart().startsWith("{"))) return fromJson(text, path);
  return taskFromHcl(text, path);
}

function fromJson(text: string, path: string): Json {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new CtsError("TASK_FILE_INVALID", "usage", `${path}: not valid JSON: ${messageOf(err)}.`);
  }
  if (!isObject(doc)) throw new CtsError("TASK_FILE_INVALID", "usage", `${path}: must hold a JSON object like {"task":{...}}.`);
  const task = doc.task === undefined ? doc : doc.task;
  const list = Array.isArray(task) ? task : [task];
  if (list.length !== 1 || !isObject(list[0])) throw new CtsError("TASK_FILE_INVALID", "usage", `${path}: must hold exactly one task (found ${list.length}).`);
  return list[0];
}

/** Converts the one `task` block of a CTS HCL file to the API's JSON shape. */
export async function taskFromHcl(text: string, file: string): Promise<Json> {
  const root = await parseHcl(text, file);
  const fail = (line: number, msg: string): never => {
    throw new CtsError("TASK_FILE_INVALID", "usage", `${file}:${line}: ${msg}`);
  };
  const tasks = root.blocks.filter((b) => b.type === "task");
  const other = [...root.blocks.filter((b) => b.type !== "task"), ...[...root.attributes.entries()].map(([k, v]) => ({ type: k, line: v.line }))];
  if (other.length) fail(other[0]!.line, `'${other[0]!.type}' is not allowed in a task file; it holds one task block only (providers and globals belong in the daemon's config).`);
  if (tasks.length !== 1) fail(tasks[1]?.line ?? 1, `a task file holds exactly one task block (found ${tasks.length}).`);
  const block = tasks[0]!;
  if (block.labels.length > 1) fail(block.line, `a task block takes at most one label (its name).`);
  const attrs = attributesOf(block.body);
  for (const [k, v] of block.body.attributes) {
    if (k !== "variable_files" && !ATTRIBUTES.includes(k)) fail(v.line, `'${k}' is not a task attribute. Use: ${ATTRIBUTES.join(", ")}.`);
  }
  const task: Json = {};
  const label = block.labels[0];
  if (label !== undefined && attrs.name !== undefined && attrs.name !== label) fail(block.line, `the task block's label ('${label}') and its name ('${String(attrs.name)}') differ. Keep one.`);
  const { variable_files: varFiles, ...rest } = attrs;
  for (const [k, v] of Object.entries(rest)) task[k === "source" ? "module" : k] = v;
  // As CTS's `task create` does: the files are read here and sent as variables; `variables` wins.
  if (varFiles !== undefined) {
    const fromFiles = await readVariableFiles(varFiles, `${file}:${block.body.attributes.get("variable_files")!.line}`);
    task.variables = { ...fromFiles, ...((task.variables as Json | undefined) ?? {}) };
  }
  if (label !== undefined) task.name = label;
  const inputs: Json = {};
  for (const b of block.body.blocks) {
    if (b.type === "condition") {
      if (task.condition) fail(b.line, "a task has one condition block.");
      task.condition = { [typed(b, CONDITION_TYPES, fail)]: plain(b.body, b, fail) };
    } else if (b.type === "module_input") {
      const key = typed(b, INPUT_TYPES, fail);
      if (inputs[key]) fail(b.line, `module_input "${b.labels[0]}" is given twice.`);
      inputs[key] = plain(b.body, b, fail);
    } else if (b.type === "buffer_period") {
      if (b.labels.length) fail(b.line, "buffer_period takes no label.");
      task.buffer_period = plain(b.body, b, fail);
    } else if (b.type === "terraform_cloud_workspace") {
      // Sent as CTS's API has it; the API checks it against the daemon's driver.
      if (b.labels.length) fail(b.line, "terraform_cloud_workspace takes no label.");
      task.terraform_cloud_workspace = plain(b.body, b, fail);
    } else if (b.type === "guards") {
      // cts's own block, as in a CTS HCL config's task; the API checks its values.
      if (b.labels.length) fail(b.line, "guards takes no label.");
      task.guards = plain(b.body, b, fail);
    } else fail(b.line, `'${b.type}' is not a block of a task. Use condition, module_input, buffer_period, terraform_cloud_workspace or guards.`);
  }
  if (Object.keys(inputs).length) task.module_input = inputs;
  return task;
}

function typed(b: HclBlock, types: Record<string, string>, fail: (line: number, msg: string) => never): string {
  const kind = b.labels[0];
  if (b.labels.length !== 1 || kind === undefined || !types[kind]) fail(b.line, `${b.type} needs one label: ${Object.keys(types).map((t) => `"${t}"`).join(", ")}.`);
  return types[kind!]!;
}

function plain(body: HclBody, b: HclBlock, fail: (line: number, msg: string) => never): { [k: string]: HclValue } {
  if (body.blocks.length) fail(body.blocks[0]!.line, `'${body.blocks[0]!.type}' is a block inside ${b.type}; write it as an attribute: ${body.blocks[0]!.type} = { ... }.`);
  return attributesOf(body);
}
