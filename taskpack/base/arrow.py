"""Arrow arrays and scalars made from Python values by their buffers.

Why not `pa.array`, `pa.scalar`, `pa.repeat` or a Python value handed to a compute function:
each asks pyarrow's pandas shim whether the value is a pandas object, and the shim's first
question imports pandas, where it is installed: 0.2-0.4 s of every process that converts a
few thousand rows (bench/convert.py), a third of a small import. These build the same arrays
from NumPy buffers and never ask. `tests/test_light_imports.py` holds the converting path
to it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from itertools import accumulate

import numpy as np
import pyarrow as pa

Number = int | float | bool
INT64 = pa.int64()
STRING = pa.string()


def numbers(values: Sequence[Number | None] | np.ndarray, kind: pa.DataType = INT64) -> pa.Array:
    """Fixed-width numbers (or booleans) of `kind`, None as null."""
    valid = _validity(values) if not isinstance(values, np.ndarray) else None
    if valid is not None:
        values = [0 if v is None else v for v in values]
    if pa.types.is_boolean(kind):
        flags = np.asarray(values, dtype=np.bool_)
        bits = np.packbits(flags, bitorder="little")
        return pa.Array.from_buffers(kind, len(flags), [valid, pa.py_buffer(bits)])
    data = np.ascontiguousarray(values, dtype=kind.to_pandas_dtype())
    return pa.Array.from_buffers(kind, len(data), [valid, pa.py_buffer(data)])


def offsets(lengths: Iterable[int]) -> pa.Array:
    """The offsets of lists of these lengths, as a list array takes them."""
    return numbers([0, *accumulate(lengths)], pa.int32())


def _validity(values: Sequence[object]) -> pa.Buffer | None:
    """The validity bitmap of `values` (None is null), or None where none is."""
    if None not in values:
        return None
    present = np.fromiter((v is not None for v in values), np.bool_, len(values))
    return pa.py_buffer(np.packbits(present, bitorder="little"))


def texts(values: Sequence[str | bytes | None], kind: pa.DataType = STRING) -> pa.Array:
    """Text or bytes of `kind` (string, binary or their large forms), None as null. Text
    not encodable as UTF-8 (a lone surrogate) raises `UnicodeEncodeError`, as `pa.array`
    does."""
    if values and values.count(None) == len(values):
        return pa.nulls(len(values), kind)
    encoded = [v.encode() if isinstance(v, str) else v or b"" for v in values]
    size = len(encoded)
    offsets = np.zeros(size + 1, np.int64)
    np.cumsum(np.fromiter(map(len, encoded), np.int64, size), out=offsets[1:])
    if not (pa.types.is_large_string(kind) or pa.types.is_large_binary(kind)):
        if offsets[-1] >= 2**31:
            raise pa.ArrowInvalid(f"{offsets[-1]} bytes do not fit one {kind} array")
        offsets = offsets.astype(np.int32)
    buffers = [_validity(values), pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(kind, size, buffers)


def repeated(value: str | pa.Array | None, size: int) -> pa.Array:
    """`value` (text or None, or the value of an array of one) `size` times."""
    one = value if isinstance(value, pa.Array) else texts([value])
    return one.take(numbers(np.zeros(size, np.int64)))


@functools.lru_cache(maxsize=4096, typed=True)  # scalars are immutable; JSON's few recur
def scalar(value: str | Number, kind: pa.DataType | None = None) -> pa.Scalar:
    """One value as an Arrow scalar, for a compute function's argument (of the argument's own
    `kind` where the function wants one: `fill_null` converts any other again)."""
    if isinstance(value, str):
        return texts([value])[0]
    if kind is None:
        kind = pa.bool_() if isinstance(value, bool) else pa.int64()
        kind = pa.float64() if isinstance(value, float) else kind
    return numbers([value], kind)[0]


def view(values: pa.Array) -> np.ndarray:
    """A fixed-width array's values, none null, as NumPy sees them in its own buffer
    (`to_numpy` and `np.asarray` ask the pandas shim too)."""
    if values.null_count or pa.types.is_boolean(values.type):  # booleans are bits
        raise ValueError(f"no plain NumPy view of {values.type} values with nulls or bits")
    kind = values.type.to_pandas_dtype()
    if not len(values):
        return np.zeros(0, kind)
    return np.frombuffer(values.buffers()[1], kind)[values.offset : values.offset + len(values)]


def concat(*parts: pa.Array | str) -> pa.Array:
    """Text arrays and constant texts joined row by row (a null in any part makes a null)."""
    import pyarrow.compute as pc

    values = [scalar(p) if isinstance(p, str) else p for p in parts]
    return pc.binary_join_element_wise(*values, scalar(""))
