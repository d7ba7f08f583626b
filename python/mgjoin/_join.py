"""mgjoin.join(): equi-joins of two tables on the GPUs (or the CPU path)."""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np

from . import _mgjoin
from ._dictionary_keys import comparable, decoded, encode_keys
from ._nulls import key_validity, maps_with_null_keys, table_from_maps
from ._progress import progress_callback
from ._tables import ROW_NUMBERS, VALID_SUFFIX, Column, InputTable, arrow_array, convert, run_all, take

_OUTPUTS = {"table": "columns", "gather_maps": "maps", "count": "count"}
_TO = ("arrow", "pandas", "polars")

# how= as DuckDB, Polars and pandas name the kinds: the engine's kind, and whether the tables trade places
# (a right semi or anti join is the left one of the tables swapped).
_HOWS = {
    "inner": ("inner", False), "left": ("left", False), "left_outer": ("left", False),
    "right": ("right", False), "right_outer": ("right", False), "full": ("full", False),
    "outer": ("full", False), "full_outer": ("full", False), "semi": ("semi", False),
    "left_semi": ("semi", False), "anti": ("anti", False), "left_anti": ("anti", False),
    "right_semi": ("semi", True), "right_anti": ("anti", True),
}
_HOW_NAMES = "inner, left, right, full (or outer), semi (left_semi), anti (left_anti), right_semi or right_anti"

Progress = Union[bool, Callable[[str, float], Any], None]

# The engine names the C++ option a bad value came in; the caller set it through an argument of join().
_ARGUMENTS = [
    ("TableJoinOptions::left_on", "left_on"), ("TableJoinOptions::right_on", "right_on"),
    ("TableJoinOptions::left_columns", "left_columns"), ("TableJoinOptions::right_columns", "right_columns"),
    ("JoinOptions::gpu_memory_limit", "gpu_memory_limit"), ("JoinOptions::gpu_ids", "gpus"),
    ("JoinOptions::gpus", "gpus"), ("JoinOptions::strategy", "strategy"),
    ("ask for the paper flow", "use strategy='paper'"),
]


def _in_python_words(message: str) -> str:
    for field, argument in _ARGUMENTS:
        message = message.replace(field, argument)
    return message


def _names(value: Union[str, Sequence[str], None], what: str, may_be_empty: bool = False) -> Optional[list[str]]:
    if value is None:
        return None
    names = [value] if isinstance(value, str) else list(value)
    if (not names and not may_be_empty) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{what}: expected a column name or a {'' if may_be_empty else 'non-empty '}list of "
                         f"column names, got {value!r}")
    return names


def _key_names(on: Any, left_on: Any, right_on: Any) -> tuple[list[str], list[str]]:
    """The key names of each side; a column named twice is refused here, before the engine (which refuses
    it too) sees the keys: a string key is encoded first, and one column twice is one column to encode."""
    if on is not None:
        if left_on is not None or right_on is not None:
            raise ValueError("give either on= or left_on= and right_on=, not both")
        names = _unique(_names(on, "on"), "on")
        return names, list(names)
    if left_on is None or right_on is None:
        raise ValueError("give the key column(s): on= (the same names in both tables) or left_on= and right_on=")
    left, right = _names(left_on, "left_on"), _names(right_on, "right_on")
    if len(left) != len(right):
        raise ValueError(f"left_on names {len(left)} column(s) but right_on names {len(right)}")
    return _unique(left, "left_on"), _unique(right, "right_on")


def _unique(names: list[str], what: str) -> list[str]:
    for i, name in enumerate(names):
        if name in names[:i]:
            raise ValueError(f"{what} names {name!r} twice")
    return names


def _suffixes(suffixes: Any) -> tuple[str, str]:
    if (not isinstance(suffixes, (tuple, list)) or len(suffixes) != 2
            or not all(s is None or isinstance(s, str) for s in suffixes)):
        raise ValueError(f"suffixes={suffixes!r}: expected two strings (or None), like ('_x', '_y')")
    return suffixes[0] or "", suffixes[1] or ""


