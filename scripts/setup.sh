#!/usr/bin/env bash
# Prepares a Debian/Ubuntu machine to build, run and test Berth. Idempotent:
# every step checks first and only acts when something is missing, so a second
# run does nothing new. Runs unattended (CI=true, no stdin); uses sudo for
# system steps when not root.
#
#   1. OS packages: Docker engine, static busybox, gcc + libc6-dev (static pause
#      binary), iproute2, nftables and conntrack (the agent's service proxy), kubectl (Debian's kubernetes-client as a fallback),
#      python3/make/g++ (better-sqlite3 builds from source without a prebuild),
#      etcd-server (the etcd storage backend's tests run real etcd members; the package's service is not started),
#      nginx and openssl (the agent's ingress controller runs its own nginx; the package's service is stopped and disabled)
#   2. Node.js >= 20
#   3. A running Docker daemon (systemd when it is PID 1, else dockerd directly)
#   4. npm dependencies (only when package-lock.json changed) and the native SQLite module
#   5. TypeScript build (npm run build)
#   6. Local images: berth/pause, berth/busybox:test (scripts/images/build-images.sh)
#
# --for-tests (scripts/test.sh passes it) also installs the tools only the test suite uses;
# `scripts/up.sh` leaves them out, so running Berth does not pull in a browser.
set -euo pipefail

for_tests=0
for arg in "$@"; do
  case "$arg" in
    --for-tests) for_tests=1 ;;
    *) printf '[berth] setup: unknown argument %s\n' "$arg" >&2; exit 2 ;;
  esac
done

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib.sh
. "$repo/scripts/lib.sh"

export DEBIAN_FRONTEND=noninteractive
readonly MIN_NODE_MAJOR=20
readonly DOCKERD_LOG=/var/log/berth-dockerd.log
readonly DOCKER_START_TIMEOUT_S=60

started_at="$(berth_now)"
actions=() # what this run changed, for the summary
trap 'status=$?; [ $status -eq 0 ] || printf "[berth] setup FAILED (exit %s); see the messages above\n" "$status" >&2' EXIT

# Asks the daemon afresh: berth_docker caches whether sudo is needed, and that
# answer is meaningless until the daemon is up.
docker_answers() {
  unset BERTH_DOCKER_MODE
  berth_have docker && berth_docker info >/dev/null 2>&1
}

# ---- 1. OS packages -------------------------------------------------------

apt_updated=0
apt_install() {
  berth_have apt-get || berth_die "missing $*, and this is not a Debian/Ubuntu system (no apt-get); install them by hand"
  if [ "$apt_updated" -eq 0 ]; then
    berth_log "apt-get update"
    berth_timed "apt-get update" berth_as_root apt-get update -qq || berth_die "apt-get update failed"
    apt_updated=1
  fi
  berth_log "apt-get install $*"
  berth_timed "apt-get install $*" berth_as_root apt-get install -y -qq --no-install-recommends "$@" >/dev/null ||
    berth_die "apt-get install $* failed"
  actions+=("installed $*")
}

packages=()
# A daemon that already answers (maybe via DOCKER_HOST) needs no local engine.
if ! docker_answers && { ! berth_have dockerd || ! berth_have docker; }; then
  # Debian's docker.io conflicts with Docker's own packages; stay with those when present.
  if berth_pkg_installed docker-ce-cli; then packages+=(docker-ce); else packages+=(docker.io); fi
fi
berth_is_static_elf /bin/busybox || berth_is_static_elf "$(command -v busybox || echo /nonexistent)" ||
  packages+=(busybox-static)
