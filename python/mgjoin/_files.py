"""Files and datasets as join inputs: a Parquet file, a directory of Parquet files (a dataset, hive-style
``name=value`` folders read as columns), an Arrow IPC (Feather) file, a directory of ``.npy`` columns (as
``mgjoin join --r DIR`` reads it: each file a column named by its stem; NumPy's fixed-width strings, U and
S, as Arrow string and binary columns), or a ``pyarrow.dataset.Dataset``.

Each is opened as a pyarrow Dataset, and only the columns the join uses (its keys and the output's
payload columns) are read, by the Dataset's multi-threaded scanner, into a pyarrow Table that join() then
takes as any other (issue 43, item 3). The whole projection is read before the join starts: batches are
not yet streamed into the engine.

A file or dataset that cannot be read is a one-line ValueError (FileNotFoundError for a missing path)
naming the file and, where known, the column, with pyarrow's error as its cause: a corrupt or truncated
file, a file of a dataset that lacks a column the join reads or holds it in another type.
"""
from __future__ import annotations

import errno
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

_MAGIC = {b"PAR1": "parquet", b"ARROW1": "ipc"}
_SUFFIXES = {".parquet": "parquet", ".parq": "parquet", ".pq": "parquet",
             ".arrow": "ipc", ".feather": "ipc", ".ipc": "ipc"}
_NAMES = {"parquet": "Parquet", "ipc": "Arrow IPC"}
_HIDDEN = (".", "_")  # files and folders a dataset leaves out, as pyarrow does (_SUCCESS, .crc)


def is_file_source(obj: Any) -> bool:
    """Whether join() reads `obj` as a file or dataset: a path, or a pyarrow.dataset.Dataset."""
    if isinstance(obj, (str, os.PathLike)):
        return True
    if not type(obj).__module__.startswith("pyarrow"):
        return False
    import pyarrow.dataset as ds

    return isinstance(obj, ds.Dataset)


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def _format_of(path: str) -> Optional[str]:
    """"parquet" or "ipc", from the file's magic bytes or else its name; None when neither says."""
    try:
        with open(path, "rb") as f:
            head = f.read(6)
    except OSError:
        head = b""
    for magic, fmt in _MAGIC.items():
        if head.startswith(magic):
            return fmt
    return _SUFFIXES.get(os.path.splitext(path)[1].lower())


def _data_files(folder: str) -> list[str]:
    """The files of a dataset folder, in pyarrow's order, hidden ones left out."""
    files = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(_HIDDEN))
        files += [os.path.join(root, n) for n in sorted(names) if not n.startswith(_HIDDEN)]
    return files


def _npy_files(folder: str) -> list[str]:
    """The .npy files directly inside `folder`, in name order: a table of column files when any."""
    names = sorted(n for n in os.listdir(folder) if n.lower().endswith(".npy") and not n.startswith(_HIDDEN))
    return [os.path.join(folder, n) for n in names if os.path.isfile(os.path.join(folder, n))]


class _NpyColumns:
    """A folder of .npy columns as the little of a pyarrow Dataset FileSource uses: a schema (the files'
    stems; their headers read, their data memory-mapped, lengths and dimensions checked) and to_table of the
    columns a join reads, made only then. NumPy's fixed-width strings become Arrow string and binary
    values as NumPy reads them: trailing NULs dropped, embedded ones kept (pa.array of a U or S array would
    cut each value at its first NUL, and the CLI does not)."""

    def __init__(self, files: list[str], side: str) -> None:
        import numpy as np
        import pyarrow as pa

        self._side, self._files, self._arrays, fields = side, {}, {}, []
        for file in files:
            name = os.path.splitext(os.path.basename(file))[0]
            try:
                values = np.load(file, mmap_mode="r", allow_pickle=False)
                kind = values.dtype.kind
                fields.append(pa.field(name, pa.string() if kind == "U" else pa.binary() if kind == "S"
                                       else pa.from_numpy_dtype(values.dtype)))
            except (ValueError, OSError, TypeError, pa.ArrowException) as e:
                raise ValueError(f"{side} table: cannot read {file}: {_one_line(e)}") from e
            if values.ndim != 1:
                raise ValueError(f"{side} table: {file} has {values.ndim} dimensions, expected 1")
            first = next(iter(self._arrays.values()), None)
            if first is not None and len(values) != len(first):
                raise ValueError(f"{side} table: {file} has {len(values)} rows, but {files[0]} has {len(first)}")
            self._files[name], self._arrays[name] = file, values
        self.schema = pa.schema(fields)

    def to_table(self, columns: list[str], use_threads: bool = True) -> Any:
        import pyarrow as pa

        out = {}
        for name in columns:
            values, field = self._arrays[name], self.schema.field(name)
            try:
                out[name] = pa.array(values.tolist(), field.type) if values.dtype.kind in "US" else pa.array(values)
            except (ValueError, TypeError, UnicodeError, pa.ArrowException) as e:
                raise ValueError(f"{self._side} table: cannot read {self._files[name]}: {_one_line(e)}") from e
        return pa.table(out, schema=pa.schema([self.schema.field(n) for n in columns]))


