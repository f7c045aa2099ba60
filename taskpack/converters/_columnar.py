"""Columnar import: a reader maps a whole Arrow batch of source rows to stored task rows at once.

The row path parses, maps, validates and serializes each row in Python (pydantic, json): about
ten times the cost of a hand-written pyarrow script. A format may also offer `read_columns`:
its source read by pyarrow's multithreaded parsers, checked a batch at a time, and written as
the rows the row path would write (same JSON text, digests, ids). The text comes from a
`Template`: the row path's own mapping applied once to a row of slots, validated and serialized
by the row path's own code, then cut at its slots and filled per batch with the escaped columns.
Whatever a batch check cannot vouch for (a null, a type the row path would refuse, a blank
line, text a Python `strip` and an Arrow trim could treat differently) raises `NotColumnar`, and
only the rows it refuses go through the reader's row mapping (`mapped`). An invalid row sends
the whole source row by row, so errors are the row path's own, word for word.
`tests/test_columnar.py` compares both paths on every data set.

A part of a sharded import reads only lines first..last of its source (`lines`, an argument of
every columnar reader): a JSON Lines source then yields only the chunks of those lines, each
chunk before them counted (its rows numbered as in the whole source) but never parsed; any
other source gives up here, for the row path's filter.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from functools import cache, partial
from itertools import accumulate, pairwise
from pathlib import Path
from typing import Any, NamedTuple, TypeAlias, cast

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from taskpack.converters._source import (
    Record,
    arrow_records,
    base_suffix,
    json_lines,
    max_line_bytes,
    open_binary,
)
from taskpack.digests import canonical_json
from taskpack.nesting import too_deep
from taskpack.rows import INLINE_MAX, JSON_COLUMNS, SCHEMA

# Bytes of source text per batch: Arrow's parser works in several times this, so it bounds
# the import's memory (a line over 1 MiB, past Arrow's block, is read row by row).
_BLOCK = 1 << 20
# The lines (first, last; 1-based, inclusive) of the source a sharded import's part keeps.
Lines: TypeAlias = "tuple[int, int] | None"
# A line the row path reads past, holding no row (what `bytes.strip` takes away).
_BLANK = re.compile(rb"^[ \t\r\x0b\x0c]*\n", re.MULTILINE)
_PARQUET_ROWS = 64 * 1024  # rows per batch of a Parquet source
# `grouped`: a batch of rows with more different templates than this many, or than one per
# this many rows, goes row by row (a template costs about as much as a few rows mapped).
_TEMPLATES = 8
_ROWS_PER_TEMPLATE = 32
_SHORT = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    **{chr(c): _SHORT.get(chr(c), f"\\u{c:04x}") for c in range(0x20)},
}
# Slots: a private-use character around a column's name (text), and one number (the row's
# ordinal among the source's rows); neither occurs in any constant a template holds.
_MARK = "\ue000"
ROW = 8_880_000_000_001
_TEXT_SLOT = re.compile(f"{_MARK}([^{_MARK}=][^{_MARK}]*){_MARK}")
# A JSON value: its slot text, quotes and all, stands for the column's JSON text.
_JSON_SLOT = f'"{_MARK}=([^{_MARK}]+){_MARK}"'
# The row number as a JSON number, not inside a string.
_ROW_SLOT = f"(?<=[:,\\[]){ROW}(?=[,}}\\]])"


class NotColumnar(Exception):
    """This source needs the row path (the columnar reader could not map it exactly); with
    `rows`, only these rows of the batch (0-based, ascending)."""

    def __init__(self, reason: str, rows: list[int] | None = None) -> None:
        super().__init__(reason)
        self.rows = rows


def refuse(bad: pa.Array | pa.ChunkedArray, reason: str) -> None:
    """`NotColumnar` naming the rows of a batch where `bad` holds (a null is no refusal), if
    any: those rows go row by row, the others stay columnar (see `mapped`)."""
    if pc.any(bad).as_py():
        raise NotColumnar(reason, pc.indices_nonzero(pc.fill_null(bad, False)).to_pylist())


def slot(column: str) -> str:
    """A text value, in a template's task mapping, filled per row from column `column`."""
    return f"{_MARK}{column}{_MARK}"


def json_slot(column: str) -> str:
    """Any JSON value, in a template's task mapping, filled per row from column `column`, which
    holds each value's JSON text (see `json_values`)."""
    return f"{_MARK}={column}{_MARK}"


# A piece of a template's text: constant text, or (kind, column) filled per row.
Piece: TypeAlias = "str | tuple[str, str]"


