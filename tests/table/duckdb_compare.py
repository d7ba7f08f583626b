#!/usr/bin/env python3
"""The mgjoin CLI's table joins against DuckDB's results of the same SQL joins.

Generates random tables as directories of .npy columns (several columns of every type, single and
composite keys (over 8 bytes too), duplicates on both sides, rows that match nothing, an empty table), runs

    mgjoin join --r-dir R --s-dir S --r-key .. --s-key .. --how KIND --gpus 0 (--out-dir | --count | --output maps)

for every join kind (inner, left, right, full, semi, anti) and compares with DuckDB as multisets of rows:
the joined columns (NULL in DuckDB <-> valid = false in mgjoin, whose columns then hold zeros), the count,
and the gather maps (r.row.npy / s.row.npy against DuckDB's row ids, -1 <-> NULL).

Exit status: 0 when everything agrees, 1 on any difference, 77 (ctest's skip) when duckdb or numpy
cannot be imported.

    python3 tests/table/duckdb_compare.py --mgjoin build/mgjoin [--seed S] [--rows N] [--keep DIR]
"""
import argparse
import collections
import os
import random
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIPPED: numpy is not importable ({e}); pip install numpy duckdb")
    sys.exit(77)
try:
    import duckdb
except ImportError as e:  # pragma: no cover
    print(f"SKIPPED: duckdb is not importable ({e}); pip install duckdb")
    sys.exit(77)

KINDS = ["inner", "left", "right", "full", "semi", "anti"]
SQL_JOIN = {"inner": "INNER JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN", "full": "FULL OUTER JOIN"}
# numpy dtype -> DuckDB type
SQL_TYPE = {
    "int8": "TINYINT", "uint8": "UTINYINT", "int16": "SMALLINT", "uint16": "USMALLINT",
    "int32": "INTEGER", "uint32": "UINTEGER", "int64": "BIGINT", "uint64": "UBIGINT",
    "float32": "FLOAT", "float64": "DOUBLE", "bool": "BOOLEAN",
}
ALL_TYPES = list(SQL_TYPE)
INTEGER_TYPES = [t for t in ALL_TYPES if t not in ("float32", "float64", "bool")]


# ------------------------------------------------------------------------------------------ inputs

def type_range(t):
    info = np.iinfo(np.dtype(t))
    return int(info.min), int(info.max)


def random_int(rng, t):
    lo, hi = type_range(t)
    pick = rng.randrange(8)
    if pick == 0:
        return rng.choice([lo, lo + 1, 0, 1, hi - 1, hi] + ([-1] if lo < 0 else []))
    if pick == 1:
        return max(lo, min(hi, rng.randint(-3, 3)))
    return rng.randint(lo, hi)


def distinct_keys(rng, key_types, n):
    """Up to n distinct key tuples."""
    seen, out = set(), []
    for _ in range(20 * n + 100):
        if len(out) >= n:
            break
        k = tuple(random_int(rng, t) for t in key_types)
        if k not in seen:
            seen.add(k)
            out.append(k)
    return out


def payload_values(rng, t, n):
    if t == "bool":
        return np.array([rng.random() < 0.5 for _ in range(n)], dtype=np.bool_)
    if t in ("float32", "float64"):
        # multiples of 1/4 below 2^20: exact in float32, float64 and a SQL decimal literal
        return np.array([rng.randint(-(1 << 22), 1 << 22) / 4 for _ in range(n)], dtype=t)
    return np.array([random_int(rng, t) for _ in range(n)], dtype=t)


class Table:
    """Columns in order: name -> numpy array; `key` names the key columns."""

    def __init__(self, key, columns):
        self.key = key
        self.columns = columns  # dict, insertion order = table order

    @property
    def rows(self):
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def payload_names(self):
        return [c for c in self.columns if c not in self.key]

    def write(self, directory):
        os.makedirs(directory)
        for name, values in self.columns.items():
            np.save(os.path.join(directory, name + ".npy"), values)


