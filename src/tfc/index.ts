// The Terraform Cloud / Enterprise API client (the driver's foundation; internal to cts).
export { TfcClient, type TfcClientOptions } from "./client.ts";
export type { AccountDetails } from "./account.ts";
export { awaitsPerson, isFinal, type FollowOptions } from "./runs.ts";
export { packDirectory } from "./archive.ts";
export { summarizePlanJson } from "./plan-summary.ts";
export { DEFAULT_RETRY, type RetryPolicy } from "./retry.ts";
export type { TfcTlsOptions } from "./tls.ts";
export * from "./types.ts";
