#!/usr/bin/env python3
"""The mgjoin CLI's Parquet and Arrow IPC tables against DuckDB's results of the same SQL joins.

Writes random tables with pyarrow: R as a hive-partitioned dataset of several Parquet files (row groups of
odd sizes, an empty file, nulls in the key and the payloads, a date and a timestamp column), S as one
Parquet file and as an Arrow IPC file with a dictionary-encoded column; runs

    mgjoin join --r R --s S --on k --how KIND --gpus 0 (--out-dir | --count | --output maps) [--format F]

for every join kind and compares with DuckDB (reading the same files) as multisets of rows: SQL's null keys
(a null key matches nothing; outer and anti joins keep its rows unmatched; with --nulls-equal null keys
match each other, as DuckDB's IS NOT DISTINCT FROM), payload nulls, the columns' types (dates stay dates). Then the bad inputs: a truncated file, schemas that differ between a dataset's
files, a key column missing, a type mgjoin cannot take, nulls for .npy output: one line naming the file and
column, exit 2, nothing written.

Exit status: 0 when everything agrees, 1 on any difference, 77 (ctest's skip) when the CLI was built
without Parquet (MGJOIN_PARQUET off) or pyarrow or duckdb cannot be imported.

    python3 tests/cli/parquet_compare.py --mgjoin build/mgjoin --parquet ON [--seed S] [--keep DIR]
"""
import collections
import datetime
import os
import shutil
import sys

import cli_compare
from cli_compare import check, compare_main, run

KINDS = ["inner", "left", "right", "full", "semi", "anti"]
SQL_JOIN = {"inner": "INNER JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN", "full": "FULL OUTER JOIN"}

def maybe(rng, value, null_share):
    return None if rng.random() < null_share else value


def write_inputs(pa, pq, feather, rng, d):
    """R: a dataset in year=Y folders (several files, one empty); S: one Parquet file and an IPC file."""
    keys = list(range(40))
    base = datetime.date(2020, 1, 1)
    os.makedirs(f"{d}/R/year=2023")
    os.makedirs(f"{d}/R/year=2024")
    files = [("year=2023/a.parquet", 57, 7), ("year=2023/b.parquet", 0, 5), ("year=2024/c.parquet", 131, 13),
             ("year=2024/d.parquet", 1, 3)]
    for name, rows, group in files:
        t = pa.table({
            "k": pa.array([maybe(rng, rng.choice(keys), 0.1) for _ in range(rows)], pa.int32()),
            "p": pa.array([maybe(rng, rng.randrange(-500, 500), 0.2) for _ in range(rows)], pa.int16()),
            "d": pa.array([base + datetime.timedelta(days=rng.randrange(1000)) for _ in range(rows)], pa.date32()),
            "t": pa.array([rng.randrange(1 << 40) for _ in range(rows)], pa.timestamp("us")),
        })
        pq.write_table(t, f"{d}/R/{name}", row_group_size=group)
    rows = 90
    s = pa.table({
        "k": pa.array([maybe(rng, rng.choice(keys + [100, 101]), 0.1) for _ in range(rows)], pa.int64()),
        "w": pa.array([maybe(rng, rng.random(), 0.2) for _ in range(rows)], pa.float64()),
        "b": pa.array([maybe(rng, rng.random() < 0.5, 0.2) for _ in range(rows)], pa.bool_()),
        "c": pa.array([rng.randrange(5) * 1000 for _ in range(rows)], pa.int64()).dictionary_encode(),
    })
    pq.write_table(s.drop(["c"]), f"{d}/S.parquet", row_group_size=11)
    feather.write_feather(s, f"{d}/S.arrow", compression="uncompressed")


def rows_of(con, sql):
    return collections.Counter(tuple(r) for r in con.execute(sql).fetchall())


def equal_keys(a, b, nulls_equal):
    """SQL's comparison of two keys: `=`, or with --nulls-equal `IS NOT DISTINCT FROM` (nulls match)."""
    return f"{a} IS NOT DISTINCT FROM {b}" if nulls_equal else f"{a} = {b}"


