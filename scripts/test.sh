#!/usr/bin/env bash
# Set up everything Berth needs (idempotent) and run the whole test suite: unit tests, then
# end-to-end tests against the real Docker engine, real HTTPS and stock kubectl.
# Usage: bash scripts/test.sh [--unit-only] [test files or quoted globs under dist/…]
#
# Phases, each timed:
#   setup       scripts/setup.sh --for-tests and the kubectl binaries the e2e tests drive
#   unit        dist/test/unit, $BERTH_UNIT_CONCURRENCY files at a time (default: one per core)
#   e2e         the e2e files that need nothing of the host for themselves, three at a time
#               ($BERTH_E2E_CONCURRENCY; two took 20 min here, three 14, with the same results).
#               Each starts clusters of its own (own ports, node names, pod range, DNS address
#               and nftables table: test/e2e/harness.ts), so two never meet.
#   e2e-alone   the e2e files in E2E_ALONE below, one at a time, with nothing else running
# Only files whose TypeScript source still exists run: tsc never deletes the output of a removed or
# renamed test, and a stale build must not run on a warm checkout.
#
# At the end it prints each phase's time, the 15 slowest files and tests, and one
# `tests: N passed, N failed, N skipped` line for the whole run (scripts/test-timings.ts). The
# record stays in $BERTH_TEST_REPORT_DIR (default .cache/test-report), which .ci/run reads.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

# e2e files that must have the machine to themselves, and why:
#   connections      measures the server's memory and fd count coming back after 2,000 connections
#   dashboard        Chromium aborts a page load (ERR_NETWORK_CHANGED) when another cluster's veths
#                    and networks come and go on the host while it loads
#   multihost/*      network namespaces joined through this host's routes, forwarding and NAT; a
#                    NodePort from another lab host went unanswered for 60 s once while
#                    services.test.js ran beside it (the cause is not pinned down yet)
#   network-operator-in-cluster
#                    its operator pod reaches the API server through 10.96.0.1:443, the kubernetes
#                    Service every cluster of the harness has: every cluster's nftables table matches
#                    any pod's packets to it, so beside another cluster the pod may be sent to that
#                    cluster's server (failed 2 runs of 2 three-at-a-time on 2026-11-28)
#   read-budget      times kubectl get (< 1 s) while 200 readers load the server: beside two other
#                    files' clusters the first one took 1.7 s on 2026-11-28 (run G)
#   certificates     with a forged client certificate (the CA's name as issuer, another key's
#                    signature) kubectl often meets a reset connection instead of a 401: Node's TLS
#                    layer, given the CA (src/server/listen.ts), resets it; not yet fixed (without
#                    the CA there, install.test.js's upgrade step failed in two runs of three and
#                    connections.test.js's held requests missed the per-client mutation limit)
E2E_ALONE=(
  dist/test/e2e/certificates.test.js
  dist/test/e2e/connections.test.js
  dist/test/e2e/read-budget.test.js
  dist/test/e2e/dashboard.test.js
  dist/test/e2e/network-operator-in-cluster.test.js
  'dist/test/e2e/multihost/*'
)

# Run beside the three-at-a-time phase, in a run of their own that takes none of its three places:
# files that spend minutes mostly waiting (a soak). Their output is printed when they end.
#   shared-host      5 minutes of Service traffic in two clusters sharing the host
E2E_BESIDE=(
  dist/test/e2e/shared-host.test.js
)

report_dir="${BERTH_TEST_REPORT_DIR:-.cache/test-report}"
rm -rf "$report_dir"
mkdir -p "$report_dir"
report_dir="$(cd "$report_dir" && pwd)"

# Appends "phase<TAB>seconds<TAB>exit status" to the run's record.
record_phase() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$report_dir/phases.tsv"; }

setup_started="$(berth_now)"
setup_status=0
bash scripts/setup.sh --for-tests || setup_status=$?
if [ "$setup_status" -eq 0 ]; then
  # Every kubectl the kubectl-driven e2e tests run with: the one on PATH and Debian's 1.20 (fetched
  # into .cache/kubectl-1.20/ once). A caller's own BERTH_KUBECTLS wins.
  if [ -z "${BERTH_KUBECTLS:-}" ]; then
    BERTH_KUBECTLS="$(bash scripts/kubectl-versions.sh)" || setup_status=$?
  fi
fi
record_phase setup "$(awk -v a="$setup_started" -v b="$(berth_now)" 'BEGIN { printf "%.1f", b - a }')" "$setup_status"
[ "$setup_status" -eq 0 ] || exit "$setup_status"
export BERTH_KUBECTLS
printf '[berth] e2e kubectl binaries: %s\n' "${BERTH_KUBECTLS:-none}" >&2

