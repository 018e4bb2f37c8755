#!/bin/sh
# Chooses which of the seven services this container runs, then replaces itself with that Node process.
#   docker run IMAGE gateway            the service as the first argument
#   docker run -e ZITI_SERVICE=auth IMAGE
#   docker run IMAGE policy migrate     apply the policy service's migrations and exit
#   docker run IMAGE ziti-edge-ops doctor   the operator's command (with the services' environment)
# Every argument after the service name is passed to the service's bundle, dist/<name>.mjs (deploy/bundles.ts).
set -eu

# The operator's command: docker run IMAGE ziti-edge-ops <command> (docs/operations.md).
if [ "${1:-}" = ziti-edge-ops ]; then
  shift
  exec ziti-edge-ops "$@"
fi

case "${1:-}" in
  gateway | auth | pki-enrollment | policy | inventory | audit | fabric)
    ZITI_SERVICE=$1
    shift
    ;;
esac

case "${ZITI_SERVICE:-}" in
  gateway | auth | pki-enrollment | policy | inventory | audit | fabric) ;;
  "")
    echo "docker-entrypoint: no service chosen; pass gateway|auth|pki-enrollment|policy|inventory|audit|fabric as the first argument or set ZITI_SERVICE" >&2
    exit 64
    ;;
  *)
    echo "docker-entrypoint: unknown service '${ZITI_SERVICE}'; expected gateway|auth|pki-enrollment|policy|inventory|audit|fabric" >&2
    exit 64
    ;;
esac

export ZITI_SERVICE
# Build metadata left empty at build time: unset, so the code's defaults apply.
[ -n "${ZITI_REVISION:-}" ] || unset ZITI_REVISION
[ -n "${ZITI_BUILD_DATE:-}" ] || unset ZITI_BUILD_DATE
# /app in the image: dist/ (the bundles) beside node_modules/ (what they import).
cd "$(dirname "$0")/.."
# Node's flags per service (deploy/bundles.ts, serviceRuntime), as the chart and `npm run cluster` give them:
# V8's young generation capped everywhere but policy, which keeps V8's default; the gateway runs two V8
# platform threads instead of four (docs/BENCHMARKS.md, idle RSS).
case "${ZITI_SERVICE}" in
  gateway) NODE_FLAGS="--max-semi-space-size=2 --v8-pool-size=2" ;;
  auth) NODE_FLAGS="--max-semi-space-size=2" ;;
  pki-enrollment) NODE_FLAGS="--max-semi-space-size=2" ;;
  policy) NODE_FLAGS="" ;;
  inventory) NODE_FLAGS="--max-semi-space-size=2" ;;
  audit) NODE_FLAGS="--max-semi-space-size=2" ;;
  fabric) NODE_FLAGS="--max-semi-space-size=2" ;;
esac
# shellcheck disable=SC2086 # the flags are words
exec node ${NODE_FLAGS} "dist/${ZITI_SERVICE}.mjs" "$@"
