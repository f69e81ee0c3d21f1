/**
 * Every error code cts uses, with its category and the fix a user should try first. `CtsError`
 * takes only these codes (a new code is a compile error until it is added here), the catalogue's
 * category is the one the error carries, and the error table of docs/errors.md lists every code
 * (test/unit/error-catalogue.test.ts keeps the three in step).
 *
 * Categories: usage → exit 2 (the config, a flag or a request is wrong), external → exit 1 (Consul,
 * Terraform or the network failed), internal → exit 70 (a bug in cts: please report it).
 */
export const ERROR_CATALOGUE = {
  // Configuration and command line
  CONFIG_NOT_FOUND: { category: "usage", fix: "Pass --config with the path of your cts.config.ts (or a CTS .hcl/.json file), or run `cts init`." },
  CONFIG_LOAD_FAILED: { category: "usage", fix: "Fix the error in the config file at the place named; `npx tsc --noEmit` shows TypeScript errors." },
  CONFIG_INVALID: { category: "usage", fix: "Correct the field named in the message; docs/configuration.md lists every key." },
  CONFIG_PACKAGE_MISSING: { category: "usage", fix: "Install the package the config imports (`npm i cdktf-sync` in the config's project)." },
  LOG_FORMAT_INVALID: { category: "usage", fix: "Use --log-format text or --log-format json (logFormat in the config)." },
  SYSLOG_UNAVAILABLE: { category: "usage", fix: "Start the system log daemon (rsyslog, syslog-ng or journald), point syslog.socket at its socket, or turn syslog off." },
  USAGE: { category: "usage", fix: "Run the command with --help for its flags." },
  INIT_PACKAGE_TYPE: { category: "usage", fix: 'Set "type": "module" in package.json (rename the CommonJS .js files it lists to .cjs), then run `cts init` again.' },
  DURATION_INVALID: { category: "usage", fix: 'Write durations as Go does: "500ms", "5s", "1m30s".' },
  BUFFER_PERIOD_INVALID: { category: "usage", fix: "Give min and max as durations with min ≤ max, or enabled: false." },
  HTTP_ADDR_INVALID: { category: "usage", fix: "Give the API address as http(s)://host:port." },
  SECRET_MISSING: { category: "usage", fix: "Set the environment variable or create the file the secret reads, in the daemon's environment." },
  TEMPLATE_NOT_FOUND: { category: "usage", fix: "Reinstall cts: its templates/ folder is missing from the package." },
  DIFF_BASE_UNAVAILABLE: { category: "external", fix: "Run cts diff inside the project's git repository and pass a ref it has (`git fetch origin main`; in CI check out with fetch-depth: 0)." },
  INPUT_INVALID: { category: "usage", fix: "Pass a JSON snapshot like the one in docs/configuration.md (cts synth --snapshot), or write one with `cts snapshot`." },
  DATA_TOO_DEEP: { category: "usage", fix: "Flatten the value the message names (task data nests at most 64 levels, the JSON a task builds at most 256), or pass it as a JSON string and jsondecode() it in Terraform." },

  // Tasks
  TASK_OPTION_INVALID: { category: "usage", fix: "Correct the option passed to the task's constructor in the config (the message names it)." },
  OPTION_UNKNOWN: { category: "usage", fix: "Rename or remove the option at the file:line named (the message suggests the key you probably meant and lists the ones the object takes; docs/tasks.md, \"Options are checked when cts loads them\"); `npx tsc --noEmit` finds such typos before cts runs." },
  TASK_INVALID: { category: "usage", fix: "Correct the task field named in the message." },
  TASK_FILTER_INVALID: { category: "usage", fix: "Fix the task's filter at the place named: Consul refused it (a selector it does not know, e.g. Service.Tag for Service.Tags, or bad syntax); the message gives Consul's reason. `cts synth --input` and Testing check filters offline; `cts doctor` reads every task's query." },
  TASK_NAME_INVALID: { category: "usage", fix: "Use letters, digits, '-' and '_' in task names (as CTS)." },
  TASK_SHAPE_INVALID: { category: "usage", fix: "Make the task a class extending Task (or a ModuleTask) exported from the config, as `cts init` scaffolds." },
  TASK_EMPTY_REFUSED: { category: "usage", fix: "If the empty data is right, set allowEmpty: true on the task (CTS HCL: cts_allow_empty = true) and the next run applies it; otherwise restore the instances (or the token's service:read) in Consul." },
  TASK_UPSTREAM_FAILED: { category: "external", fix: "Fix the upstream task the message names (its own event says why it failed), or approve or reject its held plan: once it applies, the skipped task runs with its new outputs." },
  TASK_NOT_FOUND: { category: "usage", fix: "Check the task's name with `cts task list` or GET /v1/tasks." },
  TASK_EXISTS: { category: "usage", fix: "Choose another name, or delete the existing task first." },
  TASK_DISABLED: { category: "usage", fix: "Enable the task (`cts task enable NAME`) before running it." },
  TASK_NOT_REPLACEABLE: { category: "usage", fix: "Change a task defined in code in the config and restart; only 'enabled' changes at run time." },
  TASK_FILE_INVALID: { category: "usage", fix: "Correct the task file at the line named (CTS task block syntax)." },
  WORKING_DIR_UNUSABLE: { category: "external", fix: "The message names the folder and the cause: free space on its filesystem (ENOSPC), mount it read-write (EROFS), let the user cts runs as write there (EACCES), or remove the symbolic link planted there (cts never writes or reads through one, and checks every file Terraform uses there before it runs); `cts doctor` checks every task's folder." },
  TASK_SYNTH_FAILED: { category: "usage", fix: "Fix the exception the task's synthesize() threw at the file:line:column the message names (the first frames of the task's stack follow it); `cts synth` reproduces it." },
  TASK_SYNTH_INVALID: { category: "usage", fix: "Fix what the task built (the message names the construct); `cts synth` shows the generated JSON." },
  TASK_ID_COLLISION: { category: "usage", fix: "Give the constructs named in the message distinct ids." },
  TASK_CDK_MIXED: { category: "usage", fix: "Import all of the task's constructs, references and Fn calls from one library: 'cdktf' and '@cdktf/provider-*', or 'cdktn' and '@cdktn/provider-*' (docs/tasks.md, \"Choosing cdktf or cdktn\")." },
  TASK_RUN_DROPPED: { category: "usage", fix: "Nothing to fix: the task was disabled, deleted or replaced before its queued drift check ran." },
  TASK_RUN_FAILED: { category: "external", fix: "Read the cause in the task's event (`cts status TASK --events`); the task runs again on its next change." },
  FILE_NAME_INVALID: { category: "usage", fix: "Use a plain file name (no '/', no '..') for files a task writes." },
  SOURCE_KIND_UNKNOWN: { category: "usage", fix: "Use one of the condition kinds cts knows (services, catalog-services, consul-kv, nodes, intentions, config-entries, schedule)." },
  REGEXP_INVALID: { category: "usage", fix: "Fix the regular expression in the condition (Go RE2 syntax as CTS)." },
  FILTER_UNSUPPORTED: { category: "usage", fix: "Fix the filter expression at the place named, or use the selectors and operators listed in the message (docs/tasks.md, \"Testing a task: conditions, filters and assertions\"); Consul itself evaluates the full language when the daemon runs." },
  SERVICES_QUERY_INVALID: { category: "usage", fix: "Give a services condition either names or a regexp, not both and not neither; peer and samenessGroup need names, and only one of them." },
  KV_QUERY_INVALID: { category: "usage", fix: "Give the consul-kv condition a path (and recurse: true for a prefix)." },
  INTENTIONS_QUERY_INVALID: { category: "usage", fix: "Name the destination service of the intentions condition, or leave destination out to watch every intention." },
  CONFIG_ENTRIES_QUERY_INVALID: { category: "usage", fix: 'Give the config-entries condition a kind in Consul\'s spelling (e.g. "service-defaults") and, for one entry, a non-empty name.' },
  SYNTH_WORKER_FAILED: { category: "internal", fix: "Run `cts synth` for the task to see the worker's error; report it if it persists." },

  // Consul
  CONSUL_ADDRESS_INVALID: { category: "usage", fix: "Set consul.address (or CONSUL_HTTP_ADDR) to host:port or http(s)://host:port." },
  CONSUL_TOKEN_FILE: { category: "usage", fix: "Make consul.tokenFile (or CONSUL_HTTP_TOKEN_FILE) a readable file holding the token." },
  CONSUL_TLS_FILE: { category: "usage", fix: "Make the CA, certificate and key files in consul.tls readable PEM files." },
  CONSUL_TLS_INVALID: { category: "usage", fix: "Fix consul.tls: both certificate and key, PEM files, and a CA that signed the agent's certificate." },
  CONSUL_TLS_FAILED: { category: "external", fix: "Check the agent's certificate against consul.tls.caFile and serverName." },
  CONSUL_UNREACHABLE: { category: "external", fix: "Start the Consul agent or fix consul.address; cts retries with backoff meanwhile." },
  CONSUL_TIMEOUT: { category: "external", fix: "Check the Consul agent's health and its leader; cts retries with backoff meanwhile." },
  CONSUL_RATE_LIMITED: { category: "external", fix: "Raise the agent's rate limits or lengthen buffer periods; cts backs off meanwhile." },
  CONSUL_AUTH_FAILED: { category: "external", fix: "Set the HTTP basic auth credentials the proxy in front of Consul expects: consul.auth { username, password } or CONSUL_HTTP_AUTH=user:pass." },
  CONSUL_PERMISSION_DENIED: { category: "external", fix: "Grant the ACL permission named (examples/acl/cts-policy.hcl has the least-privilege policy); `cts doctor` checks them all." },
  CONSUL_BAD_REQUEST: { category: "usage", fix: "Correct the condition's query (filter, namespace, datacenter) named in the message." },
  CONSUL_HTTP_ERROR: { category: "external", fix: "Read Consul's answer in the message; check the agent's logs." },
  INSTANCE_ID_IN_USE: { category: "usage", fix: "Give each instance its own id (cts.config.ts `id`, CTS HCL `id`), or stop the other instance first." },
  CONSUL_REGISTER_FAILED: { category: "external", fix: "Grant service:write on consul-terraform-sync (or turn service registration off); the daemon runs on without it." },
  CONSUL_WATCH_FAILED: { category: "external", fix: "Read the cause; the watch retries with backoff." },
  WATCHER_CLOSED: { category: "internal", fix: "Report this as a bug: a subscription arrived after the watcher stopped." },

  // Terraform
  TERRAFORM_NOT_FOUND: { category: "usage", fix: "Install OpenTofu or Terraform, or set driver.terraform.binary to its full path; `cts doctor` checks it." },
  TERRAFORM_FAILED: { category: "external", fix: "Read Terraform's own error in the message; `cts inspect TASK` reproduces the plan." },
  TERRAFORM_TIMEOUT: { category: "external", fix: "Raise driver.terraform.commandTimeouts for the command, or check the state backend and providers." },
  TERRAFORM_HUNG: { category: "external", fix: "Check the state backend (for consul: the agent and its leader) and the providers; raise driver.terraform.commandTimeouts if the command is merely slow." },
  TERRAFORM_STATE_LOCKED: { category: "external", fix: "Wait: cts waits such locks out. Only if no Terraform runs for the task anywhere, `tofu force-unlock ID` in the task's working dir." },
  TERRAFORM_CANCELLED: { category: "external", fix: "Nothing to fix: the run was stopped (shutdown, task deleted or disabled) and runs again when needed." },
  TERRAFORM_STATE_NOT_SAVED: { category: "external", fix: "cts runs the task again (a plan with refresh) and its event lists what exists outside the state (`outside_state`): import those objects (`tofu import` in the task's working dir) or delete them; errored-*.tfstate in the working dir holds what the failed apply had made. Look for two instances applying one task (a stalled high-availability leader) or a Consul that lost the state's key." },

  // Plan guards and approvals
  PLAN_HELD: { category: "external", fix: "Review the held plan (`cts status`, GET /v1/tasks/NAME/hold), then `cts approve NAME` to apply exactly it or `cts reject NAME` to discard it." },
  PLAN_NOT_HELD: { category: "usage", fix: "Nothing is waiting for approval for this task; `cts status` shows which tasks hold a plan." },
  PLAN_NOT_FOUND: { category: "external", fix: "Nothing to fix: the kept plan is gone (another instance made it, or it was discarded); cts plans again and checks the new plan." },
  PLAN_STALE: { category: "external", fix: "Nothing to fix: the state changed since the plan was made; cts plans again and checks the new plan." },
  PLAN_UNSUPPORTED: { category: "usage", fix: "Use a driver that can keep a plan (the local and the Terraform Cloud drivers both can), or remove the task's guards and approval." },

  // Terraform Cloud / Enterprise
  TFC_UNREACHABLE: { category: "external", fix: "Check driver.terraformCloud.hostname and the network (proxy, firewall) between cts and it; `cts doctor` checks reachability." },
  TFC_TLS_FILE: { category: "usage", fix: "Make the CA, certificate and key files in driver.terraformCloud.tls readable PEM files." },
  TFC_TLS_FAILED: { category: "external", fix: "Check the server's certificate against driver.terraformCloud.tls (caCert, serverName); verify: false is for test servers only." },
  TFC_UNAUTHORIZED: { category: "usage", fix: "Set a valid team or user API token in driver.terraformCloud.token (or TFC_TOKEN); it may have expired or been revoked." },
  TFC_FORBIDDEN: { category: "usage", fix: "Give the token's team the permission the call needs in the organization (manage workspaces, read and write variables, queue and apply runs)." },
  TFC_NOT_FOUND: { category: "usage", fix: "Check driver.terraformCloud.organization and the workspace name; Terraform Cloud also answers 404 for what the token may not see." },
  TFC_CONFLICT: { category: "external", fix: "A lock or another run holds the workspace: wait, or unlock it in Terraform Cloud; cts re-reads before it tries again." },
  TFC_INVALID: { category: "usage", fix: "Correct what the server's message names (workspace setting, variable, Terraform version); it refused the request as invalid." },
  TFC_RATE_LIMITED: { category: "external", fix: "Nothing to change at once: cts waited as long as the server asked and gave up; fewer tasks changing at once or a later retry helps." },
  TFC_SERVER_ERROR: { category: "external", fix: "The server failed (5xx): check Terraform Cloud's status page or the Terraform Enterprise logs; cts retries calls that are safe to repeat." },
  TFC_BAD_ANSWER: { category: "external", fix: "Check that driver.terraformCloud.hostname points at Terraform Cloud or Enterprise, not at a proxy or another server." },
  TFC_UPLOAD_FAILED: { category: "external", fix: "Read the server's message about the configuration version; `cts synth TASK` shows the files that were uploaded." },
  TFC_RUN_TIMEOUT: { category: "external", fix: "Open the run's URL to see what it waits for (queue, agent, approval, policy); raise the run time limit if runs are merely slow." },
  TFC_CANCELLED: { category: "external", fix: "Nothing to fix: the call was stopped (shutdown, task deleted or disabled) and is made again when needed." },
  TFC_WORKSPACE_REFUSED: { category: "usage", fix: "Use a workspace cts may own: API-driven (no VCS connection), remote or agent execution, configuration uploaded only by cts, and tags that pass driver.terraformCloud.workspaces.tagsAllowlist/tagsDenylist; or change the prefix so cts creates its own." },
  TFC_WORKSPACE_LOCKED: { category: "external", fix: "Someone (a person, another tool) holds the workspace lock: unlock it in Terraform Cloud; cts waits for it up to the lock limit on every run." },
  TFC_RUN_ERRORED: { category: "external", fix: "Open the run's URL and read its plan or apply log; `cts inspect TASK` plans the same configuration speculatively." },
  TFC_RUN_NEEDS_CONFIRMATION: { category: "usage", fix: "The workspace applies manually: confirm the run at its URL, or turn on auto-apply in the workspace. A run still waiting is discarded when the task's next change arrives." },
  TFC_RUN_DISCARDED: { category: "usage", fix: "Someone discarded the run in Terraform Cloud; nothing was applied. The task's next change (or `cts task enable`) queues a new run." },
  TFC_RUN_CANCELED: { category: "usage", fix: "Someone canceled the run in Terraform Cloud; part of it may have been applied. The task's next change queues a new run." },
  TFC_POLICY_FAILED: { category: "usage", fix: "A policy check stopped the run: open its URL, and fix the configuration or have an owner override the soft-failed policy." },

  // Runtime, API and CLI
  CTS_INTERNAL: { category: "internal", fix: "Report this as a bug with the log lines around it." },
  CTS_NOT_OWNER: { category: "external", fix: "Nothing to fix: another member of the shared cluster runs this task; ask that member." },
  CTS_PAUSED: { category: "external", fix: "Nothing to fix: this instance is not the HA leader now; the leader runs the task." },
  CANCELLED: { category: "external", fix: "Nothing was changed; run the command again and confirm, or pass --auto-approve." },
  APPROVAL_REQUIRED: { category: "usage", fix: "Confirm at the prompt, or pass --auto-approve when no terminal is attached." },
  API_PORT_INVALID: { category: "usage", fix: "Give api.port (or --api-port) a number 0-65535." },
  API_LISTEN_FAILED: { category: "usage", fix: "Free the port or choose another (api.port); another cts may already run." },
  API_TLS_FILE: { category: "usage", fix: "Make api.tls certificate and key readable PEM files." },
  API_TLS_INVALID: { category: "usage", fix: "Fix api.tls: a certificate and its key, PEM encoded." },
  API_TLS_FAILED: { category: "external", fix: "Check the daemon's certificate against --ca-cert, or the address's scheme." },
  API_METRICS_TOKEN: { category: "usage", fix: "Set api.token (or tokenFile, CTS_HTTP_TOKEN) when api.metricsRequireToken is on, or turn it off." },
  API_TOKEN_FILE: { category: "usage", fix: "Make api.tokenFile a readable file holding the API token." },
  API_UNREACHABLE: { category: "external", fix: "Start `cts watch`, or point --http-addr (CTS_ADDRESS) at its API." },
  API_REQUEST_REFUSED: { category: "usage", fix: "Correct the request as the daemon's message says (a 4xx answer)." },
  API_REQUEST_FAILED: { category: "external", fix: "The daemon failed the request (a 5xx answer): read its log for the request id." },
  API_BAD_ANSWER: { category: "external", fix: "Check that --http-addr points at a cts (or CTS) API, not another server." },

  // High availability
  HA_NOT_LEADER: { category: "usage", fix: "Send task changes to the leader (its address is in the answer and in GET /v1/status/cluster)." },
  HA_NO_LEADER: { category: "external", fix: "Wait for an election (about one session TTL), or start a member; GET /v1/status/cluster shows them." },
  HA_NOT_OWNER: { category: "usage", fix: "Shared mode: send the change to the task's owner (named in the answer and in GET /v1/status/cluster)." },
  HA_NO_OWNER: { category: "external", fix: "Shared mode: retry in a few seconds; a takeover takes up to twice the session TTL." },
  HA_SESSION_TTL: { category: "usage", fix: "Raise highAvailability.cluster.storage.sessionTtl to at least Consul's minimum (10s)." },
  HA_CONSUL_FAILED: { category: "external", fix: "The token needs key:write on the HA prefix and session:write on this node (docs/clustering.md 'High availability')." },
  HA_CONSUL_TIMEOUT: { category: "external", fix: "Check the Consul agent's health; the member fences itself if renewals keep failing." },
  // Vault (terraform_provider templates)
  VAULT_UNREACHABLE: { category: "external", fix: "Start Vault or fix vault.address (VAULT_ADDR) and its TLS settings; cts retries with backoff meanwhile." },
  VAULT_PERMISSION_DENIED: { category: "external", fix: "Grant the Vault token read on the path named (a policy with capabilities = [\"read\"]), or fix the token (vault.token, VAULT_TOKEN)." },
  VAULT_SECRET_NOT_FOUND: { category: "usage", fix: "Write the secret at the path named, or fix the path in the template (KV v2 paths read <mount>/data/<name>)." },
  VAULT_HTTP_ERROR: { category: "external", fix: "Read Vault's answer in the message; check Vault's logs." },
  VAULT_TOKEN_INVALID: { category: "usage", fix: "Give cts a valid Vault token (vault.token or VAULT_TOKEN); with unwrap_token, a wrapping token that was not used yet." },
  HA_CONSUL_UNREACHABLE: { category: "external", fix: "Start the Consul agent or fix consul.address; the member retries." },
  HA_STATE_NOT_STORED: { category: "external", fix: "Check the Consul agent and the token's key:write on the HA prefix; the leader stores what a task applied before each run, and retries the run." },
} as const satisfies Record<string, { category: "usage" | "external" | "internal"; fix: string }>;

/** A code from the catalogue. */
export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/** True when `code` is in the catalogue (for codes that arrive as data, e.g. over the API). */
export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CATALOGUE, code);
}
