#!/usr/bin/env python3
"""What users run, timed against floors measured in the same run (issue 41, item 6): `mgjoin join` on
.npy files of workload B, counted and materialized, each the median wall time (fork to exit) of --repeat
runs after a warm-up, beside

  - the read floor of the key files and of all input files (bench_io_floor: a plain parallel pread into
    pinned memory, page cache warm; O_DIRECT beside, for the cold figure),
  - the write floor of the output's bytes (key, r_payload, s_payload: 24 bytes a row) into new files in
    the same folder, without fsync (as the CLI writes) and with it,
  - the keys' PCIe floor (`mgjoin bench --json`'s pcie_floor_keys_seconds; not with --gpus 0),
  - the start-up: the wall time of a 1000-row join (scripts/bench-startup.py's measurement).

The targets are ratios: count wall <= 1.25 x (start-up target + max(read floor of keys, keys' PCIe
floor)); materialized wall <= 1.25 x (start-up target + read floor of inputs + write floor of output).

    python3 scripts/bench-files.py [--mgjoin PATH] [--scale S] [--gpus G] [--repeat N] [--json-out FILE]
"""
import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

TARGET_RATIO = 1.25
_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("bench_startup", os.path.join(_here, "bench-startup.py"))
bench_startup = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_startup)
wall = bench_startup.wall  # (cmd, env) -> (seconds from fork to exit, stdout); exits on failure


def gpu_count():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.count("GPU ")
    except FileNotFoundError:
        return 0


def gpu_flag(gpus):
    return [] if gpus < 0 else ["--gpus", str(gpus)]


def warm_page_cache(paths):
    chunk = bytearray(64 << 20)
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while f.readinto(chunk):
                pass


