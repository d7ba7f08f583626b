#!/usr/bin/env bash
# Installs what the build needs and is missing, from Debian/Ubuntu packages.
# The CUDA toolkit (nvcc, CCCL, NCCL) is expected under /usr/local/cuda.
set -euo pipefail
# clang and its runtimes (libFuzzer, sanitizers) only build the .npy header fuzz test (tests/fuzz).
# python3-venv and python3-dev: the Python package's virtual environment and build (its own packages come
# from PyPI: scripts/install-python-deps.sh).
# openmpi-bin and libopenmpi-dev: joins across MPI ranks (libmgjoin_dist) and their mpirun tests.
pkgs=(cmake ninja-build g++ libhwloc-dev libcli11-dev nlohmann-json3-dev libgtest-dev python3 python3-venv python3-dev
      clang libclang-rt-dev openmpi-bin libopenmpi-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "error: the CUDA toolkit (nvcc) is required: install it under /usr/local/cuda" >&2
  exit 1
fi
