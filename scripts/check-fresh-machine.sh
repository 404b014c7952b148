#!/usr/bin/env bash
# Runs the README's two commands, `bash scripts/up.sh` and `bash scripts/test.sh`, on a fresh
# Debian 12 machine: a container made from a minimal Debian root (debootstrap --variant=minbase)
# plus only what a machine of this project's kind has before anyone touches it. A green run on a
# machine where earlier runs already installed Docker, kubectl or vagrant proves nothing about a
# new machine; this check does.
#
# What the fresh machine gets beyond minbase, copied from this machine (and nothing else):
#   - Node.js: /usr/bin/node, /usr/lib/node_modules/npm with the npm/npx links, Node's headers
#     in /usr/include/node and `nodedir=/usr` in ~/.npmrc (native addons build offline)
#   - the CA trust store: /usr/local/share/ca-certificates/, /etc/ssl/certs/ca-certificates.crt,
#     and NODE_EXTRA_CA_CERTS / SSL_CERT_FILE pointing at it
#   - apt's sources (and apt.conf.d Acquire settings), so apt reaches the same mirror
#   - npm's settings: /etc/npmrc, /usr/etc/npmrc, ~/.npmrc, so `npm ci` reaches the same registry
# No Docker, kubectl, git, compilers or python: the README's commands must install what they need.
#
# Each of the two commands gets a fresh machine of its own, and the two run side by side: a
# container per command, each with a `git clone` of the committed HEAD of the checkout being tested
# (uncommitted files never leak in) and its own Docker engine, on a named volume for
# /var/lib/docker, started by scripts/setup.sh as it would be on a machine without systemd. So each
# command proves it installs all it needs by itself, and the check takes as long as the slower one.
#
# Steps, each timed and reported; the check goes on after a failed step and fails at the end:
#   image  debootstrap + the additions above, imported as a local image; cached by a content key
#          (the recipe, the mirror, Node and the copied settings), so a second run skips it
#   up     (machine 1) `bash scripts/up.sh` in the background; then the API answers, the local node
#          is Ready, `kubectl apply -f manifests/pod-two-containers.yaml` with the kubectl setup
#          installed, and the pod runs 2/2; then up.sh is stopped
#   test   (machine 2) `bash scripts/test.sh` with the subset in FRESH_TESTS below
#
# Usage: bash scripts/check-fresh-machine.sh [--keep] [--skip-build] [--only up|test]
#                                            [--rev REV] [--full-suite] [--source DIR]
#   --keep        leave the containers and their Docker volumes for a look inside (prints how)
#   --skip-build  reuse the newest cached fresh-machine image even if its recipe changed
#   --only STEP   run only `up` or only `test`
#   --rev REV     test this commit of the checkout instead of HEAD
#   --full-suite  run scripts/test.sh without arguments (the whole suite) instead of FRESH_TESTS
#   --source DIR  the checkout to clone (default: the one this script is in)
# Needs root, a Docker engine that answers, and git. Installs Debian's debootstrap when missing.
set -euo pipefail

