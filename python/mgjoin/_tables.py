"""Input conversion: pyarrow tables, pandas DataFrames, mappings of arrays, any object with the Arrow
PyCapsule interface (Polars DataFrames, DuckDB relations, nanoarrow), and Parquet and Arrow IPC files and
datasets (read by ``_files.py``, only the columns the join uses) -> NumPy columns.

The engine takes 1-D, C-contiguous NumPy arrays of int8 ... int64, uint8 ... uint64, float32, float64 or
bool. What is already laid out that way is passed without a copy:

- NumPy arrays as they are (a strided view is refused, not copied).
- pyarrow arrays of those types, and of the types whose values are 1-, 2-, 4- or 8-byte integers
  underneath (date, time, timestamp, duration, decimal32, decimal64, float16, fixed_size_binary of width
  1, 2, 4 or 8), seen as that integer storage and typed again on output, through
  ``Array.to_numpy(zero_copy_only=True)`` or their data buffer (a sliced array from its offset); a
  ChunkedArray of one chunk as that chunk. A ChunkedArray of several chunks is combined first (a copy),
  and bool arrays are unpacked from Arrow's bitmaps to one byte a value (a copy).
- pandas columns through ``Series.to_numpy()`` (a view for NumPy-backed columns); extension dtypes
  (nullable ``Int64``, Arrow-backed, tz-aware) go through pyarrow, which may copy.
- Objects with ``__arrow_c_stream__`` (or ``__arrow_c_array__``) are imported into pyarrow through the
  Arrow C stream (array) interface, which shares their buffers, and then read as pyarrow tables.

Only the columns a join uses are looked at: its key columns and the chosen payload columns. A payload
column of a type the engine does not carry (strings, binaries, decimal128/256, other fixed_size_binary
widths, dictionaries, nested types) is not sent to it: it is gathered by pyarrow's ``take`` with the
join's row numbers (``Column.arrow``); a type ``take`` cannot gather is refused before the join. A key
column of such a type (strings, binaries, decimal128/256, other fixed_size_binary widths, dictionaries of
strings or binaries) is read as pyarrow data here and becomes integer codes in ``_dictionary_keys.py``.

Nulls: each column's nulls travel as its validity (``Column.valid``); a payload's as a validity column
beside it, a key's to the null-key rules of ``_nulls.py``.
"""
from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ._files import FileSource, is_file_source

# The name of the hidden validity column of a payload column with nulls, and of the hidden row-number
# column of a table some of whose payload columns pyarrow gathers: no user column's name holds a NUL.
VALID_SUFFIX = "\x00valid"
ROW_NUMBERS = "\x00row"


class UnsupportedType(ValueError):
    """A column type the engine does not take (a payload column of it can still be gathered by pyarrow)."""


# What keys may be, for the messages that refuse one.
KEY_TYPES = ("keys are int8 ... int64, uint8 ... uint64, float32, float64, bool, date, time, timestamp, "
             "duration, decimal, fixed_size_binary, string, binary (of any offsets or views) or a dictionary "
             "of strings or binaries")

_NUMPY_KINDS = {"i", "u", "b"}
_FLOAT_SIZES = {4, 8}


@dataclass
class Column:
    """One input column as the engine sees it, and what restores its type on output; or, for a payload
    column the engine does not take, the pyarrow array that pyarrow gathers (``arrow``)."""

    values: Optional[np.ndarray]
    valid: Optional[np.ndarray] = None  # bool, False where null
    arrow_type: Any = None  # the pyarrow type to give the output column, when not the NumPy dtype's
    arrow: Any = None  # a payload column gathered by pyarrow (values is None then)
    unsupported_key: Optional[str] = None  # why a key column of this type cannot be one (values is None)
    # A key joined through a shared dictionary (``_dictionary_keys``): values are codes of its values in
    # `dictionary`, and the output decodes them to `decoded_type`, the input's.
    dictionary: Any = None
    decoded_type: Any = None

    def type_name(self) -> str:
        """The column's type as the messages name it: its Arrow type, or its NumPy dtype."""
        if self.decoded_type is not None:
            return str(self.decoded_type)
        if self.arrow_type is not None:
            return str(self.arrow_type)
        return str(self.arrow.type) if self.values is None else str(self.values.dtype)

    def as_arrow(self) -> Any:
        """The column as one pyarrow array (or ChunkedArray), typed as the input had it: a view of the
        engine's NumPy values (bool values are packed, a copy), or the array pyarrow gathers; for a key
        joined through a dictionary its codes (``_dictionary_keys.decoded`` decodes them)."""
        if self.values is None:
            return self.arrow
        return arrow_array(self.values, None if self.valid is None else ~self.valid, self.arrow_type)