def compare_kinds(mgjoin, duckdb, d, s_file, s_sql, s_cols, more=(), nulls_equal=False):
    con = duckdb.connect()
    more = list(more) + (["--nulls-equal"] if nulls_equal else [])
    con.execute(f"CREATE VIEW R AS SELECT * FROM read_parquet('{d}/R/**/*.parquet', hive_partitioning = true)")
    con.execute(f"CREATE VIEW S AS {s_sql}")
    r_cols = ["d", "p", "t", "year"]
    for how in KINDS:
        out = f"{d}/out_{how}_{os.path.basename(s_file)}{'_nulls_equal' if nulls_equal else ''}"
        res = run(mgjoin, ["join", "--r", "R", "--s", s_file, "--on", "k", "--how", how, "--gpus", "0", "-q",
                           "--r-columns", ",".join(r_cols), "--out-dir", out] + list(more), d)
        check(res.returncode == 0, f"{how} {s_file}: exit {res.returncode}: {res.stderr.strip()}")
        if res.returncode:
            continue
        got_file = f"{out}/part-0.arrow" if "arrow" in more else f"{out}/part-0.parquet"
        check(os.path.exists(got_file), f"{how}: {got_file} written")
        rs = ", ".join(f"r.{c}" for c in r_cols)
        ss = ", ".join(f"s.{c}" for c in s_cols)
        if how in ("semi", "anti"):
            want = rows_of(con, f"SELECT r.k, {rs} FROM R r WHERE {'' if how == 'semi' else 'NOT '}"
                                f"EXISTS (SELECT 1 FROM S s WHERE {equal_keys('s.k', 'r.k', nulls_equal)})")
            cols = ["key"] + [f"r.{c}" for c in r_cols]
        else:
            want = rows_of(con, f"SELECT COALESCE(r.k, s.k), {rs}, {ss} FROM R r {SQL_JOIN[how]} S s "
                                f"ON {equal_keys('r.k', 's.k', nulls_equal)}")
            cols = ["key"] + [f"r.{c}" for c in r_cols] + [f"s.{c}" for c in s_cols]
        reader = "read_parquet" if got_file.endswith(".parquet") else None
        if reader:
            got = rows_of(con, "SELECT " + ", ".join(f'"{c}"' for c in cols) + f" FROM read_parquet('{got_file}')")
        else:
            import pyarrow.feather as feather
            tbl = feather.read_table(got_file)
            got = collections.Counter(zip(*[tbl.column(c).to_pylist() for c in cols]))
        check(got == want, f"{how} with {s_file}: {sum(got.values())} rows, DuckDB {sum(want.values())}; "
                           f"only mgjoin: {list((got - want).items())[:3]}, only DuckDB: {list((want - got).items())[:3]}")
        count = run(mgjoin, ["join", "--r", "R", "--s", s_file, "--on", "k", "--how", how, "--gpus", "0", "--count"] +
                    (["--nulls-equal"] if nulls_equal else []), d)
        check(count.stdout.strip() == str(sum(want.values())), f"{how} --count: {count.stdout.strip()} {count.stderr.strip()}")