# The README's test command runs on the fresh machine with this subset of the suite (file globs
# relative to the repository, as scripts/test.sh takes them): only what a fresh machine can break,
# since the normal suite already ran every file on this commit. That is setup itself (every run of
# test.sh starts with it), and each test file that installs a tool or depends on one setup installs:
#   unit   backend-contract-etcd.test.js Debian's etcd-server; protobuf.test.js the kubectl setup
#          installs (Debian's 1.20 on a fresh machine); pause-image.test.js and proxy-hairpin.test.js
#          the gcc, tar and unshare the pause image and the hairpin check use
#   e2e    install.test.js runs scripts/install.sh and scripts/check-packaging.sh (vagrant,
#          systemd-analyze); kubectl.test.js drives the kubectl setup installed; streams.test.js
#          needs tmux; streams-spdy.test.js and openapi-v2.test.js drive Debian's kubectl 1.20
#          (scripts/kubectl-versions.sh) over SPDY and /openapi/v2; port-forward.test.js drives both
#          kubectls and enters pods' network namespaces with nsenter; multihost/multihost.test.js
#          needs iproute2, nsenter, iptables and a second dockerd for its lab (test/e2e/multihost/
#          lab.ts; the other lab files need the same tools, so one of them is enough here);
#          services.test.js the nft the agent's service proxy uses; runtime-docker.test.js the Docker engine itself; etcd-store.test.js
#          etcd-server; prometheus.test.js Debian's prometheus and dashboard.test.js Debian's
#          chromium (both setup.sh --for-tests); port-forward-websocket.test.js Debian's
#          python3-kubernetes and certificates.test.js openssl (both setup.sh --for-tests);
#          images.test.js Debian's docker-registry and Python's crypt for its htpasswd, and
#          ingress.test.js the nginx the agent's ingress runs and curl (all setup.sh --for-tests).
# Every other file exercises Berth's own code against the same engine, and ran in the normal suite.
FRESH_TESTS=(
  dist/test/unit/backend-contract-etcd.test.js
  dist/test/unit/protobuf.test.js
  dist/test/unit/pause-image.test.js
  dist/test/unit/proxy-hairpin.test.js
  dist/test/e2e/install.test.js
  dist/test/e2e/kubectl.test.js
  dist/test/e2e/streams.test.js
  dist/test/e2e/streams-spdy.test.js
  dist/test/e2e/openapi-v2.test.js
  dist/test/e2e/port-forward.test.js
  dist/test/e2e/port-forward-websocket.test.js
  dist/test/e2e/certificates.test.js
  dist/test/e2e/runtime-docker.test.js
  dist/test/e2e/services.test.js
  dist/test/e2e/etcd-store.test.js
  dist/test/e2e/prometheus.test.js
  dist/test/e2e/dashboard.test.js
  dist/test/e2e/images.test.js
  dist/test/e2e/ingress.test.js
  dist/test/e2e/multihost/multihost.test.js
)

readonly IMAGE_REPO=berth-fresh/debian12
readonly SUITE=bookworm
readonly REPO_IN_CONTAINER=/root/berth
readonly UP_LOG_IN_CONTAINER=/var/log/berth-up.log
readonly KUBECONFIG_IN_CONTAINER=/var/lib/berth/kubeconfig.yaml
readonly MANIFEST=manifests/pod-two-containers.yaml
readonly POD_NAME=web
# Upper bounds, so a hang fails the check instead of CI's hard limit.
readonly DEBOOTSTRAP_TIMEOUT_S=600
readonly UP_READY_TIMEOUT_S=900 # setup from nothing: apt, npm ci, better-sqlite3 build, images (3–6 min here)
readonly NODE_READY_TIMEOUT_S=120
readonly POD_RUNNING_TIMEOUT_S=180
readonly KUBECTL_TIMEOUT_S=60
readonly UP_STOP_TIMEOUT_S=30
readonly TEST_TIMEOUT_S=1500 # the subset took 10 min here, setup from nothing (5 min) included
readonly FULL_SUITE_TIMEOUT_S=3600 # the whole suite: ≈23 min on a warm machine here, plus setup from nothing (5 min) and a slower engine

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$here/scripts/lib.sh"
source_repo="$here"
keep=0
skip_build=0
only=''
rev=HEAD
full_suite=0
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=1 ;;
    --skip-build) skip_build=1 ;;
    --only)
      only="${2:-}"
      shift
      case "$only" in up | test) ;; *) echo "--only takes up or test" >&2; exit 2 ;; esac
      ;;
    --rev) rev="${2:?--rev needs a commit}"; shift ;;
    --full-suite) full_suite=1 ;;
    --source) source_repo="$(cd "${2:?--source needs a directory}" && pwd)"; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

log() { printf '[fresh] %s\n' "$*" >&2; }
die() { printf '[fresh] ERROR: %s\n' "$*" >&2; exit 1; }
now() { date +%s; }

# The API facts the generated types and tables come from are reference data beside the checkout
# (../shared/data/kubernetes-api), not in the repository. Each machine sees them read-only at the
# same place beside its clone, so the unit test comparing the committed generated files with a
# fresh generation runs there as it does here (under CI=true it fails rather than skips without them).
# The subset run here has no such test; --full-suite does.
api_facts_dir="${BERTH_API_FACTS_DIR:-$(berth_api_facts_dir "$source_repo" || true)}"
if [ -z "$api_facts_dir" ] || [ ! -f "$api_facts_dir/openapi-v2-facts.json" ]; then
  [ -n "${BERTH_API_FACTS_OPTIONAL:-}" ] ||
    die "no API facts beside $source_repo or its origin (shared/data/kubernetes-api/openapi-v2-facts.json); set BERTH_API_FACTS_DIR to the kubernetes-api facts directory"
  log "no API facts found: the machines get none, and their generated-file checks skip (BERTH_API_FACTS_OPTIONAL)"
  api_facts_dir=""
