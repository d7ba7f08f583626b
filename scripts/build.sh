#!/usr/bin/env bash
# Configures and builds mgjoin into ./build (Release). Extra arguments go to cmake, e.g.
#   scripts/build.sh -DCMAKE_CUDA_ARCHITECTURES=80
# MGJOIN_BUILD_TARGETS names the targets to build (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
jobs=${MGJOIN_BUILD_JOBS:-$(nproc)}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
# shellcheck disable=SC2086 (targets are words)
cmake --build build -j "$jobs" ${MGJOIN_BUILD_TARGETS:+--target $MGJOIN_BUILD_TARGETS}
