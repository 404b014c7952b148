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
# The repository goes in as a `git clone` of the committed HEAD of the checkout being tested
# (uncommitted files never leak in). The container runs its own Docker engine, on a named volume
# for /var/lib/docker, started by scripts/setup.sh as it would be on a machine without systemd.
#
# Steps, each timed and reported; the check goes on after a failed step and fails at the end:
#   image  debootstrap + the additions above, imported as a local image; cached by a content key
#          (the recipe, the mirror, Node and the copied settings), so a second run skips it
#   up     `bash scripts/up.sh` in the background; then the API answers, the local node is Ready,
#          `kubectl apply -f manifests/pod-two-containers.yaml` with the kubectl setup installed,
#          and the pod runs 2/2; then up.sh is stopped
#   test   `bash scripts/test.sh` with the subset in FRESH_TESTS below
#
# Usage: bash scripts/check-fresh-machine.sh [--keep] [--skip-build] [--only up|test]
#                                            [--rev REV] [--full-suite] [--source DIR]
#   --keep        leave the container and its Docker volume for a look inside (prints how)
#   --skip-build  reuse the newest cached fresh-machine image even if its recipe changed
#   --only STEP   run only `up` or only `test`
#   --rev REV     test this commit of the checkout instead of HEAD
#   --full-suite  run scripts/test.sh without arguments (the whole suite) instead of FRESH_TESTS
#   --source DIR  the checkout to clone (default: the one this script is in)
# Needs root, a Docker engine that answers, and git. Installs Debian's debootstrap when missing.
set -euo pipefail