def check_types_and_maps(mgjoin, pa, pq, d):
    t = pq.read_table(f"{d}/out_left_S.parquet/part-0.parquet")
    check(t.schema.field("r.d").type == pa.date32(), f"r.d is {t.schema.field('r.d').type}, not date32")
    check(t.schema.field("r.t").type == pa.timestamp("us"), f"r.t is {t.schema.field('r.t').type}")
    check(t.schema.field("key").type == pa.int64(), f"key (int32 against int64) is {t.schema.field('key').type}")
    res = run(mgjoin, ["join", "--r", "R", "--s", "S.parquet", "--on", "k", "--how", "full", "--gpus", "0", "-q",
                       "--output", "maps", "--out-dir", "maps"], d)
    check(res.returncode == 0, f"maps: {res.stderr.strip()}")
    r = pq.read_table(f"{d}/R", partitioning="hive")  # the dataset as one table, in file order
    s = pq.read_table(f"{d}/S.parquet")
    m = pq.read_table(f"{d}/maps/part-0.parquet")
    rk, sk = r.column("k").to_pylist(), s.column("k").to_pylist()
    pairs = collections.Counter()
    for i, j in zip(m.column("r.row").to_pylist(), m.column("s.row").to_pylist()):
        pairs[(rk[i] if i >= 0 else None, sk[j] if j >= 0 else None, i >= 0, j >= 0)] += 1
    check(all(a == b for (a, b, ri, si) in pairs if ri and si), "maps: matched rows have equal keys")
    null_r = sum(1 for k in rk if k is None)
    check(sum(n for (a, b, ri, si), n in pairs.items() if ri and a is None and not si) == null_r,
          "maps: every R row with a null key is kept unmatched")
    # .npy out of nulls is refused; of a table without nulls, written.
    res = run(mgjoin, ["join", "--r", "R", "--s", "S.parquet", "--on", "k", "--gpus", "0", "-q", "--format", "npy",
                       "--out-dir", "npy_out"], d)
    check(res.returncode == 2 and "cannot hold" in res.stderr and not os.path.exists(f"{d}/npy_out"),
          f"npy output of nulls: exit {res.returncode}: {res.stderr.strip()}")
    res = run(mgjoin, ["join", "--r", "R", "--s", "S.parquet", "--on", "k", "--gpus", "0", "-q", "--format", "npy",
                       "--r-columns", "d", "--s-columns", "k", "--out-dir", "npy_ok"], d)
    check(res.returncode == 0 and os.path.exists(f"{d}/npy_ok/r.d.npy"), f"npy output: {res.stderr.strip()}")


