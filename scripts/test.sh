#!/usr/bin/env bash
# Set up everything Berth needs (idempotent) and run the whole test suite: unit tests, then
# end-to-end tests against the real Docker engine, real HTTPS and stock kubectl.
# Usage: bash scripts/test.sh [--unit-only] [extra node --test file globs…]
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

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
exec node --test --test-concurrency=1 --test-timeout=600000 --test-reporter=spec "${files[@]}"
