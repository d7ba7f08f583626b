"""Files and datasets as join() inputs (issue 43, item 3): a Parquet file, a folder of Parquet files (hive
partition folders read as columns), an Arrow IPC (Feather) file and a pyarrow.dataset.Dataset, of which
only the columns the join uses are read. DuckDB's ``read_parquet`` (or DuckDB over pyarrow's reading of
the same file) is the reference; bad files are one-line errors naming the file and column."""
from __future__ import annotations

import pathlib

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import mgjoin
from conftest import where  # noqa: F401 (a fixture)

duckdb = pytest.importorskip("duckdb")

HOWS = ["inner", "left", "right", "full", "semi", "anti"]
_SQL_JOIN = {"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN", "full": "FULL JOIN",
             "semi": "SEMI JOIN", "anti": "ANTI JOIN"}


def rows(table):
    """A table's rows as a sorted list of tuples (None sorts first), for comparisons without order."""
    columns = [c.to_pylist() for c in (table.columns if hasattr(table, "columns") else table)]
    return sorted(zip(*columns), key=lambda row: [(v is not None, v) for v in row])


def duckdb_rows(sql, **tables):
    con = duckdb.connect()
    for name, table in tables.items():
        con.register(name, table)
    return rows(con.sql(sql).to_arrow_table())


def nullable(rng, n, low, high, dtype=np.int64, null_share=0.15):
    return pa.array(rng.integers(low, high, n).astype(dtype), mask=rng.random(n) < null_share)


def left_table(rng, n=211):
    return pa.table({"k": nullable(rng, n, 0, 60), "v": nullable(rng, n, -1000, 1000),
                     "s": pa.array([None if i % 7 == 3 else f"s{i}" for i in range(n)])})


def right_table(rng, n=157, key="k"):
    return pa.table({key: nullable(rng, n, 30, 90, np.int32), "w": pa.array(rng.random(n), mask=rng.random(n) < 0.1),
                     "d": pa.array(np.arange(n, dtype=np.int32) % 50, pa.int32()).cast(pa.date32())})


@pytest.mark.parametrize("how", HOWS)
def test_a_parquet_file_of_odd_row_groups_joins_a_feather_file_as_duckdb_joins_them(tmp_path, rng, where, how):
    left, right = left_table(rng), right_table(rng)
    pq.write_table(left, tmp_path / "l.parquet", row_group_size=13)
    feather.write_feather(right, tmp_path / "r.feather")  # LZ4-compressed Arrow IPC
    assert pq.ParquetFile(tmp_path / "l.parquet").num_row_groups == 17
    out = mgjoin.join(str(tmp_path / "l.parquet"), tmp_path / "r.feather", on="k", how=how, **where)
    assert rows(out) == duckdb_join_feather(how, tmp_path / "l.parquet", right)
    assert out.schema.field("s").type == pa.string() and out.column_names[:3] == ["k", "v", "s"]
    count = mgjoin.join(tmp_path / "l.parquet", tmp_path / "r.feather", on="k", how=how, output="count", **where)
    assert count == len(out)


def duckdb_join_feather(how, parquet, right):
    """DuckDB's join of a Parquet file and the table of a Feather file (DuckDB has no Feather reader)."""
    return duckdb_rows(f"SELECT * FROM read_parquet('{parquet}') AS l {_SQL_JOIN[how]} r USING (k)", r=right)


@pytest.mark.parametrize("nulls_equal", [False, True])
def test_null_keys_read_from_files_follow_sql(tmp_path, rng, where, nulls_equal):
    pq.write_table(left_table(rng), tmp_path / "l.parquet", row_group_size=50)
    pq.write_table(right_table(rng, key="rk"), tmp_path / "r.parquet", row_group_size=31)
    equal = "IS NOT DISTINCT FROM" if nulls_equal else "="
    for how in ("inner", "left", "full", "anti"):
        out = mgjoin.join(tmp_path / "l.parquet", tmp_path / "r.parquet", left_on="k", right_on="rk", how=how,
                          nulls_equal=nulls_equal, **where)
        select = "l.k, l.v, l.s" + ("" if how == "anti" else ", r.rk, r.w, r.d")
        want = duckdb_rows(f"SELECT {select} FROM read_parquet('{tmp_path / 'l.parquet'}') AS l {_SQL_JOIN[how]} "
                           f"read_parquet('{tmp_path / 'r.parquet'}') AS r ON l.k {equal} r.rk")
        assert rows(out) == want, how


