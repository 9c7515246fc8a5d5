#!/usr/bin/env bash
# Installs the Debian packages clustersim builds with, only those that are missing. Safe to re-run.
set -euo pipefail
packages=(cmake ninja-build g++ ccache clang clang-format clang-tidy libcli11-dev libyaml-cpp-dev libgtest-dev nlohmann-json3-dev libopenblas-dev libgloo-dev openmpi-bin zlib1g-dev libisal-dev pkg-config libprotobuf-dev protobuf-compiler chromium python3-dev pybind11-dev python3-pytest python3-numpy python3-matplotlib python3-pandas python3-yaml)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
