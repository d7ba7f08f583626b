"""Shared helpers: a reference join by a Python dict, random tables, and GPU detection."""
from __future__ import annotations

import os
import random
from collections import defaultdict

import numpy as np
import pytest

import mgjoin


def pytest_report_header(config):
    return f"mgjoin {mgjoin.__version__} from {os.path.dirname(mgjoin.__file__)}; seed {SEED}"


SEED = int(os.environ.get("MGJOIN_TEST_SEED", random.SystemRandom().randrange(1 << 31)))


@pytest.fixture
def rng():
    """A NumPy generator from the printed seed (MGJOIN_TEST_SEED=N replays a run)."""
    return np.random.default_rng(SEED)


def gpu_count() -> int:
    return len(mgjoin.topology()["gpus"])


needs_gpu = pytest.mark.skipif(gpu_count() == 0, reason="needs a CUDA GPU")


def _value(v):
    """A key value as Python compares it, but NaN equal to NaN (as DuckDB joins floats)."""
    return "NaN" if isinstance(v, float) and v != v else v


def reference_maps(left_keys, right_keys, how):
    """(left_rows, right_rows) of a join by a dict of right rows per key, keys compared by value (Python
    ints and floats; -0.0 == 0.0, NaN == NaN): the pairs, then an outer join's unmatched left rows, then
    its unmatched right rows; semi and anti joins in left order (right_semi and right_anti: (None,
    right_rows) in right order)."""
    if how in ("right_semi", "right_anti"):
        rows, _ = reference_maps(right_keys, left_keys, how[len("right_"):])
        return None, rows
    lk = [tuple(map(_value, t)) for t in zip(*[np.asarray(c).tolist() for c in left_keys])]
    rk = [tuple(map(_value, t)) for t in zip(*[np.asarray(c).tolist() for c in right_keys])]
    rows = defaultdict(list)
    for j, k in enumerate(rk):
        rows[k].append(j)
    if how in ("semi", "anti"):
        keep = [i for i, k in enumerate(lk) if (k in rows) == (how == "semi")]
        return keep, None
    pairs = [(i, j) for i, k in enumerate(lk) for j in rows.get(k, [])]
    left_rows = [p[0] for p in pairs]
    right_rows = [p[1] for p in pairs]
    if how in ("left", "full"):
        matched = set(left_rows)
        extra = [i for i in range(len(lk)) if i not in matched]
        left_rows += extra
        right_rows += [-1] * len(extra)
    if how in ("right", "full"):
        matched = set(right_rows)
        extra = [j for j in range(len(rk)) if j not in matched]
        left_rows += [-1] * len(extra)
        right_rows += extra
    return left_rows, right_rows


def as_pairs(left_rows, right_rows):
    """The output rows as a sorted list of (left row, right row), for comparisons without order. NumPy sorts
    them: Python's sort of the tuples took 3 times as long (1.8 s for 350 000 pairs)."""
    if right_rows is None:
        return np.sort(np.asarray(left_rows, dtype=np.int64)).tolist()
    left, right = np.asarray(left_rows, dtype=np.int64), np.asarray(right_rows, dtype=np.int64)
    order = np.lexsort((right, left))
    return list(zip(left[order].tolist(), right[order].tolist()))


def join_places():
    """Where the parametrized joins run: the CPU path always, and the GPUs where there are any.
    MGJOIN_TEST_PLACES=gpus leaves the CPU path's cases out (a GPU machine's run, whose commit CI has run on
    the CPU: half the cases, and a device call's minutes go to what only a GPU answers)."""
    places = ["cpu"] + (["gpus"] if gpu_count() else [])
    wanted = os.environ.get("MGJOIN_TEST_PLACES")
    if wanted is None:
        return places
    unknown = set(wanted.split(",")) - {"cpu", "gpus"}
    if unknown:
        raise pytest.UsageError(f"MGJOIN_TEST_PLACES={wanted}: expected cpu, gpus or both, comma-separated")
    return [p for p in places if p in wanted.split(",")]


