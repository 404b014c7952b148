#!/usr/bin/env bash
# Set up everything Berth needs (idempotent) and run the whole test suite: unit tests, then
# end-to-end tests against the real Docker engine, real HTTPS and stock kubectl.
# Usage: bash scripts/test.sh [--unit-only] [extra node --test file globs…]
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh --for-tests

# Every kubectl the kubectl-driven e2e tests run with: the one on PATH and Debian's 1.20 (fetched
# into .cache/kubectl-1.20/ once). A caller's own BERTH_KUBECTLS wins.
if [ -z "${BERTH_KUBECTLS:-}" ]; then
  BERTH_KUBECTLS="$(bash scripts/kubectl-versions.sh)"
fi
export BERTH_KUBECTLS
printf '[berth] e2e kubectl binaries: %s\n' "${BERTH_KUBECTLS:-none}" >&2

files=()
if [ "${1:-}" = "--unit-only" ]; then
  shift
  files=(dist/test/unit/*.test.js)
elif [ $# -gt 0 ]; then
  files=("$@")
else
  files=(dist/test/unit/*.test.js dist/test/e2e/*.test.js dist/test/e2e/*/*.test.js)
fi

# e2e tests share one Docker engine; run files one at a time so timings stay honest.
# The timeout bounds each file as a whole, too: on a fresh machine install.test.js also installs
# systemd and vagrant for the packaging checks (over 8 minutes on a busy 2-core machine), so 20 min.
exec node --test --test-concurrency=1 --test-timeout=1200000 --test-reporter=spec "${files[@]}"