def _gpu_options(gpus: Any) -> tuple[int, list[int]]:
    if gpus is None:
        return -1, []
    if isinstance(gpus, bool):
        raise ValueError(f"gpus={gpus!r}: expected None (all GPUs), 0 (the CPU path), a GPU count or a list of GPU ids")
    if isinstance(gpus, (int, np.integer)):
        if gpus < 0:
            raise ValueError(f"gpus={gpus}: expected None (all GPUs), 0 (the CPU path), a GPU count or a list of GPU ids")
        return int(gpus), []
    ids = list(gpus)
    if not ids or not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in ids):
        raise ValueError(f"gpus={gpus!r}: a list of GPU ids must hold integers")
    return -1, [int(i) for i in ids]


def _memory_limit(limit: Union[int, str, None]) -> int:
    if limit is None:
        return 0
    if isinstance(limit, str):
        parsed = _mgjoin.parse_byte_size(limit)
        if parsed is None:
            raise ValueError(f"gpu_memory_limit '{limit}': expected a byte count like 4096, 512M or 8G")
        limit = parsed
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit <= 0:
        raise ValueError(f"gpu_memory_limit={limit!r}: expected a positive number of bytes or a size like '8G'")
    return int(limit)


@contextlib.contextmanager
def _engine_errors() -> Iterator[None]:
    """Bad input and memory errors keep the engine's message, with C++ option names as join()'s."""
    try:
        yield
    except (ValueError, MemoryError) as e:
        words = _in_python_words(str(e))
        if words == str(e):
            raise
        raise type(e)(words) from None


@dataclass
class _Output:
    """One column of the output table: its name, the side it comes from (0 left, 1 right), the table's
    column, and whether it is a key of the same name on both sides (one coalesced column, the engine's)."""

    name: str
    side: int
    column: str
    shared_key: bool = False


def _output_columns(tables: tuple[InputTable, InputTable], keys: tuple[list[str], list[str]],
                    chosen: tuple[Optional[list[str]], Optional[list[str]]], right_too: bool,
                    suffixes: tuple[str, str]) -> list[_Output]:
    """The output table's columns, as pandas names them: the left table's (every column in table order,
    or its keys and then left_columns), then the right table's, where a key of the same name on both sides
    is one column and a name both sides output takes the side's suffix."""
    shared = {lk for lk, rk in zip(*keys) if lk == rk} if right_too else set()
    out: list[_Output] = []
    for side in (0, 1) if right_too else (0,):
        table, side_keys = tables[side], keys[side]
        names = list(table.names) if chosen[side] is None else side_keys + [n for n in chosen[side] if n not in side_keys]
        if side == 1:
            names = [n for n in names if n not in shared or n not in side_keys]
        table.check_names(names, f" ({table.side}_columns)" if chosen[side] is not None else "")
        out += [_Output(n, side, n, side == 0 and n in shared) for n in names]
    left_names = {o.name for o in out if o.side == 0}
    both = left_names & {o.name for o in out if o.side == 1}
    for o in out:
        if o.name in both:
            o.name += suffixes[o.side]
    seen: set[str] = set()
    for o in out:
        if o.name in seen:
            raise ValueError(f"suffixes={suffixes!r}: the output would hold two columns named {o.name!r}; "
                             "choose other suffixes (or leave a column out)")
        seen.add(o.name)
    return out


def _engine_payloads(columns: list[_Output], side: int, meta: dict[str, Column]) -> list[str]:
    """The payload columns the engine gathers for one side: each output column that the engine takes
    (and its validity column where it has nulls), and the row numbers when pyarrow gathers some."""
    chosen: list[str] = []
    rows = False
    for o in columns:
        if o.side != side or o.shared_key:
            continue
        column = meta[o.column]
        if column.values is None:
            rows = True
            continue
        if o.column not in chosen:
            chosen.append(o.column)
            if column.valid is not None:
                chosen.append(o.column + VALID_SUFFIX)
    return chosen + ([ROW_NUMBERS] if rows else [])


