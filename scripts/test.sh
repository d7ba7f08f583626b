#!/usr/bin/env bash
# Builds mgjoin and runs the whole test suite. GPU tests skip themselves without GPUs;
# on a GPU machine they run for real (export NCCL_NVLS_ENABLE=0 is set here for safety).
# Then builds the Python package into a virtual environment (build/venv) and runs its tests
# (MGJOIN_PYTHON_TESTS=0 leaves that part out).
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
  # The extension and the bundled CLI only (pyproject.toml), Release, in build/python (kept between runs).
  CMAKE_BUILD_PARALLEL_LEVEL=${MGJOIN_BUILD_JOBS:-$(nproc)} \
    build/venv/bin/python -m pip install -q --disable-pip-version-check --no-build-isolation \
    -Cbuild-dir=build/python .
  # From outside the source tree, so that the installed package is the one imported.
  (cd build && venv/bin/python -m pytest -q -p no:cacheprovider ../python/tests)
fi
