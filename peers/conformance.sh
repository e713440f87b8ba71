#!/usr/bin/env bash
# peers/conformance.sh -- run the official MCP conformance client scenarios
# against a client program and print a pass/fail table.
#
#   peers/conformance.sh [options] [--] CLIENT_CMD [ARGS...]
#
# Options:
#   --only ROW      run only matching rows (repeatable).  ROW is a full row name
#                   (see --list), a scenario name (all its rows), a prefix such as
#                   "016", "next:2026-07-28" or "auth", or a bash glob ("*:sse-retry").
#                   Without --only every row runs: 19 core, 44 authorization and
#                   the extension rows.
#   --timeout SEC   per-scenario client timeout handed to the runner (default 30);
#                   the runner itself (and all it started) is killed SEC+20 s
#                   after it started, in case a client's children keep it waiting.
#   --out DIR       result folder (default: a new mktemp dir under ${TMPDIR:-/tmp})
#   --no-netns      run without a network namespace (NOT loopback-confined:
#                   the runner's mock servers then listen on every interface)
#   --list          print the row names and exit
#
# For every row the runner (Node 22 + @modelcontextprotocol/conformance, installed
# by peers/setup.sh) starts a mock server and runs  CLIENT_CMD ARGS... <server-url>
# with MCP_CONFORMANCE_SCENARIO set (and MCP_CONFORMANCE_PROTOCOL_VERSION by
# 0.2.0-alpha.12 only).  Each row runs in its own network namespace that has only
# a loopback interface.  Output per row: DIR/<row>.log (runner output) and
# DIR/raw/<row>/<scenario>-<time>/{checks.json,stdout.txt,stderr.txt} (runner -o).
# Last line of output: "N passed, M failed".  Exit 0 iff every selected row passed
# (1 if some failed, 2 on a usage or setup error).
set -uo pipefail

PEERS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
. "$PEERS_DIR/env.sh"

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
fail() { echo "peers/conformance.sh: $*" >&2; exit 2; }

