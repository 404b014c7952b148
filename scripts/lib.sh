# shellcheck shell=bash
# Shared helpers for scripts/*.sh. Source it (`. "$(dirname "$0")/lib.sh"`); it only defines functions.

berth_log() { printf '[berth] %s\n' "$*" >&2; }
berth_warn() { printf '[berth] WARNING: %s\n' "$*" >&2; }
berth_die() {
  printf '[berth] ERROR: %s\n' "$*" >&2
  exit 1
}
# True when external command $1 is on PATH and executable (bash's `command -v`
# alone also reports a non-executable file of that name).
berth_have() {
  local path
  path="$(command -v "$1" 2>/dev/null)" && [ -x "$path" ]
}

# Runs a command as root. Non-interactive runs (CI, no tty) use `sudo -n` so a
# missing sudo rule fails at once instead of hanging on a password prompt.
berth_as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif berth_have sudo; then
    if [ -t 0 ]; then sudo "$@"; else sudo -n "$@"; fi
  else
    berth_die "'$*' needs root, and sudo is not available; re-run as root"
  fi
}

# Runs the docker CLI, falling back to root when the invoking user cannot reach
# the daemon's socket (not in the docker group). DOCKER_HOST and DOCKER_BUILDKIT
# are passed through explicitly because sudo resets the environment.
berth_docker() {
  if [ -z "${BERTH_DOCKER_MODE:-}" ]; then
    if docker info >/dev/null 2>&1; then
      BERTH_DOCKER_MODE=direct
    elif [ "$(id -u)" -ne 0 ] && berth_as_root env ${DOCKER_HOST:+DOCKER_HOST="$DOCKER_HOST"} docker info >/dev/null 2>&1; then
      BERTH_DOCKER_MODE=root
      berth_warn "docker needs root for user $(id -un); add it to the 'docker' group so the agent can reach the socket"
    else
      BERTH_DOCKER_MODE=direct # let the real command report why the daemon is unreachable
    fi
  fi
  if [ "$BERTH_DOCKER_MODE" = root ]; then
    berth_as_root env ${DOCKER_HOST:+DOCKER_HOST="$DOCKER_HOST"} \
      ${DOCKER_BUILDKIT:+DOCKER_BUILDKIT="$DOCKER_BUILDKIT"} docker "$@"
  else
    docker "$@"
  fi
}

# Pipelines and early readers: under `set -o pipefail`, `producer | grep -q` (or `| head`) is false
# whenever grep stops reading at its first match and the producer, still writing, dies of SIGPIPE
# (status 141). So every check below captures a command's whole output first and matches it after.

# True when $1 is an executable ELF with no program interpreter, i.e. runs in an
# image without libc. (Debian's `busybox` package is dynamic; `busybox-static` is not.)
berth_is_static_elf() {
  local headers
  [ -x "$1" ] || return 1
  berth_have readelf || return 0 # binutils comes with gcc; without it, trust the caller's path
  LC_ALL=C readelf -h "$1" >/dev/null 2>&1 || return 1
  headers="$(LC_ALL=C readelf -l "$1" 2>/dev/null)" || return 1
  [[ "$headers" != *'program interpreter'* ]]
}

# True when the Debian package $1 is installed.
berth_pkg_installed() {
  local status
  status="$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" || return 1
  [[ "$status" == *'install ok installed'* ]]
}

# True when apt knows an installable candidate version of package $1 (not "Candidate: (none)").
berth_apt_has_candidate() {
  local policy candidate_line='Candidate: [^(]'
  berth_have apt-cache || return 1
  policy="$(LC_ALL=C apt-cache policy "$1" 2>/dev/null)" || return 1
  [[ "$policy" =~ $candidate_line ]]
}

# Installs Debian package $2 when command $1 is missing (running `apt-get update` first when apt
# knows no candidate yet). Prints why and returns 1 when it cannot.
berth_ensure_tool() {
  local tool="$1" package="$2"
  berth_have "$tool" && return 0
  if ! berth_have apt-get; then
    echo "$tool is missing and this is not a Debian/Ubuntu system (no apt-get) to install $package from"
    return 1
  fi
  if ! berth_apt_has_candidate "$package"; then
    berth_as_root apt-get update -qq >/dev/null 2>&1 || true
  fi
  if ! berth_apt_has_candidate "$package"; then
    echo "$tool is missing and apt has no '$package' package to install it from"
    return 1
  fi
  berth_log "installing $package for $tool"
  if ! berth_as_root apt-get install -y -qq --no-install-recommends "$package" >/dev/null; then
    echo "apt-get install $package failed"
    return 1
  fi
  berth_have "$tool" || { echo "$package is installed but $tool is still not on PATH"; return 1; }
}

# True when PID is a live (not zombie) process running `<prefix>/bin/berth.js <mode> …`.
berth_is_berth_process() {
  local pid="$1" prefix="$2" mode="$3" state cmdline
  [[ "$pid" =~ ^[0-9]+$ ]] && [ -r "/proc/$pid/cmdline" ] || return 1
  state="$(sed -E 's/^[0-9]+ \(.*\) ([A-Za-z]).*/\1/' "/proc/$pid/stat" 2>/dev/null || echo Z)"
  [ "$state" != Z ] || return 1
  cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  [[ "$cmdline" == *"$prefix/bin/berth.js $mode "* ]]
}

# The first line of $1.
berth_first_line() { printf '%s' "${1%%$'\n'*}"; }

# Seconds (with milliseconds) since the epoch, for the timings in summaries.
berth_now() { date +%s.%N | cut -c1-14; }

# Runs "$@", then logs "LABEL: done in N.Ns" (or "failed after"), so long steps say how long they took; returns its status.
berth_timed() {
  local label="$1" t0 status=0
  shift
  t0="$(berth_now)"
  "$@" || status=$?
  berth_log "$label: $([ "$status" -eq 0 ] && echo done in || echo failed after) $(awk -v a="$t0" -v b="$(berth_now)" 'BEGIN { printf "%.1f", b - a }')s"
  return "$status"
}

# Value of KEY in env file FILE (KEY=VALUE lines, as install.sh writes them), without surrounding double quotes; returns 1 when the key is absent.
env_get() {
  local file="$1" key="$2" line value
  [ -f "$file" ] || return 1
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in
      "$key="*)
        value="${line#*=}"
        value="${value#\"}"
        printf '%s' "${value%\"}"
        return 0
        ;;
    esac
  done <"$file"
  return 1
}

# The Kubernetes API facts directory (shared/data/kubernetes-api) beside a checkout ($1): the
# reference data the generated types and tables come from, kept outside the repository. A fresh
# clone in a temporary directory has none beside it, so the checkout it was cloned from (its
# origin, when that is a local path) is looked at too. Prints nothing and fails when neither has it.
berth_api_facts_dir() {
  local base candidate
  for base in "$1" "$(git -C "$1" remote get-url origin 2>/dev/null || true)"; do
    [ -n "$base" ] && [ -d "$base" ] || continue
    candidate="$(cd "$base/.." && pwd)/shared/data/kubernetes-api"
    if [ -f "$candidate/openapi-v2-facts.json" ]; then
      printf '%s\n' "$candidate"
      return 0
    fi
  done
  return 1
}
