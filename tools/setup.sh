#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# setup.sh: install what dtopt needs to build and test on Debian 12 (as root,
# or through sudo), then configure build/ (and build-asan/ with --asan).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(meson ninja-build pkg-config gcc libc6-dev libxml2-dev libxml2-utils
          libcmocka-dev libopenmpi-dev openmpi-bin graphviz python3 python3-torch
          time zlib1g-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update
  $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi

werror=false
[ "${CI:-}" = "true" ] && werror=true
if [ ! -f build/build.ninja ]; then
  meson setup build -Dwerror=$werror
else
  meson setup --reconfigure build -Dwerror=$werror >/dev/null
fi
if [ "${1:-}" = "--asan" ]; then
  if [ ! -f build-asan/build.ninja ]; then
    meson setup build-asan -Dwerror=$werror -Db_sanitize=address,undefined \
      -Db_lundef=false -Dbuildtype=debug
  else
    meson setup --reconfigure build-asan >/dev/null
  fi
fi
