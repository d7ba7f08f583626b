"""python/bench/tpch.py end to end at TPC-H scale factor 0.1 on the CPU path: every system's row counts equal
DuckDB's, and mgjoin's materialized outputs have DuckDB's per-column checksums (skipped without tpchgen-cli
or DuckDB)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "tpch.py")


def _tpch_module():
    spec = importlib.util.spec_from_file_location("tpch_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(importlib.util.find_spec("duckdb") is None, reason="needs duckdb")
def test_tpch_bench_at_scale_factor_0_1_matches_duckdb(tmp_path):
    if _tpch_module().tpchgen_binary() is None:
        pytest.skip("needs tpchgen-cli (pip install tpchgen-cli)")
    out = tmp_path / "tpch.json"
    run = subprocess.run([sys.executable, BENCH, "--scale", "0.1", "--repeat", "1", "--gpus", "0",
                          "--data", str(tmp_path / "sf0.1"), "--json", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    result = json.loads(out.read_text())
    assert result["checks"]["passed"], result["checks"]["failures"]
    # Both joins, both modes, materialized: four outputs of mgjoin.join checked against DuckDB, and two of the
    # CLI from the Parquet files where this tree's CLI reads Parquet (the bench says when it skipped it).
    cli = "mgjoin-cli" in result["versions"]
    assert len(result["checks"]["passes"]) == (6 if cli else 4), result["checks"]
    assert cli or "mgjoin-cli: skipped" in run.stdout, run.stdout[-4000:]
    assert result["rows"] == {"lineitem": result["results"]["lineitem-orders"]["join-only"]["count"]["mgjoin"]["rows"],
                              "orders": result["results"]["orders-customer"]["join-only"]["count"]["mgjoin"]["rows"],
                              "customer": 15000}
