"""Values as the JSON text the row path writes of them, a column at a time: what a columnar
reader fills its templates with, and what the text of a source is checked against."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from taskpack.base.arrow import concat, numbers, repeated, scalar
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
    # counted, not `np.unique`d: that imports numpy.ma, a tenth of a small import's start
    counts = np.bincount(raw[(raw < 0x20) | (raw == 0x22) | (raw == 0x5C)], minlength=0x5D)
    return {chr(b) for b in np.flatnonzero(counts)}


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
    return json_orders(values, confirmed, (sort,), spaced=spaced, absent=absent)[0]


def json_orders(
    values: pa.Array,
    confirmed: bool,
    orders: tuple[bool, ...],
    *,
    spaced: bool = False,
    absent: bool = False,
) -> tuple[pa.Array, ...]:
    """`json_values` in each order asked for (False: keys in field order, True: sorted), each
    value's parts made once for all (a row's object is stored in its own order and hashed with
    its keys sorted: only the objects' joins differ)."""
    kind = values.type
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        ends = _offsets(values)
        items = values.values.slice(ends[0], ends[-1] - ends[0])  # null lists' too: aligned
        lists = numbers(ends - ends[0])
        comma = scalar(", " if spaced else ",")
        out = _each_once(
            json_orders(items, confirmed, orders, spaced=spaced, absent=absent),
            lambda t: concat(
                "[", pc.binary_join(pa.LargeListArray.from_arrays(lists, t), comma), "]"
            ),
        )
    elif confirmed and pa.types.is_struct(kind):
        out = _json_objects(values, orders, spaced, absent)
    else:
        out = (_json_scalars(values, confirmed),) * len(orders)
    if not values.null_count:
        return out
    return _each_once(out, lambda t: pc.if_else(pc.is_null(values), scalar("null"), t))


def _each_once(
    texts: tuple[pa.Array, ...], make: Callable[[pa.Array], pa.Array]
) -> tuple[pa.Array, ...]:
    """`make` of each of `texts`, once for orders that share one array (no object in them)."""
    made: dict[int, pa.Array] = {}
    for text in texts:
        if id(text) not in made:
            made[id(text)] = make(text)
    return tuple(made[id(text)] for text in texts)


def _json_scalars(values: pa.Array, confirmed: bool) -> pa.Array:
    """Values that are neither lists nor objects as JSON texts (see `json_values`)."""
    kind = values.type
    if pa.types.is_string(kind):
        return concat('"', json_escape(values), '"')
    if pa.types.is_integer(kind):
        return pc.cast(values, pa.string())
    if pa.types.is_boolean(kind):
        return pc.if_else(values, scalar("true"), scalar("false"))
    if pa.types.is_null(kind):
        return repeated("null", len(values))
    if confirmed and pa.types.is_floating(kind):
        return _python_floats(values)
    raise NotColumnar(f"a {kind} value")


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


def _json_objects(
    values: pa.Array, orders: tuple[bool, ...], spaced: bool, absent: bool
) -> tuple[pa.Array, ...]:
    """Each struct value as a JSON object in each of `orders`: keys in field order or sorted;
    `absent`: a null field as a key the object lacks. Each field's texts are made once."""
    if not values.type.num_fields:
        return (repeated("{}", len(values)),) * len(orders)
    colon, comma = (": ", ", ") if spaced else (":", ",")
    made: list[tuple[str, pa.Array, tuple[pa.Array, ...]]] = []
    for index, field in enumerate(values.type):
        if json.dumps(field.name) != f'"{field.name}"':
            raise NotColumnar(f"a key to escape: {field.name!r}")
        child = pc.struct_field(values, [index])
        made.append(
            (field.name, child, json_orders(child, True, orders, spaced=spaced, absent=absent))
        )
    out = []
    for k, sort in enumerate(orders):
        parts: list[Any] = []
        for name, child, texts in sorted(made, key=lambda f: f[0]) if sort else made:
            text, key = texts[k], f'"{name}"'
            if absent:  # each present field with a comma before it, the first comma cut below
                part = concat(comma + key + colon, text)
                parts.append(pc.if_else(pc.is_null(child), scalar(""), part))
            else:
                parts += [(comma if parts else "{") + key + colon, text]
        if absent:
            out.append(concat("{", pc.utf8_slice_codeunits(concat(*parts), len(comma)), "}"))
        else:
            out.append(concat(*parts, "}"))
    return tuple(out)