# The README's test command runs on the fresh machine with this subset of the suite (file globs
# relative to the repository, as scripts/test.sh takes them): every unit test, plus each e2e file
# that installs a tool or depends on one that setup.sh installs — install.test.js runs
# scripts/check-packaging.sh (vagrant, systemd-analyze), kubectl.test.js drives the kubectl setup
# installed, streams.test.js needs tmux, streams-spdy.test.js and openapi-v2.test.js drive Debian's
# kubectl 1.20 (fetched by scripts/kubectl-versions.sh) over SPDY and /openapi/v2, port-forward.test.js
# drives both kubectls and enters pods' network namespaces with nsenter, the multihost tests need iproute2, nsenter, iptables and a
# second dockerd, services.test.js the nft that setup.sh installs for the agent's service proxy, runtime-docker.test.js the Docker engine itself, etcd-store.test.js (like the unit suite's etcd contract test) Debian's etcd-server, prometheus.test.js Debian's prometheus and dashboard.test.js Debian's chromium (both setup.sh --for-tests). The other e2e files exercise
# Berth's own API against the same engine and run in the normal suite, on the CI machine.
FRESH_TESTS=(
  'dist/test/unit/*.test.js'
  dist/test/e2e/install.test.js
  dist/test/e2e/kubectl.test.js
  dist/test/e2e/streams.test.js
  dist/test/e2e/streams-spdy.test.js
  dist/test/e2e/openapi-v2.test.js
  dist/test/e2e/port-forward.test.js
  dist/test/e2e/runtime-docker.test.js
  dist/test/e2e/services.test.js
  dist/test/e2e/etcd-store.test.js
  dist/test/e2e/prometheus.test.js
  dist/test/e2e/dashboard.test.js
  'dist/test/e2e/multihost/*.test.js'
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
readonly TEST_TIMEOUT_S=1500 # the subset took 6 min here
readonly FULL_SUITE_TIMEOUT_S=2400 # the whole suite took 24 min here

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
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
# Seconds as "Mm SSs".
duration() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

[ "$(id -u)" -eq 0 ] || die "run as root: debootstrap and the container's Docker engine need it"
command -v git >/dev/null || die "git is needed to clone the checkout under test"
command -v docker >/dev/null && docker info >/dev/null 2>&1 || die "no Docker engine answers here (docker info)"

run_id="$$-$(date +%s)"
container="berth-fresh-$run_id"
volume="berth-fresh-docker-$run_id"
# /tmp on a disk, as on a real machine: the multi-host tests start dockerds with data roots under
# /tmp, and overlay2 cannot stack on the container's own overlay root.
tmp_volume="berth-fresh-tmp-$run_id"
# A network of its own, so the check depends neither on the engine's default bridge nor on
# what other users of the engine do to it.
network="berth-fresh-net-$run_id"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/berth-fresh.XXXXXX")"
container_started=0

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if [ "$keep" -eq 1 ] && [ "$container_started" -eq 1 ]; then
    log "kept: container $container (docker exec -it $container bash), volumes $volume $tmp_volume, network $network, clone and logs in $scratch"
    log "remove with: docker rm -f $container; docker volume rm $volume $tmp_volume; docker network rm $network; rm -rf $scratch"
  else
    if [ "$container_started" -eq 1 ]; then
      docker rm -f "$container" >/dev/null 2>&1 || log "could not remove container $container"
    fi
    if docker network inspect "$network" >/dev/null 2>&1; then
      docker network rm "$network" >/dev/null 2>&1 || log "could not remove network $network"
    fi
    local v
    for v in "$volume" "$tmp_volume"; do
      if docker volume inspect "$v" >/dev/null 2>&1; then
        docker volume rm -f "$v" >/dev/null 2>&1 || log "could not remove volume $v"
      fi
    done
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

step_names=()
step_results=()
step_seconds=()
record() { step_names+=("$1"); step_results+=("$2"); step_seconds+=("$3"); }
failures=()
fail_step() {
  failures+=("$1: $2")
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
git clone --quiet --no-checkout --no-hardlinks "$source_repo" "$scratch/repo"
git -C "$scratch/repo" -c advice.detachedHead=false checkout --quiet "$commit" ||
  die "the clone of $source_repo has no commit $commit (not on any branch?)"
log "testing $commit ($(git -C "$scratch/repo" log -1 --format=%s | cut -c1-70))"
dirty="$(git -C "$source_repo" status --porcelain --untracked-files=no)"
[ -z "$dirty" ] || log "note: $source_repo has uncommitted changes; they are NOT part of this check"
# The container's Docker engine stores everything here; removed on exit.
docker volume create "$volume" >/dev/null
docker volume create "$tmp_volume" >/dev/null
docker network create "$network" >/dev/null

container_started=1
docker run -d --init --name "$container" --hostname berth-fresh --network "$network" \
  --cap-add ALL --cap-drop SYS_RESOURCE \
  --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined \
  -v /sys/fs/cgroup:/sys/fs/cgroup:rw -v "$volume:/var/lib/docker" -v "$tmp_volume:/tmp" \
  -v "$scratch/repo:$REPO_IN_CONTAINER" -w "$REPO_IN_CONTAINER" \
  -e CI=true \
  "$image" sleep infinity >/dev/null

# Runs a shell command in the container from the repository, without stdin, bounded by $1 seconds.
in_container() {
  local limit="$1"
  shift
  docker exec -e CI=true -w "$REPO_IN_CONTAINER" "$container" timeout -k 10 "$limit" bash -c "$1"
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
  if [ "$full_suite" -eq 1 ]; then args='' limit="$FULL_SUITE_TIMEOUT_S"; else args="${FRESH_TESTS[*]}"; fi
  log "test: bash scripts/test.sh ${args:-(whole suite)}"
  # Globs are expanded by the shell in the container, after setup built dist/.
  # In the background and waited for, so SIGTERM reaches the trap at once: bash runs traps only
  # after a foreground command ends. The log streams to the terminal until the run ends.
  : >"$scratch/test.log"
  in_container "$limit" "bash scripts/test.sh $args" >"$scratch/test.log" 2>&1 &
  local test_pid=$!
  tail -n +1 -f --pid="$test_pid" "$scratch/test.log" &
  status=0
  wait "$test_pid" || status=$?
  wait $! 2>/dev/null || true
  summary="$(grep -E '^ℹ (tests|pass|fail|skipped|duration_ms) ' "$scratch/test.log" | tr '\n' ' ' || true)"
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

[ "$only" = test ] || run_up
[ "$only" = up ] || run_test

# ---- report --------------------------------------------------------------------------------------

echo
echo "Fresh-machine check of $commit ($(duration $(($(now) - started_all))) in all)"
for i in "${!step_names[@]}"; do
  printf '  %-4s  %8s  %s\n' "${step_results[$i]}" "$(duration "${step_seconds[$i]}")" "${step_names[$i]}"
done
if [ "$full_suite" -eq 0 ] && [ "$only" != up ]; then
  echo "  test subset: ${FRESH_TESTS[*]}"
fi
if [ ${#failures[@]} -gt 0 ]; then
  echo "FAILED commands:"
  for failure in "${failures[@]}"; do echo "  $failure"; done
  exit 1
fi
echo "All passed."
