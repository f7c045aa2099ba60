"""JSON Lines (and JSON lists) sources: the row path's reader, and the chunks the columnar path
reads with Arrow, each checked against the lines' own text where Arrow could read it otherwise."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator
from itertools import pairwise
from typing import IO, Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from taskpack.base.arrow import numbers, scalar, texts, view
from taskpack.base.nesting import parse_json, too_deep
from taskpack.converters._sources import chunk as chunking
from taskpack.converters._sources.chunk import Chunk, Lines, NotColumnar, Parsed, parsed_once
from taskpack.converters._sources.jsontext import _offsets, json_values
from taskpack.converters._sources.opening import max_line_bytes, open_binary
from taskpack.converters._sources.records import Record
from taskpack.errors import TaskpackError


def _json_list(stream: IO[bytes], where: str) -> Iterator[Record]:
    most = max_line_bytes()
    data = stream.read(most + 1)
    if len(data) > most:
        raise TaskpackError(f"{where}: a JSON document over {most} bytes; use JSON Lines")
    try:
        rows = parse_json(data)
    except ValueError as e:
        raise TaskpackError(f"{where}: {e}") from None
    if not isinstance(rows, list):
        raise TaskpackError(f"{where}: expected a JSON list of objects")
    for i, row in enumerate(rows):
        yield _object(row, f"{where}: item {i}", i + 1)


def _lines(stream: IO[bytes], most: int) -> Iterator[bytes | None]:
    """The stream's lines; None for a line longer than `most` bytes, read past in bounded
    memory."""
    while True:
        line = stream.readline(most + 1)
        if not line:
            return
        if len(line) <= most or line.endswith(b"\n"):
            yield line
            continue
        while line and not line.endswith(b"\n"):
            line = stream.readline(1 << 20)
        yield None


def json_lines(stream: IO[bytes], uri: str, first: int = 1) -> Iterator[Record]:
    """The JSON Lines records of `stream`, its first line being line `first` of `uri`."""
    most = max_line_bytes()
    for number, raw in enumerate(_lines(stream, most), start=first):
        where = f"{uri}:{number}"
        if raw is None:
            error = f"line longer than {most} bytes (raise TASKPACK_MAX_LINE_BYTES to allow it)"
            yield Record(where, error=error, line=number)
            continue
        if not raw.strip():
            continue
        try:
            row = parse_json(raw)
        except ValueError as e:
            yield Record(where, error=str(e), line=number)
        else:
            yield _object(row, where, number)


def _object(row: Any, where: str, line: int) -> Record:
    if not isinstance(row, dict):
        return Record(where, error=f"expected a JSON object, got {type(row).__name__}", line=line)
    return Record(where, task=row, line=line)


# A line the row path reads past, holding no row (what `bytes.strip` takes away).
_BLANK = re.compile(rb"^[ \t\r\x0b\x0c]*\n", re.MULTILINE)


def jsonl_chunks(
    uri: str, keyed: bool = False, by_field: frozenset[str] = frozenset(), lines: Lines = None
) -> Iterator[Chunk | int]:
    """A local JSON Lines file in pieces of whole lines, `chunking.BLOCK` bytes of text at a time
    (memory stays flat however long the file). A line longer than the row path reads gives up
    on the source (the row path names it). With `lines`, only those lines: the rows of the
    lines before them come as a count."""
    longest = max_line_bytes()
    most = longest if longest < chunking.BLOCK else None
    first, last = lines or (1, None)
    with open_binary(uri) as f:
        rest, line = b"", 1
        while True:
            data = f.read(chunking.BLOCK)
            text = rest + data
            cut = text.rfind(b"\n") + 1 if data else len(text)
            piece, rest = text[:cut], text[cut:]
            count = _line_count(piece)
            if piece and line + count > first:
                start, end = max(first - line, 0), count if last is None else last - line + 1
                if start or end < count:
                    skipped, piece = _line_span(piece, start, end)
                    yield _row_count(skipped)
                if piece:
                    yield _jsonl_chunk(piece, uri, line + start, most, keyed, by_field, None)
            elif piece:  # wholly before the lines kept
                yield _row_count(piece)
            line += count
            if not data or (last is not None and line > last):
                return
            if len(rest) > longest:
                raise NotColumnar("a line over TASKPACK_MAX_LINE_BYTES")


def _row_count(text: bytes) -> int:
    """The rows the row path reads in whole lines of JSON Lines: those not blank."""
    tail = text[text.rfind(b"\n") + 1 :]
    return text.count(b"\n") - len(_BLANK.findall(text)) + bool(tail.strip())


def _line_span(piece: bytes, start: int, end: int) -> tuple[bytes, bytes]:
    """(the text of lines [0, start), that of lines [start, end)) of a piece of whole lines."""
    offsets = _line_starts(piece)
    a, b = offsets[min(start, len(offsets) - 1)], offsets[min(max(end, start), len(offsets) - 1)]
    return piece[:a], piece[a:b]


def _line_count(piece: bytes) -> int:
    """The lines of a piece of whole lines, the last one perhaps without its newline: none in
    an empty piece (a read that ended inside a long line)."""
    return piece.count(b"\n") + (bool(piece) and not piece.endswith(b"\n"))


def _line_starts(piece: bytes) -> list[int]:
    """Where each line of a piece of whole lines starts, then where the piece ends."""
    import numpy as np

    ends = np.flatnonzero(np.frombuffer(piece, np.uint8) == ord("\n")) + 1
    offsets = [0, *ends.tolist()]
    if offsets[-1] != len(piece):
        offsets.append(len(piece))
    return offsets


def _jsonl_chunk(
    piece: bytes,
    uri: str,
    line: int,
    most: int | None,
    keyed: bool,
    by_field: frozenset[str],
    parsed: pa.Table | None,
) -> Chunk:
    """Whole lines of `uri` from line `line` on (`parsed`: their table, when known)."""
    tables = [] if parsed is None else [parsed]
    lines = _line_count(piece)

    def records() -> Iterator[Record]:  # a stream of its own each time: read more than once
        return json_lines(io.BytesIO(piece), uri, line)

    # Named here, not reached through the chunk: a closure that held the chunk holding it would
    # be a cycle, and each chunk's text and table would wait for the cyclic collector.
    rows = parsed_once(records, lines)

    def table() -> pa.Table:
        if not tables:
            tables.append(_parse(piece, lines, most, rows if keyed else None, by_field))
        return tables[0]

    def cut(bounds: list[int]) -> list[Chunk]:
        offsets = _line_starts(piece)
        # A table parsed whole holds one row per line: its parts are slices, not parsed again.
        whole = tables[0] if tables else None
        return [
            _jsonl_chunk(
                piece[offsets[a] : offsets[b]],
                uri,
                line + a,
                most,
                keyed,
                by_field,
                None if whole is None else whole[a:b],
            )
            for a, b in pairwise(bounds)
        ]

    return Chunk(table, records, rows, lines, cut)


def _parse(
    piece: bytes, lines: int, most: int | None, keyed: Parsed | None, by_field: frozenset[str]
) -> pa.Table:
    """A piece of `lines` JSON Lines as one table, only if every line is one JSON object: the row
    path reads blank lines past and two objects on one line as an error, where Arrow's parser
    would do otherwise, so the piece's rows must be its lines.

    `keyed` (the piece's rows as the row path parses them): and only if each line holds its
    keys in the table's column order, for a reader that keeps a row's fields as they come (the
    row path's dicts keep each line's own order; Arrow's columns keep the first line's).
    Checked in the lines' text, or, where a key's text is found more than once in a line (a
    nested key of the same name), in those parsed rows."""
    # Lines over 1 MiB fail Arrow's parser (and so go row by row); a lower limit is checked here.
    if most is not None and max(map(len, piece.split(b"\n"))) >= most:
        raise NotColumnar("a line over TASKPACK_MAX_LINE_BYTES")
    if too_deep(piece, lines=True) is not None:  # Arrow's parser would crash the process
        raise NotColumnar("a line nested too deeply")
    try:
        table = pj.read_json(io.BytesIO(piece), read_options=_ONE_THREAD)
        dated = [f.name for f in table.schema if pa.types.is_timestamp(f.type)]
        if dated:  # Arrow reads text that looks like a date as one; it is text here
            schema = pa.schema(
                [f.with_type(pa.string()) if f.name in dated else f for f in table.schema]
            )
            table = pj.read_json(
                io.BytesIO(piece),
                read_options=_ONE_THREAD,
                parse_options=pj.ParseOptions(explicit_schema=schema),
            )
        table.validate(full=True)  # the parser passes bytes that are not UTF-8 through
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise NotColumnar(str(e)) from None
    if table.num_rows != lines:
        raise NotColumnar("blank lines or more than one object on a line")
    if keyed is not None:
        whole = texts([piece.rstrip(b"\n")], pa.binary())
        line_texts = pc.list_flatten(pc.split_pattern(whole, "\n"))
        names = table.schema.names
        spaced = _spaced(piece)
        try:
            keys = _key_positions(line_texts, piece, names, spaced)
            table = _confirm_texts(table, line_texts, keys, by_field, pc.binary_length(line_texts))
            table = _confirm_fields(table, line_texts, piece, keys, by_field, spaced)
        except NotColumnar:  # a key's text is no guide to its value: objects go by the records
            if any(list(row) != names for row in keyed()):
                raise NotColumnar("keys in another order than the columns") from None
        table = table.replace_schema_metadata(_JSON_LINES)
    return table


# A piece is about one of Arrow's blocks, parsed on a thread of its own beside the mapping:
# Arrow's pool has nothing to split it into, and its threads only took the cores the mapping
# and the checks need (200,000 NeMo rows with tools: 7% faster, 4% less CPU).
_ONE_THREAD = pj.ReadOptions(use_threads=False)


def _spaced(piece: bytes) -> bool:
    """Whether `piece` may hold a key spaced from its colon (`"a" : 1`). The pattern is looked
    for only where a blank comes right before a colon: run at every quote, it was a tenth of
    reading a NeMo row's text."""
    import numpy as np

    code = np.frombuffer(piece, np.uint8)
    before = code[np.flatnonzero(code[1:] == ord(":"))]
    blank = (before == ord(" ")) | (before == ord("\t")) | (before == ord("\r"))
    return bool(blank.any()) and re.search(rb'"[ \t\r]+:', piece) is not None


def _key_positions(
    lines: pa.Array, piece: bytes, names: list[str], spaced: bool
) -> dict[str, pa.Array]:
    """Where each of the `lines` of `piece` holds `"<name>":`, which must be once for each name,
    in this order, and never `"<name>" :` (looked for where the piece holds a quote, spaces and
    a colon). A string cannot hold `"<name>":` (its quotes would be escaped), so then that one
    occurrence is the top-level key itself."""
    import numpy as np

    bounds = _offsets(lines)
    sizes = np.diff(bounds)
    starts = bounds[:-1] - bounds[0] + np.arange(len(lines))  # in the piece: one newline a line
    found: dict[str, pa.Array] = {}
    before = None
    for name in names:
        key = f'"{name}":'
        if json.dumps(name) != f'"{name}"':
            raise NotColumnar(f"a key to escape: {name!r}")
        at = _once_a_line(piece, key.encode(), starts, sizes)
        if at is None:
            raise NotColumnar(f"key {name!r} more than once on a line, or missing")
        gap = f'"{re.escape(name)}"[ \\t\\r]+:'
        if spaced and pc.any(pc.match_substring_regex(lines, gap)).as_py():
            raise NotColumnar(f"key {name!r} spaced from its colon")
        if before is not None and not (before < at).all():
            raise NotColumnar("keys in another order than the columns")
        found[name], before = numbers(at, pa.int32()), at
    return found


def _once_a_line(piece: bytes, key: bytes, starts: Any, sizes: Any) -> Any:
    """Where `key` is in each line, from the line's start (the lines start at `starts` in
    `piece` and are `sizes` long), if it is there once in every line; else None. Found with
    `bytes.find`, many times faster than Arrow's search in each line, and given up on as soon
    as there are more than lines (a key a nested object repeats)."""
    import numpy as np

    at: list[int] = []
    find, lines = piece.find, len(starts)
    i = find(key)
    while i >= 0:
        if len(at) == lines:
            return None
        at.append(i)
        i = find(key, i + len(key))  # `"<name>":` cannot overlap itself: no quote in a name
    if len(at) != lines:
        return None
    inside = np.asarray(at, np.int64) - starts
    if ((inside < 0) | (inside + len(key) > sizes)).any():  # one line's twice, another's none
        return None
    return inside


def _confirm_fields(
    table: pa.Table,
    lines: pa.Array,
    piece: bytes,
    keys: dict[str, pa.Array],
    columns: frozenset[str],
    spaced: bool,
) -> pa.Table:
    """The table, each of `columns` (objects) whose every row holds every field (no null), each
    field's key once on a line, inside the object's text, in the column's field order, marked
    `_IN_ORDER`, its fields' texts confirmed as columns' are (`_confirm_texts`). A field's key
    found once in the line, and inside its object, is that object's own key: the row has it."""
    names = table.schema.names
    for name in columns & set(names):
        i = names.index(name)
        values = table.column(i).combine_chunks()
        if not pa.types.is_struct(values.type) or values.null_count:
            continue
        children = values.flatten()
        if any(child.null_count for child in children):
            continue
        fields = [f.name for f in values.type]
        try:
            at = _key_positions(lines, piece, fields, spaced)
        except NotColumnar:
            continue
        end = keys[names[i + 1]] if i + 1 < len(names) else pc.binary_length(lines)
        if not all(
            pc.all(pc.and_(pc.greater(at[f], keys[name]), pc.less(at[f], end))).as_py()
            for f in fields
        ):
            continue
        own = _confirm_texts(
            pa.Table.from_arrays(children, names=fields), lines, at, frozenset(), end
        )
        struct = pa.StructArray.from_arrays(
            [c.combine_chunks() for c in own.columns], fields=list(own.schema)
        )
        table = table.set_column(i, table.schema.field(i).with_metadata(_IN_ORDER), struct)
    return table


def fields_table(table: pa.Table, name: str) -> pa.Table:
    """Column `name` (objects) as a table of its fields, for `json_columns` (with the rows'
    values of that column as parsed): texts `_confirm_fields` checked are taken as they are."""
    values = table.column(name).combine_chunks()
    return pa.Table.from_arrays(
        values.flatten(), schema=pa.schema(list(values.type), table.schema.metadata)
    )


def in_field_order(table: pa.Table, name: str) -> bool:
    """Whether every row holds every field of column `name` in the column's order (checked in
    the lines' text by `_confirm_fields`)."""
    return bool(table.schema.field(name).metadata == _IN_ORDER)


# The field metadata of a column whose text each row of the source was seen to hold as
# `json_values` writes it (see `_confirm_texts`).
_CONFIRMED = {b"taskpack": b"text confirmed"}


_CONFIRMED_ABSENT = {b"taskpack": b"text confirmed, null fields absent"}  # see `_json_objects`


_MARKS = (_CONFIRMED, _CONFIRMED_ABSENT)


# Added to a mark where every line held the very same text (`_same_text`): one row's JSON text
# is every row's.
_SAME = {b"taskpack-text": b"the same on every line"}


class Confirmed(NamedTuple):
    """What a column's marks say of its text (see `_confirm_texts`)."""

    confirmed: bool
    absent: bool  # a null field of its objects is a key the text lacks
    same: bool  # every row's text is the first row's


def confirmed(field: pa.Field) -> Confirmed:
    meta = field.metadata or {}
    mark = {k: v for k, v in meta.items() if k == b"taskpack"}
    same = meta.get(b"taskpack-text") == _SAME[b"taskpack-text"]
    return Confirmed(mark in _MARKS, mark == _CONFIRMED_ABSENT, same)


# The field metadata of a column of objects every row holds with every field, in its order.
_IN_ORDER = {b"taskpack": b"fields in order"}


# The schema metadata of a JSON Lines piece's table: its records are JSON values.
_JSON_LINES = {b"taskpack": b"json lines"}


def _holds(kind: pa.DataType, test: Callable[[pa.DataType], bool]) -> bool:
    """Whether values of `kind` hold a value of a type `test` takes, at any depth."""
    if test(kind):
        return True
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _holds(kind.value_type, test)
    return pa.types.is_struct(kind) and any(_holds(f.type, test) for f in kind)


def _unsure(kind: pa.DataType) -> bool:
    """Arrow's reading of JSON text that the row path reads otherwise: an object (Arrow's
    struct keeps the first row's key order and gives a key a row lacks null; the row path keeps
    each row's dict as it is), a float (Arrow reads `5` as 5.0 in a column of floats)."""
    return bool(pa.types.is_struct(kind) or pa.types.is_floating(kind))


def _confirm_texts(
    table: pa.Table,
    lines: pa.Array,
    keys: dict[str, pa.Array],
    by_field: frozenset[str],
    end: pa.Array,
) -> pa.Table:
    """The table, each column holding objects or floats marked confirmed where every line holds
    right after its key the very text `json_values` makes of the row's value (compact, or with
    `json.dumps`'s default spaces): then its keys and numbers are the row path's. An object's
    null field is either written `null` in every line (`_CONFIRMED`) or lacking in every line
    (`_CONFIRMED_ABSENT`): Arrow gives both null.

    `keys` are in the columns' order and `end` is where the last column's text ends at the
    latest. A column whose text is the same bytes on every line (a tool list every request
    offers) is confirmed on its first line: the same text parses to the same value."""
    fields = list(table.schema)
    # The spacing the first line writes is tried first (`json.dumps` writes `": `).
    spacings = (True, False) if b'": ' in lines[0].as_py() else (False, True)
    for i, field in enumerate(fields):
        if field.name in by_field or not _holds(field.type, _unsure):
            continue
        values = table.column(i).combine_chunks()
        after = pc.add(keys[field.name], scalar(len(field.name) + 3))  # past `"<name>":`
        stop = keys[fields[i + 1].name] if i + 1 < len(fields) else end
        if len(values) > 1 and _same_text(lines, after, stop):  # the first line stands for all
            mark = _confirmed(values[:1], lines[:1], after[:1], spacings)
            mark = mark and {**mark, **_SAME}
        else:
            mark = _confirmed(values, lines, after, spacings)
        if mark:
            fields[i] = field.with_metadata(mark)
    return pa.Table.from_arrays(table.columns, schema=pa.schema(fields, table.schema.metadata))


def _confirmed(
    values: pa.Array, lines: pa.Array, after: pa.Array, spacings: tuple[bool, bool]
) -> dict[bytes, bytes] | None:
    """The mark `values` earn where each line holds its text from `after` on (see
    `_confirm_texts`), or None."""
    for absent, mark in zip((False, True), _MARKS, strict=True):
        found = None
        try:
            for spaced in spacings:
                written = json_values(values, True, spaced=spaced, absent=absent)
                at = _holds_at(lines, pc.add(after, scalar(1)) if spaced else after, written)
                found = at if found is None else pc.or_(found, at)
                if pc.all(found).as_py():
                    break
        except NotColumnar:
            return None
        if found is not None and pc.all(found).as_py():
            return mark
        if not values.null_count and not _holds(values.type, pa.types.is_struct):
            return None  # no field to lack
    return None


def _same_text(lines: pa.Array, starts: pa.Array, stops: pa.Array) -> bool:
    """Whether every line holds the same bytes from its `starts` to its `stops`."""
    sizes = view(stops) - view(starts)
    size = int(sizes[0])
    if size <= 0 or (sizes != size).any():
        return False
    data = lines.buffers()[2].to_pybytes()  # slices of bytes compare 5x faster than a view's
    begin = (_offsets(lines)[:-1] + view(starts)).tolist()
    first = data[begin[0] : begin[0] + size]
    return all(data[b : b + size] == first for b in begin)


def _holds_at(lines: pa.Array, starts: pa.Array, texts: pa.Array) -> pa.Array:
    """Whether each line holds from byte `starts` on its `texts` value, and no more of a number
    after it (`0.5` is not `0.50`). Compared as slices of bytes: Arrow slices every row at one
    place, and a NumPy gather of every byte compared costs more than the slices' loop."""
    bounds = _offsets(lines)
    data = lines.buffers()[2].to_pybytes()
    want = texts.cast(pa.large_binary())
    wanted, spans = want.buffers()[2].to_pybytes(), _offsets(want).tolist()
    held = []
    for begin, end, a, b in zip(
        (bounds[:-1] + view(starts)).tolist(), bounds[1:].tolist(), spans, spans[1:], strict=False
    ):
        stop = begin + b - a
        held.append(
            stop <= end
            and data[begin:stop] == wanted[a:b]
            and (stop == end or data[stop] not in _NUMBER)
        )
    return numbers(held, pa.bool_())


_NUMBER = frozenset(b"0123456789.eE+-")  # a byte that would carry on a number
