#!/usr/bin/env bash
# Installs Berth on a Debian/Ubuntu host, as root, as a control plane or as a worker:
#
#   install.sh server [--port P] [--data-dir D] [--bind-address A] [--etcd-servers URLS [--token T | --token-file F]]
#   install.sh agent  --server URL[,URL...] (--token TOKEN | --token-file F) [--node-name N] [--node-ip IP] [--data-dir D]
#
# It installs what is missing (Docker engine from the distro for agents, Node.js >= 20, build tools
# for the native SQLite module), copies Berth to PREFIX and installs its production dependencies
# there, writes ETC_DIR/server.env or agent.env (plus ETC_DIR/node-token, 0600, for agents) and the
# berth-server.service / berth-agent.service units, then starts the service: with systemd when it is
# PID 1, otherwise as a background process with a pid file (containers, CI) — and says which.
#
# Idempotent: every step compares before it writes, and the service is restarted only when its
# program, dependencies, settings or unit changed. A flag left out keeps the value from the existing
# env file, so a re-run without flags changes nothing.
#
# Options for both modes (defaults are the real locations; tests point them elsewhere):
#   --prefix DIR       program files (/opt/berth)
#   --etc-dir DIR      env files and the agent's join token (/etc/berth)
#   --unit-dir DIR     systemd unit files (/etc/systemd/system)
#   --log-dir DIR      logs when systemd is absent (/var/log/berth)
#   --run-dir DIR      pid files when systemd is absent (/run/berth)
#   --data-dir DIR     server: state, pki, kubeconfig (/var/lib/berth); agent: its state (/var/lib/berth/agent)
#   --log-level LEVEL  pino level (info)
#   --build            compile the TypeScript sources even when dist/ exists (default: only when missing)
#   --fresh-deps       always `npm ci --omit=dev`, never reuse the repository's node_modules
# Server: --port P (6443), --bind-address A (0.0.0.0), --etcd-servers URL[,URL...] (store in etcd, as one
#         of several servers), --token T or --token-file F (with --etcd-servers: the first server's
#         DATA_DIR/node-token, so this server joins that cluster; kept in ETC_DIR/cluster-token, 0600)
# Agent:  --server URL[,URL...] (several: an HA control plane's servers), --token TOKEN or --token-file F
#         (first install only), --node-name N (the host name), --node-ip IP (the agent's own choice)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib.sh
. "$repo/scripts/lib.sh"

export DEBIAN_FRONTEND=noninteractive
readonly MIN_NODE_MAJOR=20
readonly READY_TIMEOUT_S=90
readonly STOP_TIMEOUT_S=30
readonly DOCKER_START_TIMEOUT_S=60
# Copied to PREFIX: what `berth` needs at run time, plus what builds its images and uninstalls it.
readonly PROGRAM_PATHS=(package.json package-lock.json bin dist/src dist/agent dist/dashboard dashboard/public scripts/lib.sh scripts/images scripts/uninstall.sh)

usage() {
  sed -n '2,31p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

# ---- arguments --------------------------------------------------------------

mode="${1:-}"
case "$mode" in
  server | agent) shift ;;
  -h | --help | help) usage; exit 0 ;;
  *) usage >&2; berth_die "the first argument must be 'server' or 'agent'" ;;
esac

prefix=/opt/berth etc_dir=/etc/berth unit_dir=/etc/systemd/system log_dir=/var/log/berth run_dir=/run/berth
opt_data_dir="" opt_log_level="" opt_port="" opt_bind="" opt_server="" opt_token="" opt_token_file=""
opt_node_name="" opt_node_ip="" opt_etcd_servers="" force_build=0 fresh_deps=0

while [ $# -gt 0 ]; do
  flag="$1"
  case "$flag" in
    --build) force_build=1; shift; continue ;;
    --fresh-deps) fresh_deps=1; shift; continue ;;
    -h | --help) usage; exit 0 ;;
    --*=*) set -- "${flag%%=*}" "${flag#*=}" "${@:2}"; flag="$1" ;;
  esac
  [ $# -ge 2 ] || berth_die "$flag needs a value (try --help)"
  value="$2"
  case "$flag" in
    --prefix) prefix="$value" ;;
    --etc-dir) etc_dir="$value" ;;
    --unit-dir) unit_dir="$value" ;;
    --log-dir) log_dir="$value" ;;
    --run-dir) run_dir="$value" ;;
    --data-dir) opt_data_dir="$value" ;;
    --log-level) opt_log_level="$value" ;;
    --port) [ "$mode" = server ] || berth_die "--port is a server option"; opt_port="$value" ;;
    --bind-address) [ "$mode" = server ] || berth_die "--bind-address is a server option"; opt_bind="$value" ;;
    --server) [ "$mode" = agent ] || berth_die "--server is an agent option"; opt_server="$value" ;;
    --etcd-servers) [ "$mode" = server ] || berth_die "--etcd-servers is a server option"; opt_etcd_servers="$value" ;;
    --token) opt_token="$value" ;;
    --token-file) opt_token_file="$value" ;;
    --node-name) [ "$mode" = agent ] || berth_die "--node-name is an agent option"; opt_node_name="$value" ;;
    --node-ip) [ "$mode" = agent ] || berth_die "--node-ip is an agent option"; opt_node_ip="$value" ;;
    *) berth_die "unknown option: $flag (try --help)" ;;
  esac
  shift 2
