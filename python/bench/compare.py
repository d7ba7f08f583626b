"""Side by side on the same data and machine: mgjoin from Python against DuckDB, Polars and pandas, and
mgjoin's Python overhead over the C++ library (issue 22's benchmark; results go to PERFORMANCE.md).

    python python/bench/compare.py --scale 0.1 --repeat 3 [--columns N] [--json out.json]

The data is the paper's workload B as `mgjoin generate` writes it (uint64 keys and payloads, |R| = |S| =
scale * 10^9, every S key matching one R key), read into memory once; with --columns N each table has N
uint64 payload columns p0..p{N-1} (p0 the generated payload, p_j = p0 * (2j + 1) + j, as `mgjoin bench
--columns N` makes them). Each engine joins R and S on the key twice: a count, and a materialized result
that holds the key and every payload column of both sides in host memory (a pyarrow.Table for mgjoin and
DuckDB, a DataFrame for Polars and pandas); DuckDB also runs a query that consumes every output column
(their sums) without materializing the rows. Times are wall seconds of the
call, one warm-up then the median of --repeat runs (pandas: --pandas-repeat runs and no warm-up, since a
10^8-row merge takes a minute on one core). Python overhead = mgjoin.join's wall time over the time
join_tables() itself took inside the call (info["seconds"]), both from the same runs on one mgjoin.Engine
(the GPUs' memory taken once, as a C++ program would).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

import numpy as np
import pyarrow as pa


def timed_runs(fn: Callable[[], Any], repeat: int, warmup: int = 1) -> tuple[list[float], Any]:
    for _ in range(warmup):
        fn()
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return times, result


def payload_columns(p0: np.ndarray, columns: int) -> dict:
    """p0 .. p{columns-1}: the generated payload and columns derived from it (wrapping uint64 arithmetic)."""
    p0 = p0.astype(np.uint64, copy=False)
    return {f"p{j}": p0 if j == 0 else p0 * np.uint64(2 * j + 1) + np.uint64(j) for j in range(columns)}


def load_workload(scale: float, seed: int, directory: str, columns: int = 1) -> tuple[pa.Table, pa.Table]:
    """Workload B through the CLI that ships in the package, read back as two Arrow tables."""
    subprocess.run([sys.executable, "-m", "mgjoin", "generate", "--workload", "B", "--scale", str(scale),
                    "--seed", str(seed), "--out-dir", directory], check=True, stdout=subprocess.DEVNULL)
    cols = {name: np.load(os.path.join(directory, f"{name}.npy"))
            for name in ("r_key", "r_payload", "s_key", "s_payload")}
    r = pa.table({"key": cols["r_key"], **payload_columns(cols["r_payload"], columns)})
    s = pa.table({"key": cols["s_key"], **payload_columns(cols["s_payload"], columns)})
    return r, s


def payload_names(t: pa.Table) -> list[str]:
    return [c for c in t.column_names if c != "key"]


def bench_mgjoin(r: pa.Table, s: pa.Table, repeat: int, gpus: Any) -> dict:
    import mgjoin

    out = {}
    # gpus=0 (the CPU path) needs no Engine: a way to try this script on a machine without GPUs.
    engine = mgjoin.Engine(gpus=gpus) if gpus != 0 else None
    join = engine.join if engine else lambda *a, **k: mgjoin.join(*a, gpus=0, **k)
    try:
        for form, output in (("count", "count"), ("materialized", "table")):
            inner_seconds: list[float] = []

            def call() -> Any:
                info: dict = {}
                result = join(r, s, on="key", output=output, info=info)
                inner_seconds.append(info["seconds"])
                return result, info

            times, (result, info) = timed_runs(call, repeat)
            inner = inner_seconds[1:]  # the warm-up's first
            rows = result if form == "count" else result.num_rows
            out[form] = {"seconds": statistics.median(times), "runs": times, "rows": int(rows),
                         "engine_seconds": statistics.median(inner), "engine_runs": inner,
                         "overhead": statistics.median(t / e - 1 for t, e in zip(times, inner)),
                         "executor": info["executor"], "strategy": info["strategy"]}
            if form == "materialized":  # checked against DuckDB's sums (mod 2^64: numpy's uint64 sums wrap)
                out[form]["column_sums"] = {name: int(np.sum(result.column(name).to_numpy(), dtype=np.uint64))
                                            for name in result.column_names}
            del result
    finally:
        if engine:
            engine.close()
    return out


def bench_duckdb(r: pa.Table, s: pa.Table, repeat: int) -> dict:
    import duckdb

    con = duckdb.connect()
    con.register("r", r)
    con.register("s", s)
    count_sql = "SELECT count(*) FROM r JOIN s ON r.key = s.key"
    payloads = [(side, c) for side, t in (("r", r), ("s", s)) for c in payload_names(t)]
    columns = ["r.key"] + [f"{side}.{c} AS {side}_{c}" for side, c in payloads]
    rows_sql = f"SELECT {', '.join(columns)} FROM r JOIN s ON r.key = s.key"
    # Every output column consumed (hugeint sums: no overflow), the rows never materialized.
    sums = ["sum(r.key)"] + [f"sum({side}.{c})" for side, c in payloads]
    sums_sql = f"SELECT count(*), {', '.join(sums)} FROM r JOIN s ON r.key = s.key"
    times, n = timed_runs(lambda: con.sql(count_sql).fetchall()[0][0], repeat)
    out = {"count": {"seconds": statistics.median(times), "runs": times, "rows": int(n)}}
    times, table = timed_runs(lambda: con.sql(rows_sql).to_arrow_table(), repeat)
    out["materialized"] = {"seconds": statistics.median(times), "runs": times, "rows": table.num_rows}
    times, row = timed_runs(lambda: con.sql(sums_sql).fetchall()[0], repeat)
    # As mgjoin names its output columns: the payloads both sides have take pandas' suffixes.
    names = ["key"] + [f"{c}_{'x' if side == 'r' else 'y'}" for side, c in payloads]
    out["sums"] = {"seconds": statistics.median(times), "runs": times, "rows": int(row[0]),
                   "column_sums": {name: int(v) % 2**64 for name, v in zip(names, row[1:])}}
    out["version"] = duckdb.__version__
    return out


def bench_polars(r: pa.Table, s: pa.Table, repeat: int) -> dict:
    import polars as pl

    lr, ls = pl.from_arrow(r), pl.from_arrow(s)
    times, n = timed_runs(lambda: lr.lazy().join(ls.lazy(), on="key").select(pl.len()).collect().item(), repeat)
    out = {"count": {"seconds": statistics.median(times), "runs": times, "rows": int(n)}}
    times, frame = timed_runs(lambda: lr.join(ls, on="key"), repeat)
    out["materialized"] = {"seconds": statistics.median(times), "runs": times, "rows": frame.height}
    out["version"] = pl.__version__
    return out


def bench_pandas(r: pa.Table, s: pa.Table, repeat: int) -> dict:
    import pandas as pd

    pr, ps = r.to_pandas(), s.to_pandas()
    # pandas has no count-only join: its count is the length of the merge, so one measurement serves both.
    times, frame = timed_runs(lambda: pr.merge(ps, on="key"), repeat, warmup=0)
    both = {"seconds": statistics.median(times), "runs": times, "rows": len(frame)}
    return {"count": both, "materialized": both, "version": pd.__version__}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pandas-repeat", type=int, default=1)
    parser.add_argument("--gpus", type=int, default=None, help="mgjoin's GPU count (default all)")
    parser.add_argument("--columns", type=int, default=1, help="payload columns per table (uint64)")
    parser.add_argument("--engines", default="mgjoin,duckdb,polars,pandas")
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()
    import mgjoin

    if args.gpus is None and not mgjoin.topology()["gpus"]:
        args.gpus = 0
        print("no CUDA GPU found: mgjoin runs on the CPU path (--gpus 0)", flush=True)

    with tempfile.TemporaryDirectory() as directory:
        start = time.perf_counter()
        r, s = load_workload(args.scale, args.seed, directory, args.columns)
    print(f"workload B scale {args.scale}, {args.columns} payload column(s) a side: |R| = {r.num_rows}, |S| = {s.num_rows} "
          f"(generated and loaded in {time.perf_counter() - start:.1f} s)", flush=True)

    runners = {"mgjoin": lambda: bench_mgjoin(r, s, args.repeat, args.gpus),
               "duckdb": lambda: bench_duckdb(r, s, args.repeat),
               "polars": lambda: bench_polars(r, s, args.repeat),
               "pandas": lambda: bench_pandas(r, s, args.pandas_repeat)}
    results: dict = {"scale": args.scale, "seed": args.seed, "repeat": args.repeat, "columns": args.columns,
                     "cpus": os.cpu_count()}
    for name in args.engines.split(","):
        try:
            results[name] = runners[name]()
        except ImportError as e:
            results[name] = {"skipped": str(e)}
        print(f"{name}: {json.dumps(results[name])}", flush=True)

    rows = {name: results[name] for name in runners if name in results and "skipped" not in results[name]}
    counts = {res["count"]["rows"] for res in rows.values()} | {res["materialized"]["rows"] for res in rows.values()}
    if len(counts) > 1:
        sys.exit(f"the engines disagree on the number of output rows: {sorted(counts)}")
    if "mgjoin" in rows and "duckdb" in rows:
        mine, theirs = rows["mgjoin"]["materialized"]["column_sums"], rows["duckdb"]["sums"]["column_sums"]
        if mine != theirs:
            sys.exit(f"mgjoin's output columns do not sum as DuckDB's do: {mine} against {theirs}")
        print(f"mgjoin's {len(mine)} output columns sum as DuckDB's do", flush=True)
    base = rows.get("mgjoin")
    print("\n| engine | count (s) | materialized (s) | × mgjoin count | × mgjoin materialized |")
    print("|---|---|---|---|---|")
    for name, res in rows.items():
        c, m = res["count"]["seconds"], res["materialized"]["seconds"]
        ratio = f"{c / base['count']['seconds']:.1f}× | {m / base['materialized']['seconds']:.1f}×" if base else "— | —"
        print(f"| {name} {res.get('version', '')} | {c:.3f} | {m:.3f} | {ratio} |")
    if "sums" in rows.get("duckdb", {}):
        d = rows["duckdb"]["sums"]["seconds"]
        vs = f" ({d / base['materialized']['seconds']:.1f}× mgjoin materialized)" if base else ""
        print(f"duckdb, every output column summed instead of materialized: {d:.3f} s{vs}")
    if base:
        for form in ("count", "materialized"):
            b = base[form]
            print(f"mgjoin {form}: Python {b['seconds']:.4f} s, join_tables {b['engine_seconds']:.4f} s, "
                  f"overhead {100 * b['overhead']:.2f}% ({b['executor']}, {b['strategy']})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
