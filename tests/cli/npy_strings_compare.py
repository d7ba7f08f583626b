#!/usr/bin/env python3
"""The mgjoin CLI's .npy key and payload columns of NumPy's fixed-width strings (U and S) against a join in
plain Python of the same values.

Writes R and S as directories of .npy columns with numpy: keys of unicode strings (non-ASCII and astral
characters, empty strings, long shared prefixes, embedded NULs, one hot key), int64 payloads and a string
payload; then runs

    mgjoin join --r R --s S --on k --how KIND --gpus G --out-dir OUT --format parquet

for every join kind, and the same with byte-string (S) keys, and compares the Parquet output (read with
pyarrow) with the plain-Python join as multisets of rows; --count too. Then the bad inputs: unicode keys
against byte-string keys or numbers, a U element that holds no code point, a CLI built without Arrow: one line naming the column or file, exit 2, nothing written.

Exit status: 0 when everything agrees, 1 on any difference, 77 (ctest's skip) when the CLI was built
without Parquet or numpy/pyarrow cannot be imported.

    python3 tests/cli/npy_strings_compare.py --mgjoin build/mgjoin --parquet ON [--gpus G] [--seed S]
"""
import collections
import os
import sys

import cli_compare
from cli_compare import check, compare_main, run

KINDS = ["inner", "left", "right", "full", "semi", "anti"]


def key_pool(rng):
    """Values that share long prefixes, hold non-ASCII, astral and NUL characters, or are empty."""
    pool = ["", "a", "A", "é", "中文", "😀", "x\x00y", "hot"]
    pool += ["prefix-" * 6 + str(i) for i in range(12)]
    pool += ["".join(rng.choice("abcé中😀") for _ in range(rng.randrange(1, 9))) for _ in range(30)]
    return pool


def draw(rng, pool, n):
    return [("hot" if rng.random() < 0.2 else rng.choice(pool)) for _ in range(n)]


def reference(r_keys, s_keys, how):
    """The join in plain Python: rows (key, r row, s row) with None for a side without a match."""
    s_rows = collections.defaultdict(list)
    for j, k in enumerate(s_keys):
        s_rows[k].append(j)
    out = collections.Counter()
    matched_s = set()
    for i, k in enumerate(r_keys):
        js = s_rows.get(k, [])
        if how == "semi":
            if js:
                out[(k, i)] += 1
            continue
        if how == "anti":
            if not js:
                out[(k, i)] += 1
            continue
        for j in js:
            out[(k, i, j)] += 1
            matched_s.add(j)
        if not js and how in ("left", "full"):
            out[(k, i, None)] += 1
    if how in ("right", "full"):
        for j, k in enumerate(s_keys):
            if j not in matched_s:
                out[(k, None, j)] += 1
    return out


def got_rows(pq, path, how):
    t = pq.read_table(path)
    cols = ["key", "r.row"] + ([] if how in ("semi", "anti") else ["s.row"])
    return collections.Counter(zip(*[t.column(c).to_pylist() for c in cols])), t


def compare(mgjoin, np, pq, d, r_keys, s_keys, dtype, gpus, label):
    for side, keys in (("R", r_keys), ("S", s_keys)):
        os.makedirs(f"{d}/{side}", exist_ok=True)
        values = [k.encode() for k in keys] if dtype == "S" else keys
        np.save(f"{d}/{side}/k.npy", np.array(values, dtype=dtype or "U"))  # "U": numpy's width; no rows: U1
        np.save(f"{d}/{side}/row.npy", np.arange(len(keys), dtype=np.int64))
    np.save(f"{d}/S/name.npy", np.array([f"s{j}·" for j in range(len(s_keys))], dtype="U"))  # a string payload
    decoded = (lambda k: k.encode()) if dtype == "S" else (lambda k: k)
    r_vals = [decoded(k) for k in r_keys]
    s_vals = [decoded(k) for k in s_keys]
    for how in KINDS:
        out = f"{d}/out-{label}-{how}"
        res = run(mgjoin, ["join", "--r", "R", "--s", "S", "--on", "k", "--how", how, "--gpus", str(gpus), "-q",
                           "--out-dir", out, "--format", "parquet"], d)
        check(res.returncode == 0, f"{label} {how}: exit {res.returncode}: {res.stderr.strip()}")
        if res.returncode:
            continue
        want = reference(r_vals, s_vals, how)
        got, table = got_rows(pq, f"{out}/part-0.parquet", how)
        check(got == want, f"{label} {how}: {sum(got.values())} rows, the reference {sum(want.values())}; "
                           f"only mgjoin: {list((got - want).items())[:3]}, only the reference: {list((want - got).items())[:3]}")
        key_type = str(table.schema.field("key").type)
        check(key_type == ("binary" if dtype == "S" else "string"), f"{label} {how}: key column of type {key_type}")
        if how not in ("semi", "anti"):
            names = table.column("s.name").to_pylist()
            rows = table.column("s.row").to_pylist()
            check(all(n == (None if j is None else f"s{j}·") for n, j in zip(names, rows)),
                  f"{label} {how}: the string payload s.name is not its row's")
        check_npy_output(mgjoin, np, d, out + "-npy", how, gpus, want, dtype, label)
        count = run(mgjoin, ["join", "--r", "R", "--s", "S", "--on", "k", "--how", how, "--gpus", str(gpus), "--count"], d)
        check(count.stdout.strip() == str(sum(want.values())), f"{label} {how} --count: {count.stdout.strip()} {count.stderr.strip()}")