def check_bad_inputs(mgjoin, pa, pq, d):
    def refused(args, words, what):
        cli_compare.refused(mgjoin, d, args, words, what)

    os.makedirs(f"{d}/trunc")
    shutil.copy(f"{d}/S.parquet", f"{d}/trunc/a.parquet")
    with open(f"{d}/S.parquet", "rb") as f:
        data = f.read()
    with open(f"{d}/trunc/b.parquet", "wb") as f:
        f.write(data[: len(data) // 2])
    refused(["--r", "R", "--s", "trunc", "--on", "k"], ["trunc/b.parquet"], "a truncated file")
    with open(f"{d}/trunc/b.parquet", "wb") as f:
        f.write(data[:-8] + (1 << 30).to_bytes(4, "little") + b"PAR1")
    refused(["--r", "R", "--s", "trunc", "--on", "k"], ["trunc/b.parquet"], "a corrupt footer")
    with open(f"{d}/trunc/b.parquet", "wb") as f:
        f.write(data[:8] + bytes(b ^ 0x5A for b in data[8:len(data) // 2]) + data[len(data) // 2:])
    refused(["--r", "R", "--s", "trunc", "--on", "k"], ["trunc/b.parquet"], "corrupt data pages")
    os.makedirs(f"{d}/mixed")
    pq.write_table(pa.table({"k": pa.array([1, 2], pa.int64()), "w": pa.array([1.0, 2.0])}), f"{d}/mixed/a.parquet")
    pq.write_table(pa.table({"k": pa.array([1, 2], pa.int64()), "w": pa.array([1, 2], pa.int32())}), f"{d}/mixed/b.parquet")
    refused(["--r", "R", "--s", "mixed", "--on", "k"], ["mixed/b.parquet", "column w", "int32", "double"],
            "schemas that differ")
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), f"{d}/nokey.parquet")
    refused(["--r", "R", "--s", "nokey.parquet", "--on", "k"], ["nokey.parquet", "k"], "a key column missing")
    pq.write_table(pa.table({"k": pa.array([1, 2], pa.int64()), "name": pa.array(["a", "b"]),
                             "l": pa.array([[1], [2]])}), f"{d}/str.parquet")
    refused(["--r", "R", "--s", "str.parquet", "--r-key", "k", "--s-key", "name"],
            ["key column k of --r R is int32", "key column name of --s str.parquet is string"], "keys of int and string")
    refused(["--r", "R", "--s", "str.parquet", "--r-key", "k", "--s-key", "l"], ["str.parquet", "key column l", "list"],
            "a list key")
    res = run(mgjoin, ["join", "--r", "R", "--s", "str.parquet", "--on", "k", "--s-columns", "k", "--gpus", "0",
                       "--count"], d)
    check(res.returncode == 0, f"a string column left out is not read: {res.stderr.strip()}")
    pq.write_table(pa.table({"k": pa.array([], pa.int64())}), f"{d}/empty.parquet")
    res = run(mgjoin, ["join", "--r", "R", "--s", "empty.parquet", "--on", "k", "--how", "left", "--gpus", "0", "-q",
                       "--out-dir", "empty_out"], d)
    rows = pq.read_table(f"{d}/R", partitioning="hive").num_rows
    check(res.returncode == 0 and pq.read_table(f"{d}/empty_out/part-0.parquet").num_rows == rows,
          f"a left join with an empty table: {res.stderr.strip()}")


def write_tpch_like(pa, pq, rng, d):
    """orders (two files) and customer, TPC-H-like: decimal128(15, 2) prices and balances, date32 dates,
    strings of every length (comments, clerks, names, segments; some null), for joins on an int and a
    string key."""
    from decimal import Decimal
    base = datetime.date(1992, 1, 1)
    words = ["furiously", "pending", "deposits", "", "quickly", "ironic", "accounts", "sleep"]
    segments = ["AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"]
    n_cust = 150
    customer = pa.table({
        "c_custkey": pa.array(range(1, n_cust + 1), pa.int64()),
        "c_name": pa.array([f"Customer#{i:09d}" for i in range(1, n_cust + 1)]),
        "c_acctbal": pa.array([maybe(rng, Decimal(rng.randrange(-99999, 999999)) / 100, 0.05) for _ in range(n_cust)],
                              pa.decimal128(15, 2)),
        "c_mktsegment": pa.array([maybe(rng, rng.choice(segments), 0.05) for _ in range(n_cust)]),
        "c_clerk": pa.array([maybe(rng, f"Clerk#{rng.randrange(40):09d}", 0.1) for _ in range(n_cust)]),
    })
    pq.write_table(customer, f"{d}/customer.parquet", row_group_size=37)
    os.makedirs(f"{d}/orders")
    key = 1
    for part, rows in enumerate([700, 513]):
        orders = pa.table({
            "o_orderkey": pa.array(range(key, key + rows), pa.int64()),
            "o_custkey": pa.array([maybe(rng, rng.randrange(1, n_cust + 30), 0.02) for _ in range(rows)], pa.int64()),
            "o_totalprice": pa.array([Decimal(rng.randrange(100, 50000000)) / 100 for _ in range(rows)],
                                     pa.decimal128(15, 2)),
            "o_orderdate": pa.array([base + datetime.timedelta(days=rng.randrange(2400)) for _ in range(rows)], pa.date32()),
            "o_clerk": pa.array([maybe(rng, f"Clerk#{rng.randrange(50):09d}", 0.03) for _ in range(rows)]),
            "o_comment": pa.array([maybe(rng, " ".join(rng.choice(words) for _ in range(rng.randrange(6))), 0.05)
                                   for _ in range(rows)]),
        })
        key += rows
        pq.write_table(orders, f"{d}/orders/part-{part}.parquet", row_group_size=128)


def compare_tpch_like(mgjoin, duckdb, pa, pq, d, nulls_equal=False):
    """orders joined with customer on o_custkey (int) and on the clerk (string), every kind: row counts and
    aggregates (exact decimal sums, string lengths, distinct counts, dates) of mgjoin's output against
    DuckDB's join of the same files (with --nulls-equal, DuckDB's IS NOT DISTINCT FROM); the output's
    types are the inputs'."""
    con = duckdb.connect()
    con.execute(f"CREATE VIEW O AS SELECT * FROM read_parquet('{d}/orders/*.parquet')")
    con.execute(f"CREATE VIEW C AS SELECT * FROM read_parquet('{d}/customer.parquet')")
    r_cols = ["o_orderkey", "o_totalprice", "o_orderdate", "o_comment"]
    s_cols = ["c_name", "c_acctbal", "c_mktsegment"]
    aggregates = ["count(*)", "count({k})", "sum({o_totalprice})", "sum(length({o_comment}))", "count({o_comment})",
                  "min({o_orderdate})", "max({o_orderdate})", "sum({c_acctbal})", "count(DISTINCT {c_name})",
                  "count(DISTINCT {c_mktsegment})", "sum(length({c_mktsegment}))", "count(DISTINCT {k})"]
    for r_key, s_key in [("o_custkey", "c_custkey"), ("o_clerk", "c_clerk")]:
        for how in KINDS:
            out = f"{d}/tpch_{r_key}_{how}{'_nulls_equal' if nulls_equal else ''}"
            res = run(mgjoin, ["join", "--r", "orders", "--s", "customer.parquet", "--r-key", r_key, "--s-key", s_key,
                               "--how", how, "--gpus", "0", "-q", "--r-columns", ",".join(r_cols),
                               "--s-columns", ",".join(s_cols), "--out-dir", out] +
                      (["--nulls-equal"] if nulls_equal else []), d)
            check(res.returncode == 0, f"tpch {r_key} {how}: exit {res.returncode}: {res.stderr.strip()}")
            if res.returncode:
                continue
            semi = how in ("semi", "anti")
            names = {c: f'"r.{c}"' for c in r_cols}
            names.update({c: ("NULL" if semi else f'"s.{c}"') for c in s_cols})
            got = con.execute("SELECT " + ", ".join(a.format(k='"key"', **names) for a in aggregates) +
                              f" FROM read_parquet('{out}/part-0.parquet')").fetchall()
            ref = {c: f"o.{c}" for c in r_cols}
            ref.update({c: ("NULL" if semi else f"c.{c}") for c in s_cols})
            if semi:
                source = (f"O o WHERE {'' if how == 'semi' else 'NOT '}EXISTS "
                          f"(SELECT 1 FROM C c WHERE {equal_keys(f'c.{s_key}', f'o.{r_key}', nulls_equal)})")
                k = f"o.{r_key}"
            else:
                source = f"O o {SQL_JOIN[how]} C c ON {equal_keys(f'o.{r_key}', f'c.{s_key}', nulls_equal)}"
                k = f"COALESCE(o.{r_key}, c.{s_key})"
            want = con.execute("SELECT " + ", ".join(a.format(k=k, **ref) for a in aggregates) + f" FROM {source}").fetchall()
            check(got == want, f"tpch {r_key} {how}: mgjoin {got}, DuckDB {want}")
    t = pq.read_table(f"{d}/tpch_o_clerk_full/part-0.parquet")
    want_types = {"key": pa.string(), "r.o_totalprice": pa.decimal128(15, 2), "r.o_orderdate": pa.date32(),
                  "r.o_comment": pa.string(), "s.c_acctbal": pa.decimal128(15, 2), "s.c_name": pa.string()}
    for name, type_ in want_types.items():
        check(t.schema.field(name).type == type_, f"tpch: {name} is {t.schema.field(name).type}, not {type_}")


def compare_all(a, rng, d, duckdb, pa, feather, pq):
    mgjoin = a.mgjoin
    write_inputs(pa, pq, feather, rng, d)
    compare_kinds(mgjoin, duckdb, d, "S.parquet", f"SELECT * FROM read_parquet('{d}/S.parquet')", ["b", "w"])
    # DuckDB reads S.arrow's columns from a Parquet copy (its dictionary column decoded).
    s_arrow = feather.read_table(f"{d}/S.arrow")
    pq.write_table(s_arrow.cast(pa.schema([("k", pa.int64()), ("w", pa.float64()), ("b", pa.bool_()),
                                           ("c", pa.int64())])), f"{d}/S_with_c.parquet")
    compare_kinds(mgjoin, duckdb, d, "S.arrow", f"SELECT * FROM read_parquet('{d}/S_with_c.parquet')", ["b", "c", "w"],
                  ["--format", "arrow"])
    compare_kinds(mgjoin, duckdb, d, "S.parquet", f"SELECT * FROM read_parquet('{d}/S.parquet')", ["b", "w"],
                  nulls_equal=True)
    check_types_and_maps(mgjoin, pa, pq, d)
    write_tpch_like(pa, pq, rng, d)
    compare_tpch_like(mgjoin, duckdb, pa, pq, d)
    compare_tpch_like(mgjoin, duckdb, pa, pq, d, nulls_equal=True)
    check_bad_inputs(mgjoin, pa, pq, d)


if __name__ == "__main__":
    sys.exit(compare_main("mgjoin-parquet-", ["duckdb", "pyarrow", "pyarrow.feather", "pyarrow.parquet"], compare_all))