def make_table(rng, key_names, key_types, keys, payload_types, prefix):
    cols = {}
    payload = [(f"{prefix}{i}_{t}", t) for i, t in enumerate(payload_types)]
    # Key columns go in at random positions among the payloads, in their order.
    slots = sorted(rng.sample(range(len(payload) + len(key_names)), len(key_names)))
    pi = ki = 0
    for pos in range(len(payload) + len(key_names)):
        if ki < len(slots) and slots[ki] == pos:
            cols[key_names[ki]] = np.array([k[ki] for k in keys], dtype=key_types[ki])
            ki += 1
        else:
            name, t = payload[pi]
            cols[name] = payload_values(rng, t, len(keys))
            pi += 1
    return Table(list(key_names), cols)


def make_case(rng, label, key_types, n_left, n_right, same_key_names, pool_shape="overlap"):
    r_names = [("k" if same_key_names else "rk") + str(i) for i in range(len(key_types))]
    s_names = [("k" if same_key_names else "sk") + str(i) for i in range(len(key_types))]
    if pool_shape == "few":  # few keys, many rows each: duplicates on both sides
        pool = distinct_keys(rng, key_types, 6)
        r_pool, s_pool = pool[:4], pool[2:]
    else:  # the middle third of the pool is shared: matches, and rows of either side matching nothing
        pool = distinct_keys(rng, key_types, max(3, max(n_left, n_right) // 2))
        third = len(pool) // 3
        r_pool, s_pool = pool[: len(pool) - third], pool[third:]
    r_keys = [rng.choice(r_pool) for _ in range(n_left)]
    s_keys = [rng.choice(s_pool) for _ in range(n_right)]
    r_types = [rng.choice(ALL_TYPES) for _ in range(rng.randint(1, 4))]
    s_types = [rng.choice(ALL_TYPES) for _ in range(rng.randint(1, 4))]
    left = make_table(rng, r_names, key_types, r_keys, r_types, "a")
    right = make_table(rng, s_names, key_types, s_keys, s_types, "b")
    return label, left, right


def all_cases(rng, rows):
    def n():
        return rng.randint(rows // 2, rows)

    return [
        make_case(rng, "int32 key, duplicates", ["int32"], n(), n(), True),
        make_case(rng, "uint64 key with extremes", ["uint64"], n(), n(), False),
        make_case(rng, "int64 key, few keys (m:n)", ["int64"], 60, 40, True, "few"),
        make_case(rng, "composite (int16, int8, uint32)", ["int16", "int8", "uint32"], n(), n(), False),
        make_case(rng, "composite (uint8, uint16, int32)", ["uint8", "uint16", "int32"], n(), n(), True),
        make_case(rng, "composite (int32, int32)", ["int32", "int32"], n(), n(), False),
        make_case(rng, "wide composite (int64, int64): hashed", ["int64", "int64"], n(), n(), True),
        make_case(rng, "wide composite (uint64, int8, int32), few keys: hashed", ["uint64", "int8", "int32"], 60, 40,
                  False, "few"),
        make_case(rng, "int16 key, S empty", ["int16"], n(), 0, False),
        make_case(rng, "uint32 key, R empty", ["uint32"], 0, n(), True),
    ]


# ------------------------------------------------------------------------------------------ DuckDB

def sql_literal(v):
    if isinstance(v, (bool, np.bool_)):
        return "TRUE" if v else "FALSE"
    if isinstance(v, float):
        return repr(v)
    return str(int(v))


def load_into_duckdb(con, name, table):
    cols = [f'"{c}" {SQL_TYPE[str(v.dtype)]}' for c, v in table.columns.items()] + ["rid BIGINT"]
    con.execute(f'CREATE TABLE {name} ({", ".join(cols)})')
    lists = [v.tolist() for v in table.columns.values()]
    rows = [tuple(col[i] for col in lists) + (i,) for i in range(table.rows)]
    for start in range(0, len(rows), 500):
        chunk = rows[start:start + 500]
        values = ", ".join("(" + ", ".join(sql_literal(x) for x in row) + ")" for row in chunk)
        con.execute(f"INSERT INTO {name} VALUES {values}")


def duckdb_rows(con, left, right, kind, r_cols, s_cols):
    """(columns rows, map rows) as DuckDB computes them: key components (coalesced), R's chosen
    columns, S's chosen columns; maps as (left rid, right rid), None where a side is missing."""
    on = " AND ".join(f'L."{a}" = R."{b}"' for a, b in zip(left.key, right.key))
    if kind in SQL_JOIN:
        keys = [f'COALESCE(L."{a}", R."{b}")' for a, b in zip(left.key, right.key)]
        select = keys + [f'L."{c}"' for c in r_cols] + [f'R."{c}"' for c in s_cols]
        sql = f"SELECT {', '.join(select)}, L.rid, R.rid FROM L {SQL_JOIN[kind]} R ON {on}"
        result = con.execute(sql).fetchall()
        return [r[:-2] for r in result], [r[-2:] for r in result]
    exists = "EXISTS" if kind == "semi" else "NOT EXISTS"
    select = [f'L."{a}"' for a in left.key] + [f'L."{c}"' for c in r_cols]
    sql = f"SELECT {', '.join(select)}, L.rid FROM L WHERE {exists} (SELECT 1 FROM R WHERE {on})"
    result = con.execute(sql).fetchall()
    return [r[:-1] for r in result], [(r[-1], None) for r in result]


# ------------------------------------------------------------------------------------------ mgjoin

class Mismatch(Exception):
    pass


def run_mgjoin(mgjoin, args):
    p = subprocess.run([mgjoin] + args, capture_output=True, text=True)
    if p.returncode != 0:
        raise Mismatch(f"mgjoin {' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def first_differences(got, want, limit=5):
    g, w = collections.Counter(got), collections.Counter(want)
    extra = list((g - w).elements())[:limit]
    missing = list((w - g).elements())[:limit]
    return f"{len(got)} rows, DuckDB {len(want)}; mgjoin only: {extra}; DuckDB only: {missing}"


def mgjoin_column_rows(out, left, right, kind, r_cols, s_cols):
    files = set(os.listdir(out))
    key_files = ["key.npy"] if len(left.key) == 1 else [f"key.{k}.npy" for k in left.key]
    wanted = key_files + [f"r.{c}.npy" for c in r_cols]
    if kind not in ("semi", "anti"):
        wanted += [f"s.{c}.npy" for c in s_cols]
    valid = {"left": ["s.valid.npy"], "right": ["r.valid.npy"], "full": ["r.valid.npy", "s.valid.npy"]}.get(kind, [])
    missing = [f for f in wanted + valid if f not in files]
    unexpected = sorted(files - set(wanted + valid))
    if missing or unexpected:
        raise Mismatch(f"output files {sorted(files)}: missing {missing}, unexpected {unexpected}")

    def load(name):
        return np.load(os.path.join(out, name))

    keys = [load(f) for f in key_files]
    n = len(keys[0])
    r_valid = load("r.valid.npy") if "r.valid.npy" in files else np.ones(n, dtype=bool)
    s_valid = load("s.valid.npy") if "s.valid.npy" in files else np.ones(n, dtype=bool)
    for name, v in (("r.valid", r_valid), ("s.valid", s_valid)):
        if v.dtype != np.bool_ or len(v) != n:
            raise Mismatch(f"{name}.npy is {v.dtype} of {len(v)} rows, expected bool of {n}")
    cols = []
    for prefix, names, valid_mask, table in (("r", r_cols, r_valid, left), ("s", s_cols, s_valid, right)):
        if prefix == "s" and kind in ("semi", "anti"):
            continue
        for c in names:
            v = load(f"{prefix}.{c}.npy")
            if v.dtype != table.columns[c].dtype or len(v) != n:
                raise Mismatch(f"{prefix}.{c}.npy is {v.dtype} of {len(v)} rows, expected {table.columns[c].dtype} of {n}")
            if np.any(v[~valid_mask] != 0):
                raise Mismatch(f"{prefix}.{c}.npy holds non-zero values where {prefix}.valid is false")
            cols.append((v.tolist(), valid_mask.tolist()))
    for (k, name), t in zip(zip(keys, key_files), left.key):
        if k.dtype != left.columns[t].dtype or len(k) != n:
            raise Mismatch(f"{name} is {k.dtype} of {len(k)} rows, expected {left.columns[t].dtype} of {n}")
    key_lists = [k.tolist() for k in keys]
    rows = []
    for i in range(n):
        row = tuple(k[i] for k in key_lists) + tuple(v[i] if ok[i] else None for v, ok in cols)
        rows.append(row)
    return rows


def compare_case(mgjoin, work, label, left, right, rng):
    r_dir, s_dir = os.path.join(work, "R"), os.path.join(work, "S")
    left.write(r_dir)
    right.write(s_dir)
    con = duckdb.connect()
    load_into_duckdb(con, "L", left)
    load_into_duckdb(con, "R", right)
    base = ["join", "--r-dir", r_dir, "--s-dir", s_dir, "--r-key", ",".join(left.key),
            "--s-key", ",".join(right.key), "--gpus", "0"]
    failures = 0
    for kind in KINDS:
        # Payload columns: every one (the default), or a random subset in random order.
        r_cols, s_cols, choose = left.payload_names(), right.payload_names(), []
        if rng.random() < 0.5 and r_cols:
            r_cols = rng.sample(r_cols, rng.randint(1, len(r_cols)))
            choose += ["--r-columns", ",".join(r_cols)]
        if rng.random() < 0.5 and s_cols:
            s_cols = rng.sample(s_cols, rng.randint(1, len(s_cols)))
            choose += ["--s-columns", ",".join(s_cols)]
        want_rows, want_maps = duckdb_rows(con, left, right, kind, r_cols, s_cols)
        what = f"[{label}] {kind}"
        try:
            out = os.path.join(work, f"out-{kind}")
            run_mgjoin(mgjoin, base + ["--how", kind, "--out-dir", out] + choose)
            got = mgjoin_column_rows(out, left, right, kind, r_cols, s_cols)
            if collections.Counter(got) != collections.Counter(want_rows):
                raise Mismatch("columns: " + first_differences(got, want_rows))

            count = run_mgjoin(mgjoin, base + ["--how", kind, "--count"]).strip()
            if count != str(len(want_rows)):
                raise Mismatch(f"--count printed {count!r}, DuckDB has {len(want_rows)} rows")

            maps = os.path.join(work, f"maps-{kind}")
            run_mgjoin(mgjoin, base + ["--how", kind, "--output", "maps", "--out-dir", maps])
            r_row = np.load(os.path.join(maps, "r.row.npy"))
            s_path = os.path.join(maps, "s.row.npy")
            if kind in ("semi", "anti"):
                got_maps = [(int(i), None) for i in r_row]
            else:
                s_row = np.load(s_path)
                if r_row.dtype != np.int64 or s_row.dtype != np.int64 or len(r_row) != len(s_row):
                    raise Mismatch(f"maps: r.row {r_row.dtype} x {len(r_row)}, s.row {s_row.dtype} x {len(s_row)}")
                got_maps = [(None if a < 0 else int(a), None if b < 0 else int(b))
                            for a, b in zip(r_row.tolist(), s_row.tolist())]
            if r_row.dtype != np.int64:
                raise Mismatch(f"maps: r.row.npy is {r_row.dtype}, expected int64")
            if collections.Counter(got_maps) != collections.Counter(want_maps):
                raise Mismatch("maps: " + first_differences(got_maps, want_maps))
            print(f"ok   {what}: {len(want_rows)} rows")
        except Mismatch as e:
            failures += 1
            print(f"FAIL {what}: {e}")
            print(f"     R {left.rows} rows {[(c, str(v.dtype)) for c, v in left.columns.items()]} key {left.key}")
            print(f"     S {right.rows} rows {[(c, str(v.dtype)) for c, v in right.columns.items()]} key {right.key}")
    con.close()
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mgjoin", required=True, help="path of the mgjoin binary")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: fresh, printed)")
    ap.add_argument("--rows", type=int, default=400, help="rows per table, at most")
    ap.add_argument("--keep", default=None, help="write the tables and outputs here and keep them")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    print(f"seed {seed} (replay: --seed {seed}); duckdb {duckdb.__version__}, numpy {np.__version__}")
    rng = random.Random(seed)
    root = args.keep or tempfile.mkdtemp(prefix="mgjoin-duckdb-")
    failures = 0
    try:
        for i, (label, left, right) in enumerate(all_cases(rng, args.rows)):
            work = os.path.join(root, f"case{i}")
            if os.path.exists(work):
                shutil.rmtree(work)
            os.makedirs(work)
            failures += compare_case(args.mgjoin, work, label, left, right, rng)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"{failures} failure(s)" if failures else "every join kind agrees with DuckDB")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