def check_npy_output(mgjoin, np, d, out, how, gpus, want, dtype, label):
    """The same join to .npy files (the default for .npy inputs): the strings as NumPy's U or S columns, a
    side an outer join misses marked by r.valid / s.valid (its string written empty)."""
    res = run(mgjoin, ["join", "--r", "R", "--s", "S", "--on", "k", "--how", how, "--gpus", str(gpus), "-q", "--out-dir", out], d)
    check(res.returncode == 0, f"{label} {how} to .npy: exit {res.returncode}: {res.stderr.strip()}")
    if res.returncode:
        return
    load = lambda name: np.load(f"{out}/{name}.npy").tolist() if os.path.exists(f"{out}/{name}.npy") else None  # noqa: E731
    key, r_row = load("key"), load("r.row")
    kind = np.load(f"{out}/key.npy").dtype.kind
    check(kind == ("S" if dtype == "S" else "U"), f"{label} {how} to .npy: key of dtype kind {kind}")
    r_ok = load("r.valid") or [True] * len(key)
    if how in ("semi", "anti"):
        got = collections.Counter(zip(key, r_row))
    else:
        s_row, name = load("s.row"), load("s.name")
        s_ok = load("s.valid") or [True] * len(key)
        got = collections.Counter((k, i if a else None, j if b else None) for k, i, a, j, b in zip(key, r_row, r_ok, s_row, s_ok))
        check(all(n == (f"s{j}·" if b else "") for n, j, b in zip(name, s_row, s_ok)),
              f"{label} {how} to .npy: the string payload s.name is not its row's")
    check(got == want, f"{label} {how} to .npy: {sum(got.values())} rows, the reference {sum(want.values())}; "
                       f"only mgjoin: {list((got - want).items())[:3]}, only the reference: {list((want - got).items())[:3]}")


def check_bad_inputs(mgjoin, without_arrow, np, pq, d):
    def refused(binary, args, words, what):
        cli_compare.refused(binary, d, args, words, what)

    for name, values in (("U", np.array(["a", "b"])), ("B", np.array([b"a", b"b"])), ("I", np.array([1, 2])),
                         ("F", np.array([1.5, 2.5]))):
        os.makedirs(f"{d}/{name}", exist_ok=True)
        np.save(f"{d}/{name}/k.npy", values)
    refused(mgjoin, ["--r", "U", "--s", "B", "--on", "k", "--format", "parquet"], ["U/k.npy", "B/k.npy", "string", "binary"],
            "unicode keys against byte-string keys")
    refused(mgjoin, ["--r", "I", "--s", "U", "--on", "k", "--format", "parquet"], ["I/k.npy", "U/k.npy"],
            "integer keys against unicode keys")
    os.makedirs(f"{d}/X", exist_ok=True)
    bad = np.array(["ab", "cd"], dtype="U2")
    raw = bytearray(bad.tobytes())
    raw[8:12] = (0x110000).to_bytes(4, "little")  # element 1's first code point: past U+10FFFF
    np.save(f"{d}/X/k.npy", np.frombuffer(bytes(raw), dtype="U2"))
    refused(mgjoin, ["--r", "X", "--s", "U", "--on", "k", "--format", "parquet"], ["X/k.npy", "element 1", "0x110000"],
            "a U element that is no code point")
    # A Parquet string column whose bytes are not UTF-8 (pyarrow writes and Arrow's Parquet reader reads it
    # unchecked): .npy output refuses it (it decodes into more code points than its width counts).
    import pyarrow as pa
    offsets = pa.py_buffer(np.array([0, 1, 4], dtype=np.int32).tobytes())
    bad_text = pa.Array.from_buffers(pa.utf8(), 2, [None, offsets, pa.py_buffer(b"a\xc3\x80\x80")])
    pq.write_table(pa.table({"k": pa.array(["a", "b"]), "t": bad_text}), f"{d}/bad_utf8.parquet")
    refused(mgjoin, ["--r", "bad_utf8.parquet", "--s", "U", "--on", "k", "--format", "npy", "-q"], ["r.t", "not valid UTF-8"],
            "an output string that is not UTF-8, to .npy")
    if without_arrow:
        refused(without_arrow, ["--r", "U", "--s", "U", "--on", "k"], ["U/k.npy", "built without"],
                "string keys where the CLI has no Arrow")


def compare_all(a, rng, d, np, pq):
    mgjoin = a.mgjoin
    without = os.path.abspath(a.mgjoin_without_arrow) if a.mgjoin_without_arrow else None
    pool = key_pool(rng)
    r_keys, s_keys = draw(rng, pool, rng.randrange(150, 400)), draw(rng, pool, rng.randrange(100, 300))
    compare(mgjoin, np, pq, d, r_keys, s_keys, None, a.gpus, "unicode keys")
    ascii_pool = [k for k in pool if k.isascii()]
    compare(mgjoin, np, pq, d, draw(rng, ascii_pool, 257), draw(rng, ascii_pool, 131), "S", a.gpus, "byte-string keys")
    compare(mgjoin, np, pq, d, ["same"] * 40, ["same"] * 7 + [""], None, a.gpus, "all keys equal")
    compare(mgjoin, np, pq, d, ["only"], [], None, a.gpus, "one row against none")
    check_bad_inputs(mgjoin, without, np, pq, d)


def more_args(ap):
    ap.add_argument("--mgjoin-without-arrow", default=None, help="the CLI built with MGJOIN_PARQUET=OFF")
    ap.add_argument("--gpus", type=int, default=0)


if __name__ == "__main__":
    sys.exit(compare_main("mgjoin-npy-strings-", ["numpy", "pyarrow.parquet"], compare_all, more_args))
