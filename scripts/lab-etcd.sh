#!/usr/bin/env bash
# Makes this lab VM a member of the lab's etcd cluster, with Debian's etcd-server package configured
# through /etc/default/etcd (the package's unit reads it), as root:
#
#   lab-etcd.sh --name server2 --members server1=192.168.56.10,server2=192.168.56.21,server3=192.168.56.22
#
# Members are listed in order; the first founds the cluster. Clients use http://IP:2379, peers
# http://IP:2380, on the private network only (no TLS: the lab's network is the host's).
#
# Why the members join one by one instead of sharing a static three-member initial cluster: Vagrant
# brings VirtualBox VMs up one after the other, and the package's unit is Type=notify, so the first
# member's start would block waiting for a quorum whose other members do not exist yet. So, as
# kubeadm does for stacked etcd:
#   - no member of the list answers and this is the first: a new one-member cluster;
#   - another member answers: any stale entry for this name (a destroyed and recreated VM) is removed,
#     this member is added (`etcdctl member add`, retried while etcd refuses a change that would
#     cost quorum), and etcd starts with state "existing" and the cluster list etcd returned;
#   - no member answers and this is not the first: waits (parallel providers bring VMs up together).
# Re-running on a member that is configured, running and in the member list changes nothing.
#
# Options: --env-file F (/etc/default/etcd), --data-dir D (/var/lib/etcd/default),
#          --wait-seconds N (900: how long a later member waits for the first).
set -euo pipefail

readonly CLIENT_PORT=2379 PEER_PORT=2380
readonly MARKER="# Written by lab-etcd.sh"
name="" members="" env_file=/etc/default/etcd data_dir=/var/lib/etcd/default wait_seconds=900

die() { echo "lab-etcd: $*" >&2; exit 1; }
log() { echo "lab-etcd: $*"; }

while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || die "$1 needs a value"
  case "$1" in
    --name) name="$2" ;;
    --members) members="$2" ;;
    --env-file) env_file="$2" ;;
    --data-dir) data_dir="$2" ;;
    --wait-seconds) wait_seconds="$2" ;;
    *) die "unknown option $1" ;;
  esac
  shift 2
done
[[ "$name" =~ ^[a-z0-9][-a-z0-9]*$ ]] || die "--name: expected a host name, got '$name'"
[[ "$members" =~ ^[a-z0-9][-a-z0-9]*=[0-9.]+(,[a-z0-9][-a-z0-9]*=[0-9.]+)*$ ]] ||
  die "--members: expected NAME=IP[,NAME=IP...], got '$members'"
[[ "$wait_seconds" =~ ^[0-9]+$ ]] || die "--wait-seconds: expected a whole number, got '$wait_seconds'"

names=() ips=() own_ip=""
IFS=, read -r -a pairs <<<"$members"
for pair in "${pairs[@]}"; do
  names+=("${pair%%=*}")
  ips+=("${pair#*=}")
  [ "${pair%%=*}" != "$name" ] || own_ip="${pair#*=}"
done
[ -n "$own_ip" ] || die "--name $name is not in --members $members"
founder="${names[0]}"
own_peer="http://$own_ip:$PEER_PORT"
own_client="http://$own_ip:$CLIENT_PORT"
# Also on 127.0.0.1 for etcdctl on the VM, unless the member's own address is a loopback one already
# (lab-etcd-check.sh runs three members on one machine as 127.0.0.2, .3 and .4).
listen_clients="$own_client"
[[ "$own_ip" == 127.* ]] || listen_clients="$own_client,http://127.0.0.1:$CLIENT_PORT"

if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends etcd-server etcd-client >/dev/null
fi

ctl() { ETCDCTL_API=3 etcdctl --dial-timeout=2s --command-timeout=5s "$@"; }

