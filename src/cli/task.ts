import type { Command } from "commander";
import { readFileSync } from "node:fs";
import { extname } from "node:path";
import { encodeVariables } from "../cts/api/variables.ts";
import { downstreamRefusal } from "../api/task-chain.ts";
import { CtsError } from "../errors/cts-error.ts";
import { ApiClient, clientOptionsFrom, type ApiBody, type ApiClientOptions } from "./api-client.ts";
import { confirm } from "./confirm.ts";
import { daemonAddress } from "./daemon-address.ts";
import { printJson, table } from "./output.ts";
import { readTaskFile } from "./task-file.ts";
import { readVariableFiles } from "./tfvars.ts";

interface TaskFlags extends ApiClientOptions {
  httpAddr?: string;
  /** The config whose `api` settings give the address when neither --http-addr nor CTS_ADDRESS does. */
  config?: string;
  /** CTS's deprecated -port: replaces the port of the address. */
  port?: string;
  json?: boolean;
  autoApprove?: boolean;
  destroy?: boolean;
  taskFile?: string;
}

/**
 * Adds --http-addr and the TLS flags (CTS's names; one or two dashes, see src/cts/cli/flags.ts) and --json
 * to an API command.
 */
export function apiOptions(cmd: Command): Command {
  return cmd
    .option("--http-addr <url>", "address of the cts API (default CTS_ADDRESS, then the config's api.address/api.port, then http://127.0.0.1:8558)")
    .option("--config <file>", "the config whose api settings give the address (default ./cts.config.ts, when it exists)")
    .option("--port <port>", "deprecated (CTS): the port of the API; prefer --http-addr")
    .option("--ca-cert <file>", "CA that signed the API's certificate (default CTS_CACERT)")
    .option("--ca-path <dir>", "directory of CA certificates, used when --ca-cert is not set (default CTS_CAPATH)")
    .option("--ssl-verify", "verify the API's certificate (the default; CTS_SSL_VERIFY)")
    .option("--no-ssl-verify", "do not verify the API's certificate (CTS's -ssl-verify=false)")
    .option("--client-cert <file>", "client certificate for an API with mutual TLS (default CTS_CLIENT_CERT)")
    .option("--client-key <file>", "key of the client certificate (default CTS_CLIENT_KEY)")
    .option("--token <token>", "bearer token for task-changing calls (default CTS_HTTP_TOKEN)")
    .option("--json", "print the API's answer as JSON (for scripts)");
}

/** The API client a command's flags describe (every API command: the same address, see daemonAddress). */
export const clientFor = async (flags: TaskFlags) => new ApiClient(await baseUrl(flags), clientOptionsFrom(flags));

/** The API address; CTS's deprecated -port replaces the port of CTS_ADDRESS (or the config's, or the default) and warns. */
async function baseUrl(flags: TaskFlags): Promise<string> {
  const base = await daemonAddress(flags);
  if (flags.port === undefined || flags.httpAddr !== undefined) return base;
  if (!/^\d{1,5}$/.test(flags.port) || Number(flags.port) > 65535) throw new CtsError("HTTP_ADDR_INVALID", "usage", `--port '${flags.port}' is not a port. Use --http-addr http://host:port instead.`);
  process.stderr.write("Warning: '-port' is deprecated (as in CTS). Use -http-addr instead.\n");
  const url = new URL(base);
  url.port = flags.port;
  return url.origin;
}
const client = clientFor;
// With --json, stdout carries only the JSON; plans and questions go to stderr.
const human = (flags: TaskFlags) => (flags.json ? process.stderr : process.stdout);

function showPlan(flags: TaskFlags, task: string, inspect: { changes_present?: boolean; plan?: string; url?: string; tfc_run_url?: string } | undefined): boolean {
  const out = human(flags);
  const changes = inspect?.changes_present === true;
  out.write(`==> Inspecting task '${task}': ${changes ? "changes present" : "no changes"}\n`);
  if (inspect?.plan) out.write(inspect.plan.trimEnd() + "\n");
  // Terraform Cloud driver: the speculative run's page, in CTS's words.
  const url = inspect?.url ?? inspect?.tfc_run_url;
  if (url) out.write(`Inspection results can also be viewed at: ${url}\n`);
  out.write("\n");
  return changes;
}

function runSummary(run: ApiBody | undefined): string {
  if (!run) return "";
  const s = run.summary as { add: number; change: number; destroy: number } | undefined;
  return s ? `${run.outcome} (${s.add} added, ${s.change} changed, ${s.destroy} destroyed)` : String(run.outcome);
}

