#!/usr/bin/env bash
# `npm run bench`: the benchmark suite (not part of `npm test`). Builds the real Consul and OpenTofu
# with scripts/tools.sh the first time (reused after), then runs bench/run.ts, which writes
# bench/results/latest.json and latest.md. Flags pass through: `npm run bench -- --quick`,
# `--only=trigger,e2e`, `--trigger-sizes=1,100` (see bench/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ]; then
  echo "[bench] node_modules missing: running npm ci"
  npm ci --no-audit --no-fund
fi

echo "[bench] preparing real Consul and OpenTofu (scripts/tools.sh)" >&2
eval "$(bash scripts/tools.sh --env)"
export CTS_TOFU_BIN CTS_CONSUL_BIN CTS_TF_CLI_CONFIG

# A temp folder of the run's own: tsx keeps its compile cache in $TMPDIR/tsx-<uid> and, when it
# compiles a file it has not seen (each benchmark writes fresh configs), walks that whole folder in
# the thread that loads the config. Shared with weeks of test runs it held 200,000 files here and
# added about 0.5 s to a daemon's first sync; a user's cache holds only their own files.
BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/cts-bench.XXXXXX")
case " $* " in *" --keep "*) echo "[bench] --keep: the scratch dirs stay in $BENCH_TMP" >&2 ;; *) trap 'rm -rf "$BENCH_TMP"' EXIT ;; esac
export TMPDIR="$BENCH_TMP"

node --conditions=cts-source --import tsx bench/run.ts "$@"
