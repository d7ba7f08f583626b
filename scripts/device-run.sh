#!/usr/bin/env bash
# Builds on a GPU machine and runs the GPU suites and the benchmarks named in $MGJOIN_BENCH
# (used through the lent device machine; logs go to $OUT). A missing nlohmann-json there comes
# from .deps/ (a copy of Debian's package carried along; .deps is git-ignored).
set -uo pipefail
source "$(dirname "$0")/device-env.sh"  # cd to the root, NCCL_NVLS_ENABLE=0, $B (binaries), $OUT (logs)
start=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps" > "$OUT/build.log" 2>&1 &&
  ninja -C build-gpu -j "$(nproc)" "$@" >> "$OUT/build.log" 2>&1
rc=$?
echo "build rc=$rc in $(( $(date +%s) - start )) s"
[ $rc -eq 0 ] || { tail -40 "$OUT/build.log"; exit $rc; }