def write_partitioned(folder, rng, parts, files_per_part=3):
    """A hive-partitioned dataset: folder/part=P/file-I.parquet, several files of odd row-group sizes per
    partition, one of them empty, and a partition of null (pyarrow's __HIVE_DEFAULT_PARTITION__)."""
    for p in parts:
        sub = folder / f"part={'__HIVE_DEFAULT_PARTITION__' if p is None else p}"
        sub.mkdir(parents=True)
        for i in range(files_per_part):
            n = 0 if i == 1 else int(rng.integers(1, 90))
            table = pa.table({"id": nullable(rng, n, 0, 40), "x": pa.array(rng.integers(0, 10**6, n), pa.int64()),
                              "name": pa.array([f"n{j % 11}" for j in range(n)], pa.string()).dictionary_encode()})
            pq.write_table(table, sub / f"file-{i}.parquet", row_group_size=max(1, n // 3 + 1))


@pytest.mark.parametrize("how", ["inner", "left", "full", "semi", "anti"])
def test_a_hive_partitioned_dataset_reads_its_partition_as_a_key_and_a_payload(tmp_path, rng, where, how):
    write_partitioned(tmp_path / "facts", rng, [1, 2, 5, 7, None])
    dims = pa.table({"part": pa.array([1, 2, 3, 7, None], pa.int64()),
                     "label": ["one", "two", "three", "seven", "null"]})
    pq.write_table(dims, tmp_path / "dims.parquet")
    glob = f"read_parquet('{tmp_path / 'facts'}/**/*.parquet', hive_partitioning=true)"
    out = mgjoin.join(tmp_path / "facts", str(tmp_path / "dims.parquet"), on="part", how=how, **where)
    columns = "l.id, l.x, CAST(l.name AS VARCHAR), l.part" + ("" if how in ("semi", "anti") else ", r.label")
    if how == "full":
        columns = columns.replace("l.part", "COALESCE(l.part, r.part)")
    dims_sql = f"read_parquet('{tmp_path / 'dims.parquet'}')"
    want = duckdb_rows(f"SELECT {columns} FROM {glob} AS l {_SQL_JOIN[how]} {dims_sql} AS r ON l.part = r.part")
    order = ["id", "x", "name", "part"] + ([] if how in ("semi", "anti") else ["label"])
    got = out.select(order)
    got = got.set_column(2, "name", got.column("name").cast(pa.string()))
    assert rows(got) == want
    # pyarrow reads the folder names as int32: one key column with the right's int64 (semi, anti: as it is)
    assert out.schema.field("part").type == (pa.int32() if how in ("semi", "anti") else pa.int64())
    assert pa.types.is_dictionary(out.schema.field("name").type)  # dictionary-encoded payload kept as it is


def test_a_partition_column_is_a_payload_of_a_join_on_another_key(tmp_path, rng, where):
    write_partitioned(tmp_path / "facts", rng, [3, 4], files_per_part=4)
    other = pa.table({"id": pa.array(np.arange(0, 40, 3), pa.int64()), "y": pa.array(np.arange(14) * 1.5)})
    out = mgjoin.join(tmp_path / "facts", other, on="id", how="left", left_columns=["part"], **where)
    assert out.column_names == ["id", "part", "y"] and out.schema.field("part").type == pa.int32()
    want = duckdb_rows(f"SELECT l.id, l.part, r.y FROM read_parquet('{tmp_path / 'facts'}/**/*.parquet', "
                       "hive_partitioning=true) AS l LEFT JOIN other AS r ON l.id = r.id", other=other)
    assert rows(out) == want


def test_empty_files_and_an_empty_dataset_join(tmp_path, where):
    empty = pa.table({"k": pa.array([], pa.int64()), "v": pa.array([], pa.string())})
    pq.write_table(empty, tmp_path / "empty.parquet")
    feather.write_feather(empty, tmp_path / "empty.arrow")
    right = pa.table({"k": pa.array([1, 2], pa.int64()), "w": [10, 20]})
    out = mgjoin.join(tmp_path / "empty.parquet", right, on="k", how="right", **where)
    assert out.to_pydict() == {"k": [1, 2], "v": [None, None], "w": [10, 20]}
    assert out.schema.field("v").type == pa.string()
    assert mgjoin.join(tmp_path / "empty.arrow", tmp_path / "empty.parquet", on="k", output="count", **where) == 0
    (tmp_path / "set").mkdir()
    pq.write_table(empty, tmp_path / "set" / "a.parquet")
    pq.write_table(pa.table({"k": pa.array([2, 3], pa.int64()), "v": ["b", "c"]}), tmp_path / "set" / "b.parquet")
    pq.write_table(empty, tmp_path / "set" / "c.parquet")
    out = mgjoin.join(tmp_path / "set", right, on="k", how="full", **where)
    assert rows(out) == rows(pa.table({"k": [1, 2, 3], "v": [None, "b", "c"], "w": [10, 20, None]}))


def decoded(table):
    """The table with its dictionary columns decoded to their values."""
    return pa.table({name: column.cast(column.type.value_type) if pa.types.is_dictionary(column.type) else column
                     for name, column in zip(table.column_names, table.columns)})


def test_dictionary_encoded_columns_read_as_pyarrow_reads_them(tmp_path, rng, where):
    n = 300
    keys = rng.integers(0, 25, n)
    table = pa.table({"k": pa.array(keys), "cat": pa.array([f"c{k % 4}" for k in keys]).dictionary_encode(),
                      "code": pa.array(keys % 3, pa.int32()).dictionary_encode()})
    pq.write_table(table, tmp_path / "t.parquet", use_dictionary=True, row_group_size=64)
    feather.write_feather(table, tmp_path / "t.arrow", compression="uncompressed")
    right = pa.table({"k": pa.array(np.arange(0, 25, 2)), "w": pa.array(np.arange(0, 25, 2) * 10)})
    for path in (tmp_path / "t.parquet", tmp_path / "t.arrow"):
        out = mgjoin.join(path, right, on="k", **where)
        read = ds.dataset(path, format="parquet" if path.suffix == ".parquet" else "ipc").to_table()
        assert out.schema.field("cat").type == read.schema.field("cat").type
        assert pa.types.is_dictionary(out.schema.field("cat").type)
        want = duckdb_rows("SELECT * FROM l JOIN r USING (k)", l=decoded(read), r=right)
        assert rows(decoded(out)) == want


def test_a_dictionary_encoded_integer_key_written_to_parquet_reads_back_as_integers(tmp_path, where):
    pq.write_table(pa.table({"k": pa.array([1, 2, 1, None, 3]).dictionary_encode()}), tmp_path / "k.parquet")
    feather.write_feather(pa.table({"k": pa.array([1, 2]).dictionary_encode()}), tmp_path / "k.arrow")
    out = mgjoin.join(tmp_path / "k.parquet", {"k": np.array([1, 3])}, on="k", how="left", **where)
    assert out.schema.field("k").type == pa.int64() and rows(out) == [(None,), (1,), (1,), (2,), (3,)]
    with pytest.raises(ValueError, match=r"left key column 'k': unsupported type dictionary"):
        mgjoin.join(tmp_path / "k.arrow", {"k": np.array([1, 3])}, on="k", **where)  # IPC keeps the dictionary


def test_a_pyarrow_dataset_is_read_as_its_schema_and_filter_say(tmp_path, rng, where):
    write_partitioned(tmp_path / "facts", rng, [1, 2, 3])
    dataset = ds.dataset(tmp_path / "facts", format="parquet", partitioning="hive")
    right = pa.table({"id": pa.array(np.arange(40), pa.int64()), "w": pa.array(np.arange(40) % 7)})
    out = mgjoin.join(dataset.filter(ds.field("part") != 2), right, on="id", **where)
    whole = dataset.to_table()
    kept = whole.filter(pa.compute.not_equal(whole.column("part"), 2))
    assert rows(out.select(["id", "x", "part", "w"])) == duckdb_rows(
        "SELECT l.id, l.x, l.part, r.w FROM l JOIN r USING (id)", l=kept.drop_columns(["name"]), r=right)


def corrupt_column_chunk(path, column):
    """Overwrites the middle of one column chunk's compressed pages with other bytes: the file's footer
    still reads, but decoding that column fails."""
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(column)
    start, size = chunk.data_page_offset, chunk.total_compressed_size
    with open(path, "r+b") as f:
        f.seek(start + size // 4)
        f.write(b"\xff\x13" * (size // 8))


def test_only_the_columns_a_join_uses_are_read(tmp_path, rng, where):
    n = 5000
    table = pa.table({"k": pa.array(rng.integers(0, 100, n)), "v": pa.array(rng.integers(0, 10, n)),
                      "blob": pa.array([f"{i:08d}" * 40 for i in range(n)])})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, compression="zstd", row_group_size=n, use_dictionary=False)
    corrupt_column_chunk(path, 2)
    with pytest.raises(Exception):
        pq.read_table(path, columns=["blob"])  # the column really is unreadable
    right = pa.table({"k": pa.array(np.arange(0, 100, 5))})
    expected = int(np.isin(table.column("k").to_numpy(), np.arange(0, 100, 5)).sum())
    assert mgjoin.join(path, right, on="k", output="count", **where) == expected  # the keys only
    left_rows, _ = mgjoin.join(path, right, on="k", output="gather_maps", **where)
    assert len(left_rows) == expected
    out = mgjoin.join(path, right, on="k", left_columns=["v"], **where)  # keys and the chosen payloads
    assert out.column_names == ["k", "v"] and len(out) == expected
    with pytest.raises(ValueError, match=rf"left table: cannot read column 'blob' of .*t\.parquet") as error:
        mgjoin.join(path, right, on="k", **where)  # every column is output by default: blob is read
    assert "\n" not in str(error.value) and isinstance(error.value.__cause__, (pa.ArrowException, OSError))


def test_a_missing_path_is_a_file_not_found_error_naming_it(tmp_path):
    missing = tmp_path / "nowhere.parquet"
    with pytest.raises(FileNotFoundError, match="right table: no such file or directory") as error:
        mgjoin.join({"k": np.arange(3)}, missing, on="k", gpus=0)
    assert error.value.filename == str(missing)


def test_a_truncated_or_empty_parquet_file_is_named(tmp_path):
    pq.write_table(pa.table({"k": np.arange(100)}), tmp_path / "whole.parquet")
    data = (tmp_path / "whole.parquet").read_bytes()
    (tmp_path / "cut.parquet").write_bytes(data[: len(data) // 2])
    (tmp_path / "zero.parquet").write_bytes(b"")
    for bad in ("cut.parquet", "zero.parquet"):
        message = rf"^left table: cannot read .*{bad} \(a corrupt or truncated Parquet"
        with pytest.raises(ValueError, match=message) as error:
            mgjoin.join(tmp_path / bad, tmp_path / "whole.parquet", on="k", gpus=0)
        assert "\n" not in str(error.value) and isinstance(error.value.__cause__, pa.ArrowException)


def test_a_truncated_file_in_a_dataset_is_named(tmp_path):
    (tmp_path / "set").mkdir()
    for i in range(3):
        pq.write_table(pa.table({"k": np.arange(10) + i}), tmp_path / "set" / f"part-{i}.parquet")
    path = tmp_path / "set" / "part-1.parquet"
    path.write_bytes(path.read_bytes()[:-9])
    with pytest.raises(ValueError, match=r"right table: cannot read .*part-1\.parquet"):
        mgjoin.join({"k": np.arange(5)}, tmp_path / "set", on="k", gpus=0)
    first = tmp_path / "set" / "part-0.parquet"  # the file pyarrow takes the schema from
    first.write_bytes(first.read_bytes()[:-9])
    with pytest.raises(ValueError, match=r"right table: cannot read .*part-0\.parquet"):
        mgjoin.join({"k": np.arange(5)}, tmp_path / "set", on="k", gpus=0)


def test_files_of_a_dataset_that_differ_in_a_column_the_join_reads_are_named(tmp_path):
    (tmp_path / "types").mkdir()
    pq.write_table(pa.table({"k": pa.array([1, 2], pa.int64()), "v": [1, 2]}), tmp_path / "types" / "a.parquet")
    pq.write_table(pa.table({"k": pa.array([1.5], pa.float64()), "v": [3]}), tmp_path / "types" / "b.parquet")
    with pytest.raises(ValueError, match=r"left table: column 'k' is double in .*b\.parquet but int64 in .*a\.parquet"):
        mgjoin.join(tmp_path / "types", {"k": np.arange(3)}, on="k", gpus=0)
    (tmp_path / "names").mkdir()
    pq.write_table(pa.table({"k": [1, 2], "v": [1, 2]}), tmp_path / "names" / "a.parquet")
    pq.write_table(pa.table({"k": [3], "u": [3]}), tmp_path / "names" / "b.parquet")
    with pytest.raises(ValueError, match=r"left table: .*b\.parquet has no column 'v', which .*a\.parquet has"):
        mgjoin.join(tmp_path / "names", {"k": np.arange(3)}, on="k", gpus=0)
    # A column the join does not read is not checked: the keys of both files agree.
    assert mgjoin.join(tmp_path / "names", {"k": np.arange(5)}, on="k", output="count", gpus=0) == 3


def test_a_key_column_missing_from_a_file_names_the_file_and_column(tmp_path):
    feather.write_feather(pa.table({"id": [1, 2]}), tmp_path / "r.arrow")
    with pytest.raises(ValueError, match=r"right table \(.*r\.arrow\) has no column 'k' \(its columns: id\)"):
        mgjoin.join({"k": np.arange(3)}, tmp_path / "r.arrow", on="k", gpus=0)


def test_a_file_of_another_format_or_an_empty_folder_is_refused(tmp_path):
    (tmp_path / "t.csv").write_text("k\n1\n")
    with pytest.raises(ValueError, match=r"left table: .*t\.csv is neither a Parquet file nor an Arrow IPC"):
        mgjoin.join(tmp_path / "t.csv", {"k": np.arange(3)}, on="k", gpus=0)
    (tmp_path / "nothing").mkdir()
    with pytest.raises(ValueError, match="holds no Parquet or Arrow IPC files"):
        mgjoin.join(tmp_path / "nothing", {"k": np.arange(3)}, on="k", gpus=0)


def test_a_path_like_and_a_folder_of_feather_files_are_read(tmp_path, where):
    (tmp_path / "arrows").mkdir()
    for i in range(3):
        feather.write_feather(pa.table({"k": np.arange(i, 30, 3), "v": np.arange(i, 30, 3) * 2}),
                              tmp_path / "arrows" / f"{i}.arrow")
    out = mgjoin.join(pathlib.PurePath(tmp_path / "arrows"), {"k": np.arange(0, 30, 2)}, on="k", **where)
    assert rows(out) == [(k, 2 * k) for k in range(0, 30, 2)]


@pytest.mark.parametrize("how", HOWS)
def test_a_folder_of_npy_columns_with_string_keys_joins_as_duckdb_joins_them(tmp_path, rng, where, how):
    # As `mgjoin join --r DIR` reads it: each .npy file a column named by its stem; NumPy's U and S strings.
    pool = np.array(["", "a", "é", "中文", "😀", "x\x00y", "prefix-" * 5 + "1", "prefix-" * 5 + "2"])
    for side, n in (("l", 97), ("r", 61)):
        (tmp_path / side).mkdir()
        np.save(tmp_path / side / "k.npy", pool[rng.integers(0, len(pool), n)])
        np.save(tmp_path / side / f"{side}v.npy", np.arange(n, dtype=np.int64))
        np.save(tmp_path / side / f"{side}b.npy", np.array([f"{side}{i}".encode() for i in range(n)]))
    out = mgjoin.join(tmp_path / "l", str(tmp_path / "r"), on="k", how=how, **where)
    assert out.schema.field("k").type == pa.string() and out.schema.field("lb").type == pa.binary()
    # NumPy's values (.tolist(): trailing NULs dropped, "x\x00y" kept whole), not pa.array's of the arrays.
    left = pa.table({n: pa.array(np.load(tmp_path / "l" / f"{n}.npy").tolist()) for n in ("k", "lv", "lb")})
    right = pa.table({n: pa.array(np.load(tmp_path / "r" / f"{n}.npy").tolist()) for n in ("k", "rv", "rb")})
    assert "x\x00y" in left.column("k").to_pylist() + right.column("k").to_pylist()
    cols = "l.k, l.lv, l.lb" if how in ("semi", "anti") else "COALESCE(l.k, r.k), l.lv, l.lb, r.rv, r.rb"
    names = ["k", "lv", "lb"] + ([] if how in ("semi", "anti") else ["rv", "rb"])  # the files' order is by name
    assert rows(out.select(names)) == duckdb_rows(f"SELECT {cols} FROM L l {_SQL_JOIN[how]} R r ON l.k = r.k", L=left, R=right)


def test_npy_columns_of_different_lengths_or_dimensions_are_named(tmp_path):
    (tmp_path / "t").mkdir()
    np.save(tmp_path / "t" / "a.npy", np.arange(3))
    np.save(tmp_path / "t" / "k.npy", np.arange(4))
    with pytest.raises(ValueError, match=r"left table: .*k\.npy has 4 rows, but .*a\.npy has 3"):
        mgjoin.join(tmp_path / "t", {"k": np.arange(3)}, on="k", gpus=0)
    np.save(tmp_path / "t" / "k.npy", np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"left table: .*k\.npy has 2 dimensions"):
        mgjoin.join(tmp_path / "t", {"k": np.arange(3)}, on="k", gpus=0)
    np.save(tmp_path / "t" / "k.npy", np.array([1, 2, 3], dtype=object))
    with pytest.raises(ValueError, match=r"left table: cannot read .*k\.npy"):
        mgjoin.join(tmp_path / "t", {"k": np.arange(3)}, on="k", gpus=0)
