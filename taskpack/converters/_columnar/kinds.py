"""The kinds of field a format's field map names (`fieldmap`): each holds its row half and its
batch half side by side, so that a rule is changed in one place for both paths.

The row half (`value`) checks a field in one source row and gives its value, raising `RowError`
as the row path words it. The batch half (`take`) gives the field's slot columns for a batch and
its shape, what the template holds as a constant (a chat's roles, a value every row shares), and
refuses (`refuse`, `NotColumnar`) whatever the row half would refuse or could map otherwise;
`stand_in` is what the field is in the template's row of slots, given that shape. A kind that
`groups` a batch splits it into rows of one shape each. A key with a dot is a field of a struct
column (`reward_spec.method`); a key starting with `#` is a value the map derives.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple, cast

import pyarrow as pa
import pyarrow.compute as pc

from taskpack.base.arrow import concat, numbers, scalar, texts
from taskpack.base.nesting import too_deep
from taskpack.converters._columnar.guards import (
    item_fields,
    json_columns,
    last_user,
    messages,
    one_text,
    refuse,
    role_keys,
    text,
    without,
)
from taskpack.converters._columnar.template import json_slot, slot
from taskpack.converters._sources.chunk import NotColumnar, Parsed
from taskpack.converters._sources.jsonl import fields_table
from taskpack.converters._sources.jsontext import json_items, json_values
from taskpack.converters._sources.records import RowError, need

Columns = dict[str, pa.Array]
Shapes = dict[str, Hashable]


class Values(dict[str, Any]):
    """A source row, its fields checked by their kinds, and the values the map derives (keys
    starting with `#`, which no source field may have). `source`: the row's own field names,
    which an error about a missing field lists (not the defaults a kind filled in)."""

    def __init__(self, row: dict[str, Any]) -> None:
        super().__init__(row)
        self.source = list(row)

    def rest(self, *mapped: str) -> dict[str, Any]:
        """The row's own fields but `mapped`: what a format keeps in metadata."""
        return {k: v for k, v in self.items() if k not in mapped and not k.startswith("#")}


def column(table: pa.Table, key: str) -> pa.Array:
    """The values of a field of the table: a column, or (`a.b`) a field of a struct column."""
    name, *inner = key.split(".")
    values = table.column(name).combine_chunks()
    for part in inner:
        values = pc.struct_field(values, part)
    return values


@dataclass
class At:
    """A batch as the kinds take it: its table, its rows as the row path parses them (for what
    Arrow cannot vouch for), earlier fields' slot columns and shapes, and the rows' task ids
    (`ids`, asked when needed)."""

    table: pa.Table
    parsed: Parsed
    # the rows' ids from the columns taken so far (given them, not holding this batch: a
    # closure over it would be a cycle, kept until the cyclic collector runs)
    id_of: Callable[[Columns], pa.Array]
    columns: Columns = field(default_factory=dict)
    shapes: Shapes = field(default_factory=dict)
    # of the kinds that group a batch (`Kind.groups`), the text these rows share
    grouped: dict[str, str] = field(default_factory=dict)
    _fields: dict[str, pa.Table] = field(default_factory=dict)

    def fields(self, name: str) -> tuple[pa.Table, Parsed]:
        """Struct column `name` as a table of its fields (their text checked against the
        source, see `_sources.jsonl.fields_table`), and its rows' objects as the row path parses
        them."""
        if name not in self._fields:
            self._fields[name] = fields_table(self.table, name)
        return self._fields[name], lambda: [row[name] for row in self.parsed()]

    def ids(self) -> pa.Array:
        return self.id_of(self.columns)

    def share(self, other: At) -> None:
        """Take the struct tables `other`, a batch of the very same rows, has built."""
        self._fields = other._fields


def has(table: pa.Table, key: str) -> bool:
    """Whether the table has the field (`a.b`: a struct column `a` with a field `b`)."""
    name, _, inner = key.partition(".")
    if name not in table.schema.names:
        return False
    kind = table.schema.field(name).type
    return not inner or (pa.types.is_struct(kind) and kind.get_field_index(inner) >= 0)


def _none_of(values: pa.Array, never: tuple[str, ...], key: str) -> None:
    """Refuses the rows whose `values` is one of `never` (values the row path reads otherwise)."""
    for other in never:
        refuse(pc.equal(values, scalar(other)), f"{key} {other!r}")


