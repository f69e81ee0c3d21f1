#!/usr/bin/env bash
# `npm run demo`: one command on a fresh machine. Installs npm dependencies when missing, builds
# the real Consul and OpenTofu (scripts/tools.sh; a few minutes the first time), then hands over to
# the TypeScript driver, which installs nginx if needed and can (root) and runs the walk-through.
#   npm run demo              walk through, then keep running until Ctrl-C
#   npm run demo -- --once    walk through, stop everything, exit 0 if it all worked
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ]; then
  echo "[demo] node_modules missing: running npm ci"
  npm ci --no-audit --no-fund
fi

echo "[demo] preparing Consul and OpenTofu (scripts/tools.sh)"
eval "$(bash scripts/tools.sh --env)"
export CTS_TOFU_BIN CTS_CONSUL_BIN CTS_TF_CLI_CONFIG

# exec: Ctrl-C and SIGTERM go straight to the driver, which stops what it started in order.
exec node --conditions=cts-source --import tsx scripts/demo/main.ts "$@"
