"""Composite keys over 8 bytes (two int64 columns and wider), which the engine joins on a 64-bit hash of
their columns and then verifies pair by pair: every join kind and output form against a reference that is
not mgjoin (a Python dict join, conftest.reference_maps, and DuckDB), on random tables (the seed is in
pytest's header: MGJOIN_TEST_SEED=N replays it) and adversarial ones, under the engine's hash and under
the weak one of MGJOIN_TEST_KEY_HASH=weak, which makes distinct keys collide in masses."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import mgjoin
from conftest import as_pairs, duckdb_maps, reference_maps

HOWS = ["inner", "left", "right", "full", "semi", "anti", "right_semi", "right_anti"]
I64 = np.iinfo(np.int64)


@pytest.fixture(params=["strong", "weak"])
def key_hash(request, monkeypatch):
    """The hash the engine joins wide keys on: its own, or the test hook's weak one."""
    if request.param == "weak":
        monkeypatch.setenv("MGJOIN_TEST_KEY_HASH", "weak")
    else:
        monkeypatch.delenv("MGJOIN_TEST_KEY_HASH", raising=False)
    return request.param


def pairs(maps):
    """Gather maps as sorted rows: (left, right) pairs, or one side's rows where the other is None."""
    left_rows, right_rows = maps
    return as_pairs(right_rows, None) if left_rows is None else as_pairs(left_rows, right_rows)


def check_maps(left_keys, right_keys, how, where, **kwargs):
    """The join's gather maps and count against the dict reference (and DuckDB's, as pairs)."""
    left = {f"l{i}": k for i, k in enumerate(left_keys)}
    right = {f"r{i}": k for i, k in enumerate(right_keys)}
    on = dict(left_on=list(left), right_on=list(right), how=how, **where, **kwargs)
    got = mgjoin.join(left, right, output="gather_maps", **on)
    want = reference_maps(left_keys, right_keys, how)
    assert pairs(got) == pairs(want), how
    duck = duckdb_maps([pa.array(k) for k in left_keys], [pa.array(k) for k in right_keys], how)
    assert pairs(got) == pairs(duck), how
    assert mgjoin.join(left, right, output="count", **on) == len(want[0] if want[0] is not None else want[1])


