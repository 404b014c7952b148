#!/usr/bin/env bash
# Builds the images Berth needs without any registry:
#   berth/pause:3.9     the pod sandbox process (our own pause.c, FROM scratch)
#   berth/busybox:test  a small userland for tests (Debian's static busybox)
#
# Idempotent: an image is skipped when it exists and carries the label of the
# recipe that built it; a changed pause.c or busybox binary triggers a rebuild.
# Works against any daemon: set DOCKER_HOST (or pass --host) to load the images
# into another dockerd, e.g. one running in a network namespace.
#
# Usage: scripts/images/build-images.sh [--force] [--host unix:///run/docker-x.sock]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
. "$here/../lib.sh"

# Keep in sync with PAUSE_IMAGE in agent/runtime/pause-image.ts.
PAUSE_IMAGE="berth/pause:3.9"
BUSYBOX_IMAGE="berth/busybox:test"
# Bump when the busybox image layout below changes, so existing images are rebuilt.
BUSYBOX_RECIPE_VERSION=1
PAUSE_SOURCE="$here/pause/pause.c"

force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --force | -f) force=1 ;;
    --host | -H)
      [ $# -ge 2 ] || berth_die "--host needs a value, e.g. unix:///run/docker-hostA.sock"
      export DOCKER_HOST="$2"
      shift
      ;;
    --host=*) export DOCKER_HOST="${1#--host=}" ;;
    -h | --help)
      sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) berth_die "unknown argument: $1 (try --help)" ;;
  esac
  shift
done

berth_have docker || berth_die "the docker CLI is not installed; run scripts/setup.sh first"
berth_docker info >/dev/null 2>&1 ||
  berth_die "cannot reach the Docker daemon${DOCKER_HOST:+ at $DOCKER_HOST}; run scripts/setup.sh (it starts dockerd)"

# Without the buildx plugin the CLI can only use the classic builder, and fails
# outright if the caller's environment asked for BuildKit.
docker buildx version >/dev/null 2>&1 || export DOCKER_BUILDKIT=0

workdir="$(mktemp -d "${TMPDIR:-/tmp}/berth-images.XXXXXX")"
trap 'rm -rf "$workdir"' EXIT

# Prints the value of label $2 on image $1, or nothing when the image or label is absent.
image_label() {
  berth_docker image inspect --format "{{ index .Config.Labels \"$2\" }}" "$1" 2>/dev/null || true
}

# Removes image ID $2 when it is no longer what tag $1 points at, so rebuilds do
# not pile up dangling images. Quietly keeps it while a container still uses it.
drop_replaced() {
  [ -n "$2" ] || return 0
  [ "$(berth_docker image inspect --format '{{.Id}}' "$1" 2>/dev/null)" != "$2" ] || return 0
  berth_docker image rm "$2" >/dev/null 2>&1 || true
}

# True when image $1 must be (re)built to carry label $2=$3.
needs_build() {
  local current
  [ "$force" -eq 1 ] && return 0
  current="$(image_label "$1" "$2")"
  if [ -z "$current" ]; then
    if berth_docker image inspect "$1" >/dev/null 2>&1; then
      berth_log "$1 exists but was not built by this script; rebuilding"
    fi
    return 0
  fi
  if [ "$current" != "$3" ]; then
    berth_log "$1 is out of date (recipe changed); rebuilding"
    return 0
  fi
  berth_log "$1 is up to date"
  return 1
}