def _table(result: dict, columns: list[_Output], meta: tuple[dict[str, Column], dict[str, Column]],
           keys: tuple[list[str], list[str]]) -> Any:
    """The output as a pyarrow.Table: the engine's key and payload columns (each outer side's missing rows,
    r.valid / s.valid, and each payload's own nulls as Arrow nulls) and the columns pyarrow gathers by the
    row numbers."""
    import pyarrow as pa

    arrays = dict(result["columns"])
    missing = {side: ~arrays[f"{p}.valid"] for side, p in ((0, "r"), (1, "s")) if f"{p}.valid" in arrays}
    out: list[Any] = []
    gathers: dict[int, Callable[[], Any]] = {}  # output position -> pyarrow's take of that column
    for o in columns:
        column = meta[o.side][o.column]
        if o.shared_key:  # the engine's coalesced key: a value on every row
            values = arrays["key" if len(keys[0]) == 1 else f"key.{o.column}"]
            right = meta[1][keys[1][keys[0].index(o.column)]]
            out.append(decoded(column, arrow_array(values, None, _shared_key_type(column, right, values)), right))
            continue
        prefix = "rs"[o.side]
        null = missing.get(o.side)
        if column.values is None:  # gathered by pyarrow, by the row numbers
            rows = arrays[f"{prefix}.{ROW_NUMBERS}"]
            indices = pa.array(rows, mask=null) if null is not None and null.any() else rows
            gathers[len(out)] = functools.partial(take, column.arrow, indices)
            out.append(None)
            continue
        own_valid = arrays.get(f"{prefix}.{o.column}{VALID_SUFFIX}")
        if own_valid is not None:
            null = ~own_valid if null is None else null | ~own_valid
        out.append(decoded(column, arrow_array(arrays[f"{prefix}.{o.column}"], null, column.arrow_type)))
    for at, array in zip(gathers, run_all(list(gathers.values()))):
        out[at] = array
    return pa.Table.from_arrays(out, names=[o.name for o in columns])


def _convert_table(table: Any, to: str) -> Any:
    if to == "arrow":
        return table
    if to == "pandas":
        return table.to_pandas()
    try:
        import polars
    except ImportError:
        raise ImportError("to='polars' needs Polars: pip install polars (or ask for to='arrow')") from None
    return polars.from_arrow(table)


def _key_family(pa: Any, t: Any) -> Optional[str]:
    """"text" or "binary" for the string and binary types (and dictionaries of them), which never compare
    with each other."""
    if t is None:
        return None
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or str(t) == "string_view":
        return "text"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or str(t) == "binary_view" or pa.types.is_fixed_size_binary(t):
        return "binary"
    return None


def _check_key_types(keys: tuple[list[str], list[str]], meta: tuple[dict[str, Column], dict[str, Column]]) -> None:
    """Keys that cannot be compared as they are are refused, naming both columns, rather than cast: string
    against binary, two decimals of different scales, two temporal (or fixed_size_binary) types that are
    not the same type (units, zones, widths), a string or binary against any other type. Then a key of a
    type that cannot be a key, naming it. Numbers compare by value in the engine; strings with strings and
    binaries with binaries, whatever their layouts, through a dictionary (``_dictionary_keys``)."""
    import pyarrow as pa

    for lk, rk in zip(*keys):
        left, right = meta[0][lk], meta[1][rk]
        lt = left.arrow_type if left.values is not None else left.arrow.type
        rt = right.arrow_type if right.values is not None else right.arrow.type
        differ = (f"key types differ: left column {lk!r} is {left.type_name()}, right column {rk!r} is "
                  f"{right.type_name()}")
        families = {_key_family(pa, lt), _key_family(pa, rt)}
        if families == {"text", "binary"}:
            raise ValueError(f"{differ}: string and binary keys do not compare (cast one side)")
        for column in (left, right):
            if column.unsupported_key is not None:
                raise ValueError(column.unsupported_key)
        if lt is not None and rt is not None and pa.types.is_decimal(lt) and pa.types.is_decimal(rt):
            if lt.scale != rt.scale:
                raise ValueError(f"{differ}: decimals of different scales (cast one side to the other's)")
            continue  # the same scale: their integers compare by value, whatever their precisions
        if comparable(lt, rt):
            continue
        if lt != rt and (lt is not None or rt is not None):
            raise ValueError(differ)