def _test_gpus():
    """MGJOIN_TEST_GPUS=N: the `where` fixture's GPU joins on N GPUs (default: the engine's choice), so that
    one machine runs the suite at g = 1, 2, 4 in turn."""
    gpus = os.environ.get("MGJOIN_TEST_GPUS")
    return int(gpus) if gpus else None


@pytest.fixture(scope="module")
def _module_engine():
    """One Engine for a module's GPU joins (taking the GPUs' memory once), closed at its end."""
    if gpu_count() == 0:
        yield None
        return
    with mgjoin.Engine(gpus=_test_gpus()) as engine:
        yield engine


@pytest.fixture(scope="module")
def gpu_engine():
    """Engines by GPU count for a module's GPU joins, each made once: a join without an engine starts
    the GPUs afresh (0.8-2.5 s), which made the GPU tests take minutes. Each takes 4 GiB a GPU, so that
    several live beside the module's other engines."""
    engines = {}

    def get(gpus=None):  # None: every GPU (mgjoin.Engine refuses -1)
        if gpus not in engines:
            engines[gpus] = mgjoin.Engine(gpus=gpus, gpu_memory_limit="4G")
        return engines[gpus]

    yield get
    for engine in engines.values():
        engine.close()


@pytest.fixture(params=join_places())
def where(request, _module_engine):
    """join() arguments that run a join on the CPU path, or on the GPUs (one Engine per test module)."""
    return {"gpus": 0} if request.param == "cpu" else {"engine": _module_engine}


# The SQL of each join kind over tables l and r with row-number columns rn: (left rn, right rn) per row.
_DUCKDB_JOINS = {
    "inner": "SELECT l.rn AS lrn, r.rn AS rrn FROM l JOIN r ON {on}",
    "left": "SELECT l.rn AS lrn, r.rn AS rrn FROM l LEFT JOIN r ON {on}",
    "right": "SELECT l.rn AS lrn, r.rn AS rrn FROM l RIGHT JOIN r ON {on}",
    "full": "SELECT l.rn AS lrn, r.rn AS rrn FROM l FULL JOIN r ON {on}",
    "semi": "SELECT l.rn AS lrn FROM l SEMI JOIN r ON {on}",
    "anti": "SELECT l.rn AS lrn FROM l ANTI JOIN r ON {on}",
    "right_semi": "SELECT r.rn AS rrn FROM r SEMI JOIN l ON {on}",
    "right_anti": "SELECT r.rn AS rrn FROM r ANTI JOIN l ON {on}",
}


def duckdb_maps(left_keys, right_keys, how, nulls_equal=False):
    """(left_rows, right_rows) of DuckDB's join of two lists of key columns (pyarrow arrays, nulls as
    SQL's): each row's row numbers, -1 where a side is missing; (rows, None) for semi and anti joins, (None,
    rows) for right_semi and right_anti; rows in no particular order."""
    import duckdb
    import pyarrow as pa

    con = duckdb.connect()
    for name, keys in (("l", left_keys), ("r", right_keys)):
        columns = {f"k{i}": k for i, k in enumerate(keys)}
        columns["rn"] = pa.array(np.arange(len(keys[0]), dtype=np.int64))
        con.register(name, pa.table(columns))
    equal = "IS NOT DISTINCT FROM" if nulls_equal else "="
    on = " AND ".join(f"l.k{i} {equal} r.k{i}" for i in range(len(left_keys)))
    rows = con.sql(_DUCKDB_JOINS[how].format(on=on)).to_arrow_table()
    columns = [np.asarray(c.fill_null(-1).to_numpy(), dtype=np.int64) for c in rows.columns]
    if how in ("semi", "anti"):
        return columns[0], None
    if how in ("right_semi", "right_anti"):
        return None, columns[0]
    return columns[0], columns[1]
