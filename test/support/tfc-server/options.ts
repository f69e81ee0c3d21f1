import type { Permission } from "./store.ts";

/**
 * How this server differs from Terraform Cloud where real servers implementing the API differ
 * (../shared/TFC-API-NOTES.md, "Where servers implementing this API differ"; the number is the
 * note's). Every switch off is HCP Terraform's documented behaviour.
 */
export interface TfcServerVariants {
  /** 1: uploading a configuration version never queues a run, whatever `auto-queue-runs` says. */
  ignoresAutoQueueRuns?: boolean;
  /** 2: plans and applies carry no `resource-additions`/`-changes`/`-destructions` ("absent"), or always 0 ("zero"). */
  omitsResourceCounts?: false | "absent" | "zero";
  /** 2 (further): plans and runs carry no `has-changes` either, so only the plan's JSON tells. */
  omitsHasChanges?: boolean;
  /** 3: `include=plan,apply` is ignored (no `included` array). */
  ignoresInclude?: boolean;
  /** 3: workspaces carry no `resource-count`, `outputs` or `locked-by`. */
  omitsWorkspaceExtras?: boolean;
  /** 4: status of a duplicate variable (TFC: 422). */
  duplicateVariableStatus?: 422 | 500;
  /** 4: status of a duplicate workspace name (TFC: 422). */
  duplicateWorkspaceStatus?: 422 | 409;
  /** 4: a bad token gets a `text/plain` 401 instead of a JSON:API body. */
  textPlain401?: boolean;
  /** 4: every 409 (second lock, unlock of an unlocked workspace, actions not allowed) has an empty body. */
  emptyBody409?: boolean;
  /** 5: an upload sent as `application/x-www-form-urlencoded` fails with 500. */
  urlencodedUpload500?: boolean;
  /** 6: a run on a still-`pending` configuration version is accepted (201), then errors in plan (TFC: 422). */
  pendingConfigAcceptedThenErrors?: boolean;
  /**
   * 8: runs see this server's own environment (HOME, PATH, …), as an executor on the server's host
   * does; off, a run sees only PATH, a HOME inside its own working directory and its variables.
   * Either way a run's working directory is new per phase and gone after it.
   */
  runsOnSameHost?: boolean;
  /** 9: the Terraform versions this server can install; a workspace asking another one errors in plan. Unset: any. */
  installableVersions?: string[];
  /** Read `pending` this many times after an upload before `uploaded` (TFC processes uploads asynchronously). */
  uploadPendingReads?: number;
  /**
   * Runs pass through `cost_estimating` → `cost_estimated`, and have a cost estimate
   * (`GET /cost-estimates/:id`, the run's `cost-estimate` relationship) that prices every resource of
   * the state at `monthlyCostPerResource` (default 0): no real prices, only the shape and the arithmetic.
   */
  costEstimation?: boolean;
  /** With costEstimation: the monthly cost of each resource (USD). */
  monthlyCostPerResource?: number;
  /** Runs pass through `policy_checking` → `policy_checked`, with one policy check that passed one policy (`GET /runs/:id/policy-checks`). */
  policyChecks?: boolean;
  /** Policy checks soft-fail: the run stops at `policy_soft_failed` (only discard moves it on); its policy check counts one soft-failed policy. */
  policySoftFails?: boolean;
  /** A fixed-window rate limit per token over `/api/v2` (TFC: 30 requests a second). Unset: none. */
  rateLimit?: { limit: number; windowMs: number };
}

/** A route answering with an error status instead of its real answer. */
export interface FailingRoute {
  method?: string;
  /** Matched against the request path (e.g. /\/api\/v2\/runs\/[^/]+$/). */
  path: RegExp;
  status: number;
  /** How many requests fail before the route works again (unset: all). */
  times?: number;
  /** An HTML body like a proxy's, instead of JSON:API. */
  html?: boolean;
}

/** Faults tests switch on (and off) while the server runs: `server.faults.runsNeverFinish = true`. */
export interface TfcServerFaults {
  /** New runs stay `planning` until canceled or the server stops (no tofu is started). */
  runsNeverFinish?: boolean;
  /** Routes answering with an error status (5xx for the client's retries, or any other). */
  failRoutes?: FailingRoute[];
  /** Error bodies repeat the request's bearer token (a server that echoes credentials). */
  echoTokenInErrors?: boolean;
  /** The next `count` API requests get 429 with `X-RateLimit-Reset: resetSeconds`. */
  rateLimitNext?: { count: number; resetSeconds: number };
}

/** What `startTfcServer` takes. */
export interface TfcServerOptions {
  /** Organizations to create (default ["cts-test"]). The first is `server.organization`. */
  organizations?: string[];
  /** Extra tokens; the default token (`server.token`) may write in every organization. `siteAdmin`: the token is a TFE site admin (the admin API answers it). */
  tokens?: { token: string; username?: string; organizations: Record<string, Permission>; siteAdmin?: boolean }[];
  /** The default token is a Terraform Enterprise site admin (default false: as on HCP Terraform, the admin API answers it 404). */
  siteAdmin?: boolean;
  /** The Terraform versions `GET /api/v2/admin/terraform-versions` lists (default: 1.5.7, 1.9.0 and 1.14.3). */
  terraformVersions?: { version: string; enabled?: boolean; beta?: boolean; deprecated?: boolean; official?: boolean }[];
  /** Agent pools to create. */
  agentPools?: { organization: string; name: string }[];
  variants?: TfcServerVariants;
  faults?: TfcServerFaults;
  /** The OpenTofu runs execute, and its offline CLI config (default: test/support/tools.ts). */
  tofu?: { binary: string; cliConfig: string };
  /** Serve HTTPS with this certificate and key (PEM). */
  https?: { cert: Buffer; key: Buffer };
}