def _always(values: pa.Array, other: pa.Array, what: str) -> bool:
    """Whether `values` is `other` in every row (False: in none); rows where it is only
    sometimes need a template each, and the batch goes by the row path."""
    same = pc.sum(pc.equal(values, other).cast(pa.int64())).as_py()
    if same not in (0, len(values)):
        raise NotColumnar(f"{what} only in some rows")
    return bool(same)


class Kind:
    """A field of a map. `source`: a field the source has, not one the map derives."""

    source: ClassVar[bool] = True
    required: ClassVar[bool] = True  # of a source field: whether every batch must have it

    def value(self, values: Values, key: str) -> Any:
        """The row path: the field's value in a row whose earlier fields are checked."""
        return values.get(key)

    def groups(self, at: At, key: str) -> pa.Array | None:
        """Each row's shape as text, where rows of one batch may differ in it."""
        return None

    def take(self, at: At, key: str) -> tuple[Hashable, Columns]:
        """The batch path: the field's shape and slot columns."""
        raise NotImplementedError

    def stand_in(self, key: str, shape: Hashable) -> Any:
        return slot(key)


@dataclass(frozen=True)
class Text(Kind):
    """Text, never null, never one of `never` (values the row path reads otherwise), and, where
    given, one of `among` (an answer the template takes as it is: a choice's label)."""

    never: tuple[str, ...] = ()
    among: tuple[str, ...] = ()

    def value(self, values: Values, key: str) -> Any:
        return need(values, key)

    def take(self, at: At, key: str) -> tuple[Hashable, Columns]:
        values = text(column(at.table, key))
        _none_of(values, self.never, key)
        if self.among:
            refuse(pc.invert(pc.is_in(values, texts(self.among))), f"{key} not among some")
        return None, {key: values}


@dataclass(frozen=True)
class Whole(Kind):
    """A whole number, never null, at least `least`. It stands in as the row's JSON value, or,
    where the mapping writes it back as a number (an id), as the number `number`, the slot
    column `key` then holding its text."""

    least: int | None = None
    number: int | None = None

    def value(self, values: Values, key: str) -> Any:
        return need(values, key, int)

    def take(self, at: At, key: str) -> tuple[Hashable, Columns]:
        values = column(at.table, key)
        if not pa.types.is_integer(values.type):
            raise NotColumnar(f"a {key} that is not a whole number")
        refuse(pc.is_null(values), f"no {key}")
        if self.least is not None:
            refuse(pc.less(values, scalar(self.least)), f"a {key} under {self.least}")
        if self.number is None:
            return None, {}  # its JSON text (`json_columns`) is its decimal text
        return None, {key: pc.cast(values, pa.string())}

    def stand_in(self, key: str, shape: Hashable) -> Any:
        return json_slot(key) if self.number is None else self.number


@dataclass(frozen=True)
class TextList(Kind):
    """A list of text, at least `least` items, kept as the row has it."""

    least: int = 0

    def value(self, values: Values, key: str) -> Any:
        return need(values, key, list)

    def take(self, at: At, key: str) -> tuple[Hashable, Columns]:
        values = column(at.table, key)
        kind = values.type
        if not pa.types.is_list(kind) or not pa.types.is_string(kind.value_type):
            raise NotColumnar(f"a {key} that is not a list of text")
        short = pc.less(pc.list_value_length(values), scalar(self.least))
        short = pc.fill_null(short, scalar(True))
        refuse(short, f"a {key} of fewer than {self.least} items")
        if values.flatten().null_count:
            raise NotColumnar(f"an item of {key} that is not text")
        return None, {}

    def stand_in(self, key: str, shape: Hashable) -> Any:
        return json_slot(key)


@dataclass(frozen=True)
class JsonTextList(Kind):
    """Text holding a JSON list of text (SWE-bench's test lists), checked in a row by `check`;
    the mapping parses it. A batch takes it where its text is exactly `json.dumps` of
    plain-ASCII items: it stands in as that list of one JSON slot filled with the items, so
    nothing is kept raw. A row without it reads it as `[]`."""

    check: Callable[[Values, str], object]

    def value(self, values: Values, key: str) -> Any:
        self.check(values, key)
        return values.get(key, "[]")

    def take(self, at: At, key: str) -> tuple[Hashable, Columns]:
        return None, {f"#{key}": _list_items(text(column(at.table, key)))}

    def stand_in(self, key: str, shape: Hashable) -> Any:
        return json.dumps([json_slot(f"#{key}")])