def _open(path: str, fmt: str, partitioning: Optional[str]) -> Any:
    import pyarrow.dataset as ds

    return ds.dataset(path, format=fmt, partitioning=partitioning)


class FileSource:
    """One side's file or dataset: its column names (the Dataset's schema, partition columns included),
    and the columns a join uses, read on demand."""

    def __init__(self, source: Any, side: str) -> None:
        self.side = side
        self._checked = False
        if isinstance(source, (str, os.PathLike)):
            self.path: Optional[str] = os.fsdecode(os.fspath(source))
            self.where = self.path
            self.dataset = self._open_path(self.path)
        else:
            self.path = None
            self.where = "the pyarrow.dataset.Dataset"
            self.dataset = source
            self._checked = True  # a Dataset the caller made is read as its schema says
        self.names = list(self.dataset.schema.names)

    def _error(self, what: str, cause: BaseException) -> ValueError:
        error = ValueError(f"{self.side} table: {what}: {_one_line(cause)}")
        error.__cause__ = cause
        return error

    def _open_path(self, path: str) -> Any:
        import pyarrow as pa

        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, f"{self.side} table: no such file or directory", path)
        is_folder = os.path.isdir(path)
        npy = _npy_files(path) if is_folder else []
        if npy:
            self._checked = True  # every file's header, rows and dimensions checked by _NpyColumns
            return _NpyColumns(npy, self.side)
        files = _data_files(path) if is_folder else [path]
        if not files:
            raise ValueError(f"{self.side} table: the folder {path} holds no Parquet or Arrow IPC files")
        fmt = _format_of(files[0])
        if fmt is None:
            raise ValueError(f"{self.side} table: {files[0]} is neither a Parquet file nor an Arrow IPC (Feather) "
                             "file (by its first bytes and its name)")
        try:
            return _open(path, fmt, "hive" if is_folder else None)
        except (pa.ArrowException, OSError) as e:
            bad = self._unreadable_file(files, fmt) if is_folder else path
            raise self._error(f"cannot read {bad} (a corrupt or truncated {_NAMES[fmt]} file?)", e) from e

    def _unreadable_file(self, files: list[str], fmt: str) -> str:
        """The first of `files` whose schema cannot be read (the folder when each can)."""
        import pyarrow as pa

        for file in files:
            try:
                _open(file, fmt, None)
            except (pa.ArrowException, OSError):
                return file
        return str(self.path)

    def _check_files(self, columns: list[str]) -> None:
        """Each file of a dataset the caller named by its path holds the columns the join reads, of the
        types of the dataset's schema (its first file's); its footer is read, by several threads. A
        column no file holds is a partition column (from the folder names)."""
        import pyarrow as pa

        fragments = list(self.dataset.get_fragments())

        def schema_of(fragment: Any) -> Any:
            try:
                return fragment.physical_schema
            except (pa.ArrowException, OSError) as e:
                return e

        with ThreadPoolExecutor(max(1, min(len(fragments), os.cpu_count() or 1))) as pool:
            schemas = list(pool.map(schema_of, fragments))
        for fragment, schema in zip(fragments, schemas):
            if isinstance(schema, BaseException):
                raise self._error(f"cannot read {fragment.path} (a corrupt or truncated file?)", schema) from schema
        first = fragments[0].path if fragments else self.where
        for name in columns:
            field = self.dataset.schema.field(name)
            held = [(f, s.field(name)) for f, s in zip(fragments, schemas) if s.get_field_index(name) >= 0]
            if not held:
                continue  # a partition column
            if len(held) < len(fragments):
                lacking = next(f for f, s in zip(fragments, schemas) if s.get_field_index(name) < 0)
                raise ValueError(f"{self.side} table: {lacking.path} has no column {name!r}, which {held[0][0].path} "
                                 f"has (the files of {self.where} differ in their columns)")
            for fragment, own in held:
                if own.type != field.type:
                    raise ValueError(f"{self.side} table: column {name!r} is {own.type} in {fragment.path} but "
                                     f"{field.type} in {first} (the files of {self.where} differ in their column "
                                     "types)")

    def read(self, columns: list[str]) -> Any:
        """The columns `columns` as a pyarrow Table, read by the Dataset's multi-threaded scanner."""
        import pyarrow as pa

        if not self._checked:
            self._check_files(columns)
        try:
            return self.dataset.to_table(columns=columns, use_threads=True)
        except (pa.ArrowException, OSError) as e:
            file, column = self._unreadable_part(columns)
            where = f"column {column!r} of {file}" if column is not None else f"columns {columns} of {file}"
            raise self._error(f"cannot read {where}", e) from e

    def _unreadable_part(self, columns: list[str]) -> tuple[str, Optional[str]]:
        """(the file, the column) whose reading fails, column by column, file by file; (this side's
        source, None) when each reads alone."""
        import pyarrow as pa

        fragments = list(self.dataset.get_fragments())
        for fragment in fragments:
            for column in columns:
                try:
                    fragment.to_table(schema=self.dataset.schema, columns=[column])
                except (pa.ArrowException, OSError):
                    return getattr(fragment, "path", self.where), column
        return self.where, None

