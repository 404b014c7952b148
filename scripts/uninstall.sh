#!/usr/bin/env bash
# Removes what scripts/install.sh installed: stops berth-server / berth-agent (systemd units, or the
# background processes of a host without systemd), removes the unit files and the program directory.
#
# Kept unless --purge: the control plane's data (state, certificates, kubeconfig), the agent's
# credentials, ETC_DIR (settings, join token) and the logs — so reinstalling resumes the same
# cluster. Pod containers are Docker's and keep running either way, except that --purge also removes
# those of this host's node (matched by its node-name label, nothing else) and the service proxy's
# nftables table (ip berth).
#
# Usage: uninstall.sh [--purge] [--etc-dir DIR (/etc/berth)]
#   The other locations come from ETC_DIR/install.env, written by install.sh; override them with
#   --prefix, --unit-dir, --log-dir, --run-dir when that file is gone.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$here/lib.sh"

readonly STOP_TIMEOUT_S=30

purge=0 etc_dir=/etc/berth
opt_prefix="" opt_unit_dir="" opt_log_dir="" opt_run_dir=""
while [ $# -gt 0 ]; do
  flag="$1"
  case "$flag" in
    --purge) purge=1; shift; continue ;;
    -h | --help) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --*=*) set -- "${flag%%=*}" "${flag#*=}" "${@:2}"; flag="$1" ;;
  esac
  [ $# -ge 2 ] || berth_die "$flag needs a value (try --help)"
  case "$flag" in
    --etc-dir) etc_dir="$2" ;;
    --prefix) opt_prefix="$2" ;;
    --unit-dir) opt_unit_dir="$2" ;;
    --log-dir) opt_log_dir="$2" ;;
    --run-dir) opt_run_dir="$2" ;;
    *) berth_die "unknown option: $flag (try --help)" ;;
  esac
  shift 2
done
[ "$(id -u)" -eq 0 ] || berth_die "uninstall.sh removes system services: run it as root"

recorded() { env_get "$etc_dir/install.env" "$1" || true; }

prefix="${opt_prefix:-$(recorded BERTH_PREFIX)}"
prefix="${prefix:-/opt/berth}"
unit_dir="${opt_unit_dir:-$(recorded BERTH_UNIT_DIR)}"
unit_dir="${unit_dir:-/etc/systemd/system}"
log_dir="${opt_log_dir:-$(recorded BERTH_LOG_DIR)}"
log_dir="${log_dir:-/var/log/berth}"
run_dir="${opt_run_dir:-$(recorded BERTH_RUN_DIR)}"
run_dir="${run_dir:-/run/berth}"

systemd_is_init() { [ -d /run/systemd/system ]; }
removed=()

stop_service() {
  local mode="$1" unit="berth-$1.service" pid_file="$run_dir/berth-$1.pid" pid deadline
  if systemd_is_init && systemctl cat "$unit" >/dev/null 2>&1; then
    berth_log "stopping and disabling $unit"
    systemctl disable --now --quiet "$unit" 2>/dev/null || systemctl stop "$unit" || true
    removed+=("stopped $unit")
  fi
  # Also without systemd, and after a host switched to systemd: a process install.sh started itself.
  pid="$(cat "$pid_file" 2>/dev/null || true)"
  if berth_is_berth_process "$pid" "$prefix" "$mode"; then
    berth_log "stopping berth $mode (pid $pid)"
    t0="$(berth_now)"
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$(($(date +%s) + STOP_TIMEOUT_S))
    while berth_is_berth_process "$pid" "$prefix" "$mode"; do
      if [ "$(date +%s)" -ge "$deadline" ]; then
        berth_warn "pid $pid did not stop within ${STOP_TIMEOUT_S}s; killing it"
        kill -KILL "$pid" 2>/dev/null || true
      fi
      sleep 0.2
    done
    removed+=("stopped berth $mode (pid $pid) in $(awk -v a="$t0" -v b="$(berth_now)" 'BEGIN { printf "%.1f", b - a }')s")
  fi
  rm -f "$pid_file"
  if [ -f "$unit_dir/$unit" ]; then
    rm -f "$unit_dir/$unit"
    removed+=("removed $unit_dir/$unit")
  fi
}

# The node-local DNS resolver the agent started outlives the agent by design (pods keep resolving
# names while it restarts); uninstalling ends it. Its pid file names it; /proc confirms it is the
# resolver of this data dir before it is signalled.
stop_node_resolver() {
  local data="$1" pid cmdline
  [ -n "$data" ] || return 0
  pid="$(sed -n 's/^{"pid":\([0-9]*\),.*/\1/p' "$data/dns/resolver.pid" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] && [ -r "/proc/$pid/cmdline" ] || return 0
  cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 0
  [[ "$cmdline" == *"/resolver-main.js "*"--data-dir $data "* ]] || return 0
  berth_log "stopping the node DNS resolver (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do [ -e "/proc/$pid" ] || break; sleep 0.1; done
  removed+=("stopped the node DNS resolver (pid $pid)")
}

