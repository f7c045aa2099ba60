"""Batch checks: what a batch must hold for its rows to map as the row path maps them, each
refusing the rows it cannot vouch for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from taskpack.base.arrow import concat, offsets, repeated, scalar, texts
from taskpack.base.digests import canonical_json
from taskpack.converters._sources.chunk import NotColumnar, Parsed
from taskpack.converters._sources.jsonl import (
    _JSON_LINES,
    Confirmed,
    _holds,
    _unsure,
    confirmed,
)
from taskpack.converters._sources.jsontext import json_orders


def refuse(bad: pa.Array | pa.ChunkedArray, reason: str) -> None:
    """`NotColumnar` naming the rows of a batch where `bad` holds (a null is no refusal), if
    any: those rows go row by row, the others stay columnar (see `mapped`)."""
    if pc.any(bad).as_py():
        raise NotColumnar(reason, pc.indices_nonzero(pc.fill_null(bad, scalar(False))).to_pylist())


def _list_offsets(values: pa.Array) -> pa.Array:
    """The offsets of a list array's items in its `list_flatten`, nulls as empty lists."""
    lengths = pc.list_value_length(values)
    lengths = pc.fill_null(lengths, scalar(0, lengths.type))
    return offsets(lengths.to_pylist())


def without(prompt: pa.Array, field: str) -> pa.Array:
    """A list of structs (messages) without one of their fields; its nulls must be refused."""
    items = pc.list_flatten(prompt)
    kept = [f.name for f in items.type if f.name != field]
    values = pa.StructArray.from_arrays([pc.struct_field(items, n) for n in kept], names=kept)
    return pa.ListArray.from_arrays(_list_offsets(prompt), values)


def item_fields(kind: pa.DataType) -> dict[str, pa.DataType]:
    """The fields of the objects a list type holds (a prompt's messages), or {} for any other
    type."""
    item = kind.value_type if pa.types.is_list(kind) or pa.types.is_large_list(kind) else None
    return {f.name: f.type for f in item} if item and pa.types.is_struct(item) else {}


def last_user(roles: Sequence[str]) -> int | None:
    """Where the last user message is among a prompt's `roles`, if it has one."""
    return len(roles) - 1 - list(roles)[::-1].index("user") if "user" in roles else None


def role_keys(prompt: pa.Array) -> pa.Array:
    """Each row's roles as one text (a key for `grouped`); all alike where the prompt is not a
    list of messages (`messages` then refuses it)."""
    if "role" not in item_fields(prompt.type):
        return repeated("", len(prompt))
    roles = pc.struct_field(pc.list_flatten(prompt), "role")
    joined = pc.binary_join(pa.ListArray.from_arrays(_list_offsets(prompt), roles), scalar("\x1f"))
    return pc.fill_null(joined, scalar(""))


def text(values: pa.Array) -> pa.Array:
    """`values`, which must be text and never null."""
    if not pa.types.is_string(values.type):
        raise NotColumnar(f"a {values.type} where text belongs")
    if values.null_count:
        refuse(pc.is_null(values), "a null where text belongs")
    return values


def messages(prompt: pa.Array | pa.ChunkedArray) -> tuple[list[str], list[pa.Array]]:
    """The roles and the content columns of chat prompts that hold the same roles in every
    row, each message exactly a role and a text content (as the frameworks' scripts write)."""
    prompt = prompt.combine_chunks() if isinstance(prompt, pa.ChunkedArray) else prompt
    empty = prompt.type in (pa.list_(pa.null()), pa.large_list(pa.null()))
    if empty and not prompt.null_count and not pc.max(pc.list_value_length(prompt)).as_py():
        return [], []  # no messages in any row (an environment that writes its own)
    if item_fields(prompt.type) != {"role": pa.string(), "content": pa.string()}:  # any order
        raise NotColumnar(f"a prompt of type {prompt.type}")
    if prompt.null_count:
        refuse(pc.is_null(prompt), "no prompt")
    lengths = pc.list_value_length(prompt)
    count = pc.mode(lengths)[0]["mode"].as_py() if len(prompt) else 0
    refuse(pc.not_equal(lengths, scalar(count)), "prompts of different lengths")
    items = [pc.list_element(prompt, scalar(k)) for k in range(count)]
    roles = [one_text(pc.struct_field(item, "role")) for item in items]
    return roles, [text(pc.struct_field(item, "content")) for item in items]


