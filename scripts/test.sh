#!/usr/bin/env bash
# Builds mgjoin and runs the whole test suite. GPU tests skip themselves without GPUs;
# on a GPU machine they run for real (export NCCL_NVLS_ENABLE=0 is set here for safety).
# Then builds the Python package's wheel, installs it into a fresh virtual environment (build/wheel-venv)
# and runs its tests there (MGJOIN_PYTHON_TESTS=0 leaves that part out).
set -euo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
# Many tests run small CPU-path joins side by side (ctest -j): OpenMP threads that spin while they wait
# would take the cores from each other (a test took 50 s instead of 5 on 2 cores).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
scripts/install-arrow.sh build/venv  # Arrow C++ from pyarrow, before configuring (the CLI's Parquet files)
scripts/build.sh "$@"
# The Python environment first: the DuckDB comparison among the ctest tests runs in it (python3 from
# build/venv, with numpy and duckdb); without it, that test skips.
python_tests=${MGJOIN_PYTHON_TESTS:-1}
[ "$python_tests" = 0 ] || scripts/install-python-deps.sh build/venv
PATH="$PWD/build/venv/bin:$PATH" ctest --test-dir build --output-on-failure -j "$(nproc)"

if [ "$python_tests" != 0 ]; then
  # The wheel (scripts/build-wheel.sh) for this build's GPU architectures (MGJOIN_CUDA_ARCHS, default 90:
  # the five of a release wheel would take five times as long), built in build/python (kept between runs)
  # with build/venv's tools, then installed into a fresh virtual environment as a user would install it.
  wheel=$(MGJOIN_CUDA_ARCHS=${MGJOIN_CUDA_ARCHS:-90} MGJOIN_WHEEL_BUILD=build/python MGJOIN_WHEEL_TOOLS=build/venv \
          scripts/build-wheel.sh | tail -1)
  rm -rf build/wheel-venv
  python3 -m venv build/wheel-venv
  build/wheel-venv/bin/python -m pip install -q --disable-pip-version-check "$wheel[test]" duckdb polars tpchgen-cli
  # From outside the source tree (the installed package is imported), with no NCCL on the library path:
  # tests/test_packaging.py checks that nothing loads it.
  (cd build && env -u LD_LIBRARY_PATH wheel-venv/bin/python -m pytest -q -p no:cacheprovider ../python/tests)
fi