def _shared_key_type(left: Column, right: Column, values: np.ndarray) -> Any:
    """The Arrow type of a key column both sides share, over the engine's values of it: the sides' own type
    (temporal and other typed keys are of one type; decimals of one scale take the larger precision at
    the engine's width), or None for numbers."""
    import pyarrow as pa

    lt, rt = left.arrow_type, right.arrow_type
    if lt is None or not pa.types.is_decimal(lt) or lt == rt:
        return lt
    precision = min(max(lt.precision, rt.precision), {4: 9, 8: 18}[values.itemsize])
    return getattr(pa, f"decimal{values.itemsize * 8}")(precision, lt.scale)


def _check_choices(output: str, how: Any, to: str, nulls_equal: Any) -> None:
    """The arguments that take one of a few values, checked before any table is read."""
    if output not in _OUTPUTS:
        raise ValueError(f"output={output!r}: expected 'table', 'gather_maps' or 'count'")
    if not isinstance(how, str) or how not in _HOWS:
        raise ValueError(f"how {how!r}: expected {_HOW_NAMES}")
    if to not in _TO:
        raise ValueError(f"to={to!r}: expected 'arrow', 'pandas' or 'polars'")
    if not isinstance(nulls_equal, (bool, np.bool_)):
        raise ValueError(f"nulls_equal={nulls_equal!r}: expected True or False")


@dataclass
class _Place:
    """Where and how the engine joins: join()'s gpus, gpu_memory_limit, strategy, gather_on, tuning_file
    and engine arguments, checked, as the engine takes them."""

    gpu_count: int
    gpu_ids: list[int]
    memory_limit: int
    strategy: str
    gather_on: str
    tuning_file: str
    engine: Optional["Engine"]


def _place(gpus: Any, gpu_memory_limit: Any, tuning_file: Optional[str], engine: Optional["Engine"],
           strategy: str, gather_on: str) -> _Place:
    """The engine= argument or the GPU ones, not both: an engine has its GPUs and memory already."""
    if engine is not None and (gpus is not None or gpu_memory_limit is not None or tuning_file is not None):
        raise ValueError("engine= joins on the engine's GPUs and memory: leave gpus, gpu_memory_limit and "
                         "tuning_file unset (give them to mgjoin.Engine)")
    gpu_count, gpu_ids = _gpu_options(gpus)
    return _Place(gpu_count, gpu_ids, _memory_limit(gpu_memory_limit), strategy, gather_on, tuning_file or "", engine)


