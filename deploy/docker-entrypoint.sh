#!/bin/sh
# Chooses which of the five services this container runs, then replaces itself with that Node process.
#   docker run IMAGE gateway            the service as the first argument
#   docker run -e ZITI_SERVICE=auth IMAGE
#   docker run IMAGE policy migrate     apply the policy service's migrations and exit
# Every argument after the service name is passed to services/<name>/src/main.ts.
set -eu

case "${1:-}" in
  gateway | auth | pki-enrollment | policy | inventory)
    ZITI_SERVICE=$1
    shift
    ;;
esac

case "${ZITI_SERVICE:-}" in
  gateway | auth | pki-enrollment | policy | inventory) ;;
  "")
    echo "docker-entrypoint: no service chosen; pass gateway|auth|pki-enrollment|policy|inventory as the first argument or set ZITI_SERVICE" >&2
    exit 64
    ;;
  *)
    echo "docker-entrypoint: unknown service '${ZITI_SERVICE}'; expected gateway|auth|pki-enrollment|policy|inventory" >&2
    exit 64
    ;;
esac

export ZITI_SERVICE
# Build metadata left empty at build time: unset, so the code's defaults apply.
[ -n "${ZITI_REVISION:-}" ] || unset ZITI_REVISION
[ -n "${ZITI_BUILD_DATE:-}" ] || unset ZITI_BUILD_DATE
# The repository root: /app in the image.
cd "$(dirname "$0")/.."
exec node --import tsx "services/${ZITI_SERVICE}/src/main.ts" "$@"