def io_floor(a, args):
    out = subprocess.run([a.io_floor, "--json", "--threads", str(a.threads), "--repeat", str(a.repeat), *args],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench-files: {a.io_floor} {' '.join(args)}: exit {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def seconds_or_none(figure):
    return figure["seconds"] if figure.get("supported") else None


def timed_joins(a, cmd, before_each=None):
    """Median wall of --repeat runs after a warm-up, the runs, and the medians of the CLI's own parts."""
    times, parts = [], {"read_seconds": [], "join_seconds": [], "write_seconds": []}
    info = None
    for i in range(a.repeat + 1):
        if before_each:
            before_each()
        seconds, out = wall(cmd, os.environ.copy())
        info = json.loads(out)
        if i == 0:
            continue  # warm-up
        times.append(seconds)
        parts["read_seconds"].append(info["read_seconds"])
        parts["join_seconds"].append(info["seconds"])
        parts["write_seconds"].append(info["write_seconds"])
    cli = {k: statistics.median(v) for k, v in parts.items()}
    # The engine's start, made beside the reads (start.wait: the part of it the reads did not hide).
    cli["start_seconds"] = sum(p["seconds"] for p in info["phases"]
                               if p["name"].startswith("start.") and p["name"] != "start.wait")
    cli["executor"] = info["executor"]
    cli["phases"] = info["phases"]  # the last run's
    cli["peak_rss_bytes"] = info.get("peak_rss_bytes")  # the last run's (issue 41: inputs + outputs + staging)
    cli["output_streamed"] = info.get("output_streamed", False)
    return statistics.median(times), times, cli, info


def startup_seconds(a, tmp):
    """A 1000-row join's wall (median of --repeat after a warm-up), as scripts/bench-startup.py times it."""
    rng = np.random.default_rng(1)
    for side in ("r", "s"):
        np.save(f"{tmp}/startup_{side}.npy", rng.integers(0, 1000, 1000, dtype=np.uint64))
    cmd = [a.mgjoin, "join", "--r-key", f"{tmp}/startup_r.npy", "--s-key", f"{tmp}/startup_s.npy", "--count", "--json",
           *gpu_flag(a.gpus_used)]
    wall(cmd, os.environ.copy())
    return statistics.median(wall(cmd, os.environ.copy())[0] for _ in range(a.repeat))


def pcie_floor(a):
    if a.gpus_used == 0:
        return {"pcie_floor_keys_seconds": None, "h2d_gbps": None, "h2d_gbps_source": "not measured (--gpus 0)",
                "bench_join_seconds": None}
    cmd = [a.mgjoin, "bench", "--workload", "B", "--scale", str(a.scale), "--repeat", "1", "--warmup", "1", "--json",
           *gpu_flag(a.gpus)]
    info = json.loads(wall(cmd, os.environ.copy())[1])
    return {k: info[k] for k in ("pcie_floor_keys_seconds", "h2d_gbps", "h2d_gbps_source")} | {
        "bench_join_seconds": info["median_seconds"]}


def progress(what):
    """One line on stderr as each figure is measured: a run cut short by a time limit still says how far it got."""
    print(f"bench-files: {what}", file=sys.stderr, flush=True)


def measure(a, data):
    files = {n: f"{data}/{n}.npy" for n in ("r_key", "r_payload", "s_key", "s_payload")}
    subprocess.run([a.mgjoin, "generate", "--workload", "B", "--scale", str(a.scale), "--out-dir", data, "--overwrite",
                    "-q"], check=True)
    warm_page_cache(files.values())
    keys = [files["r_key"], files["s_key"]]
    res = {"workload": "B", "scale": a.scale, "gpus": a.gpus, "gpus_used": a.gpus_used, "repeat": a.repeat,
           "threads": a.threads, "data": data, "startup_target_seconds": a.startup_target, "target_ratio": TARGET_RATIO}
    res["input_bytes"] = sum(os.path.getsize(p) for p in files.values())
    res["key_bytes"] = sum(os.path.getsize(p) for p in keys)

    io_keys = io_floor(a, ["--no-direct", *keys])
    io_inputs = io_floor(a, list(files.values()))
    res["read_memory"] = io_keys["memory"]
    res["read_floor_keys_seconds"] = seconds_or_none(io_keys["read"])
    res["read_floor_inputs_seconds"] = seconds_or_none(io_inputs["read"])
    res["read_direct_inputs_seconds"] = seconds_or_none(io_inputs["read_direct"])
    res["read_direct_inputs"] = io_inputs["read_direct"].get("reason", "measured")
    res |= pcie_floor(a)
    progress(f"read floors: keys {res['read_floor_keys_seconds']} s, inputs {res['read_floor_inputs_seconds']} s")
    res["startup_seconds"] = startup_seconds(a, data)
    progress(f"start-up (1000-row join) {res['startup_seconds']:.4f} s")

    join = [a.mgjoin, "join", "--r-key", files["r_key"], "--s-key", files["s_key"], "--json", *gpu_flag(a.gpus)]
    res["count_wall_seconds"], res["count_wall_runs"], res["count_cli"], info = timed_joins(a, join + ["--count"])
    res["count"], res["r_rows"], res["s_rows"] = info["count"], info["r_rows"], info["s_rows"]
    progress(f"mgjoin join, count: {res['count_wall_seconds']:.4f} s (runs {res['count_wall_runs']})")
    out = f"{data}/out"
    materialize = join + ["--r-payload", files["r_payload"], "--s-payload", files["s_payload"], "--out-dir", out]
    res["materialized_wall_seconds"], res["materialized_wall_runs"], res["materialized_cli"], info = timed_joins(
        a, materialize, lambda: shutil.rmtree(out, ignore_errors=True))
    res["output_bytes"] = sum(os.path.getsize(p) for p in info["output_files"])
    progress(f"mgjoin join, materialized: {res['materialized_wall_seconds']:.4f} s (runs {res['materialized_wall_runs']}, "
             f"output streamed: {res['materialized_cli']['output_streamed']})")
    shutil.rmtree(out)  # room for the write floor's files (scale 1: 24 GB)

    io_write = io_floor(a, ["--write", str(max(res["output_bytes"], 1)), "--write-dir", data, "--write-files", "3"])
    res["write_floor_output_seconds"] = seconds_or_none(io_write["write"])
    res["write_fsync_floor_output_seconds"] = seconds_or_none(io_write["write_fsync"])
    progress(f"write floor {res['write_floor_output_seconds']} s")
    res["io_floor"] = {"keys": io_keys, "inputs": io_inputs, "write": io_write}

    # The targets: floors that each run pays, the start-up taken as its target.
    res["count_floor_seconds"] = a.startup_target + max(res["read_floor_keys_seconds"],
                                                        res["pcie_floor_keys_seconds"] or 0)
    res["materialized_floor_seconds"] = (a.startup_target + res["read_floor_inputs_seconds"] +
                                         res["write_floor_output_seconds"])
    for kind in ("count", "materialized"):
        res[f"{kind}_ratio"] = res[f"{kind}_wall_seconds"] / res[f"{kind}_floor_seconds"]
        res[f"{kind}_target_met"] = res[f"{kind}_ratio"] <= TARGET_RATIO
    res["startup_ratio"] = res["startup_seconds"] / a.startup_target
    return res


def fmt(seconds):
    return "-" if seconds is None else f"{seconds:.4f}"


def print_table(r):
    gb = lambda b: f"{b / 1e9:.3f} GB"
    print(f"workload B scale {r['scale']}: |R| = {r['r_rows']}, |S| = {r['s_rows']}, {r['count']} rows out; "
          f"--gpus {r['gpus']} ({r['gpus_used']} used), median of {r['repeat']} after a warm-up; reads into {r['read_memory']}")
    rows = [
        ("start-up (1000-row join)", r["startup_seconds"], f"target {r['startup_target_seconds']} s"),
        ("read floor, keys", r["read_floor_keys_seconds"], gb(r["key_bytes"])),
        ("read floor, inputs", r["read_floor_inputs_seconds"], gb(r["input_bytes"])),
        ("read O_DIRECT, inputs", r["read_direct_inputs_seconds"], r["read_direct_inputs"]),
        ("keys' PCIe floor", r["pcie_floor_keys_seconds"],
         r["h2d_gbps_source"] if r["h2d_gbps"] is None else f"{r['h2d_gbps']:.1f} GB/s, {r['h2d_gbps_source']}"),
        ("join in memory (bench)", r["bench_join_seconds"], "mgjoin bench, count"),
        ("write floor, output", r["write_floor_output_seconds"], gb(r["output_bytes"]) + ", no fsync"),
        ("write + fsync, output", r["write_fsync_floor_output_seconds"], gb(r["output_bytes"])),
    ]
    for kind in ("count", "materialized"):
        c = r[f"{kind}_cli"]
        # The last run's start the reads did not hide (start.wait) and its pageable inputs' staging.
        phase = {p["name"]: p for p in c.get("phases", [])}
        extra = "".join(f" {name} {phase[name]['seconds']:.4f}" for name in ("start.wait", "input.staged") if name in phase)
        if c.get("peak_rss_bytes"):
            extra += f" peak RSS {gb(c['peak_rss_bytes'])}"
        if c.get("output_streamed"):
            extra += " (output streamed into the files during the join)"
        rows.append((f"mgjoin join, {kind}", r[f"{kind}_wall_seconds"],
                     f"CLI: read {c['read_seconds']:.4f} join {c['join_seconds']:.4f} write {c['write_seconds']:.4f}"
                     f" start {c['start_seconds']:.4f}{extra}; {c['executor']}"))
    print(f"{'':26s} {'seconds':>10s}")
    for name, seconds, note in rows:
        print(f"{name:26s} {fmt(seconds):>10s}  {note}")
    for kind, floor in (("count", "start-up target + max(read floor of keys, keys' PCIe floor)"),
                        ("materialized", "start-up target + read floor of inputs + write floor of output")):
        met = "met" if r[f"{kind}_target_met"] else "NOT met"
        print(f"{kind}: {r[f'{kind}_wall_seconds']:.4f} s = {r[f'{kind}_ratio']:.2f}x ({floor} = "
              f"{r[f'{kind}_floor_seconds']:.4f} s); target <= {TARGET_RATIO}x: {met}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_bin = ".devbin" if os.path.exists(".devbin/mgjoin") else "build"
    ap.add_argument("--mgjoin", default=f"{default_bin}/mgjoin")
    ap.add_argument("--io-floor", default="", help="bench_io_floor (default: beside --mgjoin)")
    ap.add_argument("--scale", type=float, default=1.0, help="workload B's scale (1: 10^9 rows a side)")
    ap.add_argument("--gpus", type=int, default=-1, help="-1: all (default), 0: the CPU path, N")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=8, help="the floors' read and write threads")
    ap.add_argument("--startup-target", type=float, default=None,
                    help="seconds (default 0.25 with one GPU or none, 0.35 with more)")
    ap.add_argument("--data", default="", help="folder for the workload (default: a new one in $TMPDIR, removed)")
    ap.add_argument("--json-out", default="")
    a = ap.parse_args()
    a.io_floor = a.io_floor or os.path.join(os.path.dirname(a.mgjoin), "bench_io_floor")
    for tool in (a.mgjoin, a.io_floor):
        if not os.access(tool, os.X_OK):
            sys.exit(f"bench-files: {tool}: not an executable (build it, or name it with --mgjoin/--io-floor)")
    if a.repeat < 1 or a.scale <= 0 or a.gpus < -1:
        sys.exit("bench-files: --repeat >= 1, --scale > 0 and --gpus >= -1 expected")
    a.gpus_used = gpu_count() if a.gpus < 0 else a.gpus
    if a.startup_target is None:
        a.startup_target = 0.25 if a.gpus_used <= 1 else 0.35
    data = a.data or tempfile.mkdtemp(prefix="mgjoin-files-")
    try:
        res = measure(a, data)
    finally:
        if not a.data:
            shutil.rmtree(data, ignore_errors=True)
    print_table(res)
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