done

[ "$(id -u)" -eq 0 ] || berth_die "install.sh installs system services: run it as root (sudo bash $0 $mode …)"
[ -z "$opt_token" ] || [ -z "$opt_token_file" ] || berth_die "give --token or --token-file, not both"

# Absolute paths: they end up in unit files and in processes started from another directory.
abs() { case "$1" in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "$1" ;; esac; }
prefix="$(abs "$prefix")" etc_dir="$(abs "$etc_dir")" unit_dir="$(abs "$unit_dir")"
log_dir="$(abs "$log_dir")" run_dir="$(abs "$run_dir")"
[ -z "$opt_data_dir" ] || opt_data_dir="$(abs "$opt_data_dir")"
[ -z "$opt_token_file" ] || opt_token_file="$(abs "$opt_token_file")"
for dir in "$prefix" "$etc_dir"; do
  [ "$dir" != / ] || berth_die "refusing to use / as an install directory"
done

unit="berth-$mode.service"
env_file="$etc_dir/$mode.env"
token_path="$etc_dir/node-token"

# The agent stores credentials.json once the control plane accepted its token. $1: its data dir
# (default: agent.env's).
agent_joined() {
  [ -s "${1:-$(env_get "$etc_dir/agent.env" BERTH_DATA_DIR || echo /var/lib/berth/agent)}/credentials.json" ]
}

# The token given by --token or --token-file (whitespace dropped); empty when neither was.
given_token() {
  if [ -n "$opt_token" ]; then printf '%s' "$opt_token"
  elif [ -n "$opt_token_file" ]; then
    [ -r "$opt_token_file" ] || berth_die "cannot read --token-file $opt_token_file"
    tr -d '[:space:]' <"$opt_token_file"
  fi
}
pid_file="$run_dir/berth-$mode.pid"
log_file="$log_dir/berth-$mode.log"

started_at="$(berth_now)"
changes=()       # what this run changed, for the summary
restart_needed=0 # set when the running service no longer matches what is installed
build_dir=""     # scratch copy for compiling, when one is needed
# Say where an unexpected failure happened; the expected ones explain themselves through berth_die.
trap 'berth_log "failed: line $LINENO: $BASH_COMMAND"' ERR
# shellcheck disable=SC2154 # status is assigned inside the trap
trap 'status=$?; [ -z "$build_dir" ] || rm -rf "$build_dir"; [ $status -eq 0 ] || printf "[berth] install FAILED (exit %s); see the messages above\n" "$status" >&2' EXIT

changed() {
  changes+=("$1")
  restart_needed=1
}

systemd_is_init() { [ -d /run/systemd/system ]; }

# ---- small file helpers ------------------------------------------------------

# env_get (reading KEY=VALUE env files) is in scripts/lib.sh, shared with uninstall.sh.

# The setting from the command line, else the existing env file, else the default.
setting() {
  local given="$1" key="$2" default="$3" existing
  if [ -n "$given" ]; then printf '%s' "$given"
  elif existing="$(env_get "$env_file" "$key")"; then printf '%s' "$existing"
  else printf '%s' "$default"
  fi
}

# One KEY=VALUE line in a form both systemd's EnvironmentFile= and env_get read back unchanged.
env_line() {
  case "$2" in
    *[\"\\\'\$\`]* | *$'\n'*) berth_die "$1 may not contain quotes, backslashes, \$ or newlines: $2" ;;
    *[[:space:]]*) printf '%s="%s"\n' "$1" "$2" ;;
    *) printf '%s=%s\n' "$1" "$2" ;;
  esac
}

# Writes stdin to FILE (mode MODE) unless it already holds exactly that; returns 1 when unchanged.
write_if_changed() {
  local file="$1" mode="$2" tmp
  mkdir -p "$(dirname "$file")"
  tmp="$(mktemp "$(dirname "$file")/.berth-install.XXXXXX")"
  cat >"$tmp"
  if [ -f "$file" ] && cmp -s "$tmp" "$file"; then
    rm -f "$tmp"
    chmod "$mode" "$file" # a hand-loosened token file is tightened again
    return 1
  fi
  chmod "$mode" "$tmp"
  mv -f "$tmp" "$file"
}