def random_wide_keys(rng, n, m, distinct=60):
    """(int64, int64, int32) keys drawn from a pool shared in part: duplicates, matches and misses."""
    pool = np.stack([rng.integers(I64.min, I64.max, distinct, dtype=np.int64, endpoint=True),
                     rng.integers(-3, 3, distinct), rng.integers(-5, 5, distinct)], axis=1)
    lpick = rng.integers(0, 2 * distinct // 3, n)
    rpick = rng.integers(distinct // 3, distinct, m)
    types = (np.int64, np.int64, np.int32)
    return ([pool[lpick, c].astype(t) for c, t in enumerate(types)],
            [pool[rpick, c].astype(t) for c, t in enumerate(types)])


@pytest.mark.parametrize("how", HOWS)
def test_random_wide_keys_agree_with_the_references(rng, how, where, key_hash):
    left, right = random_wide_keys(rng, 400, 300)
    check_maps(left, right, how, where)


@pytest.mark.parametrize("how", HOWS)
def test_adversarial_wide_keys(rng, how, where, key_hash):
    n = 150
    cases = {
        "every row one key": ([np.full(n, I64.min), np.full(n, I64.max)], [np.full(90, I64.min), np.full(90, I64.max)]),
        "one hot key among others": (
            [np.where(np.arange(n) % 3 == 0, 8, 0).astype(np.int64), np.where(np.arange(n) % 3 == 0, 1, 7).astype(np.int64)],
            [np.zeros(120, np.int64), np.where(np.arange(120) % 4 == 0, 1, 7).astype(np.int64)]),
        "keys differing only in the second column": (
            [np.full(n, -5, np.int64), (np.arange(n) % 40).astype(np.int64)],
            [np.full(100, -5, np.int64), (np.arange(100) * 2 % 70).astype(np.int64)]),
        "signed extremes": (
            [np.array([I64.min, I64.min, -1, 0, I64.max, I64.max], np.int64),
             np.array([I64.max, I64.min, 0, -1, I64.min, I64.max], np.int64)],
            [np.array([I64.max, I64.min, 0, -1, I64.min], np.int64),
             np.array([I64.min, I64.max, -1, 0, I64.max], np.int64)]),
        "empty left": ([np.zeros(0, np.int64)] * 2, [np.arange(5, dtype=np.int64)] * 2),
        "empty right": ([np.arange(5, dtype=np.int64)] * 2, [np.zeros(0, np.int64)] * 2),
        "one row each, equal": ([np.array([3], np.int64), np.array([-4], np.int64)],
                                [np.array([3], np.int64), np.array([-4], np.int64)]),
        "one row each, differing in the second column": ([np.array([3], np.int64), np.array([-4], np.int64)],
                                                          [np.array([3], np.int64), np.array([4], np.int64)]),
    }
    for label, (left, right) in cases.items():
        try:
            check_maps(left, right, how, where)
        except AssertionError as e:
            raise AssertionError(f"{label}: {e}") from e


@pytest.mark.parametrize("how", ["inner", "left", "right", "full"])
def test_wide_key_columns_come_back_with_their_types(rng, how, key_hash):
    """A key of int32 against int64 and two int64 columns: the output key columns hold both sides' values
    in the type that holds both (int64), as for keys of at most 8 bytes."""
    n, m = 200, 150
    left = {"a": rng.integers(-4, 4, n).astype(np.int32), "b": rng.integers(-3, 3, n), "c": rng.integers(0, 3, n),
            "v": rng.random(n)}
    right = {"a": rng.integers(-4, 4, m).astype(np.int64), "b": rng.integers(-3, 3, m), "c": rng.integers(0, 3, m),
             "w": rng.integers(0, 99, m).astype(np.uint8)}
    got = mgjoin.join(left, right, on=["a", "b", "c"], how=how, gpus=0)
    lr, rr = reference_maps([left[k] for k in "abc"], [right[k] for k in "abc"], how)
    assert got.num_rows == len(lr)
    assert got.schema.field("a").type == pa.int64()
    assert got.schema.field("b").type == pa.int64()
    want = sorted(tuple(int((left if i >= 0 else right)[k][i if i >= 0 else j]) for k in "abc") for i, j in zip(lr, rr))
    assert sorted(zip(*(got.column(k).to_pylist() for k in "abc"))) == want


def test_wide_keys_of_floats_and_bools_compare_by_value(key_hash):
    """float32 against float64 (-0.0 equals 0.0, NaN equals NaN) beside an int64 and a bool column."""
    nan = float("nan")
    left = [np.array([0.0, -0.0, nan, 1.5, 0.1], np.float32), np.array([1, 1, 2, 3, 4], np.int64),
            np.array([True, True, False, True, True])]
    right = [np.array([-0.0, nan, 1.5, 0.1, 0.0], np.float64), np.array([1, 2, 3, 4, 1], np.int64),
             np.array([True, False, False, True, True])]
    for how in ("inner", "full", "semi", "anti"):
        got = mgjoin.join({f"l{i}": c for i, c in enumerate(left)}, {f"r{i}": c for i, c in enumerate(right)},
                          left_on=["l0", "l1", "l2"], right_on=["r0", "r1", "r2"], how=how, output="gather_maps", gpus=0)
        want = reference_maps(left, right, how)
        assert pairs(got) == pairs(want), how
    # float32 0.1 is not float64 0.1: row 4 of the left matches nothing (DuckDB compares so too).
    assert mgjoin.join({"a": left[0][4:], "b": left[1][4:], "c": left[2][4:]},
                       {"a": right[0][3:4], "b": right[1][3:4], "c": right[2][3:4]}, on=["a", "b", "c"],
                       output="count", gpus=0) == 0


def test_wide_keys_whose_kinds_differ_are_refused_naming_both_columns():
    k = np.arange(4, dtype=np.int64)
    with pytest.raises(ValueError, match=r"key columns 'b' \(left table, int64\) and 'y' \(right table, float64\) cannot be compared"):
        mgjoin.join({"a": k, "b": k}, {"x": k, "y": k.astype(np.float64)}, left_on=["a", "b"], right_on=["x", "y"],
                    gpus=0)


def test_an_unknown_test_hash_is_refused(monkeypatch):
    monkeypatch.setenv("MGJOIN_TEST_KEY_HASH", "feeble")
    k = np.arange(4, dtype=np.int64)
    with pytest.raises(ValueError, match="MGJOIN_TEST_KEY_HASH 'feeble'"):
        mgjoin.join({"a": k, "b": k}, {"a": k, "b": k}, on=["a", "b"], gpus=0)
