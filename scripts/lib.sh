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

# True when $1 is an executable ELF with no program interpreter, i.e. runs in an
# image without libc. (Debian's `busybox` package is dynamic; `busybox-static` is not.)
berth_is_static_elf() {
  [ -x "$1" ] || return 1
  berth_have readelf || return 0 # binutils comes with gcc; without it, trust the caller's path
  LC_ALL=C readelf -h "$1" >/dev/null 2>&1 &&
    ! LC_ALL=C readelf -l "$1" 2>/dev/null | grep -q 'program interpreter'
}

# True when the Debian package $1 is installed.
berth_pkg_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# Seconds (with milliseconds) since the epoch, for the timings in summaries.
berth_now() { date +%s.%N | cut -c1-14; }

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