def arrow_array(values: np.ndarray, null: Optional[np.ndarray], arrow_type: Any = None) -> Any:
    """A pyarrow array over `values` (no copy but for bool values), null where `null` is True, viewed as
    `arrow_type` (the type whose integer storage the values are) when given."""
    pa = _pyarrow()
    array = pa.array(values, mask=null) if null is not None and null.any() else pa.array(values)
    return array.view(arrow_type) if arrow_type is not None else array


def _pyarrow() -> Any:
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
        raise UnsupportedType(f"{what}: unsupported type {dtype} ({KEY_TYPES})")
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
    if values.dtype.kind in "Mm" or values.dtype == np.float16:  # their integer storage, typed again on output
        pa = _pyarrow()
        arrow_type = pa.from_numpy_dtype(values.dtype)
        storage = np.dtype(f"int{values.dtype.itemsize * 8}")
        nat = np.isnat(values) if values.dtype.kind in "Mm" and values.ndim == 1 else None
        valid = ~nat if nat is not None and nat.any() else None  # NaT is null, as pyarrow and pandas read it
        return Column(_check_numpy(values.view(storage), what), valid, arrow_type)
    return Column(_check_numpy(values, what))


_STORAGE_BITS = (8, 16, 32, 64)


def _storage_type(pa: Any, t: Any) -> Any:
    """The integer type whose layout a fixed-width Arrow type shares, or None when it is one the engine
    takes as it is."""
    types = pa.types
    if types.is_integer(t) or t in (pa.float32(), pa.float64()) or types.is_boolean(t):
        return None
    if (types.is_date(t) or types.is_time(t) or types.is_timestamp(t) or types.is_duration(t)
            or types.is_float16(t) or (types.is_decimal(t) and t.bit_width <= 64)
            or (types.is_fixed_size_binary(t) and t.bit_width in _STORAGE_BITS)):
        return getattr(pa, f"int{t.bit_width}")()
    raise UnsupportedType(f"unsupported type {t} ({KEY_TYPES})")


def _one_chunk(pa: Any, array: Any) -> Any:
    """A ChunkedArray of a type the engine takes as one Array: a copy where it has several chunks (the
    engine takes one buffer per column)."""
    if array.num_chunks == 1:
        return array.chunk(0)
    if array.num_chunks == 0:
        return pa.array([], type=array.type)
    return array.combine_chunks()


def _from_arrow(array: Any, what: str) -> Column:
    pa = _pyarrow()
    try:  # before combining chunks: a type the engine does not take stays as it is (no copy, no overflow)
        storage = _storage_type(pa, array.type)
    except UnsupportedType as e:
        raise UnsupportedType(f"{what}: {e}") from None
    if isinstance(array, pa.ChunkedArray):
        array = _one_chunk(pa, array)
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


def _from_capsule(obj: Any, side: str) -> Any:
    """A pyarrow Table (or RecordBatch) over an object's Arrow data, through the PyCapsule interface:
    the buffers are shared, not copied."""
    pa = _pyarrow()
    if hasattr(obj, "__arrow_c_stream__"):
        if not hasattr(pa.RecordBatchReader, "from_stream"):
            raise TypeError(f"{side} table: reading a {type(obj).__name__} through the Arrow PyCapsule interface "
                            f"needs pyarrow >= 15 (this is {pa.__version__})")
        return pa.RecordBatchReader.from_stream(obj).read_all()
    return pa.record_batch(obj)


