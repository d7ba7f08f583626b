#!/usr/bin/env python3
"""The CLI's wall time on a join of two small .npy files (issue 41's start-up): every way the join can
run, median of --repeat runs after a warm-up, each process timed from its fork to its exit, and the
start-up's parts (`--json`'s start.* phases) of one run of each.

    python3 scripts/bench-startup.py [--mgjoin PATH] [--before PATH] [--rows N] [--repeat N]

--before names an earlier build's mgjoin, timed the same way, alternating with this one.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def wall(cmd, env):
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.strip()}")
    return seconds, done.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mgjoin", default=".devbin/mgjoin")
    ap.add_argument("--before", default="")
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"seed {seed}, {a.rows} rows a side")
    rng = np.random.default_rng(seed)
    tmp = tempfile.mkdtemp(prefix="mgjoin-startup-")
    for side in ("r", "s"):
        os.makedirs(f"{tmp}/{side}")
        np.save(f"{tmp}/{side}/key.npy", rng.integers(0, a.rows, a.rows, dtype=np.uint64))
    want = None
    gpus = int(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.count("GPU "))
    base = os.environ.copy()
    cases = [("auto (CPU route)", [], {})]
    for g in sorted({1, gpus}):
        if g > 0:
            cases.append((f"--gpus {g}", ["--gpus", str(g)], {}))
            cases.append((f"--gpus {g}, full exit", ["--gpus", str(g)], {"MGJOIN_FULL_EXIT": "1"}))
    builds = [("now", a.mgjoin)] + ([("before", a.before)] if a.before else [])
    rows = []
    for name, extra, env in cases:
        e = dict(base, **env)
        for build, binary in builds:
            cmd = [binary, "join", "--r-dir", f"{tmp}/r", "--s-dir", f"{tmp}/s", "--count", "--json", *extra]
            if build == "before" and name.startswith("auto"):
                continue  # the earlier build has no CPU route: auto is its --gpus all
            wall(cmd, e)  # warm-up
            times, out = [], ""
            for _ in range(a.repeat):
                t, out = wall(cmd, e)
                times.append(t)
            info = json.loads(out)
            if want is None:
                want = info["count"]
            assert info["count"] == want, (name, info["count"], want)
            start = {p["name"]: round(p["seconds"], 3) for p in info["phases"] if p["name"].startswith("start.")}
            rows.append((name, build, statistics.median(times), min(times), max(times), start, info["executor"]))
    # The count against NumPy's (not mgjoin's): keys are small integers.
    r = np.load(f"{tmp}/r/key.npy")
    s = np.load(f"{tmp}/s/key.npy")
    ref = int((np.bincount(r.astype(np.int64), minlength=a.rows) * np.bincount(s.astype(np.int64), minlength=a.rows)).sum())
    print(f"count {want}, NumPy's {ref}: {'equal' if want == ref else 'DIFFERENT'}")
    print("== start-up summary (wall from fork to exit, median / min / max of %d)" % a.repeat)
    for name, build, med, lo, hi, start, executor in rows:
        print(f"{name:28s} {build:6s} {med:.3f} s ({lo:.3f}-{hi:.3f})  {executor}  {start}")
    return 0 if want == ref else 1


if __name__ == "__main__":
    sys.exit(main())
