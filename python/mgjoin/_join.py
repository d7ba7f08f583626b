"""mgjoin.join(): equi-joins of two tables on the GPUs (or the CPU path)."""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Optional, Union

import numpy as np

from . import _mgjoin
from ._progress import progress_callback
from ._tables import VALID_SUFFIX, Column, convert

_OUTPUTS = {"table": "columns", "gather_maps": "maps", "count": "count"}
_SEMI_OR_ANTI = {"semi", "anti", "left_semi", "left_anti"}

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
    if on is not None:
        if left_on is not None or right_on is not None:
            raise ValueError("give either on= or left_on= and right_on=, not both")
        names = _names(on, "on")
        return names, list(names)
    if left_on is None or right_on is None:
        raise ValueError("give the key column(s): on= (the same names in both tables) or left_on= and right_on=")
    left, right = _names(left_on, "left_on"), _names(right_on, "right_on")
    if len(left) != len(right):
        raise ValueError(f"left_on names {len(left)} column(s) but right_on names {len(right)}")
    return left, right


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


def _chosen(payloads: Optional[list[str]], columns: dict[str, Column]) -> Optional[list[str]]:
    """The engine's payload columns: each chosen column and, when it has nulls, its validity column."""
    if payloads is None:
        return None
    chosen = []
    for name in payloads:
        chosen.append(name)
        if columns[name].valid is not None:
            chosen.append(name + VALID_SUFFIX)
    return chosen


def _arrow_column(pa: Any, values: np.ndarray, null: Optional[np.ndarray], column: Optional[Column]) -> Any:
    """A pyarrow array over `values` (no copy but for bool values), null where `null` is True."""
    array = pa.array(values, mask=null) if null is not None and null.any() else pa.array(values)
    if column is not None and column.arrow_type is not None:
        array = array.view(column.arrow_type)
    return array


