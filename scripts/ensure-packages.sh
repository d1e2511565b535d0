#!/usr/bin/env bash
# ensure_packages PKG... : installs the Debian packages that are missing.
# Sourced by run-tests.sh and run-examples.sh; also runnable on its own:
#   bash scripts/ensure-packages.sh cmake ninja-build g++
set -euo pipefail

ensure_packages() {
  if ! command -v dpkg >/dev/null 2>&1; then
    echo "lowbit: no dpkg here; make sure these are installed: $*" >&2
    return 0
  fi
  local missing=()
  local pkg
  for pkg in "$@"; do
    if ! dpkg -s "$pkg" >/dev/null 2>&1; then
      missing+=("$pkg")
    fi
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    return 0
  fi
  echo "lowbit: installing missing packages: ${missing[*]}" >&2
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo=(sudo)
    else
      echo "lowbit: not root and no sudo; install them with apt-get install ${missing[*]}" >&2
      return 1
    fi
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  ensure_packages "$@"
fi
