#!/usr/bin/env bash
# Makes sure the Python virtual environment VENV (default build/venv) has pyarrow, whose wheel ships Apache
# Arrow's C++ libraries and headers (libarrow, libparquet): the CLI's Parquet and Arrow IPC files are built
# against them (CMake's MGJOIN_PARQUET asks that Python where they are; docs/DESIGN.md says why this route).
# Run before configuring; scripts/install-python-deps.sh later adds the rest to the same environment.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-build/venv}
python=${PYTHON:-python3}
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -c "import pyarrow" 2>/dev/null ||
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "pyarrow>=14"