class _EngineRuns:
    """The engine's joins of one join() call (one, or one per null pattern of the keys), at its place and
    with its progress reports; the first one's details are the call's info."""

    def __init__(self, place: _Place, report: Optional[Callable[[str, float], Any]]) -> None:
        self.place, self.report = place, report
        self.results: list[dict] = []

    def run(self, left_arrays: dict, right_arrays: dict, left_on: list[str], right_on: list[str], how: str,
            output: str, left_columns: list[str], right_columns: list[str]) -> dict:
        place = self.place
        result = _mgjoin.join_tables(
            left_arrays, right_arrays, left_on=left_on, right_on=right_on, how=how, output=output,
            left_columns=left_columns, right_columns=right_columns, gpus=place.gpu_count, gpu_ids=place.gpu_ids,
            gpu_memory_limit=place.memory_limit, strategy=place.strategy, gather_on=place.gather_on,
            tuning_file=place.tuning_file, progress=self.report,
            engine=place.engine._engine() if place.engine is not None else None)
        self.results.append(result)
        return result

    def maps(self, left_arrays: dict, right_arrays: dict, left_on: list[str], right_on: list[str], how: str) -> tuple:
        """An engine join to gather maps (``_nulls.Run``)."""
        result = self.run(left_arrays, right_arrays, left_on, right_on, how, "maps", [], [])
        return result["left_rows"], result["right_rows"]

    def fill(self, info: Optional[dict]) -> None:
        if info is not None:
            info.update({k: v for k, v in self.results[0].items() if k not in ("columns", "left_rows", "right_rows")})


def _engine_inputs(tables: tuple[InputTable, InputTable], keys: tuple[list[str], list[str]],
                   columns: list[_Output]) -> tuple[tuple[dict, dict], tuple[dict[str, Column], dict[str, Column]]]:
    """Each side's arrays for the engine and its Column per name: the keys and the output's payloads,
    converted, their types checked against each other, and string-like keys as codes of one dictionary."""
    payloads = [[o.column for o in columns if o.side == side and not o.shared_key] for side in (0, 1)]
    left_arrays, left_meta = convert(tables[0], keys[0], payloads[0])
    right_arrays, right_meta = convert(tables[1], keys[1], payloads[1])
    meta = (left_meta, right_meta)
    _check_key_types(keys, meta)
    encode_keys(keys, meta, (left_arrays, right_arrays))
    return (left_arrays, right_arrays), meta


def _engine_join(runs: _EngineRuns, arrays: tuple[dict, dict], meta: tuple[dict[str, Column], dict[str, Column]],
                 keys: tuple[list[str], list[str]], kind: str, output: str, columns: list[_Output]) -> dict:
    """The join in one engine call: the engine gathers each side's payloads it takes, and the row numbers
    of the rows whose payloads pyarrow gathers."""
    chosen = [_engine_payloads(columns, side, meta[side]) for side in (0, 1)]
    for side in (0, 1):
        if ROW_NUMBERS in chosen[side]:
            arrays[side][ROW_NUMBERS] = np.arange(len(meta[side][keys[side][0]].values), dtype=np.int64)
    right_columns = chosen[1] if kind not in ("semi", "anti") else []
    return runs.run(arrays[0], arrays[1], keys[0], keys[1], kind, _OUTPUTS[output], chosen[0], right_columns)


def _in_callers_order(maps: tuple, swapped: bool) -> tuple:
    """Gather maps of the tables as the caller gave them (a right semi or anti join swapped them)."""
    return maps[::-1] if swapped else maps


def _engine_output(result: dict, output: str, to: str, swapped: bool, columns: list[_Output],
                   meta: tuple[dict[str, Column], dict[str, Column]], keys: tuple[list[str], list[str]]) -> Any:
    """What join() returns from the engine's one result."""
    if output == "count":
        return int(result["count"])
    if output == "gather_maps":
        return _in_callers_order((result["left_rows"], result["right_rows"]), swapped)
    return _convert_table(_table(result, columns, meta, keys), to)


def _null_keys_output(maps: tuple, key_types: dict[str, Any], output: str, to: str, swapped: bool,
                      columns: list[_Output], meta: tuple[dict[str, Column], dict[str, Column]],
                      keys: tuple[list[str], list[str]]) -> Any:
    """What join() returns from the gather maps of a join whose keys hold nulls (the table gathered by
    pyarrow)."""
    if output == "count":
        return len(maps[0])
    if output == "gather_maps":
        return _in_callers_order(maps, swapped)
    return _convert_table(table_from_maps(maps, columns, meta, keys, key_types), to)


