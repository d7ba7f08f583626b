"""Input conversion: pyarrow tables, pandas DataFrames and mappings of arrays -> NumPy columns.

The engine takes 1-D, C-contiguous NumPy arrays of int8 ... int64, uint8 ... uint64, float32, float64 or
bool. What is already laid out that way is passed without a copy:

- NumPy arrays as they are (a strided view is refused, not copied).
- pyarrow arrays of those types (and of date, time, timestamp and duration types, seen as their integer
  storage) through ``Array.to_numpy(zero_copy_only=True)`` or their data buffer; a ChunkedArray of one
  chunk as that chunk. A ChunkedArray of several chunks is combined first (a copy), and bool arrays are
  unpacked from Arrow's bitmaps to one byte a value (a copy).
- pandas columns through ``Series.to_numpy()`` (a view for NumPy-backed columns); extension dtypes
  (nullable ``Int64``, Arrow-backed, tz-aware) go through pyarrow, which may copy.

Nulls: a key column with nulls is refused (ValueError). A payload column's nulls travel as a validity
column beside it and come back as Arrow nulls.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

# The name of the hidden validity column of a payload column with nulls: no user column is named so.
VALID_SUFFIX = "\x00valid"

_NUMPY_KINDS = {"i", "u", "b"}
_FLOAT_SIZES = {4, 8}


@dataclass
class Column:
    """One input column as the engine sees it, and what restores its type on output."""

    values: np.ndarray
    valid: Optional[np.ndarray] = None  # bool, False where null (payload columns only)
    arrow_type: Any = None  # the pyarrow type to give the output column, when not the NumPy dtype's


def _pyarrow():
    import pyarrow

    return pyarrow


def _is_pandas(obj: Any, name: str) -> bool:
    module = type(obj).__module__
    return module.startswith("pandas") and type(obj).__name__ == name


def _is_arrow(obj: Any, *names: str) -> bool:
    return type(obj).__module__.startswith("pyarrow") and type(obj).__name__ in names


def _check_numpy(values: np.ndarray, what: str) -> np.ndarray:
    if values.ndim != 1:
        raise ValueError(f"{what}: has {values.ndim} dimensions, expected 1")
    dtype = values.dtype
    if dtype.kind not in _NUMPY_KINDS and not (dtype.kind == "f" and dtype.itemsize in _FLOAT_SIZES):
        raise ValueError(
            f"{what}: unsupported type {dtype} (expected int8 ... int64, uint8 ... uint64, float32, "
            "float64 or bool; dates and times as datetime64/timedelta64 or Arrow temporal types)"
        )
    if not dtype.isnative:
        raise ValueError(f"{what}: {dtype} is not in this machine's byte order; pass values.astype(values.dtype.newbyteorder('='))")
    if not values.flags.c_contiguous:
        raise ValueError(f"{what}: not contiguous (a strided view); pass numpy.ascontiguousarray(...)")
    return values


def _from_numpy(values: np.ndarray, what: str) -> Column:
    if isinstance(values, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(values)
        column = _from_numpy(np.ma.getdata(values), what)
        column.valid = ~mask if mask.any() else None
        return column
    if values.dtype.kind in "Mm":  # datetime64 / timedelta64: their int64 storage, typed again on output
        pa = _pyarrow()
        arrow_type = pa.from_numpy_dtype(values.dtype)
        return Column(_check_numpy(values.view(np.int64), what), None, arrow_type)
    return Column(_check_numpy(values, what))


def _storage_type(pa: Any, t: Any) -> Any:
    """The integer type whose layout a fixed-width Arrow type shares, or None when it is one we take."""
    types = pa.types
    if types.is_integer(t) or t in (pa.float32(), pa.float64()) or types.is_boolean(t):
        return None
    if types.is_date(t) or types.is_time(t) or types.is_timestamp(t) or types.is_duration(t):
        return pa.int32() if t.bit_width == 32 else pa.int64()
    raise ValueError(
        f"unsupported type {t} (expected int8 ... int64, uint8 ... uint64, float32, float64, bool, or a "
        "date, time, timestamp or duration type)"
    )


def _from_arrow(array: Any, what: str) -> Column:
    pa = _pyarrow()
    if isinstance(array, pa.ChunkedArray):
        if array.num_chunks == 1:
            array = array.chunk(0)
        elif array.num_chunks == 0:
            array = pa.array([], type=array.type)
        else:
            array = array.combine_chunks()  # a copy: the engine takes one buffer per column
    try:
        storage = _storage_type(pa, array.type)
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None
    arrow_type = array.type if storage is not None else None
    if storage is not None:
        array = array.view(storage)
    valid = None
    if array.null_count:
        valid = array.is_valid().to_numpy(zero_copy_only=False)
        if pa.types.is_boolean(array.type):
            values = array.fill_null(False).to_numpy(zero_copy_only=False)
        else:  # the data buffer as it is: null slots hold whatever they hold, the validity says which
            dtype = np.dtype(array.type.to_pandas_dtype())
            values = np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * dtype.itemsize)
    else:
        values = array.to_numpy(zero_copy_only=not pa.types.is_boolean(array.type))
    return Column(_check_numpy(values, what), valid, arrow_type)


def _from_pandas(series: Any, what: str) -> Column:
    dtype = series.dtype
    if isinstance(dtype, np.dtype):
        return _from_numpy(series.to_numpy(), what)
    pa = _pyarrow()
    return _from_arrow(pa.array(series), what)  # extension dtypes: pyarrow knows their nulls


def column_from(value: Any, what: str) -> Column:
    """One column, from a NumPy array, a pyarrow (Chunked)Array, a pandas Series or an array-like."""
    if isinstance(value, np.ndarray):
        return _from_numpy(value, what)
    if _is_arrow(value, "ChunkedArray") or (type(value).__module__.startswith("pyarrow") and hasattr(value, "buffers")):
        return _from_arrow(value, what)
    if _is_pandas(value, "Series"):
        return _from_pandas(value, what)
    return _from_numpy(np.asarray(value), what)  # lists and other array-likes: a copy


def column_names(table: Any, side: str) -> list[str]:
    """The column names of a table, in order."""
    if _is_arrow(table, "Table", "RecordBatch"):
        names = list(table.column_names)
    elif _is_pandas(table, "DataFrame"):
        names = list(table.columns)
    elif isinstance(table, Mapping):
        names = list(table.keys())
    else:
        raise TypeError(
            f"{side} table: expected a pyarrow.Table, a pandas.DataFrame or a mapping of column name to "
            f"1-D array, got {type(table).__name__}"
        )
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f"{side} table: column names must be strings, got {name!r}")
        if VALID_SUFFIX in name:
            raise ValueError(f"{side} table: column name {name!r} holds a NUL character")
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"{side} table: column names appear more than once: {', '.join(dup)}")
    return names


def table_column(table: Any, name: str) -> Any:
    if _is_arrow(table, "Table", "RecordBatch"):
        return table.column(name)
    return table[name]


def convert(table: Any, side: str, keys: list[str], payloads: Optional[list[str]]) -> tuple[dict[str, np.ndarray], dict[str, Column]]:
    """The engine's columns of one table: its key columns, then `payloads` (None: every other column),
    each payload with nulls followed by its validity column. Returns (arrays for the engine, Column
    per converted name)."""
    names = column_names(table, side)
    for k in keys:
        if k not in names:
            raise ValueError(f"{side} table has no column {k!r} (its columns: {', '.join(names) or 'none'})")
    wanted = [n for n in names if n not in keys] if payloads is None else payloads
    for n in wanted:
        if n not in names:
            raise ValueError(f"{side} table has no column {n!r} (its columns: {', '.join(names)})")
    arrays: dict[str, np.ndarray] = {}
    columns: dict[str, Column] = {}
    for name in [n for n in names if n in keys or n in wanted]:
        is_key = name in keys
        what = f"{side} {'key ' if is_key else ''}column {name!r}"
        column = column_from(table_column(table, name), what)
        if column.valid is not None and is_key:
            nulls = int(column.valid.size - np.count_nonzero(column.valid))
            raise ValueError(f"{what}: has {nulls} null(s); keys must not be null (drop those rows first)")
        arrays[name] = column.values
        columns[name] = column
        if column.valid is not None:
            arrays[name + VALID_SUFFIX] = column.valid
    return arrays, columns
