"""Joins whose key columns hold nulls, with SQL's rules: a null key matches nothing (``=``), or, with
``nulls_equal``, matches the rows whose same key components are null (``IS NOT DISTINCT FROM``).

The engine's keys have no nulls, so the rows whose keys are all valid are joined by the engine and the
others around it, as whole NumPy steps (never a Python loop over rows):

- ``nulls_equal=False``: a row with a null in any key component matches nothing. Inner and semi joins
  leave it out; left, right and full joins output it as unmatched (the other side null); an anti join
  keeps it, as DuckDB's ``ANTI JOIN`` and SQL's ``NOT EXISTS`` do.
- ``nulls_equal=True``: rows of the same null pattern (which components are null) match on their other
  components: one more engine join per pattern present on both sides (a cross product of the two groups
  when every component is null).

The result is gather maps in the engine's row order (the pairs, then an outer join's unmatched left rows,
then its unmatched right rows, each in table order; semi and anti joins in table order), from which the
output table is gathered on the CPU (``table_from_maps``).
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Optional

import numpy as np

from ._dictionary_keys import decoded
from ._tables import Column, run_all, take

# run(left arrays, right arrays, left_on, right_on, how) -> (left_rows, right_rows or None): an engine
# join to gather maps with the caller's GPUs and options.
Run = Callable[[dict, dict, list, list, str], tuple]


def key_validity(meta: dict[str, Column], keys: list[str]) -> Optional[np.ndarray]:
    """Per key component, whether each row's value is valid (a bool matrix, components × rows), or None when
    no key component holds a null."""
    valid = [meta[k].valid for k in keys]
    if all(v is None for v in valid):
        return None
    rows = len(meta[keys[0]].values)
    return np.stack([np.ones(rows, dtype=bool) if v is None else v for v in valid])


def _rows_of(values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """values[rows] (a copy), or values as they are where `rows` are all of them."""
    return values if len(rows) == len(values) else values[rows]


def _sub_join(run: Run, kind: str, keys: tuple[list[str], list[str]], meta: tuple[dict, dict],
              rows: tuple[np.ndarray, np.ndarray], components: np.ndarray) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """The inner (or semi) join of the rows `rows` of each side on the key components `components`, as
    row numbers of the whole tables."""
    if len(components) == 0:  # every component null on both sides: each row matches each other row
        if kind == "semi":
            return rows[0] if len(rows[1]) else rows[0][:0], None
        return np.repeat(rows[0], len(rows[1])), np.tile(rows[1], len(rows[0]))
    on = [[keys[side][c] for c in components] for side in (0, 1)]
    arrays = [{name: _rows_of(meta[side][name].values, rows[side]) for name in on[side]} for side in (0, 1)]
    left_rows, right_rows = run(arrays[0], arrays[1], on[0], on[1], kind)
    return rows[0][left_rows], None if right_rows is None else rows[1][right_rows]


def _null_pattern_groups(valid: tuple[np.ndarray, np.ndarray]) -> list[tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]]:
    """(the valid components, (left rows, right rows)) of each pattern of null components present on both
    sides, the pattern without nulls left out."""
    width = valid[0].shape[0]
    weights = (1 << np.arange(width, dtype=np.int64))[:, None]
    codes = [(v * weights).sum(axis=0) for v in valid]
    groups = []
    for code in np.intersect1d(codes[0], codes[1]):
        if code == (1 << width) - 1:
            continue
        components = np.flatnonzero((int(code) >> np.arange(width)) & 1)
        groups.append((components, (np.flatnonzero(codes[0] == code), np.flatnonzero(codes[1] == code))))
    return groups


def maps_with_null_keys(run: Run, kind: str, keys: tuple[list[str], list[str]], meta: tuple[dict, dict],
                        valid: tuple[Optional[np.ndarray], Optional[np.ndarray]],
                        nulls_equal: bool) -> tuple[np.ndarray, Optional[np.ndarray]]:
    """(left_rows, right_rows) of a join of kind `kind` (the engine's: inner, left, right, full, semi, anti)
    whose keys hold nulls (`valid`: key_validity per side, None for a side without nulls), -1 where an
    outer join's side is missing; right_rows None for semi and anti joins."""
    n = tuple(len(meta[side][keys[side][0]].values) for side in (0, 1))
    valid = tuple(np.ones((len(keys[side]), n[side]), dtype=bool) if valid[side] is None else valid[side]
                  for side in (0, 1))
    every = np.arange(len(keys[0]))
    groups = [(every, tuple(np.flatnonzero(valid[side].all(axis=0)) for side in (0, 1)))]
    if nulls_equal:
        groups += _null_pattern_groups(valid)
    matching = "semi" if kind in ("semi", "anti") else "inner"
    parts = [_sub_join(run, matching, keys, meta, rows, components) for components, rows in groups]
    if kind in ("semi", "anti"):
        matched = np.zeros(n[0], dtype=bool)
        for left_rows, _ in parts:
            matched[left_rows] = True
        return np.flatnonzero(matched if kind == "semi" else ~matched), None
    left_rows = np.concatenate([p[0] for p in parts]).astype(np.int64, copy=False)
    right_rows = np.concatenate([p[1] for p in parts]).astype(np.int64, copy=False)
    unmatched = []
    for side, rows, wanted in ((0, left_rows, ("left", "full")), (1, right_rows, ("right", "full"))):
        if kind in wanted:
            matched = np.zeros(n[side], dtype=bool)
            matched[rows] = True
            unmatched.append((side, np.flatnonzero(~matched)))
    for side, rows in unmatched:
        missing = np.full(len(rows), -1, dtype=np.int64)
        left_rows = np.concatenate([left_rows, rows if side == 0 else missing])
        right_rows = np.concatenate([right_rows, missing if side == 0 else rows])
    return left_rows, right_rows


def _indices(rows: np.ndarray) -> Any:
    """Row numbers for pyarrow's take, null where -1 (a missing side: the taken value is null)."""
    import pyarrow as pa

    missing = rows < 0
    return pa.array(rows, mask=missing) if missing.any() else pa.array(rows)


def table_from_maps(maps: tuple[np.ndarray, Optional[np.ndarray]], columns: list, meta: tuple[dict, dict],
                    keys: tuple[list[str], list[str]], shared_key_types: dict[str, Any]) -> Any:
    """The output table of `columns` (``_join._Output``s) gathered by pyarrow from each side's column by
    the gather maps; a key both sides share is the left value where the left row is there, else the right
    one (DuckDB's ``USING``), of type ``shared_key_types[name]``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    indices = [None if m is None else _indices(m) for m in maps]

    def gathered(o: Any) -> Any:
        own = meta[o.side][o.column]
        column = take(own.as_arrow(), indices[o.side])
        other = meta[1][keys[1][keys[0].index(o.column)]] if o.shared_key else None
        if other is not None:
            key_type = shared_key_types[o.column]
            column = pc.coalesce(column.cast(key_type, safe=False), take(other.as_arrow(), indices[1]).cast(key_type, safe=False))
            column = column.cast(key_type)  # coalesce gives small decimals as decimal128
        return decoded(own, column, other)  # a dictionary key's codes (coalesced as codes) decoded

    out = run_all([functools.partial(gathered, o) for o in columns])  # the columns side by side
    return pa.Table.from_arrays(out, names=[o.name for o in columns])