def _table(result: dict, left: dict[str, Column], right: dict[str, Column], left_keys: list[str]) -> Any:
    """The engine's output columns as a pyarrow.Table: key / key.<name>, r.<name>, s.<name>, each
    outer side's missing rows (r.valid / s.valid) and each payload's own nulls as Arrow nulls."""
    import pyarrow as pa

    arrays = dict(result["columns"])
    side_missing = {p: ~arrays[f"{p}.valid"] for p in ("r", "s") if f"{p}.valid" in arrays}
    names, columns = [], []
    for name, values in result["columns"]:
        if name.endswith(VALID_SUFFIX) or name in ("r.valid", "s.valid"):
            continue
        if name == "key" or name.startswith("key."):
            source = left[left_keys[0] if name == "key" else name[4:]]
            null = None
        else:
            prefix, column_name = name[0], name[2:]
            source = (left if prefix == "r" else right)[column_name]
            null = side_missing.get(prefix)
            own_valid = arrays.get(name + VALID_SUFFIX)
            if own_valid is not None:
                null = ~own_valid if null is None else null | ~own_valid
        names.append(name)
        columns.append(_arrow_column(pa, values, null, source))
    return pa.Table.from_arrays(columns, names=names)


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
    tuning_file: Optional[str] = None,
    info: Optional[dict] = None,
    engine: Optional["Engine"] = None,
    gather_on: str = "auto",
) -> Any:
    """Equi-join of two tables on key columns, on all GPUs (or the CPU path without GPUs).

    ``left`` and ``right`` are each a ``pyarrow.Table`` (or RecordBatch), a ``pandas.DataFrame`` or a
    mapping of column name to 1-D array. Columns are int8 ... int64, uint8 ... uint64, float32,
    float64, bool, or Arrow date/time/timestamp/duration (NumPy datetime64/timedelta64); they are
    passed to the engine without a copy where their layout allows (see docs/PYTHON.md, Zero-copy).
    The inputs are never modified.

    Example::

        >>> left = {"k": np.array([1, 2, 2, 5]), "v": np.array([10, 20, 21, 50])}
        >>> right = {"k": np.array([2, 5, 7]), "w": np.array([200, 500, 700])}
        >>> mgjoin.join(left, right, on="k", gpus=0).to_pydict()
        {'key': [2, 2, 5], 'r.v': [20, 21, 50], 's.w': [200, 200, 500]}

    Args:
        on: key column name(s), the same in both tables; several integer columns of at most 8 bytes
            together form a composite key. Or give ``left_on`` and ``right_on``.
        how: "inner", "left", "right", "full" (or "outer"), "semi" or "anti" (left semi/anti joins).
        output: "table" (a pyarrow.Table), "gather_maps" (``(left_rows, right_rows)`` int64 NumPy arrays,
            -1 where an outer join's side is missing; ``right_rows`` is None for semi/anti joins) or
            "count" (the number of output rows, an int).
        gpus: None = every GPU (the CPU path when there is none), 0 = the CPU path, N = the best N-GPU
            set, or a list of GPU ids.
        strategy: "auto", "paper" (the paper's flow) or "copart" (co-partitioned, in GPU memory).
        gpu_memory_limit: device memory per GPU, bytes or a size like "8G" (default 80% of free).
        progress: True shows a progress bar on stderr (tqdm when installed); a callable gets
            ``(phase, fraction)`` reports; both run on the calling thread.
        left_columns, right_columns: payload columns in the output table, in order (default: every
            column that is not a key). Semi and anti joins output no right columns.
        tuning_file: the tuning file of ``mgjoin.tune()`` (default ~/.cache/mgjoin/tuning.json).
        gather_on: where the payload columns of the output are gathered by the join's row ids: "auto"
            (each column on the CPU threads or one GPU, wherever a cost model from the tuning file's rates
            predicts it done first), "cpu" or "gpus". The CPU path gathers on the CPU.
        info: a dict to fill with the run's details: executor, strategy, strategy_reason, seconds,
            join_seconds, phases, materialization, gathers (where late materialization gathered the
            payload columns: the CPU or GPUs, and the prediction that chose it), peak_host_bytes.
        engine: an ``mgjoin.Engine`` to join on: its GPUs and memory, taken once for many joins (then
            leave gpus, gpu_memory_limit and tuning_file unset). Without one, each call takes the
            GPUs' memory for itself (about a second) and gives it back.

    Returns:
        With output="table" a pyarrow.Table with the columns "key" (or "key.<name>" per column of a
        composite key; from the right row where the left one is missing), "r.<name>" per left column
        and "s.<name>" per right column; rows an outer join could not match are null on the missing
        side. Rows: the matching pairs, then an outer join's unmatched left rows, then its unmatched
        right rows; semi and anti joins in left table order.

    Raises:
        ValueError: bad input (the message names the table and column, or the argument).
        mgjoin.GpuError: a CUDA failure.
        MemoryError: host or GPU memory cannot hold the join (checked before it is taken).
        KeyboardInterrupt: Ctrl-C; the join stops at its next cancellation point and frees what it took.
    """
    if output not in _OUTPUTS:
        raise ValueError(f"output={output!r}: expected 'table', 'gather_maps' or 'count'")
    if not isinstance(how, str):
        raise ValueError(f"how={how!r}: expected inner, left, right, full, semi or anti")
    left_keys, right_keys = _key_names(on, left_on, right_on)
    if engine is not None and (gpus is not None or gpu_memory_limit is not None or tuning_file is not None):
        raise ValueError("engine= joins on the engine's GPUs and memory: leave gpus, gpu_memory_limit and "
                         "tuning_file unset (give them to mgjoin.Engine)")
    gpu_count, gpu_ids = _gpu_options(gpus)
    memory_limit = _memory_limit(gpu_memory_limit)
    as_table = output == "table"
    semi_or_anti = how in _SEMI_OR_ANTI
    left_payloads = _names(left_columns, "left_columns", may_be_empty=True)
    right_payloads = _names(right_columns, "right_columns", may_be_empty=True)
    if not as_table:  # counts and gather maps need the keys only
        left_payloads, right_payloads = [], []
    elif semi_or_anti:
        right_payloads = []
    left_arrays, left_meta = convert(left, "left", left_keys, left_payloads)
    right_arrays, right_meta = convert(right, "right", right_keys, right_payloads)
    for lk, rk in zip(left_keys, right_keys):
        lt, rt = left_meta[lk].arrow_type, right_meta[rk].arrow_type
        if lt != rt and (lt is not None or rt is not None):
            raise ValueError(f"key types differ: left column {lk!r} is {lt or left_meta[lk].values.dtype}, "
                             f"right column {rk!r} is {rt or right_meta[rk].values.dtype}")

    with progress_callback(progress) as report, _engine_errors():
        result = _mgjoin.join_tables(
            left_arrays,
            right_arrays,
            left_on=left_keys,
            right_on=right_keys,
            how=how,
            output=_OUTPUTS[output],
            left_columns=_chosen(left_payloads, left_meta),
            right_columns=_chosen(right_payloads, right_meta),
            gpus=gpu_count,
            gpu_ids=gpu_ids,
            gpu_memory_limit=memory_limit,
            strategy=strategy,
            gather_on=gather_on,
            tuning_file=tuning_file or "",
            progress=report,
            engine=engine._engine() if engine is not None else None,
        )
    if info is not None:
        info.update({k: v for k, v in result.items() if k not in ("columns", "left_rows", "right_rows")})
    if output == "count":
        return int(result["count"])
    if output == "gather_maps":
        return result["left_rows"], result["right_rows"]
    return _table(result, left_meta, right_meta, left_keys)


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