fi
# Seconds as "Mm SSs".
duration() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

[ "$(id -u)" -eq 0 ] || die "run as root: debootstrap and the container's Docker engine need it"
command -v git >/dev/null || die "git is needed to clone the checkout under test"
command -v docker >/dev/null && docker info >/dev/null 2>&1 || die "no Docker engine answers here (docker info)"

run_id="$$-$(date +%s)"
# One machine per command: machine_container up, machine_container test, and so on.
machine_container() { printf 'berth-fresh-%s-%s' "$run_id" "$1"; }
machine_volume() { printf 'berth-fresh-docker-%s-%s' "$run_id" "$1"; }
# /tmp on a disk, as on a real machine: the multi-host tests start dockerds with data roots under
# /tmp, and overlay2 cannot stack on the container's own overlay root.
machine_tmp_volume() { printf 'berth-fresh-tmp-%s-%s' "$run_id" "$1"; }
# A network of its own, so the check depends neither on the engine's default bridge nor on
# what other users of the engine do to it.
network="berth-fresh-net-$run_id"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/berth-fresh.XXXXXX")"
machines_started=()

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  # Side-by-side steps still running end with their machines.
  kill $(jobs -p) 2>/dev/null || true
  local m v
  if [ "$keep" -eq 1 ] && [ ${#machines_started[@]} -gt 0 ]; then
    for m in "${machines_started[@]}"; do
      log "kept: container $(machine_container "$m") (docker exec -it $(machine_container "$m") bash), volumes $(machine_volume "$m") $(machine_tmp_volume "$m")"
    done
    log "network $network, clones and logs in $scratch; remove with: docker rm -f CONTAINER…; docker volume rm VOLUME…; docker network rm $network; rm -rf $scratch"
  else
    for m in ${machines_started[@]+"${machines_started[@]}"}; do
      docker rm -f "$(machine_container "$m")" >/dev/null 2>&1 || log "could not remove container $(machine_container "$m")"
      for v in "$(machine_volume "$m")" "$(machine_tmp_volume "$m")"; do
        if docker volume inspect "$v" >/dev/null 2>&1; then
          docker volume rm -f "$v" >/dev/null 2>&1 || log "could not remove volume $v"
        fi
      done
    done
    if docker network inspect "$network" >/dev/null 2>&1; then
      docker network rm "$network" >/dev/null 2>&1 || log "could not remove network $network"
    fi
    rm -rf "$scratch"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM

# ---- the fresh machine's image ------------------------------------------------------------

# The Debian mirror this machine's apt uses for $SUITE: the first URI of the deb822 stanza whose
# Suites include it, else the first one-line `deb` entry for it.
host_mirror() {
  local mirror=''
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    mirror="$(awk -v suite="$SUITE" '
      /^[[:space:]]*$/ { if (uri != "" && has) { print uri; exit } uri = ""; has = 0; next }
      $1 == "URIs:" { uri = $2 }
      $1 == "Suites:" { for (i = 2; i <= NF; i++) if ($i == suite) has = 1 }
      END { if (uri != "" && has) print uri }' /etc/apt/sources.list.d/debian.sources)"
  fi
  if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
    mirror="$(awk -v suite="$SUITE" '$1 == "deb" {
      for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i ~ /:\/\//) { if ($(i + 1) == suite) { print $i; exit } break } }' /etc/apt/sources.list)"
  fi
  printf '%s\n' "${mirror%%[[:space:]]*}" | sed -n 1p
}

# apt.conf.d files of this machine that tell apt how to reach its mirror (Acquire settings).
host_apt_conf_files() {
  local file
  for file in /etc/apt/apt.conf.d/*; do
    [ -f "$file" ] || continue
    if grep -E '^[[:space:]]*Acquire' "$file" >/dev/null 2>&1; then printf '%s\n' "$file"; fi
  done
}

# The files this machine's npm reads for its settings (global, builtin-prefix and user).
host_npmrc_files() {
  local file
  for file in /etc/npmrc /usr/etc/npmrc /root/.npmrc; do
    [ -f "$file" ] && printf '%s\n' "$file"
  done
  return 0
}

# Fills $1 (a debootstrapped root) with what a new machine of this kind has beyond minbase.
add_machine_basics() {
  local root="$1" file
  # Node.js, npm and Node's headers.
  install -D -m 0755 /usr/bin/node "$root/usr/bin/node"
  mkdir -p "$root/usr/lib/node_modules" "$root/usr/include"
  cp -a /usr/lib/node_modules/npm "$root/usr/lib/node_modules/npm"
  ln -sfn ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/bin/npm"
  ln -sfn ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/bin/npx"
  cp -a /usr/include/node "$root/usr/include/node"
  # The CA trust store.
  mkdir -p "$root/usr/local/share/ca-certificates" "$root/etc/ssl/certs"
  cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
  cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  # apt: this machine's sources replace the one line debootstrap wrote.
  rm -f "$root/etc/apt/sources.list"
  [ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$root/etc/apt/sources.list"
  [ -f /etc/apt/sources.list.d/debian.sources ] && cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
  while IFS= read -r file; do cp "$file" "$root/etc/apt/apt.conf.d/"; done < <(host_apt_conf_files)
  # npm's settings, at the same paths.
  while IFS= read -r file; do install -D -m 0644 "$file" "$root$file"; done < <(host_npmrc_files)
  # debootstrap leaves the packages it installed in apt's cache; a installed machine has none.
  rm -f "$root"/var/cache/apt/archives/*.deb
}

# A key for everything the image is made of: change the recipe or a copied input, get a new image.
image_key() {
  {
    declare -f host_mirror host_apt_conf_files host_npmrc_files add_machine_basics
    printf 'suite=%s mirror=%s\n' "$SUITE" "$(host_mirror)"
    /usr/bin/node --version
    cat /usr/lib/node_modules/npm/package.json
    cat /etc/apt/sources.list /etc/apt/sources.list.d/debian.sources 2>/dev/null || true
    host_apt_conf_files | while IFS= read -r f; do cat "$f"; done
    host_npmrc_files | while IFS= read -r f; do printf '%s\n' "$f"; cat "$f"; done
    cat /usr/local/share/ca-certificates/* /etc/ssl/certs/ca-certificates.crt
  } | sha256sum | cut -c1-16
}

# Steps and failures go to files, one line each, so steps running side by side in subshells
# report to the same place.
record() { printf '%s\t%s\t%s\n' "$2" "$3" "$1" >>"$scratch/steps.tsv"; }
fail_step() {
  printf '%s: %s\n' "$1" "$2" >>"$scratch/failures.txt"
  log "FAILED: $1: $2"
}

build_image() {
  local image="$1" mirror root started
  mirror="$(host_mirror)"
  [ -n "$mirror" ] || die "no Debian mirror for $SUITE in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list"
  if ! command -v debootstrap >/dev/null; then
    log "installing Debian's debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null; } ||
      die "could not install debootstrap"
  fi
  root="$scratch/rootfs"
  log "debootstrap --variant=minbase $SUITE $root $mirror"
  started="$(now)"
  if ! timeout "$DEBOOTSTRAP_TIMEOUT_S" debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$scratch/debootstrap.log" 2>&1; then
    tail -n 20 "$scratch/debootstrap.log" >&2
    die "debootstrap failed (log above)"
  fi
  add_machine_basics "$root"
  log "importing the root ($(du -sh "$root" | cut -f1)) as $image"
  tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV HOME=/root' \
    --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
    --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    --change 'WORKDIR /root' \
    --change 'CMD ["bash"]' \
    - "$image" >/dev/null
  rm -rf "$root"
  # Only the newest recipe's image is worth keeping.
  local old
  for old in $(docker images --format '{{.Repository}}:{{.Tag}}' "$IMAGE_REPO"); do
    [ "$old" = "$image" ] || docker rmi "$old" >/dev/null 2>&1 || true
  done
  record "image: debootstrap + machine basics" ok $(($(now) - started))
}

started_all="$(now)"
if [ "$skip_build" -eq 1 ]; then
  image="$(docker images --format '{{.Repository}}:{{.Tag}}' "$IMAGE_REPO" | sed -n 1p)"
  [ -n "$image" ] || die "--skip-build: no cached $IMAGE_REPO image here; run once without it"
  log "reusing $image (--skip-build)"
  record "image: cached ($image)" ok 0
else
  image="$IMAGE_REPO:$(image_key)"
  if docker image inspect "$image" >/dev/null 2>&1; then
    log "reusing $image (same recipe and inputs)"
    record "image: cached" ok 0
  else
    build_image "$image"
  fi
fi

# ---- the checkout under test ----------------------------------------------------------------

commit="$(git -C "$source_repo" rev-parse --verify "$rev^{commit}")" || die "$rev is not a commit of $source_repo"
log "testing $commit ($(git -C "$source_repo" log -1 --format=%s "$commit" | cut -c1-70))"
dirty="$(git -C "$source_repo" status --porcelain --untracked-files=no)"
[ -z "$dirty" ] || log "note: $source_repo has uncommitted changes; they are NOT part of this check"
docker network create "$network" >/dev/null

# Starts fresh machine $1: its own clone in $scratch/repo-$1, its own Docker engine's volumes.
start_machine() {
  local m="$1" clone="$scratch/repo-$1"
  git clone --quiet --no-checkout --no-hardlinks "$source_repo" "$clone"
  git -C "$clone" -c advice.detachedHead=false checkout --quiet "$commit" ||
    die "the clone of $source_repo has no commit $commit (not on any branch?)"
  # The container's Docker engine stores everything here; removed on exit.
  docker volume create "$(machine_volume "$m")" >/dev/null
  docker volume create "$(machine_tmp_volume "$m")" >/dev/null
  machines_started+=("$m")
  docker run -d --init --name "$(machine_container "$m")" --hostname berth-fresh --network "$network" \
    --cap-add ALL --cap-drop SYS_RESOURCE \
    --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined \
    -v /sys/fs/cgroup:/sys/fs/cgroup:rw -v "$(machine_volume "$m"):/var/lib/docker" -v "$(machine_tmp_volume "$m"):/tmp" \
    -v "$clone:$REPO_IN_CONTAINER" -w "$REPO_IN_CONTAINER" \
    ${api_facts_dir:+-v "$api_facts_dir:$(dirname "$REPO_IN_CONTAINER")/shared/data/kubernetes-api:ro"} \
    -e CI=true ${BERTH_API_FACTS_OPTIONAL:+-e BERTH_API_FACTS_OPTIONAL=1} \
    "$image" sleep infinity >/dev/null
}

# Runs a shell command on machine $machine from the repository, without stdin, bounded by $1 seconds.
in_container() {
  local limit="$1"
  shift
  docker exec -e CI=true -w "$REPO_IN_CONTAINER" "$(machine_container "$machine")" timeout -k 10 "$limit" bash -c "$1"
}
kubectl_in() {
  in_container "$KUBECTL_TIMEOUT_S" "KUBECONFIG=$KUBECONFIG_IN_CONTAINER kubectl $1"
}
up_log_tail() {
  log "last lines of scripts/up.sh's output:"
  in_container 10 "tail -n ${1:-30} $UP_LOG_IN_CONTAINER" >&2 || true
}

# ---- up: scripts/up.sh, a Ready node, the two-container pod -----------------------------------

run_up() {
  local t0 t out up_pid kubectl_path
  t0="$(now)"
  up_pid="$(in_container 10 "setsid bash scripts/up.sh >$UP_LOG_IN_CONTAINER 2>&1 </dev/null & echo \$!")"
  log "up: bash scripts/up.sh running in the container (pid $up_pid), waiting for the API"
  up_alive() { in_container 10 "kill -0 $up_pid 2>/dev/null"; }

  # The API answers: the kubeconfig is written and the kubectl setup installed reads /readyz.
  local deadline=$(($(now) + UP_READY_TIMEOUT_S)) ready=0
  while [ "$(now)" -lt "$deadline" ]; do
    if ! up_alive; then
      up_log_tail 40
      fail_step "bash scripts/up.sh" "exited before the API answered"
      record "up: scripts/up.sh until the API answers" FAIL $(($(now) - t0))
      return 0
    fi
    if in_container 10 "test -s $KUBECONFIG_IN_CONTAINER" 2>/dev/null; then
      if ! kubectl_path="$(in_container 10 'command -v kubectl')"; then
        up_log_tail 40
        fail_step "bash scripts/up.sh" "the API is up but there is no kubectl on the machine: setup did not install one"
        record "up: scripts/up.sh until the API answers" FAIL $(($(now) - t0))
        stop_up "$up_pid"
        return 0
      fi
      if out="$(kubectl_in 'get --raw /readyz' 2>&1)" && [ "$out" = ok ]; then ready=1; break; fi
    fi
    sleep 3
  done
  if [ "$ready" -eq 0 ]; then
    up_log_tail 40
    fail_step "bash scripts/up.sh" "the API did not answer within ${UP_READY_TIMEOUT_S}s"
    record "up: scripts/up.sh until the API answers" FAIL $(($(now) - t0))
    stop_up "$up_pid"
    return 0
  fi
  record "up: scripts/up.sh until the API answers" ok $(($(now) - t0))
  log "up: the API answers; kubectl is $kubectl_path, $(kubectl_in 'version --client --short' 2>/dev/null || kubectl_in 'version --client' 2>/dev/null | sed -n 1p)"

  # The local node is Ready.
  t="$(now)"
  local node ready_status=''
  node="$(in_container 10 "node -p 'require(\"os\").hostname().toLowerCase()'")"
  deadline=$(($(now) + NODE_READY_TIMEOUT_S))
  while [ "$(now)" -lt "$deadline" ]; do
    ready_status="$(kubectl_in "get node $node -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}'" 2>&1 || true)"
    [ "$ready_status" = True ] && break
    sleep 2
  done
  if [ "$ready_status" != True ]; then
    fail_step "kubectl get node $node" "node not Ready within ${NODE_READY_TIMEOUT_S}s (last answer: $ready_status)"
    record "up: node $node Ready" FAIL $(($(now) - t))
    up_log_tail 20
    stop_up "$up_pid"
    return 0
  fi
  record "up: node $node Ready" ok $(($(now) - t))

  # kubectl apply of the README's manifest, then the pod runs both containers.
  t="$(now)"
  if ! out="$(kubectl_in "apply -f $MANIFEST" 2>&1)"; then
    printf '%s\n' "$out" | sed 's/^/    /' >&2
    fail_step "kubectl apply -f $MANIFEST" "kubectl ($kubectl_path) refused: $(printf '%s' "$out" | tail -n 1)"
    record "up: kubectl apply -f $MANIFEST" FAIL $(($(now) - t))
    stop_up "$up_pid"
    return 0
  fi
  record "up: kubectl apply -f $MANIFEST" ok $(($(now) - t))
  t="$(now)"
  local pod_status=''
  deadline=$(($(now) + POD_RUNNING_TIMEOUT_S))
  while [ "$(now)" -lt "$deadline" ]; do
    pod_status="$(kubectl_in "get pod $POD_NAME -o jsonpath='{.status.phase}{range .status.containerStatuses[*]} {.ready}{end}'" 2>&1 || true)"
    [ "$pod_status" = 'Running true true' ] && break
    sleep 2
  done
  if [ "$pod_status" != 'Running true true' ]; then
    kubectl_in "get pod $POD_NAME -o wide" >&2 || true
    fail_step "kubectl get pod $POD_NAME" "not Running 2/2 within ${POD_RUNNING_TIMEOUT_S}s (last: $pod_status)"
    record "up: pod $POD_NAME Running 2/2" FAIL $(($(now) - t))
  else
    record "up: pod $POD_NAME Running 2/2" ok $(($(now) - t))
    kubectl_in "get pods -o wide" >&2 || true
    kubectl_in "delete pod $POD_NAME --wait=true --timeout=60s" >/dev/null 2>&1 || log "up: could not delete pod $POD_NAME"
  fi
  stop_up "$up_pid"
}

# Stops up.sh's process group (berth up and its agent), then removes what it left in the engine so
# the test step starts from a clean one.
stop_up() {
  local pid="$1" t left
  t="$(now)"
  in_container 10 "kill -TERM -- -$pid 2>/dev/null || true"
  local deadline=$(($(now) + UP_STOP_TIMEOUT_S))
  while in_container 10 "kill -0 -- -$pid 2>/dev/null" && [ "$(now)" -lt "$deadline" ]; do sleep 1; done
  if in_container 10 "kill -0 -- -$pid 2>/dev/null"; then
    fail_step "stopping bash scripts/up.sh" "still running ${UP_STOP_TIMEOUT_S}s after SIGTERM; killed"
    in_container 10 "kill -KILL -- -$pid 2>/dev/null || true"
  fi
  left="$(in_container 30 'if command -v docker >/dev/null && docker info >/dev/null 2>&1; then ids=$(docker ps -aq); [ -z "$ids" ] || docker rm -f $ids >/dev/null; printf "%s" "$ids" | wc -w; else echo 0; fi' 2>/dev/null || echo '?')"
  log "up: stopped after $(duration $(($(now) - t))); removed $left container(s) it left in the engine"
}

# ---- test: scripts/test.sh --------------------------------------------------------------------

run_test() {
  local t0 args status summary limit="$TEST_TIMEOUT_S"
  t0="$(now)"
  # Quoted, so scripts/test.sh expands them after its setup built dist/ on this fresh machine.
  if [ "$full_suite" -eq 1 ]; then args='' limit="$FULL_SUITE_TIMEOUT_S"; else args="$(printf "'%s' " "${FRESH_TESTS[@]}")"; fi
  log "test: bash scripts/test.sh ${args:-(whole suite)}"
  # In the background and waited for, so SIGTERM reaches the trap at once: bash runs traps only
  # after a foreground command ends. The log streams to the terminal until the run ends.
  : >"$scratch/test.log"
  in_container "$limit" "bash scripts/test.sh $args" >"$scratch/test.log" 2>&1 &
  local test_pid=$!
  tail -n +1 -f --pid="$test_pid" "$scratch/test.log" &
  status=0
  wait "$test_pid" || status=$?
  wait $! 2>/dev/null || true
  summary="$(grep -E '^tests: [0-9]+ passed' "$scratch/test.log" | tail -n 1 || true)"
  # The run's timing record, for a caller that reports on it (.ci/run names the slowest files).
  if [ -n "${BERTH_FRESH_REPORT_DIR:-}" ] && [ -d "$scratch/repo-test/.cache/test-report" ]; then
    mkdir -p "$BERTH_FRESH_REPORT_DIR"
    cp -r "$scratch/repo-test/.cache/test-report/." "$BERTH_FRESH_REPORT_DIR/"
  fi
  if [ "$status" -eq 0 ]; then
    record "test: bash scripts/test.sh ${args:+<subset>}" ok $(($(now) - t0))
  else
    local why="exit $status"
    [ "$status" -eq 124 ] && why="timed out after ${limit}s"
    grep -E '^\[berth\] (setup FAILED|ERROR)' "$scratch/test.log" >/dev/null && why="$why; setup.sh failed (see above)"
    fail_step "bash scripts/test.sh ${args:+<subset>}" "$why ${summary}"
    record "test: bash scripts/test.sh ${args:+<subset>}" FAIL $(($(now) - t0))
  fi
  [ -z "$summary" ] || log "test: $summary"
}

# Both machines start before either step, so neither waits on the other's container start.
[ "$only" = test ] || start_machine up
[ "$only" = up ] || start_machine test
step_pids=()
if [ "$only" != test ]; then
  (machine=up run_up) &
  step_pids+=($!)
fi
if [ "$only" != up ]; then
  (machine=test run_test) &
  step_pids+=($!)
fi
# Each step reports its own failures (failures.txt); a subshell that died outright is one too.
for pid in "${step_pids[@]}"; do
  wait "$pid" || fail_step "a check step (pid $pid)" "exited $? before reporting"
done

# ---- report --------------------------------------------------------------------------------------

echo
echo "Fresh-machine check of $commit ($(duration $(($(now) - started_all))) in all; the up and test machines side by side)"
while IFS=$'\t' read -r result seconds name; do
  printf '  %-4s  %8s  %s\n' "$result" "$(duration "$seconds")" "$name"
done <"$scratch/steps.tsv"
if [ "$full_suite" -eq 0 ] && [ "$only" != up ]; then
  echo "  test subset: ${FRESH_TESTS[*]}"
fi
if [ -s "$scratch/failures.txt" ]; then
  echo "FAILED commands:"
  sed 's/^/  /' "$scratch/failures.txt"
  exit 1
fi
echo "All passed."