class Template:
    """The stored row of one task mapping whose per-row values are slots (`slot(column)`, and
    `ROW` for the row number), serialized once by the row path's own code and cut at its slots.

    A file whose bytes are `slot(column).encode()` takes each row's text of that column. The id
    is always the slot `id`. `unchecked` top-level fields are set after validation: values the
    model would check against others (an answer among the choices), which the reader checks
    per batch instead."""

    def __init__(self, task: Mapping[str, Any], unchecked: Mapping[str, str] | None = None):
        from taskpack.model import Task
        from taskpack.rows import task_to_row

        model = Task.model_validate({**task, "id": slot("id")})
        model = model.model_copy(update=dict(unchecked or {}))
        row, _ = task_to_row(model, lambda data, sha: None)
        self.solution = _whole(row["solution"])
        self.files: list[tuple[dict[str, Any], str]] = []  # (constant fields, data column)
        file_pieces = {}
        for f in row["files"]:
            column = _whole(f["data"].decode("utf-8"))
            if not isinstance(column, tuple):
                raise ValueError(f"template file {f['path']!r}: its data must be a slot")
            self.files.append(({k: f[k] for k in ("path", "role", "step", "mode")}, column[1]))
            file_pieces[f'"sha256":"{f["sha256"]}","size":{f["size"]}'] = column[1]
        self.columns = {
            name: None if row[name] is None else _cut(row[name], {}) for name in JSON_COLUMNS
        }
        self.canonical = _cut(canonical_json(model.canonical()).decode("utf-8"), file_pieces)

    def fill(
        self,
        ids: pa.Array,
        columns: Mapping[str, pa.Array],
        rows: pa.Array,
        hashed: Mapping[str, pa.Array] | None = None,
    ) -> Batch:
        """The stored rows of one batch: `ids`, each slot's column (text never null; for a JSON
        slot, each value's JSON text) and the rows' numbers. `hashed`: for JSON slots holding
        objects, their text with keys sorted, as the canonical text digests hash holds them
        (stored rows keep each object's own key order; see `json_columns`)."""
        size = len(ids)
        escaped: dict[str, Column] = {"id": json_escape(ids)}
        row_text = pc.cast(rows, pa.string())
        files = []
        for fields, column in self.files:
            data = columns[column].cast(pa.binary())
            sizes = pc.binary_length(data)
            if pc.max(sizes).as_py() > INLINE_MAX:
                raise NotColumnar("a file too large to store inline")
            sha = _sha256_each(data, "")
            files.append((fields, data, sizes, sha))
            escaped[f"file:{column}"] = pc.binary_join_element_wise(
                '"sha256":"', sha, '","size":', pc.cast(sizes, pa.string()), ""
            )

        def text(pieces: list[Piece], sources: Mapping[str, pa.Array] = columns) -> Column:
            parts: list[Column] = []
            for piece in pieces:
                if isinstance(piece, str):
                    parts.append(piece)
                    continue
                kind, name = piece
                if kind == "row":
                    parts.append(row_text)
                    continue
                if kind == "json":
                    parts.append(sources[name])
                    continue
                key = name if kind == "text" else f"file:{name}"
                if key not in escaped:
                    escaped[key] = json_escape(columns[name])
                parts.append(escaped[key])
            if len(parts) == 1:
                return parts[0]
            return pc.binary_join_element_wise(*parts, "")

        stored = {
            name: _array(None if p is None else text(p), size) for name, p in self.columns.items()
        }
        solution = self.solution
        if isinstance(solution, tuple):
            solution = columns[solution[1]]
        table = {
            "id": ids,
            "digest": pa.nulls(size, pa.string()),
            "solution": _array(solution, size),
            "files": _files(size, files),
            **stored,
        }
        columns_in_order = [table[name] for name in SCHEMA.names]
        return Batch(
            pa.table(columns_in_order, names=SCHEMA.names),
            _array(text(self.canonical, {**columns, **(hashed or {})}), size),
        )


