"""A format's field map: what its source rows hold and how they become tasks, stated once.

A row format (one row, one task) declares a `FieldMap`: its fields, each of a kind named in
`kinds` (text, a whole number, chat messages, a value every row shares, the text after a mark,
a Python function of other fields...), its id rule, and its mapping from those values to task
fields. Both readers are built from that one declaration, as sqlglot builds a dialect's parser
and generator from its tables:

- the row reader maps each row: a flat mapping (`Flat`) checks its fields by their kinds, in the
  order declared (the first error is the row's), then maps the values; a native one (`Native`:
  the formats whose rows round-trip whole tasks, `_rows`) is its `to_task`, residue and all;
- the columnar reader (this package) takes the same kinds a batch at a time: each kind's batch
  half refuses what its row half would refuse or could map otherwise, rows are grouped by the
  kinds' shapes (a chat's roles), and the mapping, applied once to a row of slots per shape, is
  the template every batch of that shape fills.

`tests/test_columnar.py` holds both paths equal on every data set.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from taskpack.base.arrow import concat
from taskpack.converters._columnar.guards import (
    json_columns,
    ordinal_ids,
    own_names,
    refuse,
    task_ids,
)
from taskpack.converters._columnar.kinds import ABSENT, At, Columns, Kind, Values
from taskpack.converters._columnar.mapped import grouped, mapped, shapes
from taskpack.converters._columnar.template import ROW, Batch, Template, json_slot, row_numbers
from taskpack.converters._sources.chunk import Lines, NotColumnar, Parsed
from taskpack.converters._sources.jsonl import in_field_order
from taskpack.converters._sources.opening import base_suffix
from taskpack.converters._sources.records import Record, RowError, map_rows
from taskpack.converters._sources.tables import iter_table_rows, table_chunks
from taskpack.errors import TaskpackError

if TYPE_CHECKING:
    from taskpack.converters._format import Format
    from taskpack.converters._rows import ToRow


class IdRule(Protocol):
    """How a row's task id comes: from a row's values (the row path), from a batch's columns."""

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
            ids = concat(self.prefix, ids)
        return task_ids(ids)


@dataclass(frozen=True)
class IdOr:
    """A field's text where the batch has it, else the rule `otherwise`."""

    key: str
    otherwise: IdRule

    def value(self, values: Values, split: str, row: int) -> str:
        if self.key in values:
            return str(values[self.key])
        return self.otherwise.value(values, split, row)

    def column(self, columns: Columns, split: str, rows: pa.Array) -> pa.Array:
        if self.key in columns:
            return task_ids(columns[self.key])
        return self.otherwise.column(columns, split, rows)


@dataclass(frozen=True)
class Flat:
    """A mapping of (values checked by their kinds, split, row number) to task fields but the
    id."""

    task: Callable[[Values, str, int], dict[str, Any]]

    def rows(
        self, fields: FieldMap, records: Iterator[Record], split: str, first: int
    ) -> Iterator[Record]:
        return map_rows(records, functools.partial(fields.flat, self.task, split), first)

    def template(
        self, row: dict[str, Any], names: list[str], split: str, shapes: Mapping[str, Hashable]
    ) -> Template:
        return Template(self.task(Values(row), split, ROW))


@dataclass(frozen=True)
class Native:
    """A row format's native mapping (`_rows`): `to_task` and `to_row` (the residue is what
    the row holds beyond them). `format`: the format record, asked when first read (it names
    this map, and its free field says where a row carries a whole task)."""

    format: Callable[[], Format]
    to_task: Callable[[dict[str, Any], str, int], tuple[dict[str, Any], dict[str, Any]]]
    to_row: ToRow

    def rows(
        self, fields: FieldMap, records: Iterator[Record], split: str, first: int
    ) -> Iterator[Record]:
        from taskpack.converters._rows import read_rows

        to_task, fmt = self.to_task, self.format()
        return read_rows(
            fmt,
            records,
            lambda row, n: to_task(row, split, n),
            self.to_row,
            fmt.free.embedded if fmt.free is not None else None,
            first,
        )

    def template(
        self, row: dict[str, Any], names: list[str], split: str, shapes: Mapping[str, Hashable]
    ) -> Template:
        from taskpack.converters._rows import native_template

        to_task = self.to_task
        return native_template(
            self.format(), row, names, lambda r, n: to_task(r, split, n), self.to_row
        )


@dataclass(frozen=True)
class Own:
    """A format's own row mapping (a table mapped by the user's options): `convert(split,
    shapes)` maps a row and its number to task fields, the template's `shapes` given (None on
    the row path). `unchecked`: task fields a template sets after validation (an answer among
    choices), which the batch checks instead."""

    convert: Callable[[str, Mapping[str, Hashable] | None], Callable[[dict[str, Any], int], Any]]
    unchecked: tuple[str, ...] = ()

    def rows(
        self, fields: FieldMap, records: Iterator[Record], split: str, first: int
    ) -> Iterator[Record]:
        return map_rows(records, self.convert(split, None), first)

    def template(
        self, row: dict[str, Any], names: list[str], split: str, shapes: Mapping[str, Hashable]
    ) -> Template:
        task = self.convert(split, shapes)(row, ROW)
        return Template(task, {k: task.pop(k) for k in self.unchecked if k in task})


