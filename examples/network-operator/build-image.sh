#!/usr/bin/env bash
# Builds the network operator's image locally, without any registry:
#   berth/network-operator:dev   FROM scratch: the host's node binary and the shared libraries ldd
#                                lists for it, the compiled operator (only the modules it imports)
#                                and the npm packages it imports with their dependencies.
#
# Needs the TypeScript build (npx tsc -p tsconfig.json). Idempotent: the image carries a hash of
# its contents and is rebuilt only when that changes. DOCKER_HOST is honoured, as for
# scripts/images/build-images.sh.
#
# Usage: examples/network-operator/build-image.sh [--force] [--tag IMAGE]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=../../scripts/lib.sh
. "$repo/scripts/lib.sh"

image="berth/network-operator:dev"
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --force | -f) force=1 ;;
    --tag | -t)
      [ $# -ge 2 ] || berth_die "--tag needs a value"
      image="$2"
      shift
      ;;
    -h | --help)
      sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) berth_die "unknown argument: $1 (try --help)" ;;
  esac
  shift
done

entry="$repo/dist/examples/network-operator/main.js"
lister="$repo/dist/examples/network-operator/image-files.js"
[ -f "$entry" ] && [ -f "$lister" ] || berth_die "no compiled operator; run: npx tsc -p tsconfig.json"
berth_have docker || berth_die "the docker CLI is not installed; run scripts/setup.sh first"
berth_docker info >/dev/null 2>&1 || berth_die "cannot reach the Docker daemon${DOCKER_HOST:+ at $DOCKER_HOST}"
docker buildx version >/dev/null 2>&1 || export DOCKER_BUILDKIT=0

node_bin="$(readlink -f "$(command -v node)")"
workdir="$(mktemp -d "${TMPDIR:-/tmp}/berth-network-operator.XXXXXX")"
trap 'rm -rf "$workdir"' EXIT
root="$workdir/root"
mkdir -p "$root/usr/bin" "$root/app" "$root/var/run"
install -d -m 1777 "$root/tmp"

# The runtime: node, and every shared object the dynamic loader would map for it (the loader too),
# each at the path ldd reports, since that is where the binary looks.
install -m 0755 "$node_bin" "$root/usr/bin/node"
libs="$(ldd "$node_bin")"
while read -r lib; do
  [ -n "$lib" ] || continue
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done < <(printf '%s\n' "$libs" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')

# The operator: compiled modules it reaches, then packages (type declarations, source maps, TypeScript
# sources and docs are never loaded, so they stay out).
files="$(node "$lister" "$entry")"
while read -r item; do
  [ -n "$item" ] || continue
  case "$item" in
    *node_modules/*)
      tar -C "$repo" -c --exclude="$item/node_modules" --exclude='*.map' --exclude='*.d.ts' --exclude='*.d.mts' \
        --exclude='*.d.cts' --exclude='*.ts' --exclude='*.md' "$item" | tar -C "$root/app" -x
      ;;
    *)
      mkdir -p "$root/app/$(dirname "$item")"
      cp "$repo/$item" "$root/app/$item"
      ;;
  esac
done <<<"$files"
# dist/ is ES modules because the repository's package.json says so; the image has only this much of it.
printf '{ "type": "module", "private": true }\n' >"$root/app/package.json"

content_hash="$(cd "$root" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
current="$(berth_docker image inspect --format '{{ index .Config.Labels "io.berth.content-sha256" }}' "$image" 2>/dev/null || true)"
if [ "$force" -eq 0 ] && [ "$current" = "$content_hash" ]; then
  berth_log "$image is up to date"
  exit 0
fi
previous="$(berth_docker image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)"

cat >"$workdir/Dockerfile" <<DOCKERFILE
FROM scratch
COPY root/ /
WORKDIR /app
ENV NODE_ENV=production
LABEL io.berth.content-sha256="$content_hash"
ENTRYPOINT ["/usr/bin/node", "/app/dist/examples/network-operator/main.js"]
DOCKERFILE
if ! out="$(berth_docker build -q -t "$image" "$workdir" 2>&1)"; then
  printf '%s\n' "$out" >&2
  berth_die "docker build of $image failed"
fi
# A rebuilt image leaves the old one dangling; drop it unless a container still uses it.
if [ -n "$previous" ] && [ "$(berth_docker image inspect --format '{{.Id}}' "$image")" != "$previous" ]; then
  berth_docker image rm "$previous" >/dev/null 2>&1 || true
fi
berth_log "built $image ($(du -sm "$root" | cut -f1) MB)"
