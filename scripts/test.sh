#!/usr/bin/env bash
# The test command (README, CI): type-check, unit tests, then integration tests against a real
# Consul and a real OpenTofu built by scripts/tools.sh (built the first time, reused after).
# CTS_SKIP_INTEGRATION=1 runs unit tests only, and says so.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ]; then
  echo "[test] node_modules missing: running npm ci"
  npm ci --no-audit --no-fund
fi

echo "[test] type-checking"
npx tsc --noEmit -p tsconfig.json

files=(test/unit/*.test.ts)
if [ "${CTS_SKIP_INTEGRATION:-}" = "1" ]; then
  echo "[test] CTS_SKIP_INTEGRATION=1: integration tests are NOT run (unit tests only)"
else
  echo "[test] preparing real Consul, OpenTofu and OpenBao (scripts/tools.sh)"
  eval "$(bash scripts/tools.sh --env)"
  export CTS_TOFU_BIN CTS_CONSUL_BIN CTS_TERRAFORM_BIN CTS_BAO_BIN CTS_TF_CLI_CONFIG
  echo "[test] preparing headless Chromium for the dashboard test (scripts/browser.sh)"
  # An assignment, not eval "$(…)": set -e stops here when the browser cannot be installed.
  browser_env="$(bash scripts/browser.sh --env)"
  eval "$browser_env"
  export CTS_CHROMIUM_BIN
  # Each test process gets its own empty plugin cache (test/support/tools.ts), never the one in
  # the tools cache's CLI config: Terraform's plugin cache is not safe across processes.
  files+=(test/integration/*.test.ts test/faults/*.test.ts)
fi

# Integration tests start their own Consul agents on free ports, so files may run side by side.
exec node --conditions=cts-source --import tsx --test --test-reporter=spec --test-concurrency="${CTS_TEST_CONCURRENCY:-2}" "${files[@]}"
