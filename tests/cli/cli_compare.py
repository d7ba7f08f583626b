"""What the CLI's comparison scripts (parquet_compare.py, npy_strings_compare.py) share: the failures
found, the CLI run as a process, and a main that skips (exit 77, ctest's skip) where the CLI has no Arrow
or Python lacks a module, draws and prints the seed, and keeps the files of a run only when asked."""
import argparse
import importlib
import os
import random
import shutil
import subprocess
import tempfile

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(mgjoin, args, cwd):
    return subprocess.run([mgjoin] + args, cwd=cwd, capture_output=True, text=True)


def refused(mgjoin, d, args, words, what):
    """A bad input: `mgjoin join` exits 2 with one line naming each of `words`, and writes nothing."""
    out = f"{d}/bad_out"
    res = run(mgjoin, ["join", "--gpus", "0", "--out-dir", out] + args, d)
    lines = res.stderr.strip().splitlines()
    check(res.returncode == 2, f"{what}: exit {res.returncode}: {res.stderr.strip()}")
    check(len(lines) == 1 and all(w in res.stderr for w in words), f"{what}: one line naming {words}: {lines}")
    check(not os.path.exists(out), f"{what}: nothing written")


def compare_main(prefix, modules, body, more_args=None):
    """Parses --mgjoin, --parquet, --seed, --keep (and `more_args`' options), imports `modules`, then
    body(args, rng, directory, *modules); returns the exit status."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--mgjoin", required=True)
    ap.add_argument("--parquet", default="ON", help="CMake's verdict: OFF skips")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep", default=None)
    if more_args:
        more_args(ap)
    a = ap.parse_args()
    if a.parquet.upper() in ("OFF", "FALSE", "0", ""):
        print("SKIPPED: mgjoin was built without Parquet (MGJOIN_PARQUET off)")
        return 77
    try:
        imported = [importlib.import_module(m) for m in modules]
    except ImportError as e:
        print(f"SKIPPED: {e}; scripts/install-python-deps.sh makes build/venv with {', '.join(modules)}")
        return 77
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    print(f"seed {seed}")
    d = a.keep or tempfile.mkdtemp(prefix=prefix)
    os.makedirs(d, exist_ok=True)
    a.mgjoin = os.path.abspath(a.mgjoin)
    try:
        body(a, random.Random(seed), d, *imported)
    finally:
        if not a.keep:
            shutil.rmtree(d, ignore_errors=True)
    print(f"{len(failures)} failure(s), seed {seed}")
    return 1 if failures else 0
