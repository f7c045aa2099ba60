"""A format's field map: what its source rows hold and how they become tasks, stated once.

A flat source format (one row, one task) declares a `FieldMap`: its fields, each a kind named
here (a text column, a list of text, a value after a mark, a Python function of other values),
the id rule, and its mapping from those values to task fields. Both readers are built from that
one declaration, as sqlglot builds a dialect's parser and generator from its tables:

- the row reader checks each row's fields by their kinds, in the order declared (the first
  error is the row's), and maps the values;
- the columnar reader (`_columnar`) takes the same kinds a batch at a time: each kind's batch
  check refuses what its row check would refuse or could map otherwise, and the mapping,
  applied once to a row of slots, is the template every batch fills.

Each kind holds both of its halves side by side; `tests/test_columnar.py` holds them equal on
every data set. Formats whose rows round-trip a whole task (`_rows.read_rows`: hints, payloads)
or whose rows group by shape (chat roles, tools) keep their own columnar readers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import pyarrow as pa
import pyarrow.compute as pc

from taskpack.converters._columnar import (
    ROW,
    Batch,
    Lines,
    NotColumnar,
    Parsed,
    Template,
    json_columns,
    json_items,
    json_slot,
    json_values,
    mapped,
    ordinal_ids,
    own_names,
    refuse,
    row_numbers,
    slot,
    table_chunks,
    task_ids,
    text,
)
from taskpack.converters._source import Record, RowError, iter_table_rows, map_rows, need
from taskpack.nesting import too_deep


class Values(dict[str, Any]):
    """A source row, its fields checked by their kinds, and the values the map derives (keys
    starting with `#`, which no source field may have)."""

    def rest(self, *mapped: str) -> dict[str, Any]:
        """The row's own fields but `mapped`: what a format keeps in metadata."""
        return {k: v for k, v in self.items() if k not in mapped and not k.startswith("#")}


Columns = dict[str, pa.Array]


class Kind(Protocol):
    """One field of a map: its row half (`value`) and its batch half (`columns`)."""

    @property
    def source(self) -> bool:
        """Whether the field is a source column (the batch must have it)."""
        ...

    def value(self, values: Values, key: str) -> Any:
        """The row path: the field's value in a row whose earlier fields are checked; raises
        `RowError` where the row cannot be mapped."""
        ...

    def stand_in(self, key: str) -> Any:
        """What stands for the field in the template's row of slots."""
        ...

    def columns(self, table: pa.Table, done: Columns, key: str) -> Columns:
        """The batch path: the slot columns the field fills (`done`: earlier fields'); refuses
        (`refuse`, `NotColumnar`) what the row path would refuse or map otherwise."""
        ...


@dataclass(frozen=True)
class Text:
    """A source column of text, never null."""

    source: bool = True

    def value(self, values: Values, key: str) -> Any:
        return need(values, key)

    def stand_in(self, key: str) -> Any:
        return slot(key)

    def columns(self, table: pa.Table, done: Columns, key: str) -> Columns:
        return {key: text(table.column(key).combine_chunks())}


@dataclass(frozen=True)
class Whole:
    """A source column of whole numbers, never null, kept as the row has it (JSON)."""

    source: bool = True

    def value(self, values: Values, key: str) -> Any:
        return need(values, key, int)

    def stand_in(self, key: str) -> Any:
        return json_slot(key)

    def columns(self, table: pa.Table, done: Columns, key: str) -> Columns:
        values = table.column(key).combine_chunks()
        if not pa.types.is_integer(values.type):
            raise NotColumnar(f"a {key} that is not a whole number")
        refuse(pc.is_null(values), f"no {key}")
        return {}  # its JSON text (`json_columns`) is its decimal text


@dataclass(frozen=True)
class TextList:
    """A source column of lists of text, at least `least` items each, kept as the row has it."""

    least: int = 0
    source: bool = True

    def value(self, values: Values, key: str) -> Any:
        return need(values, key, list)

    def stand_in(self, key: str) -> Any:
        return json_slot(key)

    def columns(self, table: pa.Table, done: Columns, key: str) -> Columns:
        values = table.column(key).combine_chunks()
        kind = values.type
        if not pa.types.is_list(kind) or not pa.types.is_string(kind.value_type):
            raise NotColumnar(f"a {key} that is not a list of text")
        short = pc.fill_null(pc.less(pc.list_value_length(values), self.least), True)
        refuse(short, f"a {key} of fewer than {self.least} items")
        if values.flatten().null_count:
            raise NotColumnar(f"an item of {key} that is not text")
        return {}