def one_text(values: pa.Array) -> str:
    """The one text every value is (a constant of the template)."""
    if pc.count_distinct(text(values)).as_py() != 1:
        raise NotColumnar("a value that changes between rows")
    return str(values[0].as_py())


def own_names(names: Sequence[str]) -> None:
    """Source fields named like the slots readers make up themselves (`#prompt`) give up."""
    if any(n.startswith("#") for n in names):
        raise NotColumnar(f"columns {list(names)}")


def task_ids(ids: pa.Array) -> pa.Array:
    """`ids`, each one the model takes as a task id: 1 to 512 characters, none a control one."""
    lengths = pc.utf8_length(ids)
    short, long = pc.less(lengths, scalar(1)), pc.greater(lengths, scalar(512))
    refuse(pc.or_(short, long), "an empty or overlong id")
    refuse(pc.match_substring_regex(ids, r"[\x00-\x1f\x7f]"), "an id with a control character")
    return ids


def ordinal_ids(split: str, rows: pa.Array) -> pa.Array:
    """`<split>-<row, 5 digits at least>`: the ids a reader gives rows that have none."""
    return concat(f"{split}-", pc.utf8_lpad(pc.cast(rows, pa.string()), 5, "0"))


def json_columns(
    table: pa.Table, names: Sequence[str], parsed: Parsed
) -> tuple[dict[str, pa.Array], dict[str, pa.Array]]:
    """Columns `names` as each row's JSON text (`json_values`), and for those holding objects
    the text digests hash, keys sorted (see `Template.fill`).

    A column of JSON's kinds `json_values` cannot vouch for (objects or floats whose text the
    source did not confirm, see `_confirm_texts`; a float Python writes with an exponent) takes
    its values from `parsed`, the row path's own reading, serialized as the row path
    serializes them: per-row Python for that column only."""
    texts, hashed = {}, {}
    for name in names:
        field = table.schema.field(name)
        values = table.column(name).combine_chunks()
        seen = confirmed(field)
        try:
            if not seen.confirmed and _holds(field.type, _unsure):
                raise NotColumnar("text to confirm")
            if seen.confirmed and _holds(field.type, pa.types.is_struct):
                texts[name], hashed[name] = _json_texts(values, seen, (False, True))
            else:
                (texts[name],) = _json_texts(values, seen, (False,))
        except NotColumnar:
            # From Parquet, a date, bytes or a map is no value of JSON; in JSON Lines, a date
            # is text Arrow read as one.
            if table.schema.metadata != _JSON_LINES and _holds(field.type, _not_json):
                raise
            texts[name], hashed[name] = python_texts([row.get(name) for row in parsed()])
    return texts, hashed


def _json_texts(
    values: pa.Array, seen: Confirmed, orders: tuple[bool, ...]
) -> tuple[pa.Array, ...]:
    """`json_orders` of a column as its marks say; where every row's text is the first's, the
    first row's alone, repeated."""
    if seen.same:
        first = _json_texts(values[:1], seen._replace(same=False), orders)
        return tuple(repeated(text, len(values)) for text in first)
    return json_orders(values, seen.confirmed, orders, absent=seen.absent)


def _not_json(kind: pa.DataType) -> bool:
    return not (
        pa.types.is_string(kind)
        or pa.types.is_integer(kind)
        or pa.types.is_boolean(kind)
        or pa.types.is_null(kind)
        or _unsure(kind)
        or pa.types.is_list(kind)
        or pa.types.is_large_list(kind)
    )


def python_texts(values: list[Any]) -> tuple[pa.Array, pa.Array]:
    """Each value's text as stored rows hold it (pydantic-core's JSON) and as digests hash it
    (`canonical_json`), as the row path writes both."""
    from pydantic_core import PydanticSerializationError, to_json

    try:
        stored = [to_json(v).decode("utf-8") for v in values]
        hashed = [canonical_json(v).decode("utf-8") for v in values]
    except (ValueError, TypeError, RecursionError, PydanticSerializationError) as e:
        raise NotColumnar(str(e)) from None
    return texts(stored), texts(hashed)
