#!/usr/bin/env bash
# Builds mgjoin, the benchmarks and the GPU suites here and copies them, stripped, into .devbin
# (git-ignored, ~20 MB) to be carried to a lent GPU machine, where scripts/device-tests.sh and
# scripts/device-bench.sh run them.
# The CLI is built without Parquet (-DMGJOIN_PARQUET=OFF): its Arrow libraries would be pyarrow's in this
# machine's build/venv, which the GPU machine lacks (and they alone outweigh the carry limit); it refuses
# Parquet and Arrow IPC paths in one line saying so. MGJOIN_DEVBIN_PARQUET=AUTO|ON builds them in, for a
# machine that has that venv at the same path.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${MGJOIN_BUILD_DIR:-build-lead}
suites=(alloc topology io join sort copart cli e2e table)
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMGJOIN_PARQUET="${MGJOIN_DEVBIN_PARQUET:-OFF}" >/dev/null
# The MPI test programs where MPI was found (device-pending.sh ranks-tests runs them over NCCL).
mpi_tests=()
# (The target list is read whole first: grep -q closing the pipe early failed the pipeline under pipefail.)
targets=$(ninja -C "$build" -t targets all)
grep -q '^dist_join_mpi:' <<< "$targets" && mpi_tests=(dist_join_mpi dist_tables_mpi)
# Every benchmark (apps/benchmarks, alloc/bench: bench_<name>, one target each).
benches=$(grep -o '^bench_[a-z_]*:' <<< "$targets" | tr -d : | sort -u)
ninja -C "$build" -j "$(nproc)" mgjoin $(for s in "${suites[@]}"; do echo "${s}_gpu_tests"; done) \
  $benches differential "${mpi_tests[@]}"
rm -rf .devbin && mkdir .devbin
cp "$build"/mgjoin "$build"/bench_* "$build"/tests/differential .devbin/
for t in "${mpi_tests[@]}"; do cp "$build/tests/$t" .devbin/; done
for s in "${suites[@]}"; do cp "$build/tests/${s}_gpu_tests" .devbin/; done
strip .devbin/*
du -sh .devbin
