#!/usr/bin/env python3
"""scripts/bench-files.py end to end on the CPU path, tiny: it runs, and its --json-out holds every field a
GPU session's PERFORMANCE.md rows are filled from, with positive times. Exit 77 (ctest's skip) where numpy
cannot be imported (the script needs it).

    python3 tests/scripts/bench_files_test.py --mgjoin build/mgjoin --io-floor build/bench_io_floor
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy  # noqa: F401  (bench-files.py's dependency)
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIPPED: numpy is not importable ({e}); pip install numpy")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Times every run measures (seconds, > 0); the PCIe figures are null on the CPU path.
POSITIVE = ["startup_seconds", "startup_target_seconds", "read_floor_keys_seconds", "read_floor_inputs_seconds",
            "write_floor_output_seconds", "write_fsync_floor_output_seconds", "count_wall_seconds",
            "materialized_wall_seconds", "count_floor_seconds", "materialized_floor_seconds", "count_ratio",
            "materialized_ratio", "input_bytes", "key_bytes", "output_bytes", "count", "r_rows", "s_rows"]
PRESENT = ["workload", "scale", "gpus", "gpus_used", "repeat", "threads", "target_ratio", "read_memory",
           "read_direct_inputs_seconds", "read_direct_inputs", "pcie_floor_keys_seconds", "h2d_gbps",
           "h2d_gbps_source", "bench_join_seconds", "count_wall_runs", "materialized_wall_runs", "count_target_met",
           "materialized_target_met", "startup_ratio", "io_floor"]
CLI_PARTS = ["read_seconds", "join_seconds", "write_seconds", "start_seconds", "executor"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mgjoin", required=True)
    ap.add_argument("--io-floor", required=True)
    a = ap.parse_args()
    problems = []
    with tempfile.TemporaryDirectory(prefix="bench-files-test-") as tmp:
        out = f"{tmp}/result.json"
        run = subprocess.run([sys.executable, f"{ROOT}/scripts/bench-files.py", "--mgjoin", a.mgjoin, "--io-floor",
                              a.io_floor, "--gpus", "0", "--scale", "0.0001", "--repeat", "1", "--threads", "2",
                              "--data", f"{tmp}/data", "--json-out", out], capture_output=True, text=True)
        print(run.stdout)
        if run.returncode != 0:
            print(f"FAILED: bench-files.py exit {run.returncode}: {run.stderr}")
            return 1
        res = json.load(open(out))
    for key in POSITIVE:
        if not isinstance(res.get(key), (int, float)) or res[key] <= 0:
            problems.append(f"{key}: {res.get(key)!r}, expected a positive number")
    problems += [f"{key}: missing" for key in PRESENT if key not in res]
    for kind in ("count", "materialized"):
        cli = res.get(f"{kind}_cli", {})
        problems += [f"{kind}_cli.{part}: missing" for part in CLI_PARTS if part not in cli]
        if not cli.get("read_seconds", 0) > 0 or not cli.get("join_seconds", 0) > 0:
            problems.append(f"{kind}_cli: the CLI's read and join parts should be positive: {cli}")
    materialized = res.get("materialized_cli", {})
    if materialized.get("output_streamed") is not True:  # an inner join of .npy columns: into its files as it runs
        problems.append(f"materialized_cli.output_streamed: {materialized.get('output_streamed')!r}, expected true")
    for kind in ("count", "materialized"):
        if not (res.get(f"{kind}_cli", {}).get("peak_rss_bytes") or 0) > 0:
            problems.append(f"{kind}_cli.peak_rss_bytes: missing or not positive")
    if res.get("output_bytes") != 24 * res.get("count", -1) + 3 * 128:  # three .npy files of 8-byte columns
        problems.append(f"output_bytes {res.get('output_bytes')} for {res.get('count')} rows")
    if res.get("pcie_floor_keys_seconds") is not None or res.get("gpus_used") != 0:
        problems.append("--gpus 0 measured a PCIe floor")
    for table_line in ("mgjoin join, count", "mgjoin join, materialized", "count: ", "materialized: "):
        if table_line not in run.stdout:
            problems.append(f"the table has no line '{table_line}'")
    for p in problems:
        print(f"FAILED: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
