#!/usr/bin/env bash
# `npm run chaos`: failure scenarios (flapping, Consul restart, kill -9 mid-apply, fresh tasks in
# parallel, hostile catalog data and secrets) against a real Consul, real OpenTofu and real cts
# processes on 127.0.0.1; not part of `npm test`. Writes bench/results/chaos.json and chaos.md (see bench/README.md). Flags pass
# through: `npm run chaos -- --quick`, `--only=kill9`, `--flap-seconds=20`, `--help`.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ]; then
  echo "[chaos] node_modules missing: running npm ci"
  npm ci --no-audit --no-fund
fi

echo "[chaos] preparing real Consul and OpenTofu (scripts/tools.sh)" >&2
eval "$(bash scripts/tools.sh --env)"
export CTS_TOFU_BIN CTS_CONSUL_BIN CTS_TF_CLI_CONFIG CTS_TERRAFORM_BIN

exec node --import tsx bench/chaos/run.ts "$@"