build_pause() {
  local source_hash ctx out previous
  [ -f "$PAUSE_SOURCE" ] || berth_die "missing $PAUSE_SOURCE"
  source_hash="$(sha256sum "$PAUSE_SOURCE" | cut -d' ' -f1)"
  needs_build "$PAUSE_IMAGE" io.berth.source-sha256 "$source_hash" || return 0

  previous="$(berth_docker image inspect --format '{{.Id}}' "$PAUSE_IMAGE" 2>/dev/null || true)"
  berth_have gcc || berth_die "gcc is needed to build $PAUSE_IMAGE; run scripts/setup.sh (installs gcc and libc6-dev)"
  ctx="$workdir/pause"
  mkdir -p "$ctx"
  # Static so the image needs nothing but the binary (FROM scratch has no libc).
  gcc -static -Os -Wall -o "$ctx/pause" "$PAUSE_SOURCE" ||
    berth_die "compiling pause.c failed; a static link needs libc6-dev (apt-get install -y libc6-dev)"
  strip "$ctx/pause" 2>/dev/null || true
  # The label ties the image to its source so later runs (and the agent) can
  # tell whether it is current. Same Dockerfile text as agent/runtime/pause-image.ts.
  cat >"$ctx/Dockerfile" <<EOF
FROM scratch
COPY pause /pause
LABEL io.berth.source-sha256="$source_hash"
ENTRYPOINT ["/pause"]
EOF
  if ! out="$(berth_docker build -q -t "$PAUSE_IMAGE" "$ctx" 2>&1)"; then
    printf '%s\n' "$out" >&2
    berth_die "docker build of $PAUSE_IMAGE failed"
  fi
  drop_replaced "$PAUSE_IMAGE" "$previous"
  berth_log "built $PAUSE_IMAGE ($(stat -c %s "$ctx/pause") byte binary)"
}

build_busybox() {
  local busybox recipe_hash root applet previous
  busybox="$(command -v busybox || true)"
  if [ -z "$busybox" ] || ! berth_is_static_elf "$busybox"; then
    busybox=/bin/busybox
  fi
  berth_is_static_elf "$busybox" ||
    berth_die "a static busybox is needed for $BUSYBOX_IMAGE; run scripts/setup.sh (installs busybox-static)"
  recipe_hash="$( (sha256sum "$busybox" | cut -d' ' -f1; echo "recipe=$BUSYBOX_RECIPE_VERSION") | sha256sum | cut -d' ' -f1)"
  needs_build "$BUSYBOX_IMAGE" io.berth.recipe-sha256 "$recipe_hash" || return 0

  previous="$(berth_docker image inspect --format '{{.Id}}' "$BUSYBOX_IMAGE" 2>/dev/null || true)"
  root="$workdir/busybox"
  mkdir -p "$root"/{bin,etc,root,proc,sys,dev,var/www,usr}
  install -m 0755 "$busybox" "$root/bin/busybox"
  # Every applet this busybox has, so tests can use sh, sleep, httpd, wget, nc,
  # ip, nslookup, ps, ... without us keeping a list in sync with Debian.
  while IFS= read -r applet; do
    if [ -n "$applet" ] && [ "$applet" != busybox ]; then ln -sf busybox "$root/bin/$applet"; fi
  done < <("$busybox" --list)
  # Scripts written for other images use /usr/bin/env, /sbin/ip, ...
  ln -s ../bin "$root/usr/bin"
  ln -s ../bin "$root/usr/sbin"
  ln -s bin "$root/sbin"
  install -d -m 1777 "$root/tmp"
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' >"$root/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nobody:x:65534:' >"$root/etc/group"
  chmod 0700 "$root/root"

  # Root-owned entries whoever runs the script; --numeric-owner avoids name lookups.
  tar -C "$root" --owner=0 --group=0 --numeric-owner -c . |
    berth_docker import \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'CMD ["sh"]' \
      --change "LABEL io.berth.recipe-sha256=\"$recipe_hash\"" \
      - "$BUSYBOX_IMAGE" >/dev/null ||
    berth_die "docker import of $BUSYBOX_IMAGE failed"
  drop_replaced "$BUSYBOX_IMAGE" "$previous"
  busybox_banner="$("$busybox" 2>&1 || true)"
  busybox_banner="$(berth_first_line "$busybox_banner")"
  berth_log "built $BUSYBOX_IMAGE (${busybox_banner% (*})"
}

build_pause
build_busybox