berth_have gcc || packages+=(gcc)
# libc.a is what `gcc -static` links against; gcc prints the bare name when it has none.
static_libc_present() {
  berth_pkg_installed libc6-dev && return 0
  local found
  found="$(gcc -print-file-name=libc.a 2>/dev/null || true)"
  [ -n "$found" ] && [ "$found" != libc.a ]
}
static_libc_present || packages+=(libc6-dev)
berth_have ip || packages+=(iproute2)
# The agent's service proxy programs ClusterIP/NodePort rules with nft (Debian's nftables).
berth_have nft || packages+=(nftables)
# It deletes UDP flows a Service change left stale with the conntrack tool (Debian's conntrack).
berth_have conntrack || packages+=(conntrack)
# The test suite drives `kubectl exec -it` through a real terminal, and the multi-host lab needs these.
berth_have tmux || packages+=(tmux)
berth_have iptables || packages+=(iptables)
berth_have nsenter || packages+=(util-linux)
[ -e /etc/ssl/certs/ca-certificates.crt ] || packages+=(ca-certificates)
berth_have python3 || packages+=(python3)
berth_have make || packages+=(make)
berth_have g++ || packages+=(g++)
# The etcd storage backend's tests start their own etcd members (no systemd) from Debian's etcd-server.
berth_have etcd || packages+=(etcd-server)
if ! berth_have node; then packages+=(nodejs); fi
if [ "$for_tests" -eq 1 ]; then
  # A real Prometheus scrapes both processes in prometheus.test.js; the dashboard's test drives Chromium.
  berth_have prometheus || packages+=(prometheus)
  berth_have chromium || packages+=(chromium)
  # The certificate tests make CSRs and forged client certificates with the openssl tool.
  berth_have openssl || packages+=(openssl)
  # The official Python client drives port-forward over WebSocket channels (port-forward-websocket.test.js).
  /usr/bin/python3 -c 'import kubernetes' 2>/dev/null || packages+=(python3-kubernetes)
  # images.test.js starts its own private registry (Distribution 2.8, htpasswd auth) on a loopback port.
  [ -x /usr/bin/docker-registry ] || packages+=(docker-registry)
  # ingress.test.js and the multi-host services and NetworkPolicy tests request with curl (--resolve, --cacert).
  berth_have curl || packages+=(curl)