# The agent stops its ingress's nginx when it stops; one a killed agent left running is ended here,
# found by its pid file and confirmed by /proc as the nginx of this data dir.
stop_ingress_nginx() {
  local data="$1" pid cmdline
  [ -n "$data" ] || return 0
  pid="$(cat "$data/ingress/nginx.pid" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] && [ -r "/proc/$pid/cmdline" ] || return 0
  cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 0
  [[ "$cmdline" == *nginx*"$data/ingress/"* ]] || return 0
  berth_log "stopping the ingress's nginx (pid $pid)"
  kill -QUIT "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do [ -e "/proc/$pid" ] || break; sleep 0.1; done
  removed+=("stopped the ingress's nginx (pid $pid)")
}

# The agent goes first: it should not see the control plane vanish under it.
stop_service agent
stop_node_resolver "$(env_get "$etc_dir/agent.env" BERTH_DATA_DIR || true)"
stop_ingress_nginx "$(env_get "$etc_dir/agent.env" BERTH_DATA_DIR || true)"
stop_service server
if systemd_is_init; then systemctl daemon-reload || true; fi
rmdir "$run_dir" 2>/dev/null || true

# The program directory is removed only when install.sh's marker says it is ours: a wrong --prefix
# must never delete somebody else's files.
if [ -d "$prefix" ]; then
  if [ "$prefix" != / ] && [ -f "$prefix/.berth-program-sha256" ]; then
    rm -rf "$prefix"
    removed+=("removed $prefix")
  else
    berth_warn "$prefix has no .berth-program-sha256 (not installed by install.sh?); leaving it alone"
  fi
fi

if [ "$purge" -eq 1 ]; then
  node_name="$(env_get "$etc_dir/agent.env" BERTH_NODE_NAME || true)"
  if [ -n "$node_name" ] && docker info >/dev/null 2>&1; then
    ids="$(docker ps -aq --filter "label=berth.dev/node-name=$node_name")"
    if [ -n "$ids" ]; then
      # shellcheck disable=SC2086 # one id per word
      docker rm -f $ids >/dev/null
      removed+=("removed the containers of node $node_name")
    fi
  fi
  # The service proxy's and NetworkPolicy's rules outlive the agent on purpose (traffic flows across
  # restarts); with the pods gone they go too. Only this cluster's tables: those whose owner comment
  # names the cluster id the agent recorded, as `berth down` finds them.
  cluster_id="$(cat "$(env_get "$etc_dir/agent.env" BERTH_DATA_DIR || true)/cluster-id" 2>/dev/null || true)"
  if [ -n "$cluster_id" ] && berth_have nft; then
    for table in $(nft list tables ip 2>/dev/null | awk '$1 == "table" && $2 == "ip" { print $3 }'); do
      # Read whole, not piped into grep -q: its early exit could kill nft and, under pipefail, miss a match.
      listing="$(nft list table ip "$table" 2>/dev/null || true)"
      if [[ "$listing" == *"comment \"berth-cluster=$cluster_id\""* ]]; then
        nft delete table ip "$table"
        removed+=("removed the nftables table ip $table")
      fi
    done
  fi
  for data in "$(env_get "$etc_dir/agent.env" BERTH_DATA_DIR || true)" "$(env_get "$etc_dir/server.env" BERTH_DATA_DIR || true)" "$log_dir" "$etc_dir"; do
    if [ -n "$data" ] && [ "$data" != / ] && [ -e "$data" ]; then
      # Pods' in-memory volumes (Secrets, ServiceAccount tokens) are tmpfs mounts in the agent's data
      # dir; their pods are gone, so they are unmounted, deepest first, before the dir is deleted.
      mounted="$(awk -v dir="$data/" 'index($2, dir) == 1 { print $2 }' /proc/self/mounts | sort -r)"
      for mount_point in $mounted; do umount "$mount_point" 2>/dev/null || umount -l "$mount_point"; done
      rm -rf "$data"
      removed+=("purged $data")
    fi
  done
else
  berth_log "kept data and settings (pass --purge to delete them): $etc_dir, $log_dir and the data dirs named in $etc_dir/*.env"
fi

echo
if [ ${#removed[@]} -eq 0 ]; then
  echo "Berth uninstall: nothing was installed"
else
  echo "Berth uninstall done"
  for r in "${removed[@]}"; do echo "  $r"; done
fi
