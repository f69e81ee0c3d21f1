import type { Clock } from "../time/clock.ts";
import { Account } from "./account.ts";
import { ConfigurationVersions } from "./configuration-versions.ts";
import { many, nextPage, one, toAgentPool, toOrganization, toStateOutput } from "./jsonapi.ts";
import { Plans } from "./plans.ts";
import { PollPacer } from "./poll-pacer.ts";
import { Runs } from "./runs.ts";
import { listTerraformVersions, type TerraformVersion } from "./terraform-versions.ts";
import { headerOf, Transport, type TransportOptions } from "./transport.ts";
import type { AgentPool, Organization, StateOutput } from "./types.ts";
import { Variables } from "./variables.ts";
import { enc, Workspaces } from "./workspaces.ts";

/** What the client takes: hostname, token, TLS, retry policy, request time limit, clock. */
export interface TfcClientOptions extends TransportOptions {
  /** Run polls per second of all the runs this client follows (default 20; TFC allows 30 requests/s per token). */
  pollsPerSecond?: number;
}

/**
 * The Terraform Cloud / Enterprise API client the driver uses: one typed call per step of the
 * API-driven workflow, errors as catalogued CtsErrors by status class, retries for 429 and for
 * 5xx on calls that are safe to repeat, an AbortSignal on every call, and the token only in the
 * Authorization header of API calls (registered with the redactor, so no error text carries it).
 */
export class TfcClient {
  readonly workspaces: Workspaces;
  readonly variables: Variables;
  readonly configurationVersions: ConfigurationVersions;
  readonly runs: Runs;
  readonly plans: Plans;
  readonly account: Account;
  private readonly t: Transport;

  constructor(options: TfcClientOptions) {
    this.t = new Transport(options);
    this.workspaces = new Workspaces(this.t);
    this.variables = new Variables(this.t);
    this.configurationVersions = new ConfigurationVersions(this.t);
    this.runs = new Runs(this.t, this.t.clock, new PollPacer(options.pollsPerSecond, this.t.clock));
    this.plans = new Plans(this.t);
    this.account = new Account(this.t);
  }

  /** The clock every wait of the client runs on (and its driver's run and lock limits). */
  get clock(): Clock {
    return this.t.clock;
  }

  /** The server's origin (`https://app.terraform.io`). */
  get origin(): string {
    return this.t.baseUrl.origin;
  }

  /** GET /api/v2/ping: reachable, and the API version it speaks (TFP-API-Version). */
  async ping(signal?: AbortSignal): Promise<{ apiVersion: string | undefined }> {
    const answer = await this.t.call({ method: "GET", path: "/api/v2/ping", signal, idempotent: true });
    return { apiVersion: headerOf(answer.headers, "tfp-api-version") };
  }

  /** The organization (TFC_NOT_FOUND when it does not exist or the token may not see it). */
  async organization(name: string, signal?: AbortSignal): Promise<Organization> {
    const path = `/api/v2/organizations/${enc(name)}`;
    return toOrganization(one(await this.t.json({ method: "GET", path, signal, idempotent: true }), { method: "GET", path }));
  }

  /** The organization's agent pools (to resolve a pool name to its id), all pages. */
  async agentPools(organization: string, signal?: AbortSignal): Promise<AgentPool[]> {
    const path = `/api/v2/organizations/${enc(organization)}/agent-pools`;
    const out: AgentPool[] = [];
    for (let page: number | undefined = 1; page !== undefined; ) {
      const doc = await this.t.json({ method: "GET", path, query: { "page[number]": String(page), "page[size]": "100" }, signal, idempotent: true });
      out.push(...many(doc, { method: "GET", path }).map(toAgentPool));
      page = nextPage(doc);
    }
    return out;
  }

  /** The Terraform versions the server offers; undefined when the token may not list them (only a Terraform Enterprise site admin may). */
  terraformVersions(signal?: AbortSignal): Promise<TerraformVersion[] | undefined> {
    return listTerraformVersions(this.t, signal);
  }

  /** The outputs of the workspace's current state (empty before the first apply). */
  async stateOutputs(workspaceId: string, signal?: AbortSignal): Promise<StateOutput[]> {
    const path = `/api/v2/workspaces/${enc(workspaceId)}/current-state-version-outputs`;
    const doc = await this.t.json({ method: "GET", path, signal, idempotent: true, accept: [404] });
    return doc === undefined ? [] : many(doc, { method: "GET", path }).map(toStateOutput);
  }

  /** The run's page in the UI: `<host>/app/<org>/workspaces/<ws>/runs/<id>` (what CTS shows as the run URL). */
  runUrl(organization: string, workspace: string, runId: string): string {
    return `${this.origin}/app/${enc(organization)}/workspaces/${enc(workspace)}/runs/${enc(runId)}`;
  }

  /** Closes kept-alive connections. */
  close(): void {
    this.t.close();
  }
}
