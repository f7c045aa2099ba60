"""Arrow values JSON has no type for (timestamps, dates, times, durations, decimals, binary),
as JSON text and back, so that a Parquet source holding them reads into tasks (whose fields
are JSON) and a native round trip writes them back with their Arrow types.

A timestamp reads as its ISO 8601 text (with its offset when the type has a time zone), a date
or time likewise, a duration as its count of the type's unit, a decimal as its exact digits,
bytes as base64. The Arrow types of the columns that held any of these travel beside the row
(`Types`: the IPC bytes of a schema of those columns, base64), and the writer casts the
column back to its type from the same text: `back(to_json(v, t), t) == v` for every value.
"""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa

Types = str  # base64 of the IPC bytes of a schema of the columns with such types


def special(t: pa.DataType) -> bool:
    """Whether values of `t` (or anything nested in it) are not JSON as Arrow gives them."""
    if pa.types.is_struct(t):
        return any(special(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return special(t.value_type)
    if pa.types.is_map(t):
        return True  # a map reads as a list of (key, value) tuples
    return bool(
        pa.types.is_temporal(t)
        or pa.types.is_decimal(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
    )


def to_json(value: Any, t: pa.DataType) -> Any:
    """A Python value of Arrow type `t` (as `to_pylist` gives it) as JSON."""
    if value is None:
        return None
    if pa.types.is_struct(t):
        return {f.name: to_json(value.get(f.name), f.type) for f in t}
    if pa.types.is_map(t):
        return [[to_json(k, t.key_type), to_json(v, t.item_type)] for k, v in value]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [to_json(v, t.value_type) for v in value]
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        unit = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[t.unit]
        return (value.days * 86_400 + value.seconds) * unit + value.microseconds * unit // 1_000_000
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def back(value: Any, t: pa.DataType) -> Any:
    """The Python value of Arrow type `t` that `to_json` wrote as `value`."""
    if value is None:
        return None
    if pa.types.is_struct(t):
        return {f.name: back(value.get(f.name), f.type) for f in t}
    if pa.types.is_map(t):
        return [(back(k, t.key_type), back(v, t.item_type)) for k, v in value]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [back(v, t.value_type) for v in value]
    if pa.types.is_timestamp(t):
        return dt.datetime.fromisoformat(value)
    if pa.types.is_date(t):
        return dt.date.fromisoformat(value)
    if pa.types.is_time(t):
        return dt.time.fromisoformat(value)
    if pa.types.is_duration(t):
        return pa.scalar(value, pa.int64()).cast(t).as_py()
    if pa.types.is_decimal(t):
        return Decimal(value)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return base64.b64decode(value)
    return value


def row_types(schema: pa.Schema) -> Types | None:
    """The `Types` of a table's columns that hold values JSON has no type for, if any."""
    # name, type and nullability only: what readers note on a field is not the source's
    fields = [pa.field(f.name, f.type, f.nullable) for f in schema if special(f.type)]
    if not fields:
        return None
    return base64.b64encode(pa.schema(fields).serialize().to_pybytes()).decode("ascii")


def schema_of(types: Types) -> pa.Schema:
    import pyarrow.ipc as ipc

    return ipc.read_schema(pa.py_buffer(base64.b64decode(types)))


def json_row(row: dict[str, Any], schema: pa.Schema) -> dict[str, Any]:
    """A row read from a table of `schema`, its special columns as JSON."""
    for f in schema:
        if f.name in row and special(f.type):
            row[f.name] = to_json(row[f.name], f.type)
    return row


def typed_column(values: list[Any], field: pa.Field) -> pa.Array:
    """A column of JSON values `to_json` wrote, as the Arrow type it had."""
    return pa.array([back(v, field.type) for v in values], type=field.type)