fi
if ! berth_have npm; then packages+=(npm); fi
# The agent's ingress controller makes its default certificate with openssl.
berth_have openssl || packages+=(openssl)
[ ${#packages[@]} -eq 0 ] || apt_install "${packages[@]}"
# The package enables a system registry on port 5000; the tests need only the binary, so it stays off.
if [ "$for_tests" -eq 1 ] && berth_have systemctl && systemctl is-enabled docker-registry >/dev/null 2>&1; then
  berth_as_root systemctl disable docker-registry >/dev/null 2>&1 || berth_warn "could not disable the docker-registry service"
  berth_as_root systemctl stop docker-registry >/dev/null 2>&1 || true # no systemd running: nothing started
fi

# The agent's ingress controller runs an nginx of its own (its own configuration, pid and ports) from
# Debian's package. The package also installs a system service that would take ports 80 and 443: when
# this script is what installs nginx, that service is stopped and disabled (an nginx the machine had
# before is left as it is).
if ! berth_have nginx && [ ! -x /usr/sbin/nginx ]; then
  apt_install nginx
  if [ "$(ps -o comm= -p 1 2>/dev/null)" = systemd ]; then
    berth_as_root systemctl disable --now nginx.service >/dev/null 2>&1 || true
  elif [ -x /etc/init.d/nginx ]; then
    berth_as_root /etc/init.d/nginx stop >/dev/null 2>&1 || true
  fi
  actions+=("left the nginx package's own service stopped and disabled (the agent runs its own nginx)")
fi

# kubectl is for people and e2e tests, not for Berth itself: a missing package
# is a warning, not a failure.
if ! berth_have kubectl; then
  if [ "$apt_updated" -eq 0 ] && berth_have apt-get; then
    berth_as_root apt-get update -qq || true
    apt_updated=1
  fi
  if berth_apt_has_candidate kubernetes-client; then
    apt_install kubernetes-client
  else
    berth_warn "kubectl not found and no kubernetes-client package here; install kubectl to use the CLI examples"
  fi
fi

# ---- 2. Node.js -----------------------------------------------------------

node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$node_major" -lt "$MIN_NODE_MAJOR" ]; then
  berth_die "Node.js $MIN_NODE_MAJOR or newer is required, found $(node --version 2>/dev/null || echo none).
  Debian 12's own nodejs package is 18. Install Node $MIN_NODE_MAJOR+ from https://nodejs.org/en/download
  (or NodeSource: https://github.com/nodesource/distributions), then run this script again."
fi

# ---- 3. Docker daemon -----------------------------------------------------

if docker_answers; then
  berth_log "Docker daemon is running"
elif [ -n "${DOCKER_HOST:-}" ]; then
  berth_die "DOCKER_HOST=$DOCKER_HOST does not answer; start that daemon or unset DOCKER_HOST to use the local one"
elif [ "$(ps -p 1 -o comm= 2>/dev/null || true)" = systemd ]; then
  berth_log "starting Docker with systemd (systemctl enable --now docker)"
  berth_as_root systemctl enable --now docker || berth_die "systemctl enable --now docker failed; see: journalctl -u docker"
  actions+=("started docker.service")
else
  # No init system to ask (containers, CI sandboxes): run the daemon ourselves,
  # in its own session so it outlives this script and its terminal.
  if pgrep -x dockerd >/dev/null 2>&1; then
    berth_log "dockerd is running but not answering yet; waiting for it"
  else
    berth_log "systemd is not PID 1: starting dockerd in the background (log: $DOCKERD_LOG)"
    berth_as_root sh -c "setsid nohup dockerd >>'$DOCKERD_LOG' 2>&1 </dev/null &" ||
      berth_die "could not launch dockerd"
    actions+=("started dockerd (log $DOCKERD_LOG)")
  fi
fi
deadline=$(($(date +%s) + DOCKER_START_TIMEOUT_S))
until docker_answers; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    berth_die "Docker did not answer within ${DOCKER_START_TIMEOUT_S}s; last lines of $DOCKERD_LOG:
$(tail -n 15 "$DOCKERD_LOG" 2>/dev/null || echo '(no log)')"
  fi
  sleep 0.5
done

# ---- 4. npm dependencies --------------------------------------------------

cd "$repo"
if [ ! -f package-lock.json ]; then
  berth_log "npm install (no package-lock.json)"
  berth_timed "npm install" npm install --no-audit --no-fund || berth_die "npm install failed"
  actions+=("npm install")
elif [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  berth_log "npm ci (dependencies missing or package-lock.json changed)"
  berth_timed "npm ci" npm ci --no-audit --no-fund || berth_die "npm ci failed"
  actions+=("npm ci")
fi

# Loading the module is not enough: better-sqlite3 only loads its native
# binding when a database is opened, and a binding built for another Node ABI
# fails exactly there.
sqlite_loads() {
  node -e "const D = require('better-sqlite3'); new D(':memory:').prepare('select 1').get()" >/dev/null 2>&1
}
if ! sqlite_loads; then
  berth_log "better-sqlite3's native module does not load; npm rebuild better-sqlite3 (needs python3, make, g++)"
  berth_timed "npm rebuild better-sqlite3" npm rebuild better-sqlite3 || berth_die "npm rebuild better-sqlite3 failed"
  sqlite_loads || berth_die "better-sqlite3 still does not load after a rebuild:
$(node -e "const D = require('better-sqlite3'); new D(':memory:')" 2>&1 | sed -n 1,5p)"
  actions+=("rebuilt better-sqlite3")
fi

# ---- 5. Build -------------------------------------------------------------

# Skipped when no input changed since the last successful build here, which
# keeps a repeat run near-instant; any newer .ts/.json input rebuilds.
build_stamp=dist/.berth-setup-build
build_inputs_changed() {
  [ -f "$build_stamp" ] || return 0
  [ -n "$(find src agent dashboard test scripts bin tsconfig.json package-lock.json -newer "$build_stamp" \
    \( -name '*.ts' -o -name '*.json' -o -name '*.js' \) -print -quit 2>/dev/null)" ]
}
if build_inputs_changed; then
  berth_log "npm run build"
  # Stamped with the time the build started, so edits made during it still count as newer.
  mkdir -p dist && touch "$build_stamp.next"
  berth_timed "npm run build" npm run --silent build || berth_die "TypeScript build failed (npm run build)"
  mv "$build_stamp.next" "$build_stamp"
  actions+=("built dist/")
else
  berth_log "dist/ is up to date"
fi

# ---- 6. Images ------------------------------------------------------------

berth_timed "images" bash "$repo/scripts/images/build-images.sh"

# ---- Summary --------------------------------------------------------------

elapsed="$(awk -v a="$started_at" -v b="$(berth_now)" 'BEGIN { printf "%.1f", b - a }')"
docker_version="$(berth_docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?')"
kubectl_version="$(kubectl version --client 2>/dev/null || true)"
kubectl_version="$(berth_first_line "$kubectl_version")"
kubectl_version="${kubectl_version#Client Version: }"
# kubectl before 1.28 prints a Go struct: version.Info{Major:"1", …, GitVersion:"v1.20.2", …}
git_version_field='GitVersion:"([^"]+)"'
if [[ "$kubectl_version" =~ $git_version_field ]]; then kubectl_version="${BASH_REMATCH[1]}"; fi
echo
echo "Berth setup done in ${elapsed}s"
echo "  node     $(node --version)"
echo "  docker   $docker_version${DOCKER_HOST:+ ($DOCKER_HOST)}"
echo "  kubectl  ${kubectl_version:-not installed}"
echo "  images   berth/pause:3.9 berth/busybox:test"
if [ ${#actions[@]} -eq 0 ]; then
  echo "  changes  none (everything was already in place)"
else
  for action in "${actions[@]}"; do echo "  changed  $action"; done
fi
