#!/usr/bin/env bash
# Builds mgjoin and runs the whole test suite. GPU tests skip themselves without GPUs;
# on a GPU machine they run for real (export NCCL_NVLS_ENABLE=0 is set here for safety).
set -euo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
scripts/build.sh "$@"
ctest --test-dir build --output-on-failure -j "$(nproc)"