@dataclass(frozen=True)
class JsonTextList:
    """A source column of text holding a JSON list of text (SWE-bench's test lists), checked in
    a row by `check`, which the mapping then parses itself. A batch takes it where its text is
    exactly `json.dumps` of plain-ASCII items: the stand-in is then that list of one JSON slot
    filled with the items, so nothing is kept raw. A row without it reads it as `[]`."""

    check: Callable[[Values, str], object]
    source: bool = True

    def value(self, values: Values, key: str) -> Any:
        self.check(values, key)
        return values.get(key, "[]")

    def stand_in(self, key: str) -> Any:
        import json

        return json.dumps([json_slot(f"#{key}")])

    def columns(self, table: pa.Table, done: Columns, key: str) -> Columns:
        return {f"#{key}": _list_items(text(table.column(key).combine_chunks()))}


def _list_items(raw: pa.Array) -> pa.Array:
    """The items of each JSON list, as JSON strings joined by commas, where the list's text is
    exactly `json.dumps` of plain-ASCII text."""
    import io

    import pyarrow.json as pj

    if pc.any(pc.match_substring(raw, "\n")).as_py():
        raise NotColumnar("a list over several lines")
    lines = pc.binary_join_element_wise('{"t":', raw, "}", "")
    one = pa.ListArray.from_arrays(pa.array([0, len(lines)], pa.int32()), lines)
    whole = pc.binary_join(one, "\n")[0].as_buffer()
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
class FirstText:
    """The first of some source columns a row has, which must be text: one field under two
    names (MBPP's `text`, its sanitized set's `prompt`)."""

    names: tuple[str, ...]
    source: bool = False

    def value(self, values: Values, key: str) -> Any:
        found = next((values[n] for n in self.names if n in values), None)
        if not isinstance(found, str):
            raise RowError(f"field {self.names[0]!r}: missing or not text")
        return found

    def stand_in(self, key: str) -> Any:
        return slot(key)

    def columns(self, table: pa.Table, done: Columns, key: str) -> Columns:
        name = next((n for n in self.names if n in table.schema.names), None)
        if name is None:
            raise NotColumnar(f"none of the columns {list(self.names)}")
        return {key: text(table.column(name).combine_chunks())}


@dataclass(frozen=True)
class AfterLast:
    """The text after the last `mark` of a text field, stripped, each of `drop` removed (GSM8K's
    final answer after `####`, thousands commas dropped); never empty."""

    of: str
    mark: str
    drop: str = ""
    source: bool = False

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

    def stand_in(self, key: str) -> Any:
        return slot(key)

    def columns(self, table: pa.Table, done: Columns, key: str) -> Columns:
        whole = done[self.of]
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
        refuse(pc.equal(pc.binary_length(after), 0), f"nothing after '{self.mark}'")
        return {key: after}


@dataclass(frozen=True)
class PerRow:
    """Text a Python function makes of earlier fields (`of`), the same function on both paths
    (a loop over the batch: for the few-hundred-row benchmarks that need one). Where it gives
    None, the row path says `missing`."""

    function: Callable[..., str | None]
    of: tuple[str, ...]
    missing: str = ""
    source: bool = False

    def value(self, values: Values, key: str) -> Any:
        out = self.function(*(values.get(k) for k in self.of))
        if out is None:
            raise RowError(self.missing)
        return out

    def stand_in(self, key: str) -> Any:
        return slot(key)

    def columns(self, table: pa.Table, done: Columns, key: str) -> Columns:
        args = [_python(table, done, k) for k in self.of]
        out = pa.array([self.function(*a) for a in zip(*args, strict=True)], pa.string())
        refuse(pc.is_null(out), self.missing)
        return {key: out}


def _python(table: pa.Table, done: Columns, key: str) -> list[Any]:
    """A field's values as the row path has them: an earlier field's, or a source column of
    text, lists of text or nulls (whose Python values are the parsed row's), or None each."""
    if key in done:
        return cast("list[Any]", done[key].to_pylist())
    if key not in table.schema.names:
        return [None] * table.num_rows
    values = table.column(key).combine_chunks()
    kind = values.type
    if not (
        pa.types.is_string(kind)
        or pa.types.is_null(kind)
        or (pa.types.is_list(kind) and pa.types.is_string(kind.value_type))
    ):
        raise NotColumnar(f"a {key} of type {kind}")
    return cast("list[Any]", values.to_pylist())