@dataclass(frozen=True)
class FieldMap:
    """A row format's one declaration: `fields` by key (source fields by their names, `a.b`
    for a field of a struct column, derived values under `#` keys), in the order the row path
    checks them; `id`; the mapping.

    `rest`: whether rows may hold other fields (JSON values, given to the mapping as they are;
    never null unless `rest_nulls`; of kind `rest_kind` where given: the cells of a table of
    text); without it, the columnar path takes only tables of the declared fields.
    `same_fields`: columnar only while every batch has the first one's fields. `open`: struct
    columns whose other fields are kept as the row's are, in each row's own order. `keyed`:
    whether the mapping reads a row's keys in their order (see `_sources.tables.table_chunks`);
    `suffixes`: the only kinds of file the columnar path takes (where another's reading could
    differ), else any; `never`: fields that send a source row by row (a whole task embedded);
    `delimiter`, `strip_headers`: how a CSV source is read."""

    fields: Mapping[str, Kind]
    id: IdRule
    mapping: Flat | Native | Own
    rest: bool = False
    rest_nulls: bool = True
    rest_kind: Kind | None = None
    same_fields: bool = False
    open: tuple[str, ...] = ()
    keyed: bool = False
    suffixes: tuple[str, ...] = ()
    never: tuple[str, ...] = ()
    delimiter: str | None = None
    strip_headers: bool = False
    _names: frozenset[str] = field(init=False, default=frozenset())
    _needed: frozenset[str] = field(init=False, default=frozenset())
    _structs: dict[str, dict[str, bool]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        sources = [k for k, kind in self.fields.items() if kind.source]
        structs: dict[str, dict[str, bool]] = {name: {} for name in self.open}
        for key in sources:
            name, _, inner = key.partition(".")
            if inner:  # each declared field of a struct, and whether it must be there
                structs.setdefault(name, {})[inner] = self.fields[key].required
        needed = [k for k in sources if self.fields[k].required]
        object.__setattr__(self, "_names", frozenset(k.partition(".")[0] for k in sources))
        object.__setattr__(self, "_needed", frozenset(k.partition(".")[0] for k in needed))
        object.__setattr__(self, "_structs", structs)

    # --- the row path ---------------------------------------------------------------------

    def rows(self, records: Iterator[Record], split: str, first: int = 0) -> Iterator[Record]:
        """The row path's tasks of `records` (the first one the source's row `first`)."""
        return self.mapping.rows(self, records, split, first)

    def flat(
        self,
        task: Callable[[Values, str, int], dict[str, Any]],
        split: str,
        row: dict[str, Any],
        ordinal: int,
    ) -> dict[str, Any]:
        """A flat mapping of one row: its fields checked by their kinds, in order."""
        values = Values(row)
        for key, kind in self.fields.items():
            values[key] = kind.value(values, key)
        return {**task(values, split, ordinal), "id": self.id.value(values, split, ordinal)}

    def read(self, uri: str, split: str, options: Any) -> Iterator[Record]:
        return self.rows(iter_table_rows(uri), split)

    # --- the columnar path ----------------------------------------------------------------

    def read_columns(
        self, uri: str, split: str, options: Any, lines: Lines = None
    ) -> Iterator[Batch | Iterator[Record]]:
        """`read`, a batch at a time (see `_columnar`)."""
        if self.suffixes and base_suffix(uri) not in self.suffixes:
            raise NotColumnar(uri)
        template = functools.lru_cache(maxsize=64)(functools.partial(self._template, split))
        first_names: list[list[str]] = []
        groups: dict[str, dict[str, str]] = {}  # a batch's groups: each kind's shared text
        whole: list[At] = []  # the batch as its groups were found

        def batch(table: pa.Table, first: int, parsed: Parsed) -> Batch:
            names = table.schema.names
            own_names(names)
            if not self._needed <= set(names) or set(self.never) & set(names):
                raise NotColumnar(f"columns {names}")
            if (not self.rest and not set(names) <= self._names) or not table.num_rows:
                raise NotColumnar(f"columns {names}")
            if self.same_fields and first_names and names != first_names[0]:
                raise NotColumnar("fields that change between rows")
            first_names[:] = [names]
            for name in self._structs:
                self._check_struct(table, name, parsed)
            rows = row_numbers(first, table.num_rows)
            at = At(table, parsed, lambda columns: self.id.column(columns, split, rows))
            whole[:] = [at]
            keys = {key: k.groups(at, key) for key, k in self.fields.items()}
            shaped = {key: texts for key, texts in keys.items() if texts is not None}
            if not shaped:
                return one(table, rows, parsed, "")
            codes, firsts = shapes(list(shaped.values()))
            texts = [{k: shaped[k][i].as_py() for k in shaped} for i in firsts]
            names = ["\x1e".join(shape.values()) for shape in texts]
            groups.clear()
            groups.update(zip(names, texts, strict=True))
            return grouped(codes, names, table, rows, parsed, one)

        def one(table: pa.Table, rows: pa.Array, parsed: Parsed, group: str) -> Batch:
            """Rows of one shape (`group`: what they share of the kinds that group them)."""
            at = At(table, parsed, lambda columns: self.id.column(columns, split, rows))
            at.grouped = groups.get(group, {})
            if whole and whole[0].table is table:  # the batch in one group: what it built
                at.share(whole[0])
            for key, kind in self._kinds(table.schema.names).items():
                at.shapes[key], taken = kind.take(at, key)
                at.columns |= taken
            names = tuple(table.schema.names)
            orders = tuple((n, _field_names(table, n)) for n in self._structs)
            made, others = template(names, orders, tuple(at.shapes.items()))
            columns, hashed = json_columns(table, others, parsed)
            if not self.rest_nulls:
                nulls = [
                    pc.or_(pc.is_null(columns[n]), pc.is_null(table.column(n))) for n in others
                ]
                if nulls:
                    refuse(functools.reduce(pc.or_, nulls), "a null")
            for name in self.open:
                kept = [f for f in _field_names(table, name) if f not in self._structs[name]]
                fields, objects = at.fields(name)
                inner, inner_hashed = json_columns(fields, kept, objects)
                columns |= {f"#{name}.{f}": t for f, t in inner.items()}
                hashed |= {f"#{name}.{f}": t for f, t in inner_hashed.items()}
            columns |= at.columns
            return made.fill(self.id.column(columns, split, rows), columns, rows, hashed)

        chunks = table_chunks(
            uri,
            self.delimiter,
            self.strip_headers,
            keyed=self.keyed,
            by_field=frozenset(self.open),
            lines=lines,
        )
        yield from mapped(chunks, batch, lambda rows, n: self.rows(rows, split, n))

    def _kinds(self, names: list[str]) -> Mapping[str, Kind]:
        """The kind of each field of a batch of these columns: the declared ones, then the
        rest's, where they have one."""
        if self.rest_kind is None:
            return self.fields
        return {**self.fields, **{n: self.rest_kind for n in names if n not in self._names}}

    def _check_struct(self, table: pa.Table, name: str, parsed: Parsed) -> None:
        """A struct column holds the fields declared of it (only those, unless `open`), never
        null; an open one's fields come in the same order in every row."""
        kind = table.schema.field(name).type
        declared = self._structs[name]
        if not pa.types.is_struct(kind) or table.column(name).null_count:
            raise NotColumnar(f"{name} of type {kind}")
        fields = [f.name for f in kind]
        needed = {f for f, required in declared.items() if required}
        if not needed <= set(fields) or (
            name not in self.open and not set(fields) <= set(declared)
        ):
            raise NotColumnar(f"{name} fields {fields}")
        ordered = name not in self.open or len(fields) == 1 or in_field_order(table, name)
        if not ordered and any(list(row[name]) != fields for row in parsed()):
            raise NotColumnar(f"{name} fields in another order, or lacking")

    def _template(
        self,
        split: str,
        names: tuple[str, ...],
        orders: tuple[tuple[str, tuple[str, ...]], ...],
        shapes: tuple[tuple[str, Hashable], ...],
    ) -> tuple[Template, list[str]]:
        """The template of rows of these columns, struct fields (in this order) and shapes,
        and the columns it takes as JSON (the rest, as each row has them)."""
        shape = dict(shapes)
        kinds = self._kinds(list(names))
        stand_ins = {key: kind.stand_in(key, shape[key]) for key, kind in kinds.items()}
        row: dict[str, Any] = {n: json_slot(n) for n in names}
        for name, order in orders:
            row[name] = {f: stand_ins.get(f"{name}.{f}", json_slot(f"#{name}.{f}")) for f in order}
        row |= {key: value for key, value in stand_ins.items() if "." not in key}
        row = {k: v for k, v in row.items() if v != ABSENT}
        for name in row.keys() & self._structs.keys():
            row[name] = {k: v for k, v in row[name].items() if v != ABSENT}
        others = [n for n in names if row.get(n) == json_slot(n)]
        try:
            made = self.mapping.template(row, list(names), split, shape)
        except (RowError, ValueError, TaskpackError) as e:
            raise NotColumnar(f"a template the row path refuses: {e}") from None
        return made, others


def _field_names(table: pa.Table, name: str) -> tuple[str, ...]:
    return tuple(f.name for f in table.schema.field(name).type)