# row-name  runner  spec-version ("-" = do not pass --spec-version)  scenario
# The 19 core rows, then the 44 authorization rows (auth:VERSION:NAME runs the
# runner's auth/NAME scenario at VERSION; the list is the runner's own, as
# `conformance client list` prints it for 0.2.0-alpha.12), then the extension
# rows the client speaks (ext:NAME; the runner skips an extension scenario
# given a --spec-version, so none is passed; ext:016:NAME on 0.1.16).
ROWS="\
016:initialize                                016   -           initialize
016:tools_call                                016   -           tools_call
016:elicitation-sep1034-client-defaults       016   -           elicitation-sep1034-client-defaults
016:sse-retry                                 016   -           sse-retry
next:2025-06-18:initialize                    next  2025-06-18  initialize
next:2025-06-18:tools_call                    next  2025-06-18  tools_call
next:2025-11-25:initialize                    next  2025-11-25  initialize
next:2025-11-25:tools_call                    next  2025-11-25  tools_call
next:2025-11-25:elicitation-sep1034-client-defaults next 2025-11-25 elicitation-sep1034-client-defaults
next:2025-11-25:sse-retry                     next  2025-11-25  sse-retry
next:2026-07-28:tools_call                    next  2026-07-28  tools_call
next:2026-07-28:request-metadata              next  2026-07-28  request-metadata
next:2026-07-28:sep-2322-client-request-state next  2026-07-28  sep-2322-client-request-state
next:2026-07-28:http-standard-headers         next  2026-07-28  http-standard-headers
next:2026-07-28:http-custom-headers           next  2026-07-28  http-custom-headers
next:2026-07-28:http-invalid-tool-headers     next  2026-07-28  http-invalid-tool-headers
next:2026-07-28:json-schema-ref-no-deref      next  2026-07-28  json-schema-ref-no-deref
next:2025-11-25:json-schema-2020-12-preservation next 2025-11-25 json-schema-2020-12-preservation
next:2026-07-28:json-schema-2020-12-preservation next 2026-07-28 json-schema-2020-12-preservation
auth:2025-11-25:metadata-default                     next  2025-11-25  auth/metadata-default
auth:2026-07-28:metadata-default                     next  2026-07-28  auth/metadata-default
auth:2025-11-25:metadata-var1                        next  2025-11-25  auth/metadata-var1
auth:2026-07-28:metadata-var1                        next  2026-07-28  auth/metadata-var1
auth:2025-11-25:metadata-var2                        next  2025-11-25  auth/metadata-var2
auth:2026-07-28:metadata-var2                        next  2026-07-28  auth/metadata-var2
auth:2025-11-25:metadata-var3                        next  2025-11-25  auth/metadata-var3
auth:2026-07-28:metadata-var3                        next  2026-07-28  auth/metadata-var3
auth:2025-11-25:basic-cimd                           next  2025-11-25  auth/basic-cimd
auth:2026-07-28:basic-cimd                           next  2026-07-28  auth/basic-cimd
auth:2025-11-25:scope-from-www-authenticate          next  2025-11-25  auth/scope-from-www-authenticate
auth:2026-07-28:scope-from-www-authenticate          next  2026-07-28  auth/scope-from-www-authenticate
auth:2025-11-25:scope-from-scopes-supported          next  2025-11-25  auth/scope-from-scopes-supported
auth:2026-07-28:scope-from-scopes-supported          next  2026-07-28  auth/scope-from-scopes-supported
auth:2025-11-25:scope-omitted-when-undefined         next  2025-11-25  auth/scope-omitted-when-undefined
auth:2026-07-28:scope-omitted-when-undefined         next  2026-07-28  auth/scope-omitted-when-undefined
auth:2025-11-25:scope-step-up                        next  2025-11-25  auth/scope-step-up
auth:2026-07-28:scope-step-up                        next  2026-07-28  auth/scope-step-up
auth:2025-11-25:scope-retry-limit                    next  2025-11-25  auth/scope-retry-limit
auth:2026-07-28:scope-retry-limit                    next  2026-07-28  auth/scope-retry-limit
auth:2025-06-18:token-endpoint-auth-basic            next  2025-06-18  auth/token-endpoint-auth-basic
auth:2025-11-25:token-endpoint-auth-basic            next  2025-11-25  auth/token-endpoint-auth-basic
auth:2026-07-28:token-endpoint-auth-basic            next  2026-07-28  auth/token-endpoint-auth-basic
auth:2025-06-18:token-endpoint-auth-post             next  2025-06-18  auth/token-endpoint-auth-post
auth:2025-11-25:token-endpoint-auth-post             next  2025-11-25  auth/token-endpoint-auth-post
auth:2026-07-28:token-endpoint-auth-post             next  2026-07-28  auth/token-endpoint-auth-post
auth:2025-06-18:token-endpoint-auth-none             next  2025-06-18  auth/token-endpoint-auth-none
auth:2025-11-25:token-endpoint-auth-none             next  2025-11-25  auth/token-endpoint-auth-none
auth:2026-07-28:token-endpoint-auth-none             next  2026-07-28  auth/token-endpoint-auth-none
auth:2025-11-25:pre-registration                     next  2025-11-25  auth/pre-registration
auth:2026-07-28:pre-registration                     next  2026-07-28  auth/pre-registration
auth:2025-03-26:2025-03-26-oauth-metadata-backcompat next  2025-03-26  auth/2025-03-26-oauth-metadata-backcompat
auth:2025-03-26:2025-03-26-oauth-endpoint-fallback   next  2025-03-26  auth/2025-03-26-oauth-endpoint-fallback
auth:2026-07-28:resource-mismatch                    next  2026-07-28  auth/resource-mismatch
auth:2026-07-28:offline-access-scope                 next  2026-07-28  auth/offline-access-scope
auth:2026-07-28:offline-access-not-supported         next  2026-07-28  auth/offline-access-not-supported
auth:2026-07-28:authorization-server-migration       next  2026-07-28  auth/authorization-server-migration
auth:2026-07-28:iss-supported                        next  2026-07-28  auth/iss-supported
auth:2026-07-28:iss-not-advertised                   next  2026-07-28  auth/iss-not-advertised
auth:2026-07-28:iss-supported-missing                next  2026-07-28  auth/iss-supported-missing
auth:2026-07-28:iss-wrong-issuer                     next  2026-07-28  auth/iss-wrong-issuer
auth:2026-07-28:iss-unexpected                       next  2026-07-28  auth/iss-unexpected
auth:2026-07-28:iss-normalized                       next  2026-07-28  auth/iss-normalized
auth:2026-07-28:metadata-issuer-mismatch             next  2026-07-28  auth/metadata-issuer-mismatch
ext:client-credentials-basic                         next  -           auth/client-credentials-basic
ext:client-credentials-jwt                           next  -           auth/client-credentials-jwt
ext:wif-jwt-bearer                                   next  -           auth/wif-jwt-bearer
ext:enterprise-managed-authorization                 next  -           auth/enterprise-managed-authorization
ext:dpop                                             next  -           auth/dpop
ext:dpop-nonce                                       next  -           auth/dpop-nonce
ext:sep-2640-client-no-prefetch                      next  -           sep-2640-client-no-prefetch
ext:sep-2640-client-verify-digest                    next  -           sep-2640-client-verify-digest
ext:sep-2640-client-verify-size                      next  -           sep-2640-client-verify-size
ext:sep-2640-client-verify-frontmatter               next  -           sep-2640-client-verify-frontmatter
ext:016:client-credentials-basic                     016   -           auth/client-credentials-basic
ext:016:client-credentials-jwt                       016   -           auth/client-credentials-jwt
ext:016:cross-app-access-complete-flow               016   -           auth/cross-app-access-complete-flow"