class InputTable:
    """One side's table as join() reads it: its column names, and each column the join uses, converted
    only when asked for (columns a join does not use are never read nor checked)."""

    def __init__(self, table: Any, side: str) -> None:
        self.side = side
        self._source: Optional[FileSource] = None
        self.where = ""  # " (its path)" for a file or dataset, in the messages
        if is_file_source(table):
            self._source = FileSource(table, side)
            self._table, self.names, self.where = None, self._source.names, f" ({self._source.where})"
        elif _is_pandas(table, "DataFrame"):
            self._table, self.names = table, list(table.columns)
        elif _is_arrow(table, "Table", "RecordBatch"):
            self._table, self.names = table, list(table.column_names)
        elif isinstance(table, Mapping):
            self._table, self.names = table, list(table.keys())
        elif hasattr(table, "__arrow_c_stream__") or hasattr(table, "__arrow_c_array__"):
            self._table = _from_capsule(table, side)
            self.names = list(self._table.column_names)
        else:
            raise TypeError(
                f"{side} table: expected a pyarrow.Table, a pandas.DataFrame, a mapping of column name to 1-D "
                f"array, a path to a Parquet or Arrow IPC file or dataset, a pyarrow.dataset.Dataset, or an object "
                f"with the Arrow PyCapsule interface (a Polars DataFrame, a DuckDB relation), "
                f"got {type(table).__name__}"
            )

    def check_names(self, names: list[str], what: str) -> None:
        """Checks the names a join uses: strings, in the table, once, without a NUL."""
        for name in names:
            if not isinstance(name, str):
                raise ValueError(f"{self.side} table: column names must be strings, got {name!r}")
            if name not in self.names:
                raise ValueError(f"{self.side} table{self.where} has no column {name!r} (its columns: "
                                 f"{', '.join(map(str, self.names)) or 'none'}){what}")
            if "\x00" in name:
                raise ValueError(f"{self.side} table: column name {name!r} holds a NUL character")
            if self.names.count(name) > 1:
                raise ValueError(f"{self.side} table: the column name {name!r} appears more than once")

    def load(self, names: list[str]) -> None:
        """Reads the columns `names` of a file or dataset (the only ones of it ever read); other tables are
        read column by column as they are."""
        if self._source is not None:
            self._table = self._source.read(list(dict.fromkeys(names)))

    def raw(self, name: str) -> Any:
        if _is_arrow(self._table, "Table", "RecordBatch"):
            return self._table.column(name)
        return self._table[name]

    def column(self, name: str, is_key: bool) -> Column:
        """The column `name` as the engine takes it; a payload of a type the engine does not take as a
        pyarrow array to gather. A key of a type that cannot be one says why in ``unsupported_key``
        (join() refuses it, after comparing the two sides' key types)."""
        what = f"{self.side} {'key ' if is_key else ''}column {name!r}"
        value = self.raw(name)
        try:
            column = column_from(value, what)
        except UnsupportedType as e:
            if is_key:
                from ._dictionary_keys import takes  # a module that imports this one

                array = _as_arrow(value, what)  # strings and the like join through a dictionary
                return Column(None, arrow=array, unsupported_key=None if takes(array.type) else str(e))
            return Column(None, arrow=_gatherable(_as_arrow(value, what), what))
        if is_key and column.arrow_type is not None and _pyarrow().types.is_float16(column.arrow_type):
            # Its integer storage would tell -0.0 from 0.0 and one NaN from another.
            column.unsupported_key = f"{what}: unsupported type halffloat (cast it to float32; {KEY_TYPES})"
        return column


def _as_arrow(value: Any, what: str) -> Any:
    """A payload column the engine does not take, as pyarrow data for take() (pandas and NumPy columns are
    converted: a copy)."""
    pa = _pyarrow()
    if _is_arrow(value, "ChunkedArray") or (type(value).__module__.startswith("pyarrow") and hasattr(value, "buffers")):
        return value
    try:
        return pa.array(value)
    except (pa.ArrowException, TypeError, ValueError) as e:
        raise ValueError(f"{what}: cannot be read as an Arrow array ({e})") from None


# The most bytes of values one string or binary array of 32-bit offsets holds: a column of these types
# whose output passes it is made of chunks that each hold no more.
OFFSET32_BYTES = 2**31 - 1