def join(
    left: Any,
    right: Any,
    on: Union[str, Sequence[str], None] = None,
    how: str = "inner",
    output: str = "table",
    gpus: Union[int, Sequence[int], None] = None,
    strategy: str = "auto",
    gpu_memory_limit: Union[int, str, None] = None,
    progress: Progress = False,
    *,
    left_on: Union[str, Sequence[str], None] = None,
    right_on: Union[str, Sequence[str], None] = None,
    left_columns: Optional[Sequence[str]] = None,
    right_columns: Optional[Sequence[str]] = None,
    suffixes: tuple[Optional[str], Optional[str]] = ("_x", "_y"),
    to: str = "arrow",
    tuning_file: Optional[str] = None,
    info: Optional[dict] = None,
    engine: Optional["Engine"] = None,
    gather_on: str = "auto",
    nulls_equal: bool = False,
) -> Any:
    """Equi-join of two tables on key columns, on all GPUs (or the CPU path without GPUs).

    ``left`` and ``right`` are each a ``pyarrow.Table`` (or RecordBatch), a ``pandas.DataFrame``, a
    mapping of column name to 1-D array, any object with the Arrow PyCapsule interface (a Polars
    DataFrame, a DuckDB relation), a path (str or os.PathLike) to a Parquet file, an Arrow IPC (Feather)
    file or a folder of Parquet files (hive ``name=value`` folders read as columns), a folder of ``.npy``
    column files (each a column named by its stem), or a ``pyarrow.dataset.Dataset``. Of a file or dataset
    only the columns the join uses are read, by pyarrow's multi-threaded scanner, into a table before the
    join starts (not yet streamed into it; see
    docs/PYTHON.md, Files and datasets). Key and payload columns of int8 ... int64, uint8 ... uint64, float32,
    float64, bool, and of the Arrow types stored as such integers (date, time, timestamp, duration,
    decimal32/64, float16, fixed_size_binary of 1, 2, 4 or 8 bytes) go to the engine without a copy where
    their layout allows (see docs/PYTHON.md, Types and Zero-copy); payload columns of other types (strings,
    binaries, decimal128/256, categories, nested types) are gathered by pyarrow. Key columns of strings and
    binaries (any offsets or views, NumPy ``S`` and ``U`` arrays, pandas object and str columns, categories
    of them), decimal128/256 and fixed_size_binary of other widths join through the integer codes of a
    dictionary of both sides' values (exact). Every output column keeps its Arrow type. Columns the join
    does not use are never read. The inputs are never modified.

    Example::

        >>> left = {"k": np.array([1, 2, 2, 5]), "v": np.array([10, 20, 21, 50])}
        >>> right = {"k": np.array([2, 5, 7]), "w": np.array([200, 500, 700])}
        >>> mgjoin.join(left, right, on="k", gpus=0).to_pydict()
        {'k': [2, 2, 5], 'v': [20, 21, 50], 'w': [200, 200, 500]}

    Args:
        on: key column name(s), the same in both tables; several columns form a composite key (over 8
            bytes together it joins on a hash of its columns, each match verified against the columns
            themselves). Or give ``left_on`` and ``right_on``. Keys compare by value: integers of any
            width and signedness, float32 with float64 (-0.0 equals 0.0, NaN equals NaN), bool with bool,
            dates, times, timestamps and durations with their own type (unit and zone), decimals of one
            scale, strings with strings and binaries with binaries byte for byte (a string key against a
            binary or a number is refused). A null key matches nothing, as SQL's ``=`` (see
            ``nulls_equal``): inner and semi joins leave its row out, left, right and full joins keep it
            unmatched, anti joins keep it.
        how: "inner", "left", "right", "full" (or "outer"), "semi" ("left_semi"), "anti" ("left_anti"),
            "right_semi" or "right_anti".
        output: "table" (a pyarrow.Table, or see ``to``), "gather_maps" (``(left_rows, right_rows)`` int64
            NumPy arrays, -1 where an outer join's side is missing; the other side None for semi/anti
            joins) or "count" (the number of output rows, an int).
        gpus: None = every GPU (the CPU path when there is none), 0 = the CPU path, N = the best N-GPU
            set, or a list of GPU ids.
        strategy: "auto", "paper" (the paper's flow) or "copart" (co-partitioned, in GPU memory).
        gpu_memory_limit: device memory per GPU, bytes or a size like "8G" (default 80% of free).
        progress: True shows a progress bar on stderr (tqdm when installed); a callable gets
            ``(phase, fraction)`` reports; both run on the calling thread.
        left_columns, right_columns: payload columns in the output table, in order (default: every
            column). The keys are always output. Semi and anti joins output one side's columns only.
        suffixes: added to the names of non-key columns that both sides output (pandas' rule); None for
            one side keeps its names.
        to: the table's kind: "arrow" (pyarrow.Table), "pandas" (DataFrame) or "polars" (DataFrame).
        tuning_file: the tuning file of ``mgjoin.tune()`` (default ~/.cache/mgjoin/tuning.json).
        gather_on: where the payload columns of the output are gathered by the join's row ids: "auto"
            (each column on the CPU threads or one GPU, wherever a cost model from the tuning file's rates
            predicts it done first), "cpu" or "gpus". The CPU path gathers on the CPU.
        info: a dict to fill with the run's details: executor, strategy, strategy_reason, seconds,
            join_seconds, phases, materialization, gathers (where late materialization gathered the
            payload columns: the CPU or GPUs, and the prediction that chose it), peak_host_bytes.
        nulls_equal: True makes null keys match each other (SQL's ``IS NOT DISTINCT FROM``, per component
            of a composite key: rows match where each component is equal or null on both sides).
        engine: an ``mgjoin.Engine`` to join on: its GPUs and memory, taken once for many joins (then
            leave gpus, gpu_memory_limit and tuning_file unset). Without one, each call takes the
            GPUs' memory for itself (about a second) and gives it back.

    Returns:
        With output="table" a table of the left table's columns (a key of the same name on both sides
        once: for outer joins its value from whichever side has the row), then the right table's; a name
        both sides output gets ``suffixes``; keys of other names stay two columns. Rows an outer join
        could not match are null on the missing side. Rows: the matching pairs, then an outer join's
        unmatched left rows, then its unmatched right rows; semi and anti joins in table order.

    Raises:
        ValueError: bad input (the message names the table and column, or the argument); a file that
            cannot be read (corrupt, truncated, a dataset whose files differ in a column the join reads),
            naming the file and column, pyarrow's error as its cause.
        FileNotFoundError: a path that is not there.
        mgjoin.GpuError: a CUDA failure.
        MemoryError: host or GPU memory cannot hold the join (checked before it is taken).
        KeyboardInterrupt: Ctrl-C; the join stops at its next cancellation point and frees what it took.
    """
    _check_choices(output, how, to, nulls_equal)
    kind, swapped = _HOWS[how]
    keys = _key_names(on, left_on, right_on)
    suffix_pair = _suffixes(suffixes)
    place = _place(gpus, gpu_memory_limit, tuning_file, engine, strategy, gather_on)
    chosen = (_names(left_columns, "left_columns", may_be_empty=True),
              _names(right_columns, "right_columns", may_be_empty=True))
    tables = (InputTable(left, "left"), InputTable(right, "right"))
    if swapped:  # a right semi or anti join: the left one, the tables trading places
        tables, keys, chosen, suffix_pair = tables[::-1], keys[::-1], chosen[::-1], suffix_pair[::-1]
    for side in (0, 1):
        tables[side].check_names(keys[side], f" ({tables[side].side}_on)" if on is None else "")
    right_too = kind not in ("semi", "anti")
    columns = _output_columns(tables, keys, chosen, right_too, suffix_pair) if output == "table" else []
    arrays, meta = _engine_inputs(tables, keys, columns)
    valid = (key_validity(meta[0], keys[0]), key_validity(meta[1], keys[1]))
    null_keys = valid[0] is not None or valid[1] is not None
    with progress_callback(progress) as report, _engine_errors():
        runs = _EngineRuns(place, report)
        if not null_keys:
            result = _engine_join(runs, arrays, meta, keys, kind, output, columns)
        else:  # SQL's null keys: the rows with valid keys through the engine, the others around it
            key_types = _shared_key_types(keys, meta, kind, columns)
            maps = maps_with_null_keys(runs.maps, kind, keys, meta, valid, nulls_equal)
    runs.fill(info)
    if null_keys:
        return _null_keys_output(maps, key_types, output, to, swapped, columns, meta, keys)
    return _engine_output(result, output, to, swapped, columns, meta, keys)


