#!/usr/bin/env bash
# Installs what is missing, builds only the CLI (the tests and benchmarks are scripts/test.sh's), generates
# a small workload B (10^7 x 10^7) and joins it, on the GPUs when present, else on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
scripts/install-deps.sh
MGJOIN_BUILD_TARGETS=mgjoin scripts/build.sh
./build/mgjoin generate --workload B --scale 0.01 --out-dir out/demo --overwrite
./build/mgjoin join --r-dir out/demo --s-dir out/demo --count
