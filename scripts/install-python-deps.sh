#!/usr/bin/env bash
# Makes (or updates) the Python virtual environment VENV (default build/venv) with what the Python
# package's build and tests need, from PyPI: scikit-build-core and nanobind (the build, used without
# build isolation), numpy and pyarrow (the package), pandas, pytest and tqdm (the tests), duckdb (the
# join-kind comparisons in tests/table/duckdb_compare.py and python/tests), polars (Polars frames in and out),
# tpchgen-cli (TPC-H data for python/bench/tpch.py and its test).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-build/venv}
python=${PYTHON:-python3}
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade \
  "scikit-build-core>=0.10" "nanobind>=2.0" "numpy>=1.23" "pyarrow>=14" "pandas>=1.5" pytest tqdm duckdb polars tpchgen-cli
