#!/usr/bin/env bash
# Proves the test command on a fresh clone while the machine is busy: clones the committed HEAD of
# this repository into a temp dir, starts one CPU hog per core beside it, and runs the README's test
# command there with an empty plugin cache. The hogs stop with the script, whatever happens.
#   CTS_LOAD_KEEP=1   keep the temp clone for inspection
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d /tmp/cts-under-load.XXXXXX)"
hogs=()

cleanup() {
  for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "${CTS_LOAD_KEEP:-}" != "1" ]; then rm -rf "$work"; else echo "[load] kept $work"; fi
}
trap cleanup EXIT INT TERM

echo "[load] cloning $(git -C "$repo" rev-parse --short HEAD) into $work/cts"
git clone -q "$repo" "$work/cts"
# The tests keep ../shared beside the clone, as CI does.
[ -d "$repo/../shared" ] && ln -s "$(cd "$repo/../shared" && pwd)" "$work/shared"

cores="$(nproc)"
echo "[load] starting $cores CPU hog(s)"
for _ in $(seq "$cores"); do
  ( while :; do :; done ) &
  hogs+=("$!")
done

cd "$work/cts"
# An empty plugin cache: each test run makes its own under the temp dir (see scripts/test.sh).
export TF_PLUGIN_CACHE_DIR=
echo "[load] running: npm test"
start=$(date +%s)
status=0
npm test || status=$?
echo "[load] npm test exited $status after $(( $(date +%s) - start )) s under load"
exit "$status"
