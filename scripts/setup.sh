#!/usr/bin/env bash
# Installs the Debian 12 packages plexus needs to build, test and benchmark. Idempotent:
# packages already present are not fetched again, so `make` can call it every time.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libpcre2-dev libicu-dev libyaml-cpp-dev
  openmpi-bin libopenmpi-dev
  libcpp-httplib-dev curl jq nodejs chromium
  python3 python3-numpy python3-torch python3-yaml libopenblas0-pthread
  docker-compose slurm-wlm munge shellcheck
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "setup: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
