"""Keys of the types the engine does not compare (strings, binaries, decimal128/256, fixed_size_binary of
widths other than 1, 2, 4 and 8 bytes, and dictionaries of strings or binaries such as pandas categories),
joined through a dictionary that both sides share.

The distinct non-null values of a key's two columns (left and right) make one dictionary (pyarrow's
``unique``), and each column becomes the integer codes of its values in it (``index_in``); the codes go
to the engine in the key's place, and the output decodes them (``dictionary.take``) back to the input's
type. Why a dictionary rather than a hash of the values:

- Exact: equal codes are equal values and different codes different values, so no two keys can collide
  and no match needs verifying. A null stays null, so the SQL null-key rules of ``_nulls.py`` apply as
  they are.
- Narrow: a code is 4 bytes (8 past 2^31 - 1 distinct values), so a string key takes the engine's fast
  path of keys up to 8 bytes; a composite key of a string and other columns is an ordinary composite key
  (over 8 bytes, ``wide_keys``' hash and verify, now on fixed-width columns).
- The cost is a CPU pass of pyarrow's hash kernels over each side's keys before the join.

Inside the join the codes are an int32 (int64) key column like any other; only ``decoded`` turns them
back into values, when the output table is made.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ._tables import _STORAGE_BITS, OFFSET32_BYTES, VALID_SUFFIX, Column, _pyarrow, take_in_pieces

# The most values a dictionary may hold for int32 codes; past it the codes are int64 (a test lowers it).
INT32_CODES = 2**31 - 1
# OFFSET32_BYTES (from _tables): a decoded key column of 32-bit offsets past it is made of chunks that each
# hold no more (a test lowers it here).


def _values_type(t: Any) -> Any:
    """The type a key's values are: a dictionary's value type, else the type itself."""
    return t.value_type if _pyarrow().types.is_dictionary(t) else t


def _is_text(t: Any) -> bool:
    types = _pyarrow().types
    return types.is_string(t) or types.is_large_string(t) or str(t) == "string_view"  # pyarrow >= 16 has views


def _is_bytes(t: Any) -> bool:
    """Binaries of any length (fixed_size_binary are not: they compare with their own width only)."""
    types = _pyarrow().types
    return types.is_binary(t) or types.is_large_binary(t) or str(t) == "binary_view"


def takes(t: Any) -> bool:
    """Whether a key of Arrow type `t` (None for a NumPy column) joins through a dictionary."""
    if t is None:
        return False
    types = _pyarrow().types
    if types.is_dictionary(t):
        return _is_text(t.value_type) or _is_bytes(t.value_type)
    return (_is_text(t) or _is_bytes(t) or (types.is_decimal(t) and t.bit_width > 64)
            or (types.is_fixed_size_binary(t) and t.bit_width not in _STORAGE_BITS))


def comparable(left: Any, right: Any) -> bool:
    """Whether two key types whose values are strings (or binaries) compare, whatever their layouts
    (offsets of 32 or 64 bits, views, dictionaries): they do, value by value, through a dictionary."""
    if left is None or right is None:
        return False
    left, right = _values_type(left), _values_type(right)
    return (_is_text(left) and _is_text(right)) or (_is_bytes(left) and _is_bytes(right))


def _value_type(types: list[Any]) -> Any:
    """The type the dictionary of keys of `types` holds (all of one kind, checked by join()): strings and
    binaries of any layout as the large type (64-bit offsets: the distinct values of both sides, and each
    side's before them, may pass the 2 GiB that 32-bit offsets hold, whatever the inputs' types),
    fixed_size_binary of one width as it is, decimals of one scale at the largest precision."""
    pa = _pyarrow()
    values = [_values_type(t) for t in types]
    first = values[0]
    if pa.types.is_decimal(first):  # decimal32/64 have no hash kernels: 128 bits at least
        precision = max(t.precision for t in values)
        return (pa.decimal128 if precision <= 38 else pa.decimal256)(precision, first.scale)
    if _is_text(first):
        return pa.large_string()
    if all(t == first for t in values) and not _is_bytes(first):
        return first  # fixed_size_binary, both sides of one width
    return pa.large_binary()


def _arrow_of(column: Column) -> Any:
    """A key column's values as pyarrow data of its input's type."""
    return column.arrow if column.values is None else column.as_arrow()


def _key_type(column: Column) -> Any:
    return column.arrow.type if column.values is None else column.arrow_type


def _codes(pc: Any, values: Any, dictionary: Any) -> Any:
    """The position of each value in `dictionary` (null for a null), as int32, or int64 past INT32_CODES
    values: index_in numbers its value set with int32, so a larger dictionary is looked up a part at a
    time, each part's positions offset by its start."""
    pa = _pyarrow()
    if len(dictionary) <= INT32_CODES:
        return pc.index_in(values, value_set=dictionary)
    codes = None
    for start in range(0, len(dictionary), INT32_CODES):
        part = pc.add(pc.index_in(values, value_set=dictionary.slice(start, INT32_CODES)).cast(pa.int64()), start)
        codes = part if codes is None else pc.coalesce(codes, part)
    return codes