def _shared_key_types(keys: tuple[list[str], list[str]], meta: tuple[dict[str, Column], dict[str, Column]],
                      kind: str, columns: list[_Output]) -> dict[str, Any]:
    """The Arrow type of each key column both sides share, as the engine's own join would give it (an
    engine join of no rows on the CPU path says, and refuses what it refuses)."""
    import pyarrow as pa

    shared = [o.column for o in columns if o.shared_key]
    if not shared:
        return {}
    empty = [{k: np.empty(0, meta[side][k].values.dtype) for k in keys[side]} for side in (0, 1)]
    result = _mgjoin.join_tables(empty[0], empty[1], left_on=keys[0], right_on=keys[1], how=kind, output="columns",
                                 left_columns=[], right_columns=[], gpus=0)
    arrays = dict(result["columns"])
    types = {}
    for name in shared:
        values = arrays["key" if len(keys[0]) == 1 else f"key.{name}"]
        right = meta[1][keys[1][keys[0].index(name)]]
        types[name] = _shared_key_type(meta[0][name], right, values) or pa.from_numpy_dtype(values.dtype)
    return types


class Engine:
    """GPUs and their memory taken once, for many joins (``mgjoin::Engine``).

    Taking the GPUs' memory costs about a second; an Engine takes it when it is made and keeps it until
    ``close()`` (or the end of a ``with`` block), so that repeated joins pay it once::

        >>> with mgjoin.Engine(gpus=2) as engine:
        ...     for left, right in batches:
        ...         out = engine.join(left, right, on="k")

    One join runs at a time on an engine (others wait). The CPU path needs no engine.
    """

    def __init__(self, gpus: Union[int, Sequence[int], None] = None, gpu_memory_limit: Union[int, str, None] = None,
                 tuning_file: Optional[str] = None) -> None:
        count, ids = _gpu_options(gpus)
        if count == 0 and not ids:
            raise ValueError("gpus=0 is the CPU path, which needs no Engine: call mgjoin.join(..., gpus=0)")
        with _engine_errors():
            self._handle: Any = _mgjoin.Engine(count, ids, _memory_limit(gpu_memory_limit), tuning_file or "")

    def _engine(self) -> Any:
        if self._handle is None:
            raise ValueError("this mgjoin.Engine was closed")
        return self._handle

    @property
    def devices(self) -> list[int]:
        """CUDA device ids of the engine's GPU set."""
        return list(self._engine().devices)

    @property
    def device_bytes(self) -> int:
        """Device memory per GPU the engine holds."""
        return int(self._engine().device_bytes)

    def join(self, left: Any, right: Any, on: Union[str, Sequence[str], None] = None, **options: Any) -> Any:
        """``mgjoin.join(left, right, on, ..., engine=self)``: the same arguments but gpus,
        gpu_memory_limit and tuning_file."""
        return join(left, right, on, engine=self, **options)

    def close(self) -> None:
        """Gives the GPUs' memory back; the engine cannot join after."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