ONLY=() TIMEOUT=30 OUT="" NETNS=1
while [ $# -gt 0 ]; do
  case "$1" in
    --only) [ $# -ge 2 ] || fail "--only needs a value"; ONLY+=("$2"); shift 2 ;;
    --only=*) ONLY+=("${1#--only=}"); shift ;;
    --timeout) [ $# -ge 2 ] || fail "--timeout needs a value"; TIMEOUT="$2"; shift 2 ;;
    --out) [ $# -ge 2 ] || fail "--out needs a value"; OUT="$2"; shift 2 ;;
    --no-netns) NETNS=0; shift ;;
    --list) awk '{print $1}' <<< "$ROWS"; exit 0 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    -*) fail "unknown option $1 (see --help)" ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { usage >&2; exit 2; }
[[ "$TIMEOUT" =~ ^[1-9][0-9]*$ ]] || fail "--timeout wants whole seconds, got '$TIMEOUT'"

for f in "$NODE22" "$CONF_016" "$CONF_NEXT"; do
  [ -e "$f" ] || fail "missing $f -- run peers/setup.sh first"
done

row_selected() { # row-name scenario
  [ ${#ONLY[@]} -eq 0 ] && return 0
  local pat
  for pat in "${ONLY[@]}"; do
    # shellcheck disable=SC2053  # glob match on purpose
    if [[ "$1" == $pat ]] || [ "$2" = "$pat" ] || [[ "$1" == "$pat:"* ]]; then return 0; fi
  done
  return 1
}

SELECTED=()
while read -r name runner spec scenario; do
  row_selected "$name" "$scenario" && SELECTED+=("$name $runner $spec $scenario")
done <<< "$ROWS"
[ ${#SELECTED[@]} -gt 0 ] || fail "no row matches --only ${ONLY[*]} (see --list)"

# The runner hands the command string to /bin/sh, so quote each word for POSIX sh.
# A leading `exec` lets the runner's timeout kill reach the client itself.
sh_quote() {
  if [[ "$1" =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then printf '%s' "$1"
  else printf "'%s'" "${1//\'/\'\\\'\'}"; fi
}
CMD="exec"
for w in "$@"; do CMD+=" $(sh_quote "$w")"; done

# Loopback-only network namespace.  Inside it, bring lo up (ip, else an ioctl
# from python3), then exec the runner.
LO_UP='ip link set lo up 2>/dev/null || python3 -c "
import fcntl, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = struct.unpack(\"16sh22x\", fcntl.ioctl(s, 0x8913, struct.pack(\"16sh22x\", b\"lo\", 0)))[1]
fcntl.ioctl(s, 0x8914, struct.pack(\"16sh22x\", b\"lo\", flags | 1))
" 2>/dev/null || { echo "cannot bring up lo in the namespace" >&2; exit 97; }'
WRAP=()
NS_DESC="none (--no-netns)"
if [ "$NETNS" = 1 ]; then
  command -v unshare >/dev/null || fail "unshare (util-linux) not found; it confines the runner to loopback (or pass --no-netns)"
  # Plain --net works for root; --user --map-root-user for unprivileged users.
  # --pid --fork --kill-child: when the runner ends or is killed, every process
  # left in the namespace (e.g. a stuck client) is killed with it.
  for cand in \
    "unshare --net --pid --fork --kill-child" \
    "unshare --user --map-root-user --net --pid --fork --kill-child" \
    "unshare --net" \
    "unshare --user --map-root-user --net"; do
    # shellcheck disable=SC2086
    if $cand sh -c "$LO_UP" >/dev/null 2>&1; then
      read -r -a WRAP <<< "$cand"
      NS_DESC="$cand"
      break
    fi
  done
  [ ${#WRAP[@]} -gt 0 ] || fail "cannot create a loopback-only network namespace here (tried unshare --net and unshare --user --map-root-user --net); pass --no-netns to run unconfined"
  WRAP+=(sh -c "$LO_UP"' && exec "$@"' sh)
fi

if [ -z "$OUT" ]; then
  OUT="$(mktemp -d "${TMPDIR:-/tmp}/mis-conformance.XXXXXX")" || fail "mktemp failed"
else
  mkdir -p "$OUT" || fail "cannot create $OUT"
fi
mkdir -p "$OUT/raw"
printf '%s\n' "$CMD" > "$OUT/command.txt"
echo "client: $CMD"
echo "netns:  $NS_DESC"

# Summarise a row's checks.json files: "<ok>ok/<bad>x/<warn>w<TAB>ids of bad checks".
checks_summary() { # dir
  "$NODE22" -e '
    const fs = require("fs"), path = require("path");
    let ok = 0, bad = 0, warn = 0; const ids = new Set();
    const walk = (d) => { for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name === "checks.json") {
        let checks = []; try { checks = JSON.parse(fs.readFileSync(p, "utf8")); } catch {}
        for (const c of checks) {
          if (c.status === "SUCCESS") ok++;
          else if (c.status === "FAILURE") { bad++; ids.add(c.id); }
          else if (c.status === "WARNING") { warn++; ids.add(c.id); }
        }
      } } };
    try { walk(process.argv[1]); } catch {}
    process.stdout.write(`${ok}ok/${bad}x/${warn}w\t${[...ids].sort().join(",")}`);
  ' "$1" 2>/dev/null || printf -- '-\t'
}

TABLE="$OUT/table.txt"
fmt='%-52s %-15s %-11s %-6s %-11s %s\n'
# shellcheck disable=SC2059
printf "$fmt" row runner spec result checks notes > "$TABLE"
passed=0 failed=0
for entry in "${SELECTED[@]}"; do
  read -r name runner spec scenario <<< "$entry"
  if [ "$runner" = 016 ]; then conf="$CONF_016" rver=0.1.16; else conf="$CONF_NEXT" rver=0.2.0-alpha.12; fi
  tag="${name//:/_}"
  args=(client --command "$CMD" --scenario "$scenario" --timeout "$((TIMEOUT * 1000))" -o "$OUT/raw/$tag")
  [ "$spec" = - ] || args+=(--spec-version "$spec")
  printf '%-52s ' "$name"
  start=$SECONDS
  timeout -k 5 "$((TIMEOUT + 20))" "${WRAP[@]}" env NO_PROXY='*' no_proxy='*' \
    "$NODE22" "$conf" "${args[@]}" > "$OUT/$tag.log" 2>&1 < /dev/null
  rc=$?
  log="$OUT/$tag.log"
  notes=()
  if grep -q "SKIPPED: scenario" "$log"; then result=SKIP; notes+=("runner skipped the scenario")
  elif [ $rc -eq 0 ]; then result=PASS
  else result=FAIL; fi
  IFS=$'\t' read -r counts badids <<< "$(checks_summary "$OUT/raw/$tag")"
  # The runner exits 0 when a scenario recorded no check at all (e.g. a client
  # that never connected, under 0.1.16): that is not a pass.
  if [ $result = PASS ] && [[ "$counts" == 0ok/* || "$counts" == - ]]; then
    result=FAIL; notes+=("no successful check recorded")
  fi
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && notes+=("runner killed after $((TIMEOUT + 20))s")
  [ $rc -eq 97 ] && notes+=("namespace setup failed")
  grep -q "CLIENT TIMED OUT\|Client timed out" "$log" && notes+=("client timed out")
  code="$(sed -n 's/.*Client exited with code \(-\{0,1\}[0-9]*\).*/\1/p' "$log" | head -n1)"
  [ -n "$code" ] && notes+=("client exit $code")
  [ -n "${badids:-}" ] && notes+=("bad checks: $badids")
  if [ $result = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  note="$(IFS=';'; echo "${notes[*]:-}")"; note="${note//;/; }"
  echo "$result ($((SECONDS - start))s)"
  # shellcheck disable=SC2059
  printf "$fmt" "$name" "$rver" "${spec/#-/default}" "$result" "${counts:--}" "$note" >> "$TABLE"
done

echo
cat "$TABLE"
echo
echo "results: $OUT"
echo "$passed passed, $failed failed" | tee -a "$TABLE"
[ "$failed" -eq 0 ]