def encode_keys(keys: tuple[list[str], list[str]], meta: tuple[dict[str, Column], dict[str, Column]],
                arrays: tuple[dict[str, np.ndarray], dict[str, np.ndarray]]) -> None:
    """Replaces each key column that joins through a dictionary by its codes: its Column in `meta` (which
    keeps the dictionary and the input's type for ``decoded``) and its array (and validity) in `arrays`,
    the engine's columns. The key types were checked by join() first."""
    pa = _pyarrow()
    import pyarrow.compute as pc

    for pair in zip(*keys):  # join() refuses a column named twice: each column is in one pair
        sides = ((0, pair[0]), (1, pair[1]))
        columns = [meta[side][name] for side, name in sides]
        if not any(takes(_key_type(c)) for c in columns):
            continue
        value_type = _value_type([_key_type(c) for c in columns])
        values = [_arrow_of(c).cast(value_type) for c in columns]
        # The distinct values of each column, then of them together: the second pass hashes no more than
        # both sides' distinct values.
        distinct = [pc.unique(v) for v in values]
        dictionary = pc.drop_null(pc.unique(pa.concat_arrays(distinct)))
        for (side, name), column, v in zip(sides, columns, values):
            codes = _codes(pc, v, dictionary)
            if isinstance(codes, pa.ChunkedArray):  # a copy of the codes only, not of the values
                codes = codes.combine_chunks() if codes.num_chunks != 1 else codes.chunk(0)
            valid = codes.is_valid().to_numpy(zero_copy_only=False) if codes.null_count else None
            code_values = (codes.fill_null(0) if codes.null_count else codes).to_numpy(zero_copy_only=False)
            meta[side][name] = Column(code_values, valid, dictionary=dictionary, decoded_type=_key_type(column))
            arrays[side][name] = code_values
            arrays[side].pop(name + VALID_SUFFIX, None)
            if valid is not None:
                arrays[side][name + VALID_SUFFIX] = valid


def decoded(column: Column, array: Any, other: Optional[Column] = None) -> Any:
    """An output column made of `column`'s values in `array` (gathered by the engine or pyarrow): as they
    are, or a dictionary key's codes decoded to the input's type. For a key both sides share, `other` is
    the right side's column, and a type that holds both sides' values is taken where theirs differ (their
    values' type where that is one, as string for a category of strings and strings, else the
    dictionary's: large_string for string and string_view, the larger precision of two decimals)."""
    if column.dictionary is None:
        return array
    pa = _pyarrow()
    arrow_type = column.decoded_type
    if other is not None and other.decoded_type != arrow_type:
        left, right = _values_type(arrow_type), _values_type(other.decoded_type)
        same = left == right and str(left) not in ("string_view", "binary_view")
        arrow_type = left if same else column.dictionary.type  # a category of strings and strings: string
    if pa.types.is_dictionary(arrow_type):  # pandas categories: encoded again, as the input had them
        return _taken(column.dictionary, array, arrow_type.value_type).cast(arrow_type)
    return _taken(column.dictionary, array, arrow_type)


def _taken(dictionary: Any, codes: Any, arrow_type: Any) -> Any:
    """``dictionary.take(codes)`` cast to `arrow_type`. The dictionary's strings and binaries are of the
    large type; an output of 32-bit offsets (string, binary) whose values pass OFFSET32_BYTES keeps the
    input's type and is made of chunks, each taken from the dictionary on its own (its offsets from 0)
    and cast: a cast of the whole would fail past 2 GiB."""
    pa = _pyarrow()
    pieces = []
    for part in (codes.chunks if isinstance(codes, pa.ChunkedArray) else [codes]):
        values = dictionary.take(part)
        if values.type == arrow_type:
            pieces.append(values)
            continue
        if not (pa.types.is_string(arrow_type) or pa.types.is_binary(arrow_type)):
            pieces.append(values.cast(arrow_type))
            continue
        offsets = np.frombuffer(values.buffers()[1], dtype=np.int64, count=len(values) + 1,
                                offset=values.offset * 8)
        if offsets[-1] - offsets[0] <= OFFSET32_BYTES:
            pieces.append(values.cast(arrow_type))
            continue
        del values, offsets  # a single value fits: the input's column of this type held it
        pieces.extend(c.cast(arrow_type) for c in take_in_pieces(dictionary, part, OFFSET32_BYTES).chunks)
    if len(pieces) == 1 and not isinstance(codes, pa.ChunkedArray):
        return pieces[0]
    return pa.chunked_array(pieces, type=arrow_type)
