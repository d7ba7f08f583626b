"""topology(), tune() and python -m mgjoin (the bundled CLI)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import mgjoin
from conftest import gpu_count


def test_topology_is_what_mgjoin_topo_json_prints():
    topo = mgjoin.topology()
    assert isinstance(topo["gpus"], list) and isinstance(topo["links"], list)
    assert topo["numa_nodes"] >= 1
    cli = subprocess.run([sys.executable, "-m", "mgjoin", "topo", "--json"], capture_output=True, text=True, check=True)
    import json

    assert json.loads(cli.stdout)["gpus"] == topo["gpus"]


@pytest.mark.skipif(gpu_count() > 0, reason="the machine has GPUs")
def test_tune_without_gpus_raises_a_clear_error():
    assert mgjoin.topology()["gpus"] == []
    with pytest.raises(mgjoin.GpuError, match="no CUDA GPUs found"):
        mgjoin.tune()


def test_python_dash_m_runs_the_cli():
    version = subprocess.run([sys.executable, "-m", "mgjoin", "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and "mgjoin 0.1.0" in version.stdout
    bad = subprocess.run([sys.executable, "-m", "mgjoin", "join", "--how", "sideways", "--count", "--r-dir", "x",
                          "--s-dir", "x"], capture_output=True, text=True)
    assert bad.returncode != 0 and bad.stderr.startswith("mgjoin: error:")


def test_python_dash_m_joins_column_files(tmp_path):
    for side, keys in (("r", [1, 2, 2, 5]), ("s", [2, 5, 7])):
        (tmp_path / side).mkdir()
        np.save(tmp_path / side / "key.npy", np.array(keys, np.int64))
    out = subprocess.run([sys.executable, "-m", "mgjoin", "join", "--r-dir", str(tmp_path / "r"), "--s-dir",
                          str(tmp_path / "s"), "--count", "--gpus", "0"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "3"