# ---- 1. OS packages and Node.js ------------------------------------------------

apt_updated=0
apt_install() {
  berth_have apt-get || berth_die "missing $*, and this is not a Debian/Ubuntu system (no apt-get); install them by hand"
  if [ "$apt_updated" -eq 0 ]; then
    berth_log "apt-get update"
    apt-get update -qq || berth_die "apt-get update failed"
    apt_updated=1
  fi
  berth_log "apt-get install $*"
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null || berth_die "apt-get install $* failed"
  changes+=("installed $*")
}

packages=()
berth_have node || packages+=(nodejs)
berth_have npm || packages+=(npm)
# better-sqlite3 compiles from source when no prebuilt binary can be fetched.
berth_have python3 || packages+=(python3)
berth_have make || packages+=(make)
berth_have g++ || packages+=(g++)
[ -e /etc/ssl/certs/ca-certificates.crt ] || packages+=(ca-certificates)
if [ "$mode" = agent ]; then
  if ! berth_have dockerd || ! berth_have docker; then
    # Debian's docker.io conflicts with Docker's own packages; stay with those when present.
    if berth_pkg_installed docker-ce-cli; then packages+=(docker-ce); else packages+=(docker.io); fi
  fi
  berth_have ip || packages+=(iproute2)
  # The agent's service proxy programs Services with nft.
  berth_have nft || packages+=(nftables)
  # The images are built here, from our own sources: a static pause binary and a busybox userland.
  berth_have gcc || packages+=(gcc)
  berth_pkg_installed libc6-dev || [ "$(gcc -print-file-name=libc.a 2>/dev/null || echo libc.a)" != libc.a ] ||
    packages+=(libc6-dev)
  berth_is_static_elf /bin/busybox || berth_is_static_elf "$(command -v busybox || echo /nonexistent)" ||
    packages+=(busybox-static)
