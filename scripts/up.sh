#!/usr/bin/env bash
# Set up everything Berth needs (idempotent), then run the control plane plus a local agent.
# Extra arguments go to `berth up` (e.g. --port 6443 --data-dir /var/lib/berth).
# On a terminal berth up shows its startup steps and readable logs; redirected, its logs are JSON lines
# (--log-format text|json chooses either way).
set -euo pipefail
cd "$(dirname "$0")/.."

printf '[berth] up 1/2: setup (scripts/setup.sh)\n' >&2
bash scripts/setup.sh
printf '[berth] up 2/2: berth up, the control plane and a local agent (Ctrl-C stops both)\n' >&2
exec node --max-semi-space-size=2 bin/berth.js up "$@"
