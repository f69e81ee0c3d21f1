#!/usr/bin/env bash
# Makes sure Debian's `chromium` is installed for the dashboard's browser test (driven by
# playwright-core through its executablePath: nothing is downloaded at test time). Installs it with
# apt-get when missing (as root, or through passwordless sudo); otherwise fails loudly with how to
# install it. It never lets the test skip.
#   CTS_CHROMIUM_BIN   the browser to use (default /usr/bin/chromium)
# Prints `export CTS_CHROMIUM_BIN=…` with --env.
set -euo pipefail

BIN="${CTS_CHROMIUM_BIN:-/usr/bin/chromium}"
die() { echo "[browser] ERROR: $*" >&2; exit 1; }

if [ ! -x "$BIN" ]; then
  echo "[browser] $BIN is missing: installing Debian's chromium (apt-get install -y chromium)" >&2
  if [ "$(id -u)" = 0 ]; then
    SUDO=()
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
  else
    die "chromium is not installed and this user cannot install packages. Run 'sudo apt-get install -y chromium' (or set CTS_CHROMIUM_BIN to a Chromium binary) and run the tests again."
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get install -y -qq chromium >&2 || { "${SUDO[@]}" apt-get update -qq >&2 && "${SUDO[@]}" apt-get install -y -qq chromium >&2; } ||
    die "apt-get could not install chromium. Install it by hand ('apt-get install -y chromium') and run the tests again."
  [ -x "$BIN" ] || die "chromium was installed but $BIN is not there. Set CTS_CHROMIUM_BIN to its path."
fi

if [ "${1:-}" = "--env" ]; then echo "export CTS_CHROMIUM_BIN=$BIN"; fi