def _list_items(raw: pa.Array) -> pa.Array:
    """The items of each JSON list, as JSON strings joined by commas, where the list's text is
    exactly `json.dumps` of plain-ASCII text."""
    import io

    import pyarrow.json as pj

    if pc.any(pc.match_substring(raw, "\n")).as_py():
        raise NotColumnar("a list over several lines")
    lines = concat('{"t":', raw, "}")
    one = pa.ListArray.from_arrays(numbers([0, len(lines)], pa.int32()), lines)
    whole = pc.binary_join(one, scalar("\n"))[0].as_buffer()
    if too_deep(whole.to_pybytes(), lines=True) is not None:  # Arrow's parser would crash
        raise NotColumnar("a list nested too deeply")
    try:
        parsed = pj.read_json(io.BytesIO(whole))
    except pa.ArrowInvalid as e:
        raise NotColumnar(str(e)) from None
    if parsed.num_rows != len(raw) or not pa.types.is_list(parsed.schema.field("t").type):
        raise NotColumnar("text that is not a JSON list")
    items = parsed.column("t").combine_chunks()
    if items.null_count:
        raise NotColumnar("a null list")
    item = items.type.value_type
    if not (pa.types.is_string(item) or pa.types.is_null(item)) or items.flatten().null_count:
        raise NotColumnar("a list of something other than text")
    if not pc.all(pc.equal(json_values(items, spaced=True), raw)).as_py():
        raise NotColumnar("a list that json.dumps would write otherwise")
    flat = items.flatten()
    if len(flat) and not pc.all(pc.string_is_ascii(flat)).as_py():
        raise NotColumnar("an item that is not plain ASCII")
    return json_items(items)


@dataclass(frozen=True)
class FirstText(Kind):
    """The first of some fields a row has, which must be text: one field under two names
    (MBPP's `text`, its sanitized set's `prompt`)."""

    names: tuple[str, ...]
    source: ClassVar[bool] = False

    def value(self, values: Values, key: str) -> Any:
        found = next((values[n] for n in self.names if n in values), None)
        if not isinstance(found, str):
            raise RowError(f"field {self.names[0]!r}: missing or not text")
        return found

    def take(self, at: At, key: str) -> tuple[Hashable, Columns]:
        name = next((n for n in self.names if n in at.table.schema.names), None)
        if name is None:
            raise NotColumnar(f"none of the columns {list(self.names)}")
        return None, {key: text(column(at.table, name))}


@dataclass(frozen=True)
class AfterLast(Kind):
    """The text after the last `mark` of a text field, stripped, each of `drop` removed (GSM8K's
    final answer after `####`, thousands commas dropped); never empty."""

    of: str
    mark: str
    drop: str = ""
    source: ClassVar[bool] = False

    def value(self, values: Values, key: str) -> Any:
        whole = values[self.of]
        if self.mark not in whole:
            raise RowError(f"field {self.of!r}: no '{self.mark} <final answer>' line")
        after = whole.rsplit(self.mark, 1)[1].strip()
        for c in self.drop:
            after = after.replace(c, "")
        if not after:
            raise RowError(f"field {self.of!r}: nothing after '{self.mark}'")
        return after

    def take(self, at: At, key: str) -> tuple[Hashable, Columns]:
        whole = at.columns[self.of]
        refuse(pc.invert(pc.match_substring(whole, self.mark)), f"no '{self.mark}'")
        # [head, tail] per row, each row holding the mark: the tails are every second value.
        halves = pc.split_pattern(whole, self.mark, max_splits=1, reverse=True)
        tail = pc.list_flatten(halves)[1::2]
        # Python's strip() and Arrow's ASCII trim agree on printable ASCII and its whitespace.
        plain = pc.match_substring_regex(tail, r"^[\t-\r -~]*$")
        refuse(pc.invert(plain), "text after the mark that is not plain ASCII")
        after = pc.ascii_trim_whitespace(tail)
        for c in self.drop:
            after = pc.replace_substring(after, c, "")
        refuse(pc.equal(pc.binary_length(after), scalar(0)), f"nothing after '{self.mark}'")
        return None, {key: after}