fi
[ ${#packages[@]} -eq 0 ] || apt_install "${packages[@]}"

if [ "$mode" = server ] && ! berth_have kubectl; then
  # For the people on this host, not for Berth: a missing package is only a warning.
  [ "$apt_updated" -eq 1 ] || { apt-get update -qq 2>/dev/null || true; apt_updated=1; }
  if berth_apt_has_candidate kubernetes-client; then apt_install kubernetes-client
  else berth_warn "no kubectl here and no kubernetes-client package; install kubectl to talk to the cluster"; fi
fi

node_bin="$(command -v node)" || berth_die "node is not on PATH after installing nodejs"
node_major="$("$node_bin" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$node_major" -lt "$MIN_NODE_MAJOR" ]; then
  berth_die "Berth needs Node.js $MIN_NODE_MAJOR or newer; $node_bin is $("$node_bin" --version 2>/dev/null || echo '?').
  The distribution's package is too old (Debian 12 and Ubuntu 24.04 ship Node 18). Install Node $MIN_NODE_MAJOR+
  from https://nodejs.org/en/download (the Linux tarball unpacked into /usr/local is enough) or from
  NodeSource, then run this script again."
fi
npm_bin="$(command -v npm)" || berth_die "npm is missing (it ships with Node.js from nodejs.org; on Debian: apt-get install npm)"

# ---- 2. Docker engine (agents) -----------------------------------------------

docker_answers() { docker info >/dev/null 2>&1; }
if [ "$mode" = agent ]; then
  if docker_answers; then
    :
  elif systemd_is_init; then
    berth_log "starting Docker with systemd (systemctl enable --now docker)"
    systemctl enable --now docker || berth_die "systemctl enable --now docker failed; see: journalctl -u docker"
    changes+=("started docker.service")
  elif ! pgrep -x dockerd >/dev/null 2>&1; then
    mkdir -p "$log_dir"
    berth_log "systemd is not PID 1: starting dockerd in the background (log: $log_dir/dockerd.log)"
    setsid dockerd </dev/null >>"$log_dir/dockerd.log" 2>&1 &
    changes+=("started dockerd (log $log_dir/dockerd.log)")
  fi
  deadline=$(($(date +%s) + DOCKER_START_TIMEOUT_S))
  until docker_answers; do
    [ "$(date +%s)" -lt "$deadline" ] || berth_die "Docker did not answer within ${DOCKER_START_TIMEOUT_S}s"
    sleep 0.5
  done
fi

# ---- 3. Berth itself -----------------------------------------------------------

# sha256 over the program files of a tree laid out like the repository (paths and contents).
program_digest() {
  (
    cd "$1"
    find "${PROGRAM_PATHS[@]}" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
  ) | sha256sum | cut -d' ' -f1
}

# The compiled program comes from the repository's dist/ when present; otherwise (a fresh clone, or
# --build) the sources are compiled in a scratch copy, so the repository itself is never written to.
source_root="$repo"
if [ "$force_build" -eq 1 ] || [ ! -f "$repo/dist/src/cli.js" ] || [ ! -f "$repo/dist/agent/agent.js" ] || [ ! -f "$repo/dist/dashboard/main.js" ]; then
  build_dir="$(mktemp -d "${TMPDIR:-/var/tmp}/berth-build.XXXXXX")"
  berth_log "compiling Berth from source in $build_dir (npm ci, tsc)"
  (cd "$repo" && cp -a package.json package-lock.json tsconfig.json bin src agent dashboard scripts "$build_dir/")
  # Only what runs: the tests are not installed, and a test file mid-edit must not block an install.
  printf '%s\n' '{ "extends": "./tsconfig.json", "include": ["src/**/*.ts", "agent/**/*.ts"] }' >"$build_dir/tsconfig.install.json"
  # No install scripts: the compiler needs no native module (the runtime copy gets its own below).
  (cd "$build_dir" && "$npm_bin" ci --ignore-scripts --no-audit --no-fund --loglevel=error &&
    "$node_bin" node_modules/typescript/bin/tsc -p tsconfig.install.json &&
    "$node_bin" node_modules/typescript/bin/tsc -p dashboard/tsconfig.json) ||
    berth_die "building Berth failed (see the compiler output above)"
  source_root="$build_dir"
else
  stale="$( (find "$repo/src" "$repo/agent" -name '*.ts' -newer "$repo/dist/src/cli.js" 2>/dev/null || true) | wc -l)"
  [ "$stale" -eq 0 ] ||
    berth_warn "dist/ is older than $stale source file(s): installing the last build; run 'npm run build' (or pass --build) to install your latest changes"
fi

wanted_program="$(program_digest "$source_root")"
if [ "$(cat "$prefix/.berth-program-sha256" 2>/dev/null || true)" != "$wanted_program" ]; then
  berth_log "copying Berth to $prefix"
  mkdir -p "$prefix"
  rm -rf "$prefix/.staging"
  mkdir "$prefix/.staging"
  (cd "$source_root" && cp -a --parents "${PROGRAM_PATHS[@]}" "$prefix/.staging/")
  for top in package.json package-lock.json bin dist dashboard scripts; do
    rm -rf "${prefix:?}/$top"
    mv "$prefix/.staging/$top" "$prefix/$top"
  done
  rmdir "$prefix/.staging"
  printf '%s\n' "$wanted_program" >"$prefix/.berth-program-sha256"
  changed "installed Berth in $prefix"
fi

# Dependencies follow package-lock.json and the Node ABI the native module was compiled for.
sqlite_loads_in() {
  (cd "$1" && "$node_bin" -e "const D = require('better-sqlite3'); new D(':memory:').prepare('select 1').get()" >/dev/null 2>&1)
}
wanted_deps="$( (cat "$prefix/package-lock.json"; "$node_bin" -p 'process.versions.modules + " " + process.arch') | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$prefix/.berth-deps-sha256" 2>/dev/null || true)" != "$wanted_deps" ] || ! sqlite_loads_in "$prefix"; then
  rm -f "$prefix/.berth-deps-sha256"
  # A repository whose node_modules came from this very lock file, with a native module that loads in
  # this Node, saves the native build (minutes on a small host): copy it and drop the dev dependencies.
  if [ "$fresh_deps" -eq 0 ] && [ "$source_root" = "$repo" ] &&
    [ -f "$repo/node_modules/.package-lock.json" ] && [ "$repo/node_modules/.package-lock.json" -nt "$repo/package-lock.json" ] &&
    cmp -s "$repo/package-lock.json" "$prefix/package-lock.json" && sqlite_loads_in "$repo"; then
    berth_log "reusing $repo/node_modules (installed from the same package-lock.json); pruning dev dependencies"
    rm -rf "$prefix/node_modules" "$prefix/node_modules.new"
    # The contents, never a symlink: npm prune must not touch the repository's own tree.
    mkdir "$prefix/node_modules.new"
    cp -a "$repo/node_modules/." "$prefix/node_modules.new/"
    mv "$prefix/node_modules.new" "$prefix/node_modules"
    (cd "$prefix" && "$npm_bin" prune --omit=dev --no-audit --no-fund --loglevel=error) || berth_die "npm prune failed in $prefix"
    find "$prefix/node_modules" -mindepth 1 -maxdepth 1 -type d -empty -delete
  else
    berth_log "npm ci --omit=dev in $prefix (better-sqlite3 compiles from source when no prebuilt binary is reachable; this can take minutes)"
    (cd "$prefix" && "$npm_bin" ci --omit=dev --no-audit --no-fund --loglevel=error) || berth_die "npm ci --omit=dev failed in $prefix"
  fi
  sqlite_loads_in "$prefix" || berth_die "better-sqlite3 does not load in $prefix/node_modules after installing it"
  printf '%s\n' "$wanted_deps" >"$prefix/.berth-deps-sha256"
  changed "installed production dependencies in $prefix/node_modules"