# Prints the client URL of a member of the list, other than this one, that answers; fails when none does.
answering_peer() {
  local i
  for i in "${!names[@]}"; do
    [ "${names[$i]}" != "$name" ] || continue
    if ctl --endpoints "http://${ips[$i]}:$CLIENT_PORT" member list >/dev/null 2>&1; then
      printf 'http://%s:%s' "${ips[$i]}" "$CLIENT_PORT"
      return 0
    fi
  done
  return 1
}

# True when the local member runs and the cluster lists it under this name with this peer URL.
is_running_member() {
  local list
  list="$(ctl --endpoints "$own_client" member list 2>/dev/null)" || return 1
  grep -F ", $name, $own_peer," <<<"$list" >/dev/null
}

wait_healthy() {
  local deadline=$(($(date +%s) + 120))
  until ctl --endpoints "$own_client" endpoint health >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || die "etcd on $own_client is not healthy after 120s; see: journalctl -u etcd"
    sleep 2
  done
}

# Writes the env file the package's unit reads, from a clean data dir, and starts etcd.
configure_and_start() {
  local initial_cluster="$1" state="$2"
  systemctl stop etcd || true
  rm -rf "$data_dir"
  {
    echo "$MARKER for the Berth lab ($members); re-provisioning keeps it while etcd runs."
    echo "ETCD_NAME=$name"
    echo "ETCD_DATA_DIR=$data_dir"
    echo "ETCD_LISTEN_PEER_URLS=$own_peer"
    echo "ETCD_INITIAL_ADVERTISE_PEER_URLS=$own_peer"
    echo "ETCD_LISTEN_CLIENT_URLS=$listen_clients"
    echo "ETCD_ADVERTISE_CLIENT_URLS=$own_client"
    echo "ETCD_INITIAL_CLUSTER=$initial_cluster"
    echo "ETCD_INITIAL_CLUSTER_STATE=$state"
    echo "ETCD_INITIAL_CLUSTER_TOKEN=berth-lab"
  } >"$env_file"
  chmod 0644 "$env_file"
  systemctl enable --quiet etcd
  systemctl start etcd
  wait_healthy
}

if grep -qF "$MARKER" "$env_file" 2>/dev/null; then
  systemctl start etcd || true
  if is_running_member; then
    log "$name is already a running member ($own_client); nothing to do"
    exit 0
  fi
fi

deadline=$(($(date +%s) + wait_seconds))
announced=0
while :; do
  if peer="$(answering_peer)"; then
    # A stale entry for this name (or this address) from an earlier VM goes first.
    while IFS=', ' read -r id _status member_name member_peer _rest; do
      if [ "$member_name" = "$name" ] || [ "$member_peer" = "$own_peer" ]; then
        log "removing the stale member $id ($member_name, $member_peer)"
        ctl --endpoints "$peer" member remove "$id" >/dev/null
      fi
    done < <(ctl --endpoints "$peer" member list)
    until added="$(ctl --endpoints "$peer" member add "$name" --peer-urls="$own_peer" 2>&1)"; do
      [ "$(date +%s)" -lt "$deadline" ] || die "etcd refused to add $name through $peer: $added"
      log "etcd refused to add $name yet (${added##*Error: }); retrying"
      sleep 3
    done
    initial_cluster="$(sed -n 's/^ETCD_INITIAL_CLUSTER="\(.*\)"$/\1/p' <<<"$added")"
    [ -n "$initial_cluster" ] || die "no ETCD_INITIAL_CLUSTER in etcdctl's answer: $added"
    log "joining the cluster through $peer as $name"
    configure_and_start "$initial_cluster" existing
    break
  elif [ "$name" = "$founder" ]; then
    log "no member answers: founding a new cluster as $name"
    configure_and_start "$name=$own_peer" new
    break
  fi
  [ "$(date +%s)" -lt "$deadline" ] || die "no member of $members answered within ${wait_seconds}s; bring up $founder first"
  if [ "$announced" -eq 0 ]; then log "waiting for $founder's etcd to answer"; announced=1; fi
  sleep 5
done
log "$name is a member: $(ctl --endpoints "$own_client" member list | tr '\n' ';')"