@dataclass(frozen=True)
class PerRow(Kind):
    """Text a Python function makes of earlier fields (`of`), the same function on both paths
    (a loop over the batch: for the few-hundred-row benchmarks that need one). Where it gives
    None, the row path says `missing`."""

    function: Callable[..., str | None]
    of: tuple[str, ...]
    missing: str = ""
    source: ClassVar[bool] = False

    def value(self, values: Values, key: str) -> Any:
        out = self.function(*(values.get(k) for k in self.of))
        if out is None:
            raise RowError(self.missing)
        return out

    def take(self, at: At, key: str) -> tuple[Hashable, Columns]:
        args = [_python(at.table, at.columns, k) for k in self.of]
        out = texts([self.function(*a) for a in zip(*args, strict=True)])
        refuse(pc.is_null(out), self.missing)
        return None, {key: out}


def _python(table: pa.Table, columns: Columns, key: str) -> list[Any]:
    """A field's values as the row path has them: an earlier field's, or a source column of
    text, lists of text or nulls (whose Python values are the parsed row's), or None each."""
    if key in columns:
        return cast("list[Any]", columns[key].to_pylist())
    if key not in table.schema.names:
        return [None] * table.num_rows
    values = column(table, key)
    kind = values.type
    if not (
        pa.types.is_string(kind)
        or pa.types.is_null(kind)
        or (pa.types.is_list(kind) and pa.types.is_string(kind.value_type))
    ):
        raise NotColumnar(f"a {key} of type {kind}")
    return cast("list[Any]", values.to_pylist())


@dataclass(frozen=True)
class Same(Kind):
    """Text every row of a template shares (SkyRL's `env_class`): a constant of the template."""

    def take(self, at: At, key: str) -> tuple[Hashable, Columns]:
        return one_text(column(at.table, key)), {}

    def stand_in(self, key: str, shape: Hashable) -> Any:
        return shape


class Roles(NamedTuple):
    """A `Chat` field's shape: its roles, and whether a bare text stands for them (`text`) or
    every item says `"type": "message"` (`typed`)."""

    roles: tuple[str, ...]
    form: str = "messages"


@dataclass(frozen=True)
class Chat(Kind):
    """Chat messages, each exactly a role and a text content: the roles are the template's
    (a batch is grouped by them), each content a slot (`#<key><position>`). `responses`: as
    the Responses API's `input` also takes them, a bare text standing for one user message, or
    items that all say `"type": "message"`, and the last user message never empty (the row
    path then reads no question)."""

    responses: bool = False

    def groups(self, at: At, key: str) -> pa.Array | None:
        return role_keys(column(at.table, key))

    def take(self, at: At, key: str) -> tuple[Hashable, Columns]:
        values = column(at.table, key)
        form = "messages"
        if self.responses and pa.types.is_string(values.type):
            roles, contents, form = ["user"], [text(values)], "text"
        else:
            if self.responses and _typed(values):
                values, form = without(values, "type"), "typed"
            roles, contents = messages(values)
        last = last_user(roles)
        if self.responses and last is not None:
            refuse(pc.equal(contents[last], scalar("")), "an empty user message")
        return Roles(tuple(roles), form), {f"#{key}{k}": c for k, c in enumerate(contents)}

    def stand_in(self, key: str, shape: Hashable) -> Any:
        roles, form = cast(Roles, shape)
        if form == "text":
            return slot(f"#{key}0")
        typed = {"type": "message"} if form == "typed" else {}
        return [{"role": r, "content": slot(f"#{key}{k}"), **typed} for k, r in enumerate(roles)]


def _typed(items: pa.Array) -> bool:
    """Whether `items` holds Responses-API message items, `"type": "message"` in every item;
    rows where an item says otherwise, or lacks it, go row by row."""
    if "type" not in item_fields(items.type):
        return False
    refuse(pc.is_null(items), "no input")
    kinds = pc.struct_field(pc.list_flatten(items), "type")
    other = pc.invert(pc.fill_null(pc.equal(kinds, scalar("message")), scalar(False)))
    if pc.any(other).as_py():
        rows = pc.unique(pc.filter(pc.list_parent_indices(items), other))
        raise NotColumnar("an input item not a message", sorted(rows.to_pylist()))
    return True


@dataclass(frozen=True)
class LastUser(Kind):
    """Text that is either always or never the last user message of a `Chat` field (`chat`)
    among the rows of one template: where it always is, it stands in as that message's slot,
    so the template's comparisons come out as each row's. The chat must have a user message,
    unless `optional`: then, where it has none or the text never is it, the field is kept as
    the row has it (any JSON value)."""

    chat: str
    optional: bool = False

    def take(self, at: At, key: str) -> tuple[Hashable, Columns]:
        last = last_user(cast(Roles, at.shapes[self.chat]).roles)
        if last is None:
            if self.optional:
                return None, {}
            raise NotColumnar(f"a {self.chat} without a user message")
        values = text(column(at.table, key))
        if _always(values, at.columns[f"#{self.chat}{last}"], f"{key} the last user message"):
            return last, {}
        return None, {} if self.optional else {key: values}  # JSON: `json_columns` fills it

    def stand_in(self, key: str, shape: Hashable) -> Any:
        if shape is not None:
            return slot(f"#{self.chat}{shape}")
        return json_slot(key) if self.optional else slot(key)