fi
if [ -n "$build_dir" ]; then rm -rf "$build_dir"; build_dir=""; fi

if [ "$mode" = agent ]; then
  # Idempotent by itself: an image is rebuilt only when its recipe changed.
  bash "$prefix/scripts/images/build-images.sh" || berth_die "building the local images failed"
fi

# ---- 4. Settings -------------------------------------------------------------------

mkdir -p "$etc_dir"
chmod 0755 "$etc_dir"
log_level="$(setting "$opt_log_level" BERTH_LOG_LEVEL info)"
if [ "$mode" = server ]; then
  data_dir="$(setting "$opt_data_dir" BERTH_DATA_DIR /var/lib/berth)"
  port="$(setting "$opt_port" BERTH_PORT 6443)"
  bind_address="$(setting "$opt_bind" BERTH_BIND_ADDRESS 0.0.0.0)"
  extra_args="$(env_get "$env_file" BERTH_SERVER_ARGS || true)"
  [[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] || berth_die "invalid --port: $port"
  etcd_servers="$(setting "$opt_etcd_servers" BERTH_ETCD_SERVERS "")"
  [[ -z "$etcd_servers" || "$etcd_servers" =~ ^https?://[^[:space:],/]+/?(,https?://[^[:space:],/]+/?)*$ ]] ||
    berth_die "invalid --etcd-servers: $etcd_servers (expected http://HOST:PORT[,http://HOST:PORT...])"
  # The cluster token of servers sharing etcd: written once, 0600; the server reads it at every start.
  cluster_token_path="$etc_dir/cluster-token"
  token="$(given_token)"
  if [ -n "$token" ]; then
    [ -n "$etcd_servers" ] || berth_die "server: --token joins servers sharing etcd; it needs --etcd-servers"
    if printf '%s\n' "$token" | write_if_changed "$cluster_token_path" 0600; then changed "wrote the cluster token $cluster_token_path"; fi
  fi
  etcd_args=""
  if [ -n "$etcd_servers" ]; then
    etcd_args="--etcd-servers $etcd_servers"
    [ ! -s "$cluster_token_path" ] || etcd_args="$etcd_args --token-file $cluster_token_path"
  fi
  env_text="$(
    echo "# Settings of $unit, read by systemd (EnvironmentFile=) and by install.sh. Re-running install.sh"
    echo "# keeps what you change here unless the matching flag is given. BERTH_SERVER_ARGS: more 'berth server' flags."
    env_line BERTH_DATA_DIR "$data_dir"
    env_line BERTH_PORT "$port"
    env_line BERTH_BIND_ADDRESS "$bind_address"
    env_line BERTH_LOG_LEVEL "$log_level"
    env_line BERTH_ETCD_SERVERS "$etcd_servers"
    env_line BERTH_ETCD_ARGS "$etcd_args"
    env_line BERTH_SERVER_ARGS "$extra_args"
  )"
else
  data_dir="$(setting "$opt_data_dir" BERTH_DATA_DIR /var/lib/berth/agent)"
  server_url="$(setting "$opt_server" BERTH_SERVER "")"
  [ -n "$server_url" ] || berth_die "agent: --server URL is required, e.g. --server https://10.0.0.1:6443"
  # Several URLs: the servers of an HA control plane, in order of preference (the agent fails over).
  [[ "$server_url" =~ ^https?://[^[:space:],/]+/?(,https?://[^[:space:],/]+/?)*$ ]] ||
    berth_die "invalid --server URL: $server_url (expected https://HOST:PORT[,https://HOST:PORT...])"
  node_name="$(setting "$opt_node_name" BERTH_NODE_NAME "$(hostname | tr '[:upper:]' '[:lower:]')")"
  [[ "$node_name" =~ ^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$ ]] ||
    berth_die "invalid node name '$node_name': lower-case letters, digits, '-' and '.' (pass --node-name)"
  # --node-ip lives among the free-form flags, so it is replaced there rather than appended twice.
  extra_args="$(env_get "$env_file" BERTH_AGENT_ARGS || true)"
  if [ -n "$opt_node_ip" ]; then
    [[ "$opt_node_ip" =~ ^[0-9.]+$ || "$opt_node_ip" == *:* ]] || berth_die "invalid --node-ip: $opt_node_ip"
    extra_args="$(printf '%s' "$extra_args" | sed -E 's/(^| )--node-ip( |=)[^ ]+//g; s/^ +//')"
    extra_args="${extra_args:+$extra_args }--node-ip $opt_node_ip"
  fi

  # The join token: written 0600 for the agent's first join, and removed once the agent holds its own
  # credential (step 7); later runs need no token.
  token="$(given_token)"
  if [ -n "$token" ]; then
    [[ "$token" =~ ^berth1::[0-9a-fA-F]{64}::[^[:space:]]+$ ]] ||
      berth_die "the token is not a Berth join token (berth1::<ca sha256>::<secret>); make one on the server with: berth token create"
    if printf '%s\n' "$token" | write_if_changed "$token_path" 0600; then changed "wrote the join token $token_path"; fi
  elif [ ! -s "$token_path" ] && ! agent_joined "$data_dir"; then
    berth_die "agent: --token or --token-file is required for the first install (make one on the server with: berth token create)"
  fi
  env_text="$(
    echo "# Settings of $unit, read by systemd (EnvironmentFile=) and by install.sh. Re-running install.sh"
    echo "# keeps what you change here unless the matching flag is given. BERTH_AGENT_ARGS: more 'berth agent' flags."
    env_line BERTH_SERVER "$server_url"
    env_line BERTH_NODE_NAME "$node_name"
    env_line BERTH_TOKEN_FILE "$token_path"
    env_line BERTH_DATA_DIR "$data_dir"
    env_line BERTH_LOG_LEVEL "$log_level"
    env_line BERTH_AGENT_ARGS "$extra_args"
  )"
fi
if printf '%s\n' "$env_text" | write_if_changed "$env_file" 0644; then changed "wrote $env_file"; fi

# Where everything went, for uninstall.sh (which then needs only --etc-dir).
{
  echo "# Written by install.sh for uninstall.sh."
  env_line BERTH_PREFIX "$prefix"
  env_line BERTH_UNIT_DIR "$unit_dir"
  env_line BERTH_LOG_DIR "$log_dir"
  env_line BERTH_RUN_DIR "$run_dir"
} | write_if_changed "$etc_dir/install.env" 0644 || true

# ---- 5. Unit file -------------------------------------------------------------------

unit_path="$unit_dir/$unit"
unit_changed=0
sed -e "s#@BERTH_NODE@#$node_bin#g" -e "s#@BERTH_PREFIX@#$prefix#g" -e "s#@BERTH_ETC_DIR@#$etc_dir#g" \
  "$repo/scripts/systemd/$unit" | write_if_changed "$unit_path" 0644 && { unit_changed=1; changed "wrote $unit_path"; }

# ---- 6. Start -----------------------------------------------------------------------------

# Both modes share PREFIX, so the functions below take the mode: an install of one mode that
# updates the program also restarts the other mode's service if it still runs the old one.

# The service's command line, taken from its installed unit's ExecStart= and expanded the way systemd
# does for these units (${VAR}: exactly one word; $VAR: split at whitespace), so both ways of starting
# run the same thing. Sets the array `argv`.
unit_argv() {
  local m="$1" line word name value env="$etc_dir/$1.env"
  line="$(sed -n 's/^ExecStart=//p' "$unit_dir/berth-$m.service")"
  argv=()
  set -f # split into words, but never expand a glob
  for word in $line; do
    if [[ "$word" =~ ^\$\{([A-Z_]+)\}$ ]]; then
      argv+=("$(env_get "$env" "${BASH_REMATCH[1]}" || true)")
    elif [[ "$word" =~ ^\$([A-Z_]+)$ ]]; then
      name="${BASH_REMATCH[1]}"
      value="$(env_get "$env" "$name" || true)"
      # shellcheck disable=SC2206 # splitting is the point
      [ -z "$value" ] || argv+=($value)
    else
      argv+=("$word")
    fi
  done
  set +f
}

# Pid of the running service of mode $1 (systemd's main pid, or the pid file's); fails when none runs.
running_pid() {
  local m="$1" pid
  if systemd_is_init; then
    pid="$(systemctl show -p MainPID --value "berth-$m.service" 2>/dev/null || true)"
  else
    pid="$(cat "$run_dir/berth-$m.pid" 2>/dev/null || true)"
  fi
  if berth_is_berth_process "$pid" "$prefix" "$m"; then printf '%s' "$pid"; else return 1; fi
}

# True when process $1 started before the program in PREFIX was last installed or updated. The start
# time is derived from the boot time, which /proc/stat rounds down: two seconds of slack keep a
# process started right after an install from looking older than it.
runs_older_program() {
  local pid="$1" ticks boot hz started installed
  ticks="$(awk '{ sub(/^.*\) /, ""); print $20 }' "/proc/$pid/stat" 2>/dev/null)" || return 1
  boot="$(awk '/^btime/ { print $2 }' /proc/stat)"
  hz="$(getconf CLK_TCK)"
  started=$((boot + ticks / hz))
  installed="$( (stat -c %Y "$prefix/.berth-program-sha256" "$prefix/.berth-deps-sha256" 2>/dev/null || true) | sort -n | tail -1)"
  [ -n "$installed" ] && [ $((started + 2)) -lt "$installed" ]
}

stop_direct() {
  local m="$1" pid="$2" deadline
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$(($(date +%s) + STOP_TIMEOUT_S))
  while berth_is_berth_process "$pid" "$prefix" "$m"; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      berth_warn "pid $pid did not stop within ${STOP_TIMEOUT_S}s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    sleep 0.2
  done
  rm -f "$run_dir/berth-$m.pid"
}

start_direct() {
  local m="$1" nofile envs=() key value deadline
  local env="$etc_dir/$m.env" pidf="$run_dir/berth-$m.pid" logf="$log_dir/berth-$m.log"
  unit_argv "$m"
  nofile="$(sed -n 's/^LimitNOFILE=//p' "$unit_dir/berth-$m.service")"
  # A clean environment plus the env file's variables, as systemd gives the service.
  while IFS= read -r key; do
    value="$(env_get "$env" "$key" || true)"
    envs+=("$key=$value")
  done < <(sed -nE 's/^([A-Z_][A-Z0-9_]*)=.*/\1/p' "$env")
  mkdir -p "$log_dir" "$run_dir"
  rm -f "$pidf"
  # setsid: its own session, so it outlives this script and any terminal. The wrapper records its
  # own pid and then execs into the service, so the pid file names the service process itself.
  setsid bash -c 'ulimit -n "$1" 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true; echo $$ >"$2"; shift 2; exec "$@"' berth-launch \
    "${nofile:-65536}" "$pidf" \
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "${envs[@]}" \
    "${argv[@]}" </dev/null >>"$logf" 2>&1 &
  deadline=$(($(date +%s) + 10))
  until running_pid "$m" >/dev/null; do
    [ "$(date +%s)" -lt "$deadline" ] || berth_die "berth $m did not start; last lines of $logf:
$(tail -n 20 "$logf" 2>/dev/null)"
    sleep 0.1
  done
}

service_log_tail() {
  if systemd_is_init; then journalctl -u "berth-$1.service" -n 30 --no-pager 2>/dev/null || true
  else tail -n 30 "$log_dir/berth-$1.log" 2>/dev/null || true; fi
}

# Any HTTP answer over TLS verified against the cluster CA counts (/healthz wants credentials); the
# serving certificate names 127.0.0.1 and every host address. Settings from server.env.
server_answers() {
  local env="$etc_dir/server.env" bind port dir host
  bind="$(env_get "$env" BERTH_BIND_ADDRESS || true)"
  port="$(env_get "$env" BERTH_PORT || echo 6443)"
  dir="$(env_get "$env" BERTH_DATA_DIR || echo /var/lib/berth)"
  case "$bind" in "" | 0.0.0.0 | ::) host=127.0.0.1 ;; *) host="$bind" ;; esac
  "$node_bin" -e '
    const [host, port, ca] = process.argv.slice(1);
    let caPem; try { caPem = require("fs").readFileSync(ca); } catch { process.exit(1); }
    const req = require("https").get({ host, port: Number(port), path: "/healthz", ca: caPem, timeout: 2000 },
      (res) => process.exit(res.statusCode < 500 ? 0 : 1));
    req.on("error", () => process.exit(1));
    req.on("timeout", () => req.destroy(new Error("timeout")));' "$host" "$port" "$dir/pki/ca.crt"
}

# wait_until MODE WHAT CHECK...: polls CHECK while the service of MODE runs, for READY_TIMEOUT_S.
wait_until() {
  local m="$1" what="$2" deadline=$(($(date +%s) + READY_TIMEOUT_S))
  shift 2
  until "$@"; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      berth_die "$what within ${READY_TIMEOUT_S}s; last lines of the service log:
$(service_log_tail "$m")"
    fi
    if ! systemd_is_init && ! running_pid "$m" >/dev/null; then
      berth_die "berth $m exited; last lines of $log_dir/berth-$m.log:
$(service_log_tail "$m")"
    fi
    sleep 0.5
  done
}

wait_ready() {
  if [ "$1" = server ]; then
    wait_until server "the control plane did not answer on its port" server_answers
  else
    wait_until agent "the agent did not join $(env_get "$etc_dir/agent.env" BERTH_SERVER || true) (is the token right, and the server reachable?)" agent_joined
  fi
}

# The other mode, when this host runs it from the same PREFIX and this run replaced its program:
# restarted too, and ready before this function returns.
restart_other_if_stale() {
  local other="$1" other_pid
  [ -f "$unit_dir/berth-$other.service" ] && other_pid="$(running_pid "$other")" && runs_older_program "$other_pid" || return 0
  berth_log "berth $other (pid $other_pid) runs the program this install replaced; restarting it"
  if systemd_is_init; then
    systemctl restart "berth-$other.service" || berth_die "systemctl restart berth-$other.service failed"
  else
    stop_direct "$other" "$other_pid"
    start_direct "$other"
  fi
  wait_ready "$other"
  changes+=("restarted berth $other (new program)")
}

if pid="$(running_pid "$mode")" && runs_older_program "$pid"; then restart_needed=1; fi
# An agent needs its control plane up: a server on this host goes first.
[ "$mode" != agent ] || restart_other_if_stale server

if systemd_is_init; then
  [ "$unit_changed" -eq 0 ] || systemctl daemon-reload
  if [ "$unit_dir" = /etc/systemd/system ]; then enable_arg="$unit"; else enable_arg="$unit_path"; fi
  if ! systemctl is-enabled --quiet "$unit" 2>/dev/null; then
    systemctl enable --quiet "$enable_arg" || berth_die "systemctl enable $enable_arg failed"
    changes+=("enabled $unit")
  fi
  if ! systemctl is-active --quiet "$unit"; then
    berth_log "systemd is PID 1: starting $unit"
    systemctl start "$unit" || berth_die "systemctl start $unit failed; see: journalctl -u $unit"
    changes+=("started $unit")
  elif [ "$restart_needed" -eq 1 ]; then
    berth_log "systemd is PID 1: restarting $unit (its program or settings changed)"
    systemctl restart "$unit" || berth_die "systemctl restart $unit failed; see: journalctl -u $unit"
    changes+=("restarted $unit")
  else
    berth_log "$unit is running and up to date"
  fi
else
  berth_log "systemd is not running as PID 1 here (no /run/systemd/system), so $unit is installed but not used:"
  berth_log "  starting berth $mode directly in the background (log: $log_file, pid file: $pid_file)."
  berth_log "  Nothing restarts it if it exits or the host reboots; re-run this script to start it again."
  if pid="$(running_pid "$mode")"; then
    if [ "$restart_needed" -eq 1 ]; then
      berth_log "restarting berth $mode (pid $pid): its program or settings changed"
      stop_direct "$mode" "$pid"
      start_direct "$mode"
      changes+=("restarted berth $mode")
    else
      berth_log "berth $mode is already running (pid $pid) and up to date; not starting a second copy"
    fi
  else
    start_direct "$mode"
    changes+=("started berth $mode (pid $(running_pid "$mode"))")
  fi
fi

# ---- 7. Ready? ------------------------------------------------------------------------------

wait_ready "$mode"
if [ "$mode" = server ]; then
  [ -s "$data_dir/node-token" ] || berth_die "the control plane runs but wrote no $data_dir/node-token"
  restart_other_if_stale agent
elif [ -e "$token_path" ]; then
  # The agent holds its own credential now: the join token, which could join other nodes, leaves the host.
  rm -f "$token_path"
  changes+=("removed the join token $token_path (the agent joined and keeps its own credential)")
fi

# ---- Summary ----------------------------------------------------------------------------------

elapsed="$(awk -v a="$started_at" -v b="$(berth_now)" 'BEGIN { printf "%.1f", b - a }')"
echo
echo "Berth $mode installed in ${elapsed}s"
echo "  program   $prefix (node $("$node_bin" --version))"
echo "  settings  $env_file"
echo "  unit      $unit_path"
if systemd_is_init; then
  echo "  service   systemd: systemctl status $unit; journalctl -u $unit"
else
  echo "  service   no systemd: pid $(running_pid "$mode" || echo '?') ($pid_file), log $log_file"
fi
if [ "$mode" = server ]; then
  echo "  kubectl   kubectl --kubeconfig $data_dir/kubeconfig.yaml get nodes"
  echo "  join      make a join token (valid 24 h): $prefix/bin/berth.js token create --data-dir $data_dir --out FILE;"
  echo "            then on each agent host: install.sh agent --server https://<this host>:$port --token-file <copy of FILE>"
else
  echo "  node      $node_name, joined $server_url"
fi
if [ ${#changes[@]} -eq 0 ]; then
  echo "  changes   none: everything was already installed and running"
else
  for c in "${changes[@]}"; do echo "  changed   $c"; done
fi
