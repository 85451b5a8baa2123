#!/usr/bin/env bash
# Run the official MCP conformance suite against a running server and summarise the result.
#
#   tests/conformance/run.sh URL [options] [-- extra conformance-server args]
#
#   URL                     the MCP endpoint, e.g. http://127.0.0.1:8765/_/mcp (must be a
#                           localhost URL, or the dns-rebinding-protection scenario fails)
#   --revision REV          2026-07-28 (default), 2025-11-25, or both: runs the scenarios that
#                           revision REQUIRES (conformance --requirements REV), at that revision's
#                           wire; its not-scored extras run too but never fail the run
#   --scenario NAME         run one scenario instead (at REV's wire; --revision both not allowed)
#   --baseline FILE|auto    expected-failures YAML ("auto": baseline-REV.yml beside this script,
#                           which lists what a stateless JSON-response server cannot pass).
#                           Default: none, so every required failure fails the run. Entries may
#                           be "scenario" or "scenario:check-id"; a baselined scenario that
#                           passes also fails the run (stale baseline)
#   --bearer TOKEN          send "Authorization: Bearer TOKEN" (also: MCP_CONFORMANCE_BEARER)
#   --header 'Name: value'  send an extra header (repeatable)
#   --install               only install the pinned tools, then exit
#
# Exit status: 0 when every required scenario passes (or fails only as the baseline expects),
# non-zero otherwise. Results (checks.json per scenario, full log) go to
# $CONFORMANCE_RESULTS (default .tools/conformance-results/REV-TIMESTAMP).
#
# Tools: Node 22, @modelcontextprotocol/conformance and the TypeScript SDK (tests/e2e drive its
# client), pinned by package.json/package-lock.json beside this script, are installed with `npm ci` into $CONFORMANCE_TOOLS (default
# .tools/conformance at the repository root). Only the npm registry is needed; the system node
# is used only to run npm.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TOOLS="${CONFORMANCE_TOOLS:-$ROOT/.tools/conformance}"
NODE="$TOOLS/node_modules/node/bin/node"
PKG="$TOOLS/node_modules/@modelcontextprotocol/conformance"
CLI="$PKG/dist/index.js"

die() { echo "run.sh: $*" >&2; exit 2; }

install_tools() {
  mkdir -p "$TOOLS"
  if [[ -x "$NODE" && -f "$CLI" ]] && cmp -s "$HERE/package-lock.json" "$TOOLS/package-lock.json"; then
    return 0
  fi
  command -v npm >/dev/null || die "npm is needed to install the pinned tools"
  cp "$HERE/package.json" "$HERE/package-lock.json" "$TOOLS/"
  echo "run.sh: installing pinned Node 22 and conformance suite into $TOOLS" >&2
  (cd "$TOOLS" && npm ci --no-audit --no-fund --loglevel=error >&2)
  [[ -x "$NODE" && -f "$CLI" ]] || die "install finished but $NODE or $CLI is missing"
}

URL=""
REVISION="2026-07-28"
SCENARIO=""
BASELINE="none"
HEADERS_JSON="{}"
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --revision) REVISION="$2"; shift 2 ;;
    --scenario) SCENARIO="$2"; shift 2 ;;
    --baseline) BASELINE="$2"; shift 2 ;;
    --bearer) export MCP_CONFORMANCE_BEARER="$2"; shift 2 ;;
    --header)
      HEADERS_JSON="$(python3 -c 'import json,sys; h=json.loads(sys.argv[1]); k,_,v=sys.argv[2].partition(":"); h[k.strip()]=v.strip(); print(json.dumps(h))' "$HEADERS_JSON" "$2")"
      shift 2 ;;
    --install) install_tools; "$NODE" "$CLI" --version; exit 0 ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    -*) die "unknown option $1" ;;
    *) [[ -z "$URL" ]] || die "one URL only"; URL="$1"; shift ;;
  esac
done
[[ -n "$URL" ]] || die "usage: run.sh URL [--revision 2026-07-28|2025-11-25|both] (see --help)"
case "$REVISION" in
  2026-07-28|2025-11-25) REVISIONS=("$REVISION") ;;
  both) [[ -z "$SCENARIO" ]] || die "--scenario needs one --revision"; REVISIONS=(2026-07-28 2025-11-25) ;;
  *) die "--revision must be 2026-07-28, 2025-11-25 or both" ;;
esac

install_tools

NODE_ARGS=()
if [[ -n "${MCP_CONFORMANCE_BEARER:-}" || "$HEADERS_JSON" != "{}" ]]; then
  export MCP_CONFORMANCE_TARGET="$URL" MCP_CONFORMANCE_HEADERS="$HEADERS_JSON"
  export MCP_CONFORMANCE_UNDICI="$TOOLS/node_modules/undici/index.js"
  NODE_ARGS=(--import "$HERE/inject-headers.mjs")
fi

status=0
for rev in "${REVISIONS[@]}"; do
  out="${CONFORMANCE_RESULTS:-$ROOT/.tools/conformance-results}/$rev-$(date +%Y%m%dT%H%M%S)"
  mkdir -p "$out"
  args=(server --url "$URL" -o "$out")
  if [[ -n "$SCENARIO" ]]; then
    args+=(--scenario "$SCENARIO" --spec-version "$rev")
  else
    args+=(--requirements "$rev")
  fi
  base="$BASELINE"
  [[ "$base" == "auto" ]] && base="$HERE/baseline-$rev.yml"
  if [[ "$base" != "none" ]]; then
    [[ -f "$base" ]] || die "baseline $base not found"
    args+=(--expected-failures "$base")
  fi
  echo "== conformance $("$NODE" "$CLI" --version) at $rev against $URL (baseline: $base)"
  set +e
  (cd "$out" && "$NODE" ${NODE_ARGS[@]+"${NODE_ARGS[@]}"} "$CLI" "${args[@]}" ${EXTRA[@]+"${EXTRA[@]}"}) >"$out/run.log" 2>&1
  rc=$?
  set -e
  if [[ -n "$SCENARIO" ]]; then python3 "$HERE/summarize.py" "$out" "$rc"
  else python3 "$HERE/summarize.py" "$out" "$rc" "$PKG/requirements/$rev.yaml"; fi
  [[ $rc -eq 0 ]] || status=1
done
exit $status