/** Asks; an answer other than "yes" cancels the command with nothing changed (exit 0, as in CTS). */
async function approve(flags: TaskFlags, what: string): Promise<boolean> {
  const ok = await confirm(`Do you want to ${what}?`, what, { autoApprove: flags.autoApprove === true });
  if (!ok) process.stdout.write(`Cancelled: nothing was changed (did not ${what}).\n`);
  return ok;
}

/** `cts task list|enable|disable|run|create|delete`: operate a running daemon through its API. */
export function registerTask(program: Command): void {
  const task = program.command("task").description("List and change the tasks of a running cts (through its HTTP API)");

  apiOptions(task.command("list"))
    .description("List tasks with their status")
    .action(async (flags: TaskFlags) => {
      const api = await client(flags);
      const [{ tasks }, statuses] = await Promise.all([api.call("GET", "/v1/tasks"), api.call("GET", "/v1/status/tasks")]);
      const rows: ApiBody[] = (tasks as ApiBody[]).map((t) => ({ ...t, status: statuses[t.name]?.status ?? "unknown" }));
      if (flags.json) return printJson({ tasks: rows });
      // Task chains: an AFTER column once a task runs after others (the tasks whose outputs it reads).
      const chained = rows.some((t) => Array.isArray(t.cts_after) && t.cts_after.length > 0);
      const after = (t: ApiBody) => (chained ? [Array.isArray(t.cts_after) && t.cts_after.length ? t.cts_after.join(",") : "-"] : []);
      process.stdout.write(
        table([
          ["NAME", "ENABLED", "STATUS", "ORIGIN", "MODULE", "CONDITION", ...(chained ? ["AFTER"] : [])],
          ...rows.map((t) => [t.name, String(t.enabled), t.status, t.origin ?? "-", t.module, conditionText(t.condition), ...after(t)]),
        ]),
      );
    });

  apiOptions(task.command("enable"))
    .description("Enable a task: shows the plan, asks, then enables and runs it")
    .argument("<name>", "task name")
    .option("--auto-approve", "do not ask before changing infrastructure")
    .action(async (name: string, flags: TaskFlags) => {
      const api = await client(flags);
      const current = (await api.call("GET", ApiClient.taskPath(name))).task as ApiBody;
      if (current.enabled) {
        if (flags.json) return printJson({ task: current, changed: false });
        return void process.stdout.write(`Task '${name}' is already enabled.\n`);
      }
      const { inspect } = await api.call("PATCH", ApiClient.taskPath(name), { body: { enabled: true }, query: { run: "inspect" } });
      if (showPlan(flags, name, inspect) && !(await approve(flags, `enable task '${name}' and apply these changes`))) return;
      const res = await api.call("PATCH", ApiClient.taskPath(name), { body: { enabled: true }, query: { run: "now" } });
      if (flags.json) return printJson({ ...res, inspect, changed: true });
      process.stdout.write(`Task '${name}' enabled and run: ${runSummary(res.run)}.\n`);
    });

  apiOptions(task.command("disable"))
    .description("Disable a task (its infrastructure stays as it is)")
    .argument("<name>", "task name")
    .action(async (name: string, flags: TaskFlags) => {
      const res = await (await client(flags)).call("PATCH", ApiClient.taskPath(name), { body: { enabled: false } });
      if (flags.json) return printJson(res);
      process.stdout.write(`Task '${name}' disabled.\n`);
    });

  apiOptions(task.command("run"))
    .description("Run an enabled task now and wait for the result")
    .argument("<name>", "task name")
    .option("--force", "apply even when the task's inputs equal what it applied last (after a lost Terraform state, or a change made by hand)")
    .action(async (name: string, flags: TaskFlags & { force?: boolean }) => {
      const api = await client(flags);
      const current = (await api.call("GET", ApiClient.taskPath(name))).task as ApiBody;
      if (!current.enabled) throw new CtsError("TASK_DISABLED", "usage", `Task '${name}' is disabled. Enable it with \`cts task enable ${name}\`.`);
      const res = await api.call("PATCH", ApiClient.taskPath(name), { body: { enabled: true }, query: { run: "now", ...(flags.force ? { force: "true" } : {}) } });
      if (flags.json) return printJson(res);
      process.stdout.write(`Task '${name}' ran: ${runSummary(res.run)}.\n`);
    });

  apiOptions(task.command("create"))
    .description("Create a module task from a file (JSON, or HCL with one CTS task block): shows the plan, asks, then creates and runs it")
    .requiredOption("--task-file <file>", "the task: JSON ({\"task\":{...}}) or HCL (task \"name\" { ... })")
    .option("--auto-approve", "do not ask before changing infrastructure")
    .action(async (flags: TaskFlags) => {
      const spec = await taskFromFile(flags.taskFile!);
      const api = await client(flags);
      const name = String(spec.name ?? "");
      const dry = await api.call("POST", "/v1/tasks", { body: { task: spec }, query: { run: "inspect" } });
      const inspect = dry.inspect ?? dry.run;
      if (showPlan(flags, name, inspect) && !(await approve(flags, `create task '${name}' and apply these changes`))) return;
      const res = await api.call("POST", "/v1/tasks", { body: { task: spec }, query: { run: "now" } });
      if (flags.json) return printJson({ ...res, inspect });
      process.stdout.write(`Task '${name}' created${res.run ? ` and run: ${runSummary(res.run)}` : " (disabled, not run)"}.\n`);
      const runUrl = (res.run as ApiBody | undefined)?.tfc_run_url;
      if (typeof runUrl === "string") process.stdout.write(`Terraform Cloud Run URL: ${runUrl}\n`);
    });

  apiOptions(task.command("delete"))
    .description("Delete a task once it is not running; --destroy first destroys the infrastructure it manages")
    .argument("<name>", "task name")
    .option("--destroy", "destroy every resource in the task's Terraform state before deleting it")
    .option("--auto-approve", "do not ask for confirmation")
    .action(async (name: string, flags: TaskFlags) => {
      const api = await client(flags);
      await api.call("GET", ApiClient.taskPath(name));
      // Task chains: the daemon refuses to delete a task others run after (409); say so before asking.
      const { tasks } = await api.call("GET", "/v1/tasks");
      const refusal = downstreamRefusal(name, ((tasks ?? []) as ApiBody[]).map((t) => ({ name: String(t.name), after: Array.isArray(t.cts_after) ? (t.cts_after as string[]) : undefined })));
      if (refusal) throw new CtsError("API_REQUEST_REFUSED", "usage", refusal, { detail: { status: 409 } });
      const out = human(flags);
      if (flags.destroy) out.write(`Task '${name}': every resource in its Terraform state (workspace '${name}') will be DESTROYED, then the task is deleted.\n`);
      else out.write(`Task '${name}' will be deleted. Its infrastructure is left as it is (use --destroy to destroy it).\n`);
      if (!(await approve(flags, flags.destroy ? `destroy the infrastructure of task '${name}' and delete it` : `delete task '${name}'`))) return;
      const res = await api.call("DELETE", ApiClient.taskPath(name), { query: { destroy: flags.destroy ? "true" : undefined } });
      if (flags.json) return printJson(res);
      process.stdout.write(`Task '${name}' deleted${flags.destroy ? ` (${res.destroyed ?? 0} resources destroyed)` : ""}.\n`);
    });
}

