"""TPC-H joins: mgjoin from Python against DuckDB, Polars and pyarrow on data that `tpchgen-cli` generates
(issue 42, item 3; results go to PERFORMANCE.md).

    python python/bench/tpch.py --scale 1 --repeat 3 [--threads N] [--gpus G] [--data DIR] [--json out.json]

Data: lineitem, orders and customer as Parquet files, made by `tpchgen-cli parquet` (PyPI: tpchgen-cli) in
DIR (default build/tpch/sf<scale>), reused when all three are there. Joins, every column of both tables:

    lineitem-orders   lineitem JOIN orders   ON l_orderkey = o_orderkey   (|lineitem| rows, 25 columns)
    orders-customer   orders   JOIN customer ON o_custkey  = c_custkey    (|orders| rows, 17 columns)

Each system runs each join in two modes and two forms:
- join-only: the tables in memory, read once from the Parquet files with pyarrow (mgjoin.join on the
  pyarrow Tables; DuckDB on the same Tables registered; Polars on pl.from_arrow of them; pyarrow's
  Table.join on them, their string_view columns cast to string first since its join has no kernel for
  view types). Conversions are made once, before the timing.
- end-to-end: from the Parquet files, the reading timed too: pq.read_table then mgjoin.join; the mgjoin CLI
  (system mgjoin-cli, end-to-end only: `mgjoin join --r L.parquet --s R.parquet ... --out-dir D --format
  parquet`, a process per run, its start-up included; skipped where the CLI was built without Parquet);
  DuckDB's read_parquet in SQL; Polars' scan_parquet; pq.read_table then Table.join. A count reads only the
  key columns.
- count: the number of output rows; materialized: every column of both tables in memory (a pyarrow.Table;
  a DataFrame for Polars).
Times are wall seconds of the call: one warm-up (--warmup) then the median of --repeat runs, one system
after the other (each one's state dropped before the next), all on the same --threads (OMP_NUM_THREADS for
mgjoin's engine, pa.set_cpu_count for pyarrow and mgjoin's take, DuckDB's threads, POLARS_MAX_THREADS);
mgjoin on --gpus (default every GPU, through one mgjoin.Engine; without GPUs the CPU path). Checked: the systems' row counts are equal, and mgjoin's materialized output
(join-only and end-to-end) has the inputs' column names and Arrow types and the same per-column checksums
as DuckDB's own join, both taken by DuckDB SQL: count of non-nulls, sum of numbers and decimals (exact:
DuckDB's decimal sum), of dates as days, and of string lengths with the count of distinct strings (left
out with --no-distinct: at SF >= 10 the checks' main cost). The exit status is 1 when a check fails.
--systems, --joins and --modes pick a part (at SF 100 one device call cannot hold every part);
--generate-only makes the data and stops.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from decimal import Decimal
from typing import Any, Callable

JOINS = {  # name: (left table, right table, left key, right key)
    "lineitem-orders": ("lineitem", "orders", "l_orderkey", "o_orderkey"),
    "orders-customer": ("orders", "customer", "o_custkey", "c_custkey"),
}
TABLES = ("lineitem", "orders", "customer")
SYSTEMS = ("mgjoin", "mgjoin-cli", "duckdb", "polars", "pyarrow")
MODES = ("join-only", "end-to-end")
FORMS = ("count", "materialized")


def tpchgen_binary() -> str | None:
    """The tpchgen-cli executable: on PATH, or beside this Python (a virtual environment's bin/)."""
    found = shutil.which("tpchgen-cli")
    if found:
        return found
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(folder, "tpchgen-cli")
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def make_data(scale: float, directory: str, threads: int) -> float:
    """lineitem, orders and customer as Parquet files in `directory`, generated unless all are there
    (into a sibling folder first, so that an interrupted run leaves nothing to reuse); the seconds it took."""
    if all(os.path.exists(os.path.join(directory, f"{t}.parquet")) for t in TABLES):
        return 0.0
    binary = tpchgen_binary()
    if binary is None:
        sys.exit("tpchgen-cli not found: pip install tpchgen-cli (scripts/install-python-deps.sh installs it)")
    partial = directory.rstrip("/") + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run([binary, "parquet", "--scale-factor", f"{scale:g}", "--tables", ",".join(TABLES),
                    "--output-dir", partial, "--num-threads", str(threads), "--quiet"], check=True)
    os.makedirs(directory, exist_ok=True)
    for t in TABLES:
        os.replace(os.path.join(partial, f"{t}.parquet"), os.path.join(directory, f"{t}.parquet"))
    shutil.rmtree(partial, ignore_errors=True)
    return time.perf_counter() - start


def rows_of(result: Any) -> int:
    if isinstance(result, int):
        return result
    return result.num_rows if hasattr(result, "num_rows") else result.height


def measure(fn: Callable[[], Any], repeat: int, warmup: int, inspect: Callable[[Any], None] | None = None) -> dict:
    """The median wall time of `repeat` calls after `warmup` more; `inspect` sees the first call's result.
    Each result is dropped before the next call, so that only one output is in memory at a time."""
    times, rows = [], set()
    for i in range(warmup + repeat):
        start = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - start
        if i >= warmup:
            times.append(elapsed)
        rows.add(rows_of(result))
        if i == 0 and inspect:
            inspect(result)
        del result
    if len(rows) != 1:
        raise AssertionError(f"the runs disagree on the output's rows: {sorted(rows)}")
    return {"seconds": statistics.median(times), "runs": times, "rows": rows.pop()}


# ---- checksums: taken by DuckDB SQL over mgjoin's output and over DuckDB's own join ----

def checksum_terms(schema: Any, distinct: bool) -> list[tuple[str, str]]:
    """(label, SQL aggregate) per column: non-nulls; sums of numbers, decimals (exact) and dates (days);
    total string length and (with `distinct`) distinct strings."""
    import pyarrow as pa
    import pyarrow.types as t

    terms = [("rows", "count(*)")]
    for field in schema:
        c, ty = f'"{field.name}"', field.type
        terms.append((f"{field.name}: non-null", f"count({c})"))
        if t.is_integer(ty) or t.is_decimal(ty):
            terms.append((f"{field.name}: sum", f"sum({c})"))
        elif t.is_date(ty):
            terms.append((f"{field.name}: sum of days", f"sum(date_diff('day', DATE '1970-01-01', {c}))"))
        elif t.is_string(ty) or t.is_large_string(ty) or ty == pa.string_view():
            terms.append((f"{field.name}: total length", f"sum(strlen({c}))"))
            if distinct:
                terms.append((f"{field.name}: distinct", f"count(DISTINCT {c})"))
    return terms


def checksums(con: Any, schema: Any, source: str, distinct: bool) -> dict:
    terms = checksum_terms(schema, distinct)
    values = con.sql(f"SELECT {', '.join(sql for _, sql in terms)} FROM {source}").fetchall()[0]
    return {label: (0 if v is None else v) for (label, _), v in zip(terms, values)}


class Checker:
    """mgjoin's materialized outputs against DuckDB's join of the same tables; failures collected."""

    def __init__(self, tables: dict, threads: int, distinct: bool):
        import duckdb

        self.distinct = distinct
        self.con = duckdb.connect()
        self.con.execute(f"SET threads = {threads}")
        for name, table in tables.items():
            self.con.register(name, table)
        self.reference: dict = {}
        self.failures: list[str] = []
        self.passed: list[str] = []

    def check(self, join: str, what: str, schema: Any, out: Any) -> None:
        left, right, lk, rk = JOINS[join]
        if join not in self.reference:
            self.reference[join] = checksums(self.con, schema, f"{left} JOIN {right} ON {lk} = {rk}", self.distinct)
        if out.schema.names != schema.names or out.schema.types != schema.types:
            self.failures.append(f"{join} {what}: output schema {out.schema} is not the inputs' {schema}")
            return
        self.con.register("mgjoin_out", out)
        try:
            mine = checksums(self.con, schema, "mgjoin_out", self.distinct)
        finally:
            self.con.unregister("mgjoin_out")
        wrong = {k: (v, self.reference[join][k]) for k, v in mine.items() if v != self.reference[join][k]}
        if wrong:
            self.failures.append(f"{join} {what}: checksums differ from DuckDB's (mgjoin, DuckDB): {wrong}")
        else:
            self.passed.append(f"{join} {what}: {len(mine)} checksums over {len(schema)} columns equal DuckDB's")


# ---- the systems: for each join, mode and form, a call to time ----

def mgjoin_calls(tables: dict, paths: dict, gpus: Any, side: dict) -> tuple[Callable, Callable]:
    import pyarrow.parquet as pq

    import mgjoin

    # On GPUs, their memory taken once (an Engine), as a program joining repeatedly would.
    engine = mgjoin.Engine(gpus=gpus) if gpus != 0 else None

    def join(left: Any, right: Any, lk: str, rk: str, output: str) -> Any:
        info: dict = {}
        kwargs = {"engine": engine} if engine else {"gpus": gpus}
        result = mgjoin.join(left, right, left_on=lk, right_on=rk, output=output, info=info, **kwargs)
        side.setdefault("engine_seconds", []).append(info["seconds"])
        side["executor"], side["strategy"] = info["executor"], info["strategy"]
        return result

    def calls(left: str, right: str, lk: str, rk: str, mode: str, form: str) -> Callable[[], Any]:
        output = "count" if form == "count" else "table"
        if mode == "join-only":
            return lambda: join(tables[left], tables[right], lk, rk, output)

        def from_files() -> Any:
            start = time.perf_counter()
            columns = (lambda k: [k]) if form == "count" else (lambda k: None)
            l, r = pq.read_table(paths[left], columns=columns(lk)), pq.read_table(paths[right], columns=columns(rk))
            side.setdefault("read_seconds", []).append(time.perf_counter() - start)
            return join(l, r, lk, rk, output)
        return from_files
    return calls, (engine.close if engine else lambda: None)


def cli_binary(root: str, given: str | None) -> str:
    """The mgjoin CLI to time: --mgjoin-cli, else this tree's build/mgjoin (the one built with Parquet)."""
    binary = given or os.path.join(root, "build", "mgjoin")
    if not os.access(binary, os.X_OK):
        raise ImportError(f"no mgjoin CLI at {binary} (--mgjoin-cli names one)")
    return binary


def cli_reads_parquet(binary: str, scratch: str) -> bool:
    """Whether the CLI reads Parquet: a 1-row self-join on the CPU path (a CLI built without Arrow refuses
    the path in one line)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    probe = os.path.join(scratch, "probe.parquet")
    pq.write_table(pa.table({"k": pa.array([1], pa.int64())}), probe)
    done = subprocess.run([binary, "join", "--r", probe, "--s", probe, "--r-key", "k", "--s-key", "k", "--count",
                           "--gpus", "0"], capture_output=True, text=True)
    return done.returncode == 0


def cli_output_as_inputs(out: Any, schema: Any, lk: str, rk: str) -> Any:
    """The CLI's output (columns key, r.<name>, s.<name>) named and ordered as the inputs' columns, both
    keys from its one key column (an inner join's keys are equal), for the checksums."""
    columns = {name[2:] if name[:2] in ("r.", "s.") else name: out.column(name) for name in out.column_names}
    columns[lk] = columns[rk] = columns.pop("key")
    return out.from_arrays([columns[f.name] for f in schema], schema=schema)


def mgjoin_cli_calls(paths: dict, gpus: Any, binary: str, scratch: str, side: dict) -> tuple[Callable, Callable]:
    """The CLI from the Parquet files: a count, or every column to a Parquet file read back (the read not
    timed: the output is on disk when the process ends, as DuckDB's COPY would leave it)."""
    import pyarrow.parquet as pq

    device = [] if gpus is None else ["--gpus", str(gpus)]

    def calls(left: str, right: str, lk: str, rk: str, mode: str, form: str) -> Callable[[], Any] | None:
        if mode == "join-only":
            return None  # a process joins files: the tables in memory are Python's
        base = [binary, "join", "--r", paths[left], "--s", paths[right], "--r-key", lk, "--s-key", rk, "--json", *device]

        def run() -> Any:
            out_dir = os.path.join(scratch, "out")
            shutil.rmtree(out_dir, ignore_errors=True)
            cmd = base + (["--count"] if form == "count" else ["--out-dir", out_dir, "--format", "parquet"])
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.strip()[-2000:]}")
            info = json.loads(done.stdout)
            side.setdefault("engine_seconds", []).append(info["seconds"])
            side["executor"], side["strategy"] = info["executor"], info["strategy"]
            if form == "count":
                return int(info["count"])
            return pq.read_table(out_dir)
        return run
    return calls, lambda: shutil.rmtree(scratch, ignore_errors=True)


def duckdb_calls(tables: dict, paths: dict, threads: int) -> tuple[Callable, Callable]:
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    for name, table in tables.items():
        con.register(name, table)

    def calls(left: str, right: str, lk: str, rk: str, mode: str, form: str) -> Callable[[], Any]:
        l, r = (left, right) if mode == "join-only" else (f"read_parquet('{paths[left]}')", f"read_parquet('{paths[right]}')")
        source = f"{l} JOIN {r} ON {lk} = {rk}"
        if form == "count":
            return lambda: con.sql(f"SELECT count(*) FROM {source}").fetchall()[0][0]
        return lambda: con.sql(f"SELECT * FROM {source}").to_arrow_table()
    return calls, con.close


def polars_calls(tables: dict, paths: dict) -> tuple[Callable, Callable]:
    import polars as pl

    frames = {name: pl.from_arrow(table) for name, table in tables.items()}

    def calls(left: str, right: str, lk: str, rk: str, mode: str, form: str) -> Callable[[], Any]:
        def lazy() -> Any:
            if mode == "join-only":
                l, r = frames[left].lazy(), frames[right].lazy()
            else:
                l, r = pl.scan_parquet(paths[left]), pl.scan_parquet(paths[right])
            return l.join(r, left_on=lk, right_on=rk, coalesce=False)  # both keys kept, as the others do
        if form == "count":
            return lambda: lazy().select(pl.len()).collect().item()
        return lambda: lazy().collect()
    return calls, frames.clear


def without_views(table: Any) -> Any:
    """string_view columns as string: pyarrow's Table.join has no kernel for view types."""
    import pyarrow as pa

    schema = pa.schema([f.with_type(pa.string()) if f.type == pa.string_view() else f for f in table.schema])
    return table.cast(schema) if schema != table.schema else table


def pyarrow_calls(tables: dict, paths: dict) -> tuple[Callable, Callable]:
    import pyarrow.parquet as pq

    cast = {name: without_views(table) for name, table in tables.items()}

    def calls(left: str, right: str, lk: str, rk: str, mode: str, form: str) -> Callable[[], Any]:
        def run() -> Any:
            if mode == "join-only":
                l, r = cast[left], cast[right]
                if form == "count":
                    l, r = l.select([lk]), r.select([rk])
            else:
                columns = (lambda k: [k]) if form == "count" else (lambda k: None)
                l = without_views(pq.read_table(paths[left], columns=columns(lk)))
                r = without_views(pq.read_table(paths[right], columns=columns(rk)))
            return l.join(r, keys=lk, right_keys=rk, coalesce_keys=False)
        return run
    return calls, cast.clear


# ---- the report ----

def report(results: dict, systems: list[str]) -> None:
    """One row per join, mode and form: each system's median, and how many times mgjoin's it is."""
    header = "| join | mode | form | rows | " + " | ".join(f"{s} (s)" for s in systems) + " |"
    print("\n" + header)
    print("|" + "---|" * (4 + len(systems)))
    for join, by_mode in results.items():
        for mode, by_form in by_mode.items():
            for form, by_system in by_form.items():
                base = by_system.get("mgjoin")
                cells = []
                for s in systems:
                    r = by_system.get(s)
                    if r is None:
                        cells.append("—")
                    elif base and s != "mgjoin":
                        ratio = r["seconds"] / base["seconds"]
                        cells.append(f"{r['seconds']:.3f} ({ratio:.{1 if ratio >= 1 else 2}f}×)")
                    else:
                        cells.append(f"{r['seconds']:.3f}")
                rows = next(iter(by_system.values()))["rows"]
                print(f"| {join} | {mode} | {form} | {rows} | " + " | ".join(cells) + " |")
    if "mgjoin" in systems:
        print("(×: the system's time over mgjoin's, i.e. mgjoin's speedup over it)")


def parse_args() -> argparse.Namespace:
    """The command line; --systems, --joins and --modes as lists, each name checked."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    parser.add_argument("--data", help="the Parquet folder (default build/tpch/sf<scale>; reused when there)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="threads of every system (default all cores)")
    parser.add_argument("--gpus", type=int, default=None, help="mgjoin's GPUs (default all; none: the CPU path)")
    parser.add_argument("--mgjoin-cli", help="the mgjoin CLI of system mgjoin-cli (default: build/mgjoin)")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--joins", default=",".join(JOINS))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--no-distinct", action="store_true",
                        help="checksums without the distinct-string counts (their hash tables: the checks' main cost)")
    parser.add_argument("--generate-only", action="store_true", help="make the data (unless there), then stop")
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()
    args.systems, args.joins, args.modes = args.systems.split(","), args.joins.split(","), args.modes.split(",")
    for given, known in ((args.systems, SYSTEMS), (args.joins, JOINS), (args.modes, MODES)):
        unknown = set(given) - set(known)
        if unknown:
            parser.error(f"unknown {', '.join(sorted(unknown))} (known: {', '.join(known)})")
    return args


def use_threads(threads: int) -> None:
    """Every system on `threads` threads. Called before the libraries start their thread pools: mgjoin's CPU
    path is OpenMP, Polars reads its variable once."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["POLARS_MAX_THREADS"] = str(threads)
    import pyarrow as pa

    pa.set_cpu_count(threads)
    pa.set_io_thread_count(threads)


def read_tables(paths: dict, data_note: str) -> tuple[dict, float, int]:
    """Every table read by pyarrow, as the join-only mode's input; the seconds it took and the bytes it
    holds (printed)."""
    import pyarrow.parquet as pq

    start = time.perf_counter()
    tables = {t: pq.read_table(paths[t]) for t in TABLES}
    read = time.perf_counter() - start
    in_memory = sum(t.nbytes for t in tables.values())
    print(f"{data_note}: " + ", ".join(f"{t} {tables[t].num_rows} rows" for t in TABLES)
          + f"; read by pyarrow in {read:.2f} s ({in_memory / 1e9:.2f} GB in memory, {in_memory / 1e9 / read:.2f} GB/s)",
          flush=True)
    return tables, read, in_memory


def make_checker(tables: dict, threads: int, distinct: bool) -> Checker | None:
    try:
        return Checker(tables, threads, distinct)
    except ImportError:
        print("duckdb not installed: no checks", flush=True)
        return None


def mgjoin_gpus(gpus: int | None) -> int | None:
    """mgjoin's --gpus, 0 (the CPU path) where none is given and there is no GPU; printed."""
    import mgjoin

    if gpus is None and not mgjoin.topology()["gpus"]:
        gpus = 0
    print(f"mgjoin on {'the CPU path (no GPU)' if gpus == 0 else 'GPUs: %s' % (gpus or 'all')}; end-to-end "
          "is pq.read_table then mgjoin.join (mgjoin-cli: the CLI on the Parquet files)", flush=True)
    return gpus


class Bench:
    """The timed runs: each system in turn over the chosen joins, modes and forms. `side` holds what the
    running system's calls note beside their results (engine and read seconds, executor, strategy)."""

    def __init__(self, args: argparse.Namespace, root: str, paths: dict, tables: dict, gpus: Any,
                 checker: Checker | None):
        self.args, self.root, self.paths, self.tables = args, root, paths, tables
        self.gpus, self.checker = gpus, checker
        self.systems = list(args.systems)  # less those skipped
        self.side: dict = {}
        self.results: dict = {}
        self.versions: dict[str, str] = {}

    def calls_of(self, system: str) -> tuple[Callable, Callable]:
        """The system's calls(left, right, lk, rk, mode, form) and what closes its state; ImportError where
        it cannot run here."""
        if system == "mgjoin":
            return mgjoin_calls(self.tables, self.paths, self.gpus, self.side)
        if system == "mgjoin-cli":
            return self.cli_calls()
        if system == "duckdb":
            return duckdb_calls(self.tables, self.paths, self.args.threads)
        if system == "polars":
            return polars_calls(self.tables, self.paths)
        return pyarrow_calls(self.tables, self.paths)

    def cli_calls(self) -> tuple[Callable, Callable]:
        import tempfile

        binary = cli_binary(self.root, self.args.mgjoin_cli)
        scratch = tempfile.mkdtemp(prefix="mgjoin-tpch-cli-")
        if not cli_reads_parquet(binary, scratch):
            shutil.rmtree(scratch, ignore_errors=True)
            raise ImportError(f"{binary} was built without Parquet")
        self.versions["mgjoin-cli"] = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
        return mgjoin_cli_calls(self.paths, self.gpus, binary, scratch, self.side)

    def run_all(self) -> None:
        """One system at a time, its state (Polars frames, pyarrow's cast tables, mgjoin's Engine) dropped after."""
        for s in list(self.systems):
            try:
                calls, close = self.calls_of(s)
            except ImportError as e:
                print(f"{s}: skipped ({e})", flush=True)
                self.systems.remove(s)
                continue
            if s != "mgjoin-cli":  # the CLI's version: cli_calls'
                self.versions[s] = sys.modules[s].__version__
            try:
                self.run_system(s, calls)
            finally:
                close()
            del calls, close

    def run_system(self, s: str, calls: Callable) -> None:
        import pyarrow as pa

        for join in self.args.joins:
            left, right, lk, rk = JOINS[join]
            schema = pa.schema(list(self.tables[left].schema) + list(self.tables[right].schema))
            for mode in self.args.modes:
                for form in FORMS:
                    self.side.clear()
                    call = calls(left, right, lk, rk, mode, form)
                    if call is None:
                        continue
                    r = self.timed(call, self.inspector(s, join, mode, form, schema))
                    self.results.setdefault(join, {}).setdefault(mode, {}).setdefault(form, {})[s] = r
                    print(f"{join} {mode} {form} {s}: {r['seconds']:.3f} s, {r['rows']} rows", flush=True)

    def inspector(self, s: str, join: str, mode: str, form: str, schema: Any) -> Callable[[Any], None] | None:
        """mgjoin's and its CLI's materialized outputs checked against DuckDB's join (the CLI's columns named
        as the inputs' first)."""
        checker = self.checker
        if form != "materialized" or not checker:
            return None
        if s == "mgjoin":
            return lambda out: checker.check(join, f"{mode} materialized", schema, out)
        if s == "mgjoin-cli":
            lk, rk = JOINS[join][2:]
            return lambda out: checker.check(join, "CLI end-to-end materialized", schema,
                                             cli_output_as_inputs(out, schema, lk, rk))
        return None

    def timed(self, call: Callable[[], Any], inspect: Callable[[Any], None] | None) -> dict:
        """measure()'s result and the medians of what the calls noted beside it."""
        warmup = self.args.warmup
        r = measure(call, self.args.repeat, warmup, inspect)
        for key in ("engine_seconds", "read_seconds"):
            if key in self.side:  # the timed runs', the warm-ups' left out
                r[key.replace("_seconds", "_median")] = statistics.median(self.side[key][warmup:] or self.side[key])
        if "executor" in self.side:
            r.update(executor=self.side["executor"], strategy=self.side["strategy"])
        return r


def row_count_failures(results: dict) -> list[str]:
    """Each join, mode and form whose systems disagree on the rows."""
    failures = []
    for join, by_mode in results.items():
        for mode, by_form in by_mode.items():
            for form, cell in by_form.items():
                if len({r["rows"] for r in cell.values()}) > 1:
                    failures.append(f"{join} {mode} {form}: the systems disagree on the rows: "
                                    + ", ".join(f"{s} {r['rows']}" for s, r in cell.items()))
    return failures


def print_checks(passes: list[str], failures: list[str], systems: list[str]) -> bool:
    """Every check's line and the verdict: passed when nothing failed and mgjoin's outputs were checked
    (unless mgjoin or DuckDB did not run)."""
    for line in passes:
        print(f"check: {line}")
    for line in failures:
        print(f"CHECK FAILED: {line}")
    passed = not failures and (bool(passes) or "mgjoin" not in systems or "duckdb" not in systems)
    print(f"checks {'passed' if passed else 'FAILED'}: {len(passes)} mgjoin outputs against DuckDB's checksums, "
          f"row counts of {', '.join(systems)} equal", flush=True)
    return passed


def write_json(path: str, args: argparse.Namespace, bench: Bench, data: str, read: float, in_memory: int,
               checks: dict) -> None:
    tables = bench.tables
    out = {"scale": args.scale, "threads": args.threads, "gpus": bench.gpus, "repeat": args.repeat,
           "warmup": args.warmup, "cpus": os.cpu_count(), "versions": bench.versions, "data": data,
           "rows": {t: tables[t].num_rows for t in TABLES}, "read_seconds": read,
           "arrow_bytes": in_memory, "results": bench.results, "checks": checks}
    with open(path, "w") as f:
        json.dump(out, f, indent=1, default=lambda v: str(v) if isinstance(v, Decimal) else repr(v))


def main() -> None:
    args = parse_args()
    use_threads(args.threads)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    data = args.data or os.path.join(root, "build", "tpch", f"sf{args.scale:g}")
    generated = make_data(args.scale, data, args.threads)
    data_note = f"TPC-H SF {args.scale:g} in {data} ({'generated in %.1f s' % generated if generated else 'reused'})"
    if args.generate_only:
        print(data_note)
        return
    paths = {t: os.path.join(data, f"{t}.parquet") for t in TABLES}
    tables, read, in_memory = read_tables(paths, data_note)
    checker = make_checker(tables, args.threads, not args.no_distinct)
    gpus = mgjoin_gpus(args.gpus) if "mgjoin" in args.systems else args.gpus
    bench = Bench(args, root, paths, tables, gpus, checker)
    bench.run_all()
    report(bench.results, bench.systems)
    failures = (checker.failures if checker else []) + row_count_failures(bench.results)
    passes = checker.passed if checker else []
    passed = print_checks(passes, failures, bench.systems)
    if args.json:
        checks = {"passed": passed, "passes": passes, "failures": failures}
        write_json(args.json, args, bench, data, read, in_memory, checks)
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
