#!/usr/bin/env bash
# Runs scripts/lab-etcd.sh for three lab "VMs" on this machine, with real etcd and etcdctl: the VMs'
# addresses are 127.0.0.2, .3 and .4 (all loopback on Linux, so the fixed ports 2379/2380 do not
# clash), each with its own env file and data dir in a scratch dir. systemd is stood in for by a
# `systemctl` on PATH that starts etcd from the env file, as the package's unit does, and returns from
# `start` once the member answers, as its Type=notify does. Checks, in order:
#   1. the members brought up one after the other (VirtualBox's order) form one three-member cluster;
#   2. re-running on a member changes nothing;
#   3. a member whose VM is destroyed and brought up again takes its old place;
#   4. brought up together, the later members wait for the first and all three join.
# Called by check-packaging.sh; exits non-zero on the first failure. Every etcd it started is killed
# and the scratch dir removed on every exit path.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
  echo "needs etcd and etcdctl (Debian: etcd-server, etcd-client)" >&2
  exit 1
fi

# One run at a time on this machine: the ports are fixed.
exec 9>"${TMPDIR:-/tmp}/berth-lab-etcd-check.lock"
flock -w 120 9 || { echo "another lab-etcd-check holds the lock" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/berth-lab-etcd-check.XXXXXX")"
cleanup() {
  local pidf
  for pidf in "$work"/*/etcd.pid; do
    if [ -f "$pidf" ]; then kill -9 "$(cat "$pidf")" 2>/dev/null || true; fi
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

members="server=127.0.0.2,server2=127.0.0.3,server3=127.0.0.4"
mkdir -p "$work/bin"
cat >"$work/bin/systemctl" <<'SH'
#!/usr/bin/env bash
# Stand-in for systemd's handling of etcd.service, for one VM: VM_DIR/etcd.env is the env file.
set -euo pipefail
pidf="$VM_DIR/etcd.pid"
running() { [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; }
case "$1" in
  enable) ;;
  stop)
    if running; then kill "$(cat "$pidf")"; while running; do sleep 0.1; done; fi
    rm -f "$pidf" ;;
  start)
    running && exit 0
    [ -f "$VM_DIR/etcd.env" ] || exit 1
    ( set -a; . "$VM_DIR/etcd.env"; set +a; exec etcd ) >>"$VM_DIR/etcd.log" 2>&1 &
    echo $! >"$pidf"
    url="$(sed -n 's/^ETCD_ADVERTISE_CLIENT_URLS=//p' "$VM_DIR/etcd.env")"
    for _ in $(seq 300); do
      ETCDCTL_API=3 etcdctl --endpoints "$url" --dial-timeout=1s endpoint health >/dev/null 2>&1 && exit 0
      running || { echo "etcd exited; see $VM_DIR/etcd.log" >&2; exit 1; }
      sleep 0.1
    done
    echo "etcd did not answer within 30s" >&2; exit 1 ;;
  *) echo "stand-in systemctl: unsupported $*" >&2; exit 1 ;;
esac
SH
chmod +x "$work/bin/systemctl"

# vm NAME [ARGS...]: runs lab-etcd.sh as VM NAME would.
vm() {
  local name="$1"
  mkdir -p "$work/$name"
  PATH="$work/bin:$PATH" VM_DIR="$work/$name" bash "$repo/scripts/lab-etcd.sh" --name "$name" --members "$members" \
    --env-file "$work/$name/etcd.env" --data-dir "$work/$name/data" --wait-seconds 60 "${@:2}"
}
fail() {
  echo "FAIL: $*" >&2
  local log
  for log in "$work"/*/etcd.log; do [ -f "$log" ] && { echo "--- $log (last lines)" >&2; tail -n 5 "$log" >&2; }; done
  exit 1
}
# Prints "name peer-url" of every started member, sorted.
started_members() {
  ETCDCTL_API=3 etcdctl --endpoints http://127.0.0.2:2379,http://127.0.0.3:2379,http://127.0.0.4:2379 \
    --dial-timeout=2s member list | awk -F', ' '$2 == "started" { print $3, $4 }' | sort
}
want_three() {
  local got
  got="$(started_members)"
  [ "$got" = "$(printf '%s\n' 'server http://127.0.0.2:2380' 'server2 http://127.0.0.3:2380' 'server3 http://127.0.0.4:2380')" ] ||
    fail "$1: expected three started members, etcd lists: $got"
}
stop_all() {
  local n
  for n in server server2 server3; do VM_DIR="$work/$n" "$work/bin/systemctl" stop etcd; rm -rf "${work:?}/$n"; done
}

# 1. one after the other
for n in server server2 server3; do vm "$n" >"$work/$n.out" 2>&1 || fail "$n: $(cat "$work/$n.out")"; done
grep -q "founding a new cluster" "$work/server.out" || fail "server did not found the cluster: $(cat "$work/server.out")"
grep -q "joining the cluster" "$work/server3.out" || fail "server3 did not join: $(cat "$work/server3.out")"
want_three "one after the other"
ETCDCTL_API=3 etcdctl --endpoints http://127.0.0.3:2379 put /lab-check written-through-server2 >/dev/null
[ "$(ETCDCTL_API=3 etcdctl --endpoints http://127.0.0.4:2379 get --print-value-only /lab-check)" = written-through-server2 ] ||
  fail "a write through server2 is not read back through server3"
echo "ok 1: three VMs brought up in turn form one three-member cluster"

# 2. idempotent
out="$(vm server2 2>&1)" || fail "re-run on server2: $out"
grep -q "nothing to do" <<<"$out" || fail "re-run on server2 changed something: $out"
want_three "after a re-run"
echo "ok 2: re-running on a member changes nothing"

# 3. destroyed and recreated: its data and env file are gone, its stale member entry is not
VM_DIR="$work/server3" "$work/bin/systemctl" stop etcd
rm -rf "${work:?}/server3"
out="$(vm server3 2>&1)" || fail "recreated server3: $out"
grep -q "removing the stale member" <<<"$out" || fail "recreated server3 did not remove its stale member: $out"
want_three "after recreating server3"
[ "$(ETCDCTL_API=3 etcdctl --endpoints http://127.0.0.4:2379 get --print-value-only /lab-check)" = written-through-server2 ] ||
  fail "the recreated server3 did not catch up"
echo "ok 3: a recreated VM takes its old place and catches up"

# 4. together: the later members wait for the first
stop_all
vm server3 >"$work/p3.out" 2>&1 &
p3=$!
vm server2 >"$work/p2.out" 2>&1 &
p2=$!
sleep 3
vm server >"$work/p1.out" 2>&1 || fail "server, brought up last: $(cat "$work/p1.out")"
wait "$p2" || fail "server2, brought up together: $(cat "$work/p2.out")"
wait "$p3" || fail "server3, brought up together: $(cat "$work/p3.out")"
grep -q "waiting for server's etcd" "$work/p2.out" || fail "server2 did not wait for server: $(cat "$work/p2.out")"
want_three "brought up together"
echo "ok 4: brought up together, the later members wait for the first"