# Patterns are expanded here, after setup built dist/: a caller on a machine without a build yet
# (the fresh-machine check) passes them quoted.
patterns=()
if [ "${1:-}" = "--unit-only" ]; then
  shift
  patterns=('dist/test/unit/*.test.js' 'dist/test/unit/*/*.test.js')
elif [ $# -gt 0 ]; then
  patterns=("$@")
else
  patterns=('dist/test/unit/*.test.js' 'dist/test/unit/*/*.test.js' 'dist/test/e2e/*.test.js' 'dist/test/e2e/*/*.test.js')
fi
requested=()
for pattern in "${patterns[@]}"; do
  matches="$(compgen -G "$pattern" | LC_ALL=C sort || true)"
  [ -n "$matches" ] || { berth_warn "no test file matches $pattern"; continue; }
  while IFS= read -r file; do requested+=("$file"); done <<<"$matches"
done

# Sort what was asked for into the phases, leaving out builds whose source is gone.
unit_files=()
e2e_files=()
alone_files=()
beside_files=()
stale=()
for file in "${requested[@]}"; do
  source_file="${file#dist/}"
  source_file="${source_file%.js}.ts"
  if [ ! -f "$source_file" ]; then
    stale+=("$file")
    continue
  fi
  case "$file" in
    dist/test/unit/*) unit_files+=("$file") ;;
    *)
      alone=0
      # An entry may be a glob (a new multi-host file runs alone without being listed).
      for candidate in "${E2E_ALONE[@]}"; do [[ "$file" == $candidate ]] && alone=1; done
      beside=0
      for candidate in "${E2E_BESIDE[@]}"; do [ "$candidate" = "$file" ] && beside=1; done
      if [ "$alone" -eq 1 ]; then alone_files+=("$file")
      elif [ "$beside" -eq 1 ]; then beside_files+=("$file")
      else e2e_files+=("$file"); fi
      ;;
  esac
done
[ ${#stale[@]} -eq 0 ] || berth_log "not running ${#stale[@]} stale build(s) whose source is gone: ${stale[*]}"

# The timeout bounds each file as a whole: on a fresh machine install.test.js also installs systemd
# and vagrant for the packaging checks (over 8 minutes on a busy 2-core machine), so 20 min.
# RUN_PHASE_SPEC_OUT: where the spec reporter writes (default stdout); RUN_PHASE_RECORD=0 leaves the
# phase out of phases.tsv, whose phases run one after another (the total adds them up).
run_phase() {
  local phase="$1" concurrency="$2" started status=0
  shift 2
  [ $# -gt 0 ] || return 0
  berth_log "phase $phase: $# file(s), $concurrency at a time"
  started="$(berth_now)"
  BERTH_TEST_FILE_CLOCK="$report_dir/$phase.files.jsonl" \
    node --import ./dist/test/file-clock.js --test --test-concurrency="$concurrency" --test-timeout=1200000 \
    --test-reporter=spec --test-reporter-destination="${RUN_PHASE_SPEC_OUT:-stdout}" \
    --test-reporter=./dist/test/timing-reporter.js --test-reporter-destination="$report_dir/$phase.jsonl" \
    "$@" || status=$?
  [ "${RUN_PHASE_RECORD:-1}" = 0 ] || record_phase "$phase" "$(awk -v a="$started" -v b="$(berth_now)" 'BEGIN { printf "%.1f", b - a }')" "$status"
  return "$status"
}

suite_status=0
run_phase unit "${BERTH_UNIT_CONCURRENCY:-$(nproc)}" "${unit_files[@]}" || suite_status=1
beside_pid=""
if [ ${#beside_files[@]} -gt 0 ]; then
  RUN_PHASE_SPEC_OUT="$report_dir/e2e-beside.out" RUN_PHASE_RECORD=0 run_phase e2e-beside 1 "${beside_files[@]}" &
  beside_pid=$!
fi
run_phase e2e "${BERTH_E2E_CONCURRENCY:-3}" "${e2e_files[@]}" || suite_status=1
if [ -n "$beside_pid" ]; then
  wait "$beside_pid" || suite_status=1
  berth_log "phase e2e-beside (ran beside e2e): ${beside_files[*]}"
  cat "$report_dir/e2e-beside.out"
fi
run_phase e2e-alone 1 "${alone_files[@]}" || suite_status=1

node dist/scripts/test-timings.js "$report_dir" --top 15 || berth_warn "could not print the timing report of $report_dir"
exit "$suite_status"