def take(array: Any, indices: Any) -> Any:
    """array.take(indices), of the same type; the view types that pyarrow's take has no kernel for (Polars
    exports its strings as string_view) are taken as their large counterparts and cast back. A string or
    binary output (32-bit offsets) that may pass 2 GiB keeps its type as a ChunkedArray (take_in_pieces)."""
    pa = _pyarrow()
    if (pa.types.is_string(array.type) or pa.types.is_binary(array.type)) and _may_pass_offsets(array, len(indices)):
        return take_in_pieces(array, indices, OFFSET32_BYTES)
    try:
        return array.take(indices)
    except pa.ArrowNotImplementedError:
        for view, large in (("string_view", "large_string"), ("binary_view", "large_binary")):
            if hasattr(pa, view) and array.type == getattr(pa, view)():  # pyarrow >= 16 has view types
                return array.cast(getattr(pa, large)()).take(indices).cast(array.type)
        raise


def _may_pass_offsets(array: Any, rows: int) -> bool:
    """Whether `rows` values taken from `array` (string or binary) may hold more than OFFSET32_BYTES: its
    longest value times the rows, a bound read in one pass over the input's offsets. pyarrow's own take
    cannot be left to find out: pyarrow 26 refuses such an output ("overflowed binary array capacity"), but
    pyarrow 25 returns it with negative offsets (seen on the GPU machines, s25)."""
    import pyarrow.compute as pc

    if rows == 0 or len(array) == 0:
        return False
    longest = pc.max(pc.binary_length(array)).as_py() or 0
    return rows * longest > OFFSET32_BYTES


def run_all(jobs: list[Callable[[], Any]]) -> list[Any]:
    """Each job's result, in order; several at once on pyarrow.cpu_count() threads: the output's columns
    gathered by pyarrow (its take and casts release the GIL), one by one otherwise."""
    pa = _pyarrow()
    if len(jobs) <= 1 or pa.cpu_count() <= 1:
        return [job() for job in jobs]
    with concurrent.futures.ThreadPoolExecutor(min(len(jobs), pa.cpu_count())) as pool:
        return list(pool.map(lambda job: job(), jobs))


def take_in_pieces(array: Any, indices: Any, limit: int) -> Any:
    """array.take(indices) of a string or binary array as a ChunkedArray of its type, in pieces of consecutive
    output rows that each hold at most `limit` bytes of values (a single value longer than that alone)."""
    import pyarrow.compute as pc

    pa = _pyarrow()
    indices = indices if isinstance(indices, (pa.Array, pa.ChunkedArray)) else pa.array(indices, pa.int64())
    sizes = pc.binary_length(array).take(indices).fill_null(0)  # a null row (or a -1 made null) adds nothing
    ends = np.cumsum(sizes.to_numpy(zero_copy_only=False), dtype=np.int64)
    pieces, start, before = [], 0, 0
    while start < len(ends):
        end = max(int(np.searchsorted(ends, before + limit, side="right")), start + 1)
        taken = array.take(indices.slice(start, end - start))
        pieces.extend(taken.chunks if isinstance(taken, pa.ChunkedArray) else [taken])
        before, start = int(ends[end - 1]), end
    return pa.chunked_array(pieces, type=array.type)


def _gatherable(array: Any, what: str) -> Any:
    """`array`, checked before the join that pyarrow can gather it (an empty take)."""
    pa = _pyarrow()
    try:
        take(array.slice(0, 0), pa.array([], pa.int64()))
    except pa.ArrowNotImplementedError:
        raise ValueError(f"{what}: unsupported type {array.type} (pyarrow's take cannot gather it; cast it to "
                         "a type it gathers)") from None
    return array


def convert(table: InputTable, keys: list[str], payloads: list[str]) -> tuple[dict[str, np.ndarray], dict[str, Column]]:
    """The engine's columns of one table: its key columns, then each payload column the engine takes,
    each with nulls followed by its validity column. Returns (arrays for the engine, Column per name);
    payloads pyarrow gathers are in the second only."""
    arrays: dict[str, np.ndarray] = {}
    columns: dict[str, Column] = {}
    names = keys + [p for p in payloads if p not in keys]
    table.load(names)
    for name in names:
        column = table.column(name, is_key=name in keys)
        columns[name] = column
        if column.values is None:
            continue
        arrays[name] = column.values
        if column.valid is not None:
            arrays[name + VALID_SUFFIX] = column.valid
    return arrays, columns
