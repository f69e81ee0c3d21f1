import { createAdaptorServer } from "@hono/node-server";
import { Hono } from "hono";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tools } from "../tools.ts";
import { authenticate, failingRoutes, rateLimiting, type RecordedRequest, recordRequests } from "./access.ts";
import { RunQueue } from "./executor/run-queue.ts";
import { ProcessGroups } from "./executor/processes.ts";
import { newSecret } from "./ids.ts";
import { ApiError, type Env, notFound, renderError, type ServerContext } from "./jsonapi.ts";
import type { TfcServerFaults, TfcServerOptions, TfcServerVariants } from "./options.ts";
import { accountRoutes } from "./routes/account.ts";
import { archivistRoutes } from "./routes/archivist.ts";
import { configurationVersionRoutes } from "./routes/configuration-versions.ts";
import { organizationRoutes } from "./routes/organizations.ts";
import { adminRoutes } from "./routes/admin.ts";
import { planApplyRoutes } from "./routes/plans-applies.ts";
import { runRoutes } from "./routes/runs.ts";
import { stateRoutes } from "./routes/state.ts";
import { variableRoutes } from "./routes/variables.ts";
import { workspaceRoutes } from "./routes/workspaces.ts";
import { Store } from "./store.ts";

export type { FailingRoute, TfcServerFaults, TfcServerOptions, TfcServerVariants } from "./options.ts";
export type { RecordedRequest } from "./access.ts";

/** A running TFE-API test server. */
export interface TfcTestServer {
  /** `http(s)://127.0.0.1:<port>`: the driver's `hostname`. */
  url: string;
  /** A token that may write in every organization. */
  token: string;
  /** The first organization. */
  organization: string;
  /** The data (tests seed VCS-connected or local-mode workspaces here, or read state). */
  store: Store;
  variants: Readonly<TfcServerVariants>;
  /** Live fault switches. */
  faults: TfcServerFaults;
  /** Every request so far, in order. */
  requests: RecordedRequest[];
  /** Parent of the runs' working directories (each removed after its phase). */
  workRoot: string;
  /** Process groups of the tofu commands running now. */
  processGroups(): number[];
  /** Stops the runs (and their processes), closes the listener, removes the working directories. */
  stop(): Promise<void>;
}

/** Starts the server on 127.0.0.1 and a free port. */
export async function startTfcServer(options: TfcServerOptions = {}): Promise<TfcTestServer> {
  const store = new Store();
  const orgs = options.organizations ?? ["cts-test"];
  for (const name of orgs) store.addOrganization(name);
  const token = `${newSecret().slice(0, 14)}.atlasv1.${newSecret()}${newSecret()}`;
  store.addToken(token, Object.fromEntries(orgs.map((o) => [o, "write" as const])), "cts-admin", options.siteAdmin === true);
  for (const t of options.tokens ?? []) store.addToken(t.token, t.organizations, t.username, t.siteAdmin === true);
  for (const { version, ...flags } of options.terraformVersions ?? [{ version: "1.5.7" }, { version: "1.9.0" }, { version: "1.14.3" }]) store.addTerraformVersion(version, flags);
  for (const p of options.agentPools ?? []) store.addAgentPool(p.organization, p.name);

  let baseUrl = "";
  const variants = { ...options.variants };
  const faults: TfcServerFaults = { ...options.faults };
  const ctx: ServerContext = { store, variants, faults, baseUrl: () => baseUrl };
  const workRoot = await mkdtemp(join(tmpdir(), "cts-tfc-server-"));
  const processes = new ProcessGroups();
  const given = options.tofu ?? { binary: tools().tofu, cliConfig: tools().cliConfig };
  const configDir = await mkdtemp(join(tmpdir(), "cts-tfc-server-config-"));
  const tofu = { binary: given.binary, cliConfig: await workerCliConfig(given.cliConfig, configDir) };
  const queue = new RunQueue(ctx, { tofu, workRoot, processes });
  const requests: RecordedRequest[] = [];

  const app = new Hono<Env>();
  app.onError((err, c) => renderError(c, err instanceof ApiError ? err : new ApiError(500, "internal server error", String(err)), ctx));
  app.notFound((c) => renderError(c, notFound(), ctx));
  app.use("*", recordRequests(requests));
  app.use("*", failingRoutes(ctx));
  app.get("/api/v2/ping", (c) => c.body(null, 204, { "TFP-API-Version": "2.6", "TFP-AppName": "Terraform Cloud" }));
  app.use("/api/v2/*", rateLimiting(ctx));
  app.use("/api/v2/*", authenticate(ctx));
  accountRoutes(app);
  organizationRoutes(app, ctx);
  adminRoutes(app, ctx);
  workspaceRoutes(app, ctx, queue);
  variableRoutes(app, ctx);
  configurationVersionRoutes(app, ctx, queue);
  runRoutes(app, ctx, queue);
  planApplyRoutes(app, ctx);
  stateRoutes(app, ctx);
  archivistRoutes(app, ctx, queue);

  const server = options.https
    ? createAdaptorServer({ fetch: app.fetch, createServer: createHttpsServer, serverOptions: { cert: options.https.cert, key: options.https.key } })
    : createAdaptorServer({ fetch: app.fetch });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  baseUrl = `${options.https ? "https" : "http"}://127.0.0.1:${(server.address() as AddressInfo).port}`;

  let stopped: Promise<void> | undefined;
  return {
    url: baseUrl,
    token,
    organization: orgs[0]!,
    store,
    variants,
    faults,
    requests,
    workRoot,
    processGroups: () => processes.groups(),
    stop: () =>
      (stopped ??= (async () => {
        await queue.stop();
        processes.close();
        await new Promise<void>((resolve) => {
          (server as { closeAllConnections?: () => void }).closeAllConnections?.();
          server.close(() => resolve());
        });
        await rm(workRoot, { recursive: true, force: true });
        await rm(configDir, { recursive: true, force: true });
      })()),
  };
}

/**
 * The CLI config runs use: the given one without `plugin_cache_dir`, so each run's `init` installs
 * from the read-only provider mirror into its own directory (a symlink into an unpacked mirror),
 * as a TFC worker starts from nothing. A shared plugin cache raced: `init` without a lock file
 * re-links the cache entry, and a `plan` or `apply` of another run starting its provider in that
 * moment failed with "fork/exec …/terraform-provider-…: no such file or directory".
 */
async function workerCliConfig(cliConfig: string, dir: string): Promise<string> {
  const text = (await readFile(cliConfig, "utf8")).replace(/^\s*plugin_cache_dir\s*=.*$/gm, "");
  const file = join(dir, "tofu.rc");
  await writeFile(file, text, { mode: 0o600 });
  return file;
}
