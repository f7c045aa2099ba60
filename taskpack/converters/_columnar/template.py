"""The template: the stored row of a task mapping applied once to a row of slots, serialized by
the row path's own code, cut at its slots and filled a batch at a time."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from itertools import pairwise
from typing import Any, NamedTuple, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from taskpack.base.arrow import concat, numbers, repeated
from taskpack.base.digests import canonical_json
from taskpack.converters._sources.chunk import NotColumnar
from taskpack.converters._sources.jsontext import json_escape
from taskpack.storage.rows import INLINE_MAX, JSON_COLUMNS, SCHEMA

# Slots: a private-use character around a column's name (text), and one number (the row's
# ordinal among the source's rows); neither occurs in any constant a template holds.
_MARK = "\ue000"


ROW = 8_880_000_000_001


_TEXT_SLOT = re.compile(f"{_MARK}([^{_MARK}=][^{_MARK}]*){_MARK}")


# A JSON value: its slot text, quotes and all, stands for the column's JSON text.
_JSON_SLOT = f'"{_MARK}=([^{_MARK}]+){_MARK}"'


# The row number as a JSON number, not inside a string.
_ROW_SLOT = f"(?<=[:,\\[]){ROW}(?=[,}}\\]])"


def slot(column: str) -> str:
    """A text value, in a template's task mapping, filled per row from column `column`."""
    return f"{_MARK}{column}{_MARK}"


def json_slot(column: str) -> str:
    """Any JSON value, in a template's task mapping, filled per row from column `column`, which
    holds each value's JSON text (see `json_values`)."""
    return f"{_MARK}={column}{_MARK}"


# A piece of a template's text: constant text, or (kind, column) filled per row.
Piece: TypeAlias = "str | tuple[str, str]"


# A part of a row: an array, or one text for every row (None: null).
Column: TypeAlias = "pa.Array | pa.ChunkedArray | str | None"


class Template:
    """The stored row of one task mapping whose per-row values are slots (`slot(column)`, and
    `ROW` for the row number), serialized once by the row path's own code and cut at its slots.

    A file whose bytes are `slot(column).encode()` takes each row's text of that column. The id
    is always the slot `id`. `unchecked` top-level fields are set after validation: values the
    model would check against others (an answer among the choices), which the reader checks
    per batch instead."""

    def __init__(self, task: Mapping[str, Any], unchecked: Mapping[str, str] | None = None):
        from taskpack.model import Task
        from taskpack.storage.rows import task_to_row

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
            size_text = pc.cast(sizes, pa.string())
            escaped[f"file:{column}"] = concat('"sha256":"', sha, '","size":', size_text)

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
            return concat(*parts)

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
    """A value that is one text slot, as ("text", column); any other value as it is, unless
    it holds a slot it cannot stand for (a JSON slot, the row number, a slot inside text):
    that would be stored as it is, in every row."""
    if value is None:
        return None
    match = _TEXT_SLOT.fullmatch(value)
    if match:
        return ("text", match.group(1))
    if _MARK in value or str(ROW) in value:
        raise ValueError(f"template text with a slot that is not a whole value: {value!r}")
    return value


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
        none = numbers(np.zeros(size + 1, np.int32), pa.int32())
        return pa.ListArray.from_arrays(none, pa.nulls(0, struct))
    parts = []
    for fields, data, sizes, sha in files:
        parts.append(
            pa.StructArray.from_arrays(
                [
                    repeated(fields["path"], size),
                    repeated(fields["role"], size),
                    repeated(fields["step"], size),
                    numbers(np.full(size, fields["mode"]), pa.int32()),
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
        values = values.take(numbers(order))
    offsets = numbers(np.arange(0, size * per_row + 1, per_row), pa.int32())
    return pa.ListArray.from_arrays(offsets, values)


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
    return concat(prefix, digests) if prefix else digests


def _array(part: Column, size: int) -> pa.Array:
    if part is None:
        return pa.nulls(size, pa.string())
    if isinstance(part, str):
        return repeated(part, size)
    return part


def row_numbers(first: int, size: int) -> pa.Array:
    import numpy as np

    return numbers(np.arange(first, first + size))