/** The task a --task-file describes, in the API's shape, its variables as CTS's CLI sends them. */
async function taskFromFile(path: string): Promise<ApiBody> {
  const spec = await readTaskFile(path);
  const vars = (v: unknown) => (v && typeof v === "object" ? (v as Record<string, unknown>) : {});
  // An HCL file holds real values (its variable_files already read): sent in CTS's encoding,
  // which no server rule can misread ("1.50" stays text).
  if (isHclFile(path)) return spec.variables === undefined ? spec : { ...spec, variables: encodeVariables(vars(spec.variables)) };
  // A JSON file may hold an API answer, variables already encoded: sent as they are. The
  // variable_files of a CTS JSON config are read here, as CTS's CLI does.
  const { variable_files: files, ...rest } = spec;
  if (files === undefined) return spec;
  return { ...rest, variables: { ...encodeVariables(await readVariableFiles(files, path)), ...vars(rest.variables) } };
}

/** Whether readTaskFile reads this file as HCL (by extension; else a file not starting with `{`). */
function isHclFile(path: string): boolean {
  const ext = extname(path).toLowerCase();
  if (ext === ".hcl") return true;
  if (ext === ".json") return false;
  return !readFileSync(path, "utf8").trimStart().startsWith("{");
}

/** One-line summary of a condition in CTS's shape. */
export function conditionText(condition: ApiBody | undefined): string {
  const [kind, c] = Object.entries(condition ?? {})[0] ?? [];
  if (!kind || !c) return "-";
  if (kind === "services") return `services ${c.names ? c.names.join(",") : `regexp=${c.regexp}`}`;
  if (kind === "catalog_services") return `catalog-services regexp=${c.regexp}`;
  if (kind === "consul_kv") return `consul-kv ${c.path}${c.recurse ? " (recurse)" : ""}`;
  if (kind === "schedule") return `schedule ${c.cron}`;
  if (kind === "nodes") return `nodes${c.filter ? ` filter=${c.filter}` : ""}`;
  if (kind === "intentions") return `intentions ${c.destination || "(all)"}`;
  if (kind === "config_entries") return `config-entries ${c.kind}${c.name ? `/${c.name}` : ""}`;
  return kind;
}
