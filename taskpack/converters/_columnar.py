"""Columnar import: a reader maps a whole Arrow batch of source rows to stored task rows at once.

The row path parses, maps, validates and serializes each row in Python (pydantic, json): about
ten times the cost of a hand-written pyarrow script. A format may also offer `read_columns`:
its source read by pyarrow's multithreaded parsers, mapped with pyarrow compute, checked a
batch at a time, and written as the rows the row path would write (same JSON text, digests,
ids). Whatever a batch check cannot vouch for (a null, a type the row path would refuse, a
blank line, text a Python `strip` and an Arrow trim could treat differently) raises
`NotColumnar`, and the importer reads that source row by row instead, so errors are the row
path's own, word for word. `tests/test_columnar.py` compares both paths on every data set.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator, Mapping
from itertools import pairwise
from pathlib import Path
from typing import TypeAlias

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from taskpack.converters._source import max_line_bytes
from taskpack.taskset import _JSON_COLUMNS, SCHEMA

# A part of a row: an array, or one text for every row (None: null).
Column: TypeAlias = "pa.Array | pa.ChunkedArray | str | None"

# The task's keys, sorted: its canonical JSON, which its digest covers, is the object of these.
_DIGEST_KEYS = tuple(sorted((*_JSON_COLUMNS, "files", "id", "solution")))
# Bytes of source text per batch: Arrow's parser works in several times this, so it bounds
# the import's memory (a line over 1 MiB, past Arrow's block, is read row by row).
_BLOCK = 1 << 20
_CONTROL = [chr(c) for c in range(0x20)]
_SHORT = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


class NotColumnar(Exception):
    """This source needs the row path (the columnar reader could not map it exactly)."""


def jsonl_batches(uri: str) -> Iterator[pa.Table]:
    """A local JSON Lines file as tables of whole lines, `_BLOCK` bytes of text at a time
    (memory stays flat however long the file), only if every line is one JSON object: the row
    path reads blank lines past and two objects on one line as an error, where Arrow's parser
    would do otherwise, so each piece's rows must be its lines."""
    path = Path(uri)
    if not uri.endswith(".jsonl") or not path.is_file():
        raise NotColumnar(uri)
    # Lines over 1 MiB fail Arrow's parser (and so fall back); a lower limit is checked here.
    longest = max_line_bytes()
    most = longest if longest < _BLOCK else None
    rows = 0
    with path.open("rb") as f:
        rest = b""
        while chunk := f.read(_BLOCK):
            text = rest + chunk
            cut = text.rfind(b"\n") + 1
            piece, rest = text[:cut], text[cut:]
            if piece:
                table = _parse(piece, most)
                rows += table.num_rows
                yield table
        if rest:
            yield _parse(rest, most)
        elif not rows:
            raise NotColumnar(f"{uri}: no rows")  # the row path names it


def _parse(piece: bytes, most: int | None) -> pa.Table:
    if most is not None and max(map(len, piece.split(b"\n"))) >= most:
        raise NotColumnar("a line over TASKPACK_MAX_LINE_BYTES")
    try:
        table = pj.read_json(io.BytesIO(piece))
        table.validate(full=True)  # the parser passes bytes that are not UTF-8 through
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise NotColumnar(str(e)) from None
    if table.num_rows != piece.count(b"\n") + (not piece.endswith(b"\n")):
        raise NotColumnar("blank lines or more than one object on a line")
    return table


def strings(table: pa.Table, *names: str) -> list[pa.Array]:
    """The table's columns `names`, which must be exactly its columns, strings, never null."""
    if sorted(table.schema.names) != sorted(names):
        raise NotColumnar(f"columns {table.schema.names}")
    columns = [table.column(n).combine_chunks() for n in names]
    if any(not pa.types.is_string(c.type) or c.null_count for c in columns):
        raise NotColumnar("a null or a value that is not text")
    return columns


def json_string(values: pa.Array) -> pa.Array:
    """Each value as a JSON string literal, escaped as `json` and pydantic-core write it."""
    if not pc.any(pc.match_substring_regex(values, r'["\\\x00-\x1f]')).as_py():
        return pc.binary_join_element_wise('"', values, '"', "")  # nothing to escape
    out = pc.replace_substring(values, "\\", "\\\\")
    out = pc.replace_substring(out, '"', '\\"')
    for char, escaped in _SHORT.items():
        out = pc.replace_substring(out, char, escaped)
    if pc.any(pc.match_substring_regex(out, r"[\x00-\x1f]")).as_py():
        for char in _CONTROL:
            if char not in _SHORT:
                out = pc.replace_substring(out, char, f"\\u{ord(char):04x}")
    return pc.binary_join_element_wise('"', out, '"', "")


def text_json(value: object) -> str:
    """A constant part of a row, as JSON text."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def task_rows(
    size: int,
    ids: pa.Array,
    solution: pa.Array | None,
    stored: Mapping[str, Column],
    canonical: Mapping[str, Column],
) -> pa.Table:
    """Stored rows (`taskset.SCHEMA`) of `size` file-less tasks from their parts: `stored`, each
    JSON column's text as the row path stores it (pydantic's field order); `canonical`, where it
    differs, the field's canonical JSON (sorted keys), from which the digest is computed."""
    texts = {name: _array(stored[name], size) for name in _JSON_COLUMNS}
    body = ["{"]
    for n, key in enumerate(_DIGEST_KEYS):
        body.append(("," if n else "") + f'"{key}":')
        if key == "id":
            part: Column = json_string(ids)
        elif key == "solution":
            part = json_string(solution) if solution is not None else "null"
        elif key == "files":
            part = "[]"
        else:
            part = canonical.get(key, stored[key])
        body.append("null" if part is None else part)
    body.append("}")
    merged: list[Column] = []  # runs of constant text joined once, not per row
    for part in body:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        else:
            merged.append(part)
    digests = _sha256_each(pc.binary_join_element_wise(*merged, ""))
    files_type = SCHEMA.field("files").type
    no_files = pa.ListArray.from_arrays(
        pa.array([0] * (size + 1), pa.int32()), pa.array([], files_type.value_type)
    )
    columns = {
        "id": ids,
        "digest": digests,
        "solution": solution if solution is not None else pa.nulls(size, pa.string()),
        "files": no_files,
        **texts,
    }
    return pa.table([columns[f.name] for f in SCHEMA], schema=SCHEMA)


def _sha256_each(texts: pa.Array) -> pa.Array:
    """`sha256:<hex>` of each value's bytes, read in place from the array's buffers."""
    texts = texts.cast(pa.large_binary())  # 64-bit offsets, whatever the input had
    _, offsets, data = texts.buffers()
    ends = memoryview(offsets).cast("q")[texts.offset : texts.offset + len(texts) + 1].tolist()
    view = memoryview(data)
    sha = hashlib.sha256
    digests = ["sha256:" + sha(view[a:b]).hexdigest() for a, b in pairwise(ends)]
    return pa.array(digests, pa.string())


def _array(part: Column, size: int) -> pa.Array:
    if part is None:
        return pa.nulls(size, pa.string())
    if isinstance(part, str):
        return pa.repeat(pa.scalar(part, pa.string()), size)
    return part


def row_numbers(first: int, size: int) -> pa.Array:
    import numpy as np

    return pa.array(np.arange(first, first + size, dtype=np.int64))
