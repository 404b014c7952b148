#!/usr/bin/env bash
# Set up everything Berth needs (idempotent), then run the control plane plus a local agent.
# Extra arguments go to `berth up` (e.g. --port 6443 --data-dir /var/lib/berth).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
exec node --max-semi-space-size=2 bin/berth.js up "$@"