def grouped(
    keys: Sequence[str],
    table: pa.Table,
    rows: pa.Array,
    parsed: Parsed,
    one: Callable[[pa.Table, pa.Array, Parsed, str], Batch],
) -> Batch:
    """A batch whose rows differ in a constant of their template (`keys[i]`: a row's roles, its
    tool list): the rows of each key mapped by `one` as a batch of their own (with their row
    numbers, parsed rows and key), put back in row order. A refusal names the batch's rows; a group
    refused whole goes row by row."""
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    if len(groups) == 1:
        return one(table, rows, parsed, keys[0])
    if len(groups) > max(_TEMPLATES, len(keys) // _ROWS_PER_TEMPLATE):
        raise NotColumnar(f"{len(groups)} different templates in {len(keys)} rows")
    filled = []
    for key, at in groups.items():
        take = pa.array(at, pa.int64())
        some = cache(lambda at=at: [parsed()[i] for i in at])
        try:
            filled.append(one(table.take(take), rows.take(take), some, key))
        except NotColumnar as e:
            refused = at if e.rows is None else [at[i] for i in e.rows]
            raise NotColumnar(str(e), refused) from None
    back = pc.sort_indices(pa.array([i for at in groups.values() for i in at], pa.int64()))
    table = pa.concat_tables([b.table for b in filled]).take(back)
    return Batch(table, pa.concat_arrays([b.canonical for b in filled]).take(back))


def _list_offsets(values: pa.Array) -> pa.Array:
    """The offsets of a list array's items in its `list_flatten`, nulls as empty lists."""
    lengths = pc.fill_null(pc.list_value_length(values), 0)
    return pa.array([0, *accumulate(lengths.to_pylist())], pa.int32())


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


def role_keys(prompt: pa.Array) -> list[str]:
    """Each row's roles as one text (a key for `grouped`); all alike where the prompt is not a
    list of messages (`messages` then refuses it)."""
    if "role" not in item_fields(prompt.type):
        return [""] * len(prompt)
    roles = pc.struct_field(pc.list_flatten(prompt), "role")
    joined = pc.binary_join(pa.ListArray.from_arrays(_list_offsets(prompt), roles), "\x1f")
    return cast(list[str], pc.fill_null(joined, "").to_pylist())


class Batch(NamedTuple):
    """Stored rows but for their digests, and the canonical text each digest hashes: hashing,
    the one step holding the GIL, can then run beside the mapping of the next batch."""

    table: pa.Table
    canonical: pa.Array

    def stored(self) -> pa.Table:
        """The rows as `rows.SCHEMA` stores them, digests computed."""
        digests = _sha256_each(self.canonical, "sha256:")
        table = self.table.set_column(1, SCHEMA.field("digest"), digests)
        return table.cast(SCHEMA)


def _whole(value: str | None) -> Piece | None:
    """A value that is one slot, as ("text", column); any other value as it is."""
    match = _TEXT_SLOT.fullmatch(value) if value is not None else None
    return ("text", match.group(1)) if match else value


def _cut(text: str, files: Mapping[str, str]) -> list[Piece]:
    """`text` as constant pieces and slots: JSON and text slots, the row number, files' hash and
    size."""
    alternatives = [
        _JSON_SLOT,
        _TEXT_SLOT.pattern,
        f"({_ROW_SLOT})",
        *(f"({re.escape(k)})" for k in files),
    ]
    pieces: list[Piece] = []
    position = 0
    for match in re.finditer("|".join(alternatives), text):
        pieces.append(text[position : match.start()])
        if match.group(1) is not None:
            pieces.append(("json", match.group(1)))
        elif match.group(2) is not None:
            pieces.append(("text", match.group(2)))
        elif match.group(3) is not None:
            pieces.append(("row", ""))
        else:
            pieces.append(("file", files[match.group(0)]))
        position = match.end()
    pieces.append(text[position:])
    constant = "".join(p for p in pieces if isinstance(p, str))
    if _MARK in constant or str(ROW) in constant:
        raise ValueError(f"template text with a slot that is not a whole value: {text!r}")
    return [p for p in pieces if p != ""]


def _files(size: int, files: list[tuple[dict[str, Any], pa.Array, pa.Array, pa.Array]]) -> pa.Array:
    """The files column: each row's files, in the template's order."""
    import numpy as np

    per_row = len(files)
    struct = SCHEMA.field("files").type.value_type
    if not per_row:
        none = pa.array(np.zeros(size + 1, np.int32))
        return pa.ListArray.from_arrays(none, pa.array([], struct))
    parts = []
    for fields, data, sizes, sha in files:
        parts.append(
            pa.StructArray.from_arrays(
                [
                    pa.repeat(pa.scalar(fields["path"], pa.string()), size),
                    pa.repeat(pa.scalar(fields["role"], pa.string()), size),
                    pa.repeat(pa.scalar(fields["step"], pa.string()), size),
                    pa.repeat(pa.scalar(fields["mode"], pa.int32()), size),
                    pc.cast(sizes, pa.int64()),
                    sha,
                    data,
                ],
                fields=list(struct),
            )
        )
    values = pa.concat_arrays(parts)
    if per_row > 1:  # file k of row i is at k * size + i: interleave them by row
        order = np.arange(size * per_row).reshape(per_row, size).T.ravel()
        values = values.take(pa.array(order))
    offsets = pa.array(np.arange(0, size * per_row + 1, per_row, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, values)


# --- reading sources in batches ----------------------------------------------------------------


Records: TypeAlias = Callable[[], Iterator[Record]]
# A chunk's rows as the row path reads them, parsed once when first asked (`Chunk.parsed`).
Parsed: TypeAlias = Callable[[], list[dict[str, Any]]]


class Chunk(NamedTuple):
    """Some consecutive rows of a source, two ways: `table()`, as Arrow reads them (raises
    `NotColumnar` where that could differ from the row path), and `records()`, as the row path
    reads the very same rows, numbered as in the whole source; `parsed()`, those records' rows,
    parsed once when first asked, for the checks and columns Arrow cannot vouch for.
    `cut(bounds)`: the chunks of rows bounds[0]:bounds[1], bounds[1]:bounds[2], ... of this one."""

    table: Callable[[], pa.Table]
    records: Records
    parsed: Parsed
    rows: int
    cut: Callable[[list[int]], list[Chunk]]


def _chunk(
    table: Callable[[], pa.Table],
    records: Records,
    rows: int,
    cut: Callable[[list[int]], list[Chunk]],
) -> Chunk:
    return Chunk(table, records, cache(partial(_parsed_rows, records, rows)), rows, cut)


# Reader's own row mapping, from the ordinal of the first record given (`map_rows`, `read_rows`).
RowMapping: TypeAlias = Callable[[Iterator[Record], int], Iterator[Record]]
Item: TypeAlias = "Batch | Iterator[Record]"
# Fewest rows tried columnar on their own: shorter runs between refused rows go row by row
# with them; a chunk refused as a whole is cut in up to _PARTS parts of at least this many.
_SMALLEST = 64
_PARTS = 4
# Chunks in a row with no row taken before the rest of a source goes row by row without
# trying: a source of a shape no check takes would otherwise pay for both paths.
_REFUSALS = 2
# Levels of cutting a refused chunk: parts of parts of a 64k-row Parquet batch are 5 deep, and
# each check naming its rows adds at most one.
_TRIES = 16


# A reader's batch mapping: a chunk's table, the ordinal of its first row, and its rows parsed.
BatchMapping: TypeAlias = Callable[[pa.Table, int, Parsed], Batch]


def mapped(chunks: Iterator[Chunk | int], batch: BatchMapping, rows: RowMapping) -> Iterator[Item]:
    """A reader's `read_columns`: each chunk as a `Batch` of stored rows by `batch`. Where a
    check refuses some rows (`refuse`), those go as the row path's records, mapped by the
    reader's `rows`, and the runs between them are tried again; a chunk refused as a whole is
    cut in parts, tried again, down to pieces of fewer than 2 * `_SMALLEST` rows that go row by
    row. The caller reads each records iterator to its end before the next item (their count
    numbers what follows)."""
    first, refused = 0, 0
    for chunk in chunks:
        if isinstance(chunk, int):  # rows before the lines kept (`lines`): numbered, not read
            first += chunk
            continue
        tries = _TRIES if refused < _REFUSALS else 0
        count, taken = yield from _one(chunk, first, batch, rows, tries)
        refused = 0 if taken else refused + 1
        first += count


def _one(
    chunk: Chunk,
    first: int,
    batch: BatchMapping,
    rows: RowMapping,
    tries: int,
) -> Generator[Item, None, tuple[int, int]]:
    """The items of one chunk, tried columnar (cut again when refused) up to `tries` levels
    deep; returns (its rows, how many of them went columnar)."""
    if tries:
        try:
            out = batch(chunk.table(), first, chunk.parsed)
        except NotColumnar as e:
            plan = _plan(chunk.rows, e.rows)
            if plan is not None:
                count, taken = 0, 0
                bounds = [start for start, _ in plan] + [chunk.rows]
                for part, (_, retry) in zip(chunk.cut(bounds), plan, strict=True):
                    n, k = yield from _one(
                        part, first + count, batch, rows, tries - 1 if retry else 0
                    )
                    count, taken = count + n, taken + k
                return count, taken
        else:
            yield out
            return out.table.num_rows, out.table.num_rows
    tally = [0]
    yield rows(_counted(chunk.records(), tally), first)
    return tally[0], 0


def _plan(size: int, refused: list[int] | None) -> list[tuple[int, bool]] | None:
    """How to cut a refused chunk of `size` rows: (first row, whether to try it columnar
    again) per part; None to send it whole row by row. With the `refused` rows known: they,
    and runs between them shorter than `_SMALLEST`, go row by row, longer runs are tried again.
    Else up to `_PARTS` parts of at least `_SMALLEST` rows, all tried again."""
    if not refused:
        count = min(_PARTS, size // _SMALLEST)
        return [(size * k // count, True) for k in range(count)] if count >= 2 else None
    plan: list[tuple[int, bool]] = []

    def add(start: int, retry: bool) -> None:
        if retry or not plan or plan[-1][1]:  # row-by-row parts side by side are one
            plan.append((start, retry))

    start = 0
    for row in [*refused, size]:
        if row > start:
            add(start, row - start >= _SMALLEST)
        if row < size:
            add(row, False)
        start = row + 1
    return None if plan == [(0, False)] else plan


def _counted(records: Iterator[Record], tally: list[int]) -> Iterator[Record]:
    for record in records:
        tally[0] += 1
        yield record


def table_chunks(
    uri: str,
    delimiter: str | None = None,
    strip_headers: bool = False,
    keyed: bool = False,
    by_field: frozenset[str] = frozenset(),
    lines: Lines = None,
) -> Iterator[Chunk | int]:
    """A local table (JSON Lines, CSV/TSV, Parquet; compressed or not) in chunks of rows (see
    `Chunk`), else `NotColumnar`. `keyed`: every row's keys come in its table's column order
    (see `_parse`); `by_field`: columns of objects the reader takes field by field
    (`fields_table`), each field's text checked against the lines, not the whole object's.
    With `lines`, a count of rows passed over may come between chunks."""
    if "://" in uri or not Path(uri).is_file():
        raise NotColumnar(uri)
    suffix = base_suffix(uri)
    if suffix == ".jsonl":
        return jsonl_chunks(uri, keyed, by_field, lines)
    if lines is not None:
        raise NotColumnar("lines of a source other than JSON Lines")
    if suffix in (".csv", ".tsv", ".txt"):
        return csv_chunks(uri, delimiter or ("\t" if suffix == ".tsv" else ","), strip_headers)
    if suffix == ".parquet":
        return parquet_chunks(uri)
    raise NotColumnar(uri)


def jsonl_chunks(
    uri: str, keyed: bool = False, by_field: frozenset[str] = frozenset(), lines: Lines = None
) -> Iterator[Chunk | int]:
    """A local JSON Lines file in pieces of whole lines, `_BLOCK` bytes of text at a time
    (memory stays flat however long the file). A line longer than the row path reads gives up
    on the source (the row path names it). With `lines`, only those lines: the rows of the
    lines before them come as a count."""
    longest = max_line_bytes()
    most = longest if longest < _BLOCK else None
    first, last = lines or (1, None)
    with open_binary(uri) as f:
        rest, line = b"", 1
        while True:
            data = f.read(_BLOCK)
            text = rest + data
            cut = text.rfind(b"\n") + 1 if data else len(text)
            piece, rest = text[:cut], text[cut:]
            count = _line_count(piece)
            if piece and line + count > first:
                start, end = max(first - line, 0), count if last is None else last - line + 1
                if start or end < count:
                    skipped, piece = _lines(piece, start, end)
                    yield _rows(skipped)
                if piece:
                    yield _jsonl_chunk(piece, uri, line + start, most, keyed, by_field, None)
            elif piece:  # wholly before the lines kept
                yield _rows(piece)
            line += count
            if not data or (last is not None and line > last):
                return
            if len(rest) > longest:
                raise NotColumnar("a line over TASKPACK_MAX_LINE_BYTES")


def _rows(text: bytes) -> int:
    """The rows the row path reads in whole lines of JSON Lines: those not blank."""
    tail = text[text.rfind(b"\n") + 1 :]
    return text.count(b"\n") - len(_BLANK.findall(text)) + bool(tail.strip())


def _lines(piece: bytes, start: int, end: int) -> tuple[bytes, bytes]:
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

    def table() -> pa.Table:
        if not tables:
            tables.append(_parse(piece, lines, most, chunk.parsed if keyed else None, by_field))
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

    def records() -> Iterator[Record]:  # a stream of its own each time: read more than once
        return json_lines(io.BytesIO(piece), uri, line)

    chunk = _chunk(table, records, lines, cut)
    return chunk


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
        table = pj.read_json(io.BytesIO(piece))
        dated = [f.name for f in table.schema if pa.types.is_timestamp(f.type)]
        if dated:  # Arrow reads text that looks like a date as one; it is text here
            schema = pa.schema(
                [f.with_type(pa.string()) if f.name in dated else f for f in table.schema]
            )
            table = pj.read_json(
                io.BytesIO(piece), parse_options=pj.ParseOptions(explicit_schema=schema)
            )
        table.validate(full=True)  # the parser passes bytes that are not UTF-8 through
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise NotColumnar(str(e)) from None
    if table.num_rows != lines:
        raise NotColumnar("blank lines or more than one object on a line")
    if keyed is not None:
        texts = pc.list_flatten(pc.split_pattern(pa.array([piece.rstrip(b"\n")]), "\n"))
        names = table.schema.names
        spaced = re.search(rb'"[ \t\r]+:', piece) is not None
        try:
            keys = _key_positions(texts, piece, names, spaced)
            table = _confirm_texts(table, texts, keys, by_field)
            table = _confirm_fields(table, texts, piece, keys, by_field, spaced)
        except NotColumnar:  # a key's text is no guide to its value: objects go by the records
            if any(list(row) != names for row in keyed()):
                raise NotColumnar("keys in another order than the columns") from None
        table = table.replace_schema_metadata(_JSON_LINES)
    return table


def _key_positions(
    lines: pa.Array, piece: bytes, names: list[str], spaced: bool
) -> dict[str, pa.Array]:
    """Where each of the `lines` of `piece` holds `"<name>":`, which must be once for each name,
    in this order, and never `"<name>" :` (looked for where the piece holds a quote, spaces and
    a colon). A string cannot hold `"<name>":` (its quotes would be escaped), so then that one
    occurrence is the top-level key itself. Once on each line: found on every line, and as many
    times in the piece as it has lines (`bytes.count` is many times faster than Arrow's count
    in each line)."""
    found: dict[str, pa.Array] = {}
    before = None
    for name in names:
        key = f'"{name}":'
        if json.dumps(name) != f'"{name}"':
            raise NotColumnar(f"a key to escape: {name!r}")
        at = found[name] = pc.find_substring(lines, key)
        if piece.count(key.encode()) != len(lines) or pc.any(pc.less(at, 0)).as_py():
            raise NotColumnar(f"key {name!r} more than once on a line, or missing")
        gap = f'"{re.escape(name)}"[ \\t\\r]+:'
        if spaced and pc.any(pc.match_substring_regex(lines, gap)).as_py():
            raise NotColumnar(f"key {name!r} spaced from its colon")
        if before is not None and not pc.all(pc.less(before, at)).as_py():
            raise NotColumnar("keys in another order than the columns")
        before = at
    return found


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
        own = _confirm_texts(pa.Table.from_arrays(children, names=fields), lines, at, frozenset())
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
    table: pa.Table, lines: pa.Array, keys: dict[str, pa.Array], by_field: frozenset[str]
) -> pa.Table:
    """The table, each column holding objects or floats marked confirmed where every line holds
    right after its key the very text `json_values` makes of the row's value (compact, or with
    `json.dumps`'s default spaces): then its keys and numbers are the row path's. An object's
    null field is either written `null` in every line (`_CONFIRMED`) or lacking in every line
    (`_CONFIRMED_ABSENT`): Arrow gives both null."""
    fields = list(table.schema)
    # The spacing the first line writes is tried first (`json.dumps` writes `": `).
    spacings = (True, False) if b'": ' in lines[0].as_py() else (False, True)
    for i, field in enumerate(fields):
        if field.name in by_field or not _holds(field.type, _unsure):
            continue
        values = table.column(i).combine_chunks()
        after = pc.add(keys[field.name], len(field.name) + 3)  # past `"<name>":`
        for absent, mark in zip((False, True), _MARKS, strict=True):
            found = None
            try:
                for spaced in spacings:
                    written = json_values(values, True, spaced=spaced, absent=absent)
                    at = _holds_at(lines, pc.add(after, 1) if spaced else after, written)
                    found = at if found is None else pc.or_(found, at)
                    if pc.all(found).as_py():
                        break
            except NotColumnar:
                break
            if found is not None and pc.all(found).as_py():
                fields[i] = field.with_metadata(mark)
                break
            if not values.null_count and not _holds(field.type, pa.types.is_struct):
                break  # no field to lack
    return pa.Table.from_arrays(table.columns, schema=pa.schema(fields, table.schema.metadata))


def _holds_at(lines: pa.Array, starts: pa.Array, texts: pa.Array) -> pa.Array:
    """Whether each line holds from byte `starts` on its `texts` value, and no more of a number
    after it (`0.5` is not `0.50`). Gathered with numpy: Arrow slices every row at one place."""
    import numpy as np

    bounds = _offsets(lines)
    begin = bounds[:-1] + np.asarray(starts, np.int64)
    want = texts.cast(pa.large_binary())
    sizes = np.diff(_offsets(want))
    fits = begin + sizes <= bounds[1:]
    sizes = np.where(fits, sizes, 0)
    ends = np.cumsum(sizes)
    at = np.repeat(begin - (ends - sizes), sizes) + np.arange(ends[-1] if len(ends) else 0)
    raw = np.frombuffer(lines.buffers()[2], np.uint8)
    found = pa.Array.from_buffers(
        pa.large_binary(),
        len(sizes),
        [None, pa.py_buffer(np.concatenate([[0], ends]).astype(np.int64)), pa.py_buffer(raw[at])],
    )
    after = begin + sizes
    more = after < bounds[1:]
    ended = ~more | ~np.isin(
        raw[np.where(more, after, 0)], np.frombuffer(b"0123456789.eE+-", np.uint8)
    )
    return pc.and_(pa.array(fits & ended), pc.equal(found, want))


def csv_chunks(uri: str, delimiter: str, strip_headers: bool) -> Iterator[Chunk]:
    """A CSV file as tables of text columns named by its header, as Python's `csv` reads it
    (the row path's reader): the header is read by `csv` itself, the rows by Arrow's parser
    with the same quoting; a row of another width, or anything Arrow would read otherwise,
    gives up on the source."""
    import pyarrow.csv as pcsv

    with open_binary(uri) as f:
        text = io.TextIOWrapper(f, encoding="utf-8-sig", newline="")
        try:
            header = next(csv.reader(text, delimiter=delimiter))
        except (StopIteration, UnicodeDecodeError, csv.Error):
            raise NotColumnar(f"{uri}: no readable header") from None
    names = [h.strip() for h in header] if strip_headers else header
    if len(set(names)) != len(names) or len(delimiter) != 1:
        raise NotColumnar("duplicate column names, or a delimiter of several characters")
    with open_binary(uri) as f:
        try:
            reader = pcsv.open_csv(
                f,
                read_options=pcsv.ReadOptions(
                    column_names=names, skip_rows=1, block_size=_BLOCK, use_threads=True
                ),
                parse_options=pcsv.ParseOptions(
                    delimiter=delimiter, newlines_in_values=True, ignore_empty_lines=True
                ),
                convert_options=pcsv.ConvertOptions(
                    column_types={n: pa.string() for n in names},
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
            first = 0
            for batch in reader:
                yield _table_chunk(pa.Table.from_batches([batch]), uri, first, lines=False)
                first += batch.num_rows
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise NotColumnar(str(e)) from None


def parquet_chunks(uri: str) -> Iterator[Chunk]:
    import pyarrow.parquet as pq

    first = 0
    try:
        pf = pq.ParquetFile(uri)
        for batch in pf.iter_batches(batch_size=_PARQUET_ROWS):
            # The row path reads a struct as a dict of its fields in order, as `json_values`.
            schema = pa.schema([f.with_metadata(_CONFIRMED) for f in batch.schema])
            table = pa.Table.from_arrays(batch.columns, schema=schema)
            yield _table_chunk(table, uri, first, lines=True)
            first += batch.num_rows
    except (pa.ArrowInvalid, OSError) as e:
        raise NotColumnar(str(e)) from None


def _table_chunk(table: pa.Table, uri: str, first: int, lines: bool) -> Chunk:
    """Rows of `uri` from row `first` on; `lines`: row N is line N + 1 (see `arrow_records`)."""

    def cut(bounds: list[int]) -> list[Chunk]:
        return [_table_chunk(table[a:b], uri, first + a, lines) for a, b in pairwise(bounds)]

    pieces = table.to_batches(max_chunksize=1024)  # the row path's batch size
    records = partial(arrow_records, pieces, uri, first, lines)
    return _chunk(lambda: table, records, table.num_rows, cut)


# --- batch checks and text --------------------------------------------------------------------


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
    refuse(pc.not_equal(lengths, count), "prompts of different lengths")
    items = [pc.list_element(prompt, k) for k in range(count)]
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
    refuse(pc.or_(pc.less(lengths, 1), pc.greater(lengths, 512)), "an empty or overlong id")
    refuse(pc.match_substring_regex(ids, r"[\x00-\x1f\x7f]"), "an id with a control character")
    return ids


def ordinal_ids(split: str, rows: pa.Array) -> pa.Array:
    """`<split>-<row, 5 digits at least>`: the ids a reader gives rows that have none."""
    return pc.binary_join_element_wise(
        f"{split}-", pc.utf8_lpad(pc.cast(rows, pa.string()), 5, "0"), ""
    )


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
        text = pc.binary_join_element_wise('"', json_escape(values), '"', "")
    elif pa.types.is_integer(kind):
        text = pc.cast(values, pa.string())
    elif pa.types.is_boolean(kind):
        text = pc.if_else(values, "true", "false")
    elif pa.types.is_null(kind):
        return pa.repeat("null", len(values))
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
        ends = _offsets(values)
        items = values.values.slice(ends[0], ends[-1] - ends[0])  # null lists' too: aligned
        texts = json_values(items, confirmed, sort=sort, spaced=spaced, absent=absent)
        lists = pa.LargeListArray.from_arrays(pa.array(ends - ends[0], pa.int64()), texts)
        joined = pc.binary_join(lists, ", " if spaced else ",")
        text = pc.binary_join_element_wise("[", joined, "]", "")
    elif confirmed and pa.types.is_struct(kind):
        text = _json_objects(values, sort, spaced, absent)
    elif confirmed and pa.types.is_floating(kind):
        text = _python_floats(values)
    else:
        raise NotColumnar(f"a {kind} value")
    return pc.if_else(pc.is_null(values), "null", text) if values.null_count else text


def _python_floats(values: pa.Array) -> pa.Array:
    """Each float as Python writes it (`repr`, `json`, pydantic-core alike), where Arrow's
    shortest digits come out the same way: fixed from 1e-4 to 1e16, and zero, with `.0` where
    Arrow writes a whole number bare. Others (an exponent in Python's text or Arrow's, NaN,
    infinity) give up."""
    values = values.cast(pa.float64())  # a float32's Python value is its double
    text = pc.cast(values, pa.string())
    size = pc.abs(values)
    fixed = pc.and_(pc.greater_equal(size, 1e-4), pc.less(size, 1e16))
    plain = pc.or_(pc.and_(fixed, pc.invert(pc.match_substring(text, "e"))), pc.equal(size, 0))
    if not pc.all(pc.fill_null(plain, True)).as_py():
        raise NotColumnar("a float Python writes otherwise than Arrow")
    return pc.if_else(
        pc.match_substring(text, "."), text, pc.binary_join_element_wise(text, ".0", "")
    )


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
        confirmed = field.metadata in _MARKS
        absent = field.metadata == _CONFIRMED_ABSENT
        try:
            if not confirmed and _holds(field.type, _unsure):
                raise NotColumnar("text to confirm")
            texts[name] = json_values(values, confirmed, absent=absent)
            if confirmed and _holds(field.type, pa.types.is_struct):
                hashed[name] = json_values(values, True, sort=True, absent=absent)
        except NotColumnar:
            # From Parquet, a date, bytes or a map is no value of JSON; in JSON Lines, a date
            # is text Arrow read as one.
            if table.schema.metadata != _JSON_LINES and _holds(field.type, _not_json):
                raise
            texts[name], hashed[name] = python_texts([row.get(name) for row in parsed()])
    return texts, hashed


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


def _parsed_rows(records: Records, size: int) -> list[dict[str, Any]]:
    """The `size` rows of `records` as the row path reads them (each a dict, else the rows
    are not columnar)."""
    rows = [record.task for record in records()]
    if len(rows) != size or not all(isinstance(row, dict) for row in rows):
        raise NotColumnar("rows the row path reads otherwise")
    return cast("list[dict[str, Any]]", rows)


def python_texts(values: list[Any]) -> tuple[pa.Array, pa.Array]:
    """Each value's text as stored rows hold it (pydantic-core's JSON) and as digests hash it
    (`canonical_json`), as the row path writes both."""
    from pydantic_core import PydanticSerializationError, to_json

    try:
        stored = [to_json(v).decode("utf-8") for v in values]
        hashed = [canonical_json(v).decode("utf-8") for v in values]
    except (ValueError, TypeError, RecursionError, PydanticSerializationError) as e:
        raise NotColumnar(str(e)) from None
    return pa.array(stored, pa.string()), pa.array(hashed, pa.string())


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
        return pa.repeat("{}", len(values)).cast(pa.string())
    colon, comma = (": ", ", ") if spaced else (":", ",")
    parts: list[Any] = []
    for index, field in fields:
        key = f'"{field.name}"'
        if json.dumps(field.name) != key:
            raise NotColumnar(f"a key to escape: {field.name!r}")
        child = pc.struct_field(values, [index])
        text = json_values(child, True, sort=sort, spaced=spaced, absent=absent)
        if absent:  # each present field with a comma before it, the first comma cut below
            part = pc.binary_join_element_wise(comma + key + colon, text, "")
            parts.append(pc.if_else(pc.is_null(child), "", part))
        else:
            parts += [(comma if parts else "{") + key + colon, text]
    if not absent:
        return pc.binary_join_element_wise(*parts, "}", "")
    inner = pc.utf8_slice_codeunits(pc.binary_join_element_wise(*parts, ""), len(comma))
    return pc.binary_join_element_wise("{", inner, "}", "")


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


# A part of a row: an array, or one text for every row (None: null).
Column: TypeAlias = "pa.Array | pa.ChunkedArray | str | None"


def _sha256_each(texts: pa.Array, prefix: str) -> pa.Array:
    """`<prefix><hex>` of each value's sha256, read in place from the array's buffers."""
    import numpy as np

    texts = texts.cast(pa.large_binary())  # 64-bit offsets, whatever the input had
    _, offsets, data = texts.buffers()
    ends = memoryview(offsets).cast("q")[texts.offset : texts.offset + len(texts) + 1].tolist()
    view = memoryview(data) if data is not None else memoryview(b"")
    sha = hashlib.sha256
    # The digests joined and hex-encoded at once, then cut in 64 characters each.
    hexes = b"".join([sha(view[a:b]).digest() for a, b in pairwise(ends)]).hex().encode()
    cuts = pa.py_buffer(np.arange(0, len(hexes) + 1, 64, dtype=np.int32))
    digests = pa.Array.from_buffers(pa.string(), len(texts), [None, cuts, pa.py_buffer(hexes)])
    return pc.binary_join_element_wise(prefix, digests, "") if prefix else digests


def _array(part: Column, size: int) -> pa.Array:
    if part is None:
        return pa.nulls(size, pa.string())
    if isinstance(part, str):
        return pa.repeat(pa.scalar(part, pa.string()), size)
    return part


def row_numbers(first: int, size: int) -> pa.Array:
    import numpy as np

    return pa.array(np.arange(first, first + size, dtype=np.int64))
