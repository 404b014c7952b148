#!/usr/bin/env bash
# The kubectl binaries the e2e tests run with: the `kubectl` on PATH (whatever version it is) and
# Debian's kubectl 1.20 (package kubernetes-client), the one every Debian user gets from apt.
# Debian's is fetched with `apt-get download kubernetes-client && dpkg -x` into .cache/kubectl-1.20/
# of the repo (never installed system-wide, so it cannot shadow a newer kubectl), once: a second run
# finds it there and does nothing.
#
# Prints the binaries as one colon-separated line on stdout (for BERTH_KUBECTLS); everything else
# goes to stderr. When Debian's kubectl cannot be had (no apt-get, no such package, a failed
# download) it says so loudly and prints only what there is; the tests then report the missing
# version as skipped, by name.
#
#   bash scripts/kubectl-versions.sh
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=lib.sh
. "$repo/scripts/lib.sh"

readonly DEBIAN_PACKAGE=kubernetes-client
readonly WANTED_MINOR=1.20
cache="$repo/.cache/kubectl-$WANTED_MINOR"
debian_kubectl="$cache/usr/bin/kubectl"

# "1.20" from `kubectl version --client` of binary $1, in either output format: kubectl ≥ 1.28
# prints "Client Version: v1.32.4", older ones print a Go struct with GitVersion:"v1.20.2".
client_minor() {
  local out
  out="$("$1" version --client 2>/dev/null)" || return 1
  [[ "$out" =~ v([0-9]+)\.([0-9]+)\. ]] || return 1
  printf '%s.%s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
}

shout() {
  berth_warn "============================================================"
  berth_warn "$*"
  berth_warn "the e2e tests will run WITHOUT kubectl $WANTED_MINOR and list its tests as skipped"
  berth_warn "============================================================"
}

# Leaves Debian's kubectl at $debian_kubectl, or says loudly why not and returns 1.
fetch_debian_kubectl() {
  if [ -x "$debian_kubectl" ] && [ "$(client_minor "$debian_kubectl" || true)" = "$WANTED_MINOR" ]; then
    return 0
  fi
  if ! berth_have apt-get || ! berth_have dpkg; then
    shout "no apt-get/dpkg here, so Debian's kubectl $WANTED_MINOR ($DEBIAN_PACKAGE) cannot be fetched"
    return 1
  fi
  # apt-get download needs a candidate in the package lists; a fresh machine may have none yet.
  if ! LC_ALL=C apt-cache policy "$DEBIAN_PACKAGE" 2>/dev/null | grep 'Candidate: [^(]' >/dev/null; then
    berth_log "apt-get update (to find $DEBIAN_PACKAGE)"
    berth_as_root apt-get update -qq || true
  fi
  local work
  work="$(mktemp -d)"
  # apt runs downloads as user _apt when it can; a world-writable dir lets it, as root or not.
  chmod 0777 "$work"
  berth_log "fetching Debian's kubectl: apt-get download $DEBIAN_PACKAGE && dpkg -x into $cache"
  if ! (cd "$work" && apt-get download -qq "$DEBIAN_PACKAGE" >&2); then
    rm -rf "$work"
    shout "apt-get download $DEBIAN_PACKAGE failed (see above)"
    return 1
  fi
  local deb
  deb="$(ls "$work"/"$DEBIAN_PACKAGE"_*.deb 2>/dev/null || true)"
  if [ -z "$deb" ] || ! dpkg -x "$deb" "$work/root"; then
    rm -rf "$work"
    shout "dpkg -x of the downloaded $DEBIAN_PACKAGE failed"
    return 1
  fi
  local got
  got="$(client_minor "$work/root/usr/bin/kubectl" || echo unknown)"
  if [ "$got" != "$WANTED_MINOR" ]; then
    rm -rf "$work"
    shout "this Debian release's $DEBIAN_PACKAGE is kubectl $got, not $WANTED_MINOR"
    return 1
  fi
  mkdir -p "$repo/.cache"
  rm -rf "$cache"
  mv "$work/root" "$cache"
  rm -rf "$work"
  berth_log "Debian's kubectl $got is at $debian_kubectl"
}

kubectls=()
if berth_have kubectl; then
  kubectls+=("$(command -v kubectl)")
else
  berth_warn "no kubectl on PATH"
fi
if fetch_debian_kubectl; then kubectls+=("$debian_kubectl"); fi
(IFS=:; printf '%s\n' "${kubectls[*]}")