class IdRule(Protocol):
    def value(self, values: Values, split: str, row: int) -> str: ...

    def column(self, columns: Columns, split: str, rows: pa.Array) -> pa.Array: ...


@dataclass(frozen=True)
class Ordinal:
    """`<split>-<row, 5 digits at least>`: the ids of rows that have none."""

    def value(self, values: Values, split: str, row: int) -> str:
        return f"{split}-{row:05d}"

    def column(self, columns: Columns, split: str, rows: pa.Array) -> pa.Array:
        return ordinal_ids(split, rows)


@dataclass(frozen=True)
class IdOf:
    """A field's text, after `prefix`."""

    key: str
    prefix: str = ""

    def value(self, values: Values, split: str, row: int) -> str:
        return f"{self.prefix}{values[self.key]}"

    def column(self, columns: Columns, split: str, rows: pa.Array) -> pa.Array:
        ids = columns[self.key]
        if self.prefix:
            ids = pc.binary_join_element_wise(self.prefix, ids, "")
        return task_ids(ids)


Mapping_ = Callable[[Values, str, int], dict[str, Any]]


@dataclass(frozen=True)
class FieldMap:
    """A flat format's one declaration: `fields` by key (source columns by their names, derived
    values under `#` keys) in the order the row path checks them; `id`; `task`, the mapping of
    (values, split, row number) to task fields other than the id. `rest`: whether rows may hold
    other fields (JSON values, given to `task` as they are); without it, the columnar path takes
    only tables of exactly the source fields."""

    fields: Mapping[str, Kind]
    id: IdRule
    task: Mapping_
    rest: bool = False
    _sources: tuple[str, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        sources = tuple(k for k, kind in self.fields.items() if kind.source)
        object.__setattr__(self, "_sources", sources)

    def convert(self, split: str) -> Callable[[dict[str, Any], int], dict[str, Any]]:
        """The row path's mapping of one source row (its ordinal among the source's rows)."""

        def one(row: dict[str, Any], ordinal: int) -> dict[str, Any]:
            values = Values(row)
            for key, kind in self.fields.items():
                values[key] = kind.value(values, key)
            return {
                **self.task(values, split, ordinal),
                "id": self.id.value(values, split, ordinal),
            }

        return one

    def rows(self, records: Iterator[Record], split: str, first: int = 0) -> Iterator[Record]:
        return map_rows(records, self.convert(split), first)

    def read(self, uri: str, split: str, options: Any) -> Iterator[Record]:
        return self.rows(iter_table_rows(uri), split)

    def read_columns(
        self, uri: str, split: str, options: Any, lines: Lines = None
    ) -> Iterator[Batch | Iterator[Record]]:
        """`read`, a batch at a time (see `_columnar`)."""
        made: dict[tuple[str, ...], tuple[Template, list[str]]] = {}

        def batch(table: pa.Table, first: int, parsed: Parsed) -> Batch:
            names = table.schema.names
            own_names(names)
            if not set(self._sources) <= set(names) or (
                not self.rest and len(names) != len(self._sources)
            ):
                raise NotColumnar(f"columns {names}")
            if made and tuple(names) not in made:
                raise NotColumnar("fields that change between rows")
            if not made:
                made[tuple(names)] = self._template(names, split)
            template, others = made[tuple(names)]
            columns: Columns = {}
            for key, kind in self.fields.items():
                columns |= kind.columns(table, columns, key)
            values, hashed = json_columns(table, others, parsed)
            columns |= values
            rows = row_numbers(first, table.num_rows)
            return template.fill(self.id.column(columns, split, rows), columns, rows, hashed)

        chunks = table_chunks(uri, keyed=self.rest, lines=lines)
        yield from mapped(chunks, batch, lambda rows, n: self.rows(rows, split, n))

    def _template(self, names: list[str], split: str) -> tuple[Template, list[str]]:
        """The template of tables of these columns, and the columns it takes as JSON."""
        row = Values({n: json_slot(n) for n in names})
        row |= {key: kind.stand_in(key) for key, kind in self.fields.items()}
        others = [n for n in names if row[n] == json_slot(n)]
        return Template(self.task(row, split, ROW)), others