@dataclass(frozen=True)
class SameJson(Kind):
    """A JSON value every row of a template shares, where a slot cannot stand for it (NeMo's
    tool list maps to model objects): a batch is grouped by its text."""

    def groups(self, at: At, key: str) -> pa.Array | None:
        return _json_texts(at, key)

    def take(self, at: At, key: str) -> tuple[Hashable, Columns]:
        if key in at.grouped:  # the text these rows were grouped by
            return at.grouped[key], {}
        return one_text(_json_texts(at, key)), {}

    def stand_in(self, key: str, shape: Hashable) -> Any:
        return json.loads(cast(str, shape))


def _json_texts(at: At, key: str) -> pa.Array:
    """Each row's JSON text of a field (`a.b`: of a struct column), as the row path writes it."""
    name, _, inner = key.partition(".")
    if not inner:
        return json_columns(at.table, [name], at.parsed)[0][name]
    table, parsed = at.fields(name)
    return json_columns(table, [inner], parsed)[0][inner]


@dataclass(frozen=True)
class NotTheId(Kind):
    """A field kept as the row has it (JSON) that is never the row's task id (NeMo rows' own
    `id`, which need not be unique): the template's residue compares the two."""

    def take(self, at: At, key: str) -> tuple[Hashable, Columns]:
        values = column(at.table, key)
        if pa.types.is_string(values.type):  # no other value's JSON is a task id's
            refuse(pc.equal(values, at.ids()), "an own id that is the task id")
        return None, {}

    def stand_in(self, key: str, shape: Hashable) -> Any:
        return json_slot(key)


@dataclass(frozen=True)
class JsonFields(Kind):
    """An object never null, its fields (never one of `never`) each any JSON value: the field
    names are the template's, each value a JSON slot (`#<key>.<field>`)."""

    never: tuple[str, ...] = ()

    def take(self, at: At, key: str) -> tuple[Hashable, Columns]:
        values = column(at.table, key)
        if not pa.types.is_struct(values.type) or values.null_count:
            raise NotColumnar(f"{key} of type {values.type}")
        names = tuple(f.name for f in values.type)
        if set(self.never) & set(names):
            raise NotColumnar(f"a field of {key} among {list(self.never)}")
        texts = {f"#{key}.{n}": json_values(pc.struct_field(values, n)) for n in names}
        return names, texts

    def stand_in(self, key: str, shape: Hashable) -> Any:
        return {n: json_slot(f"#{key}.{n}") for n in cast("tuple[str, ...]", shape)}


# What an absent optional field stands in as: nothing (the row of slots lacks it too).
ABSENT = "\x00absent"


@dataclass(frozen=True)
class Maybe(Kind):
    """An optional source field: where a batch has it, of kind `kind`."""

    kind: Kind
    required: ClassVar[bool] = False

    def groups(self, at: At, key: str) -> pa.Array | None:
        return self.kind.groups(at, key) if has(at.table, key) else None

    def take(self, at: At, key: str) -> tuple[Hashable, Columns]:
        return self.kind.take(at, key) if has(at.table, key) else (ABSENT, {})

    def stand_in(self, key: str, shape: Hashable) -> Any:
        return ABSENT if shape == ABSENT else self.kind.stand_in(key, shape)


@dataclass(frozen=True)
class SameAs(Kind):
    """Text that is either always or never the text of field `of` among the rows of one
    template (GEM's `question` beside its `problem`); where `of` is absent, never one of
    `never`. Where it always is, it stands in as `of`'s slot, so the template's comparisons
    come out as each row's."""

    of: str
    never: tuple[str, ...] = ()

    def take(self, at: At, key: str) -> tuple[Hashable, Columns]:
        values = text(column(at.table, key))
        if self.of not in at.columns:
            _none_of(values, self.never, key)
            return False, {key: values}
        return _always(values, at.columns[self.of], f"{key} {self.of}"), {key: values}

    def stand_in(self, key: str, shape: Hashable) -> Any:
        return slot(self.of if shape else key)
