"""Values as the JSON text the row path writes of them, a column at a time: what a columnar
reader fills its templates with, and what the text of a source is checked against."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from taskpack._arrow import concat, numbers, repeated, scalar
from taskpack.converters._sources.chunk import NotColumnar

_SHORT = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    **{chr(c): _SHORT.get(chr(c), f"\\u{c:04x}") for c in range(0x20)},
}


def json_escape(values: pa.Array) -> pa.Array:
    """Each value escaped for a JSON string literal, as `json` and pydantic-core write it."""
    out = values
    present = _specials(values)
    for char, escaped in _ESCAPES.items():  # the backslash first: others add backslashes
        if char in present:
            out = pc.replace_substring(out, char, escaped)
    return out


def _specials(values: pa.Array) -> set[str]:
    """Which characters needing an escape occur in `values`, found in its bytes at once (in
    UTF-8 an ASCII byte is never part of another character)."""
    import numpy as np

    data = values.buffers()[2]
    if data is None:
        return set()
    raw = np.frombuffer(data, np.uint8)
    return {chr(b) for b in np.unique(raw[(raw < 0x20) | (raw == 0x22) | (raw == 0x5C)])}


def json_values(
    values: pa.Array,
    confirmed: bool = False,
    *,
    sort: bool = False,
    spaced: bool = False,
    absent: bool = False,
) -> pa.Array:
    """Each value's JSON text as the row path writes it: text, whole numbers, booleans, nulls
    and lists of them; where the source `confirmed` the text (`_CONFIRMED`), objects too, keys
    in the column's field order or with `sort` sorted (as digests hash them), and floats.
    `spaced`: with `json.dumps`'s default separators; `absent`: an object's null field left out.
    Anything else gives up."""
    kind = values.type
    if pa.types.is_string(kind):
        text = concat('"', json_escape(values), '"')
    elif pa.types.is_integer(kind):
        text = pc.cast(values, pa.string())
    elif pa.types.is_boolean(kind):
        text = pc.if_else(values, scalar("true"), scalar("false"))
    elif pa.types.is_null(kind):
        return repeated("null", len(values))
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
        ends = _offsets(values)
        items = values.values.slice(ends[0], ends[-1] - ends[0])  # null lists' too: aligned
        texts = json_values(items, confirmed, sort=sort, spaced=spaced, absent=absent)
        lists = pa.LargeListArray.from_arrays(numbers(ends - ends[0]), texts)
        joined = pc.binary_join(lists, scalar(", " if spaced else ","))
        text = concat("[", joined, "]")
    elif confirmed and pa.types.is_struct(kind):
        text = _json_objects(values, sort, spaced, absent)
    elif confirmed and pa.types.is_floating(kind):
        text = _python_floats(values)
    else:
        raise NotColumnar(f"a {kind} value")
    return pc.if_else(pc.is_null(values), scalar("null"), text) if values.null_count else text


def _python_floats(values: pa.Array) -> pa.Array:
    """Each float as Python writes it (`repr`, `json`, pydantic-core alike), where Arrow's
    shortest digits come out the same way: fixed from 1e-4 to 1e16, and zero, with `.0` where
    Arrow writes a whole number bare. Others (an exponent in Python's text or Arrow's, NaN,
    infinity) give up."""
    values = values.cast(pa.float64())  # a float32's Python value is its double
    text = pc.cast(values, pa.string())
    size = pc.abs(values)
    fixed = pc.and_(pc.greater_equal(size, scalar(1e-4)), pc.less(size, scalar(1e16)))
    bare = pc.invert(pc.match_substring(text, "e"))
    plain = pc.or_(pc.and_(fixed, bare), pc.equal(size, scalar(0.0)))
    if not pc.all(pc.fill_null(plain, scalar(True))).as_py():
        raise NotColumnar("a float Python writes otherwise than Arrow")
    return pc.if_else(pc.match_substring(text, "."), text, concat(text, ".0"))


def json_items(values: pa.Array) -> pa.Array:
    """Each list's items as JSON text joined by commas, without the brackets (see
    `json_values`)."""
    return pc.utf8_slice_codeunits(json_values(values), 1, -1)


def _offsets(values: pa.Array) -> Any:
    """A list or text array's offsets as int64 numbers, its slice taken into account."""
    import numpy as np

    t = values.type
    large = pa.types.is_large_list(t) or pa.types.is_large_binary(t) or pa.types.is_large_string(t)
    kind = np.int64 if large else np.int32
    raw = np.frombuffer(values.buffers()[1], kind)
    return raw[values.offset : values.offset + len(values) + 1].astype(np.int64)


def _json_objects(values: pa.Array, sort: bool, spaced: bool, absent: bool) -> pa.Array:
    """Each struct value as a JSON object, its keys in field order or sorted; `absent`: a null
    field as a key the object lacks."""
    fields = list(enumerate(values.type))
    if sort:
        fields.sort(key=lambda f: f[1].name)
    if not fields:
        return repeated("{}", len(values))
    colon, comma = (": ", ", ") if spaced else (":", ",")
    parts: list[Any] = []
    for index, field in fields:
        key = f'"{field.name}"'
        if json.dumps(field.name) != key:
            raise NotColumnar(f"a key to escape: {field.name!r}")
        child = pc.struct_field(values, [index])
        text = json_values(child, True, sort=sort, spaced=spaced, absent=absent)
        if absent:  # each present field with a comma before it, the first comma cut below
            part = concat(comma + key + colon, text)
            parts.append(pc.if_else(pc.is_null(child), scalar(""), part))
        else:
            parts += [(comma if parts else "{") + key + colon, text]
    if not absent:
        return concat(*parts, "}")
    inner = pc.utf8_slice_codeunits(concat(*parts), len(comma))
    return concat("{", inner, "}")
