"""Row formats written to Parquet a batch at a time, so a million-task export holds one batch
in memory, not the split. Each batch is a table of every key its rows have, typed as
`pa.table` infers them; while batches agree they stream into one file; when they disagree (a
column null in one, text in another; a key some rows lack), the parts are joined under their
unified schema, so the file is the one table of every row and every key would give."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from taskpack.converters._format import Format, Losses, Target
    from taskpack.converters._rows import Adjust, ToRow
    from taskpack.model import Task

BATCH_ROWS = 8192
_EMPTIED = "empty objects (Parquet has no type for {}: written as null)"


TYPES = "$arrow"  # a row's key for the Arrow types of its columns (removed before writing)


def parquet_row(row: dict[str, Any], task: Task, losses: Losses) -> dict[str, Any]:
    """`row` as Parquet can hold it: an empty object anywhere in it (`{}`, which no Parquet
    struct type holds) becomes null, and the task is reported; the Arrow types its own
    format's reader found (timestamps, decimals, bytes, see `_arrowjson`) go with it."""
    from taskpack.converters._rows import ARROW, STYLE

    cleaned, emptied = _without_empty(row)
    if emptied:
        losses.lost(_EMPTIED, task)
    out = dict(cleaned)
    style = task.extras.get(losses.fmt, {}).get(STYLE)
    if isinstance(style, dict) and isinstance(style.get(ARROW), str):
        out[TYPES] = style[ARROW]
    return out


def _without_empty(value: Any) -> tuple[Any, bool]:
    if isinstance(value, dict):
        if not value:
            return None, True
        out, changed = {}, False
        for key, item in value.items():
            out[key], inner = _without_empty(item)
            changed |= inner
        return out, changed
    if isinstance(value, list):
        pairs = [_without_empty(item) for item in value]
        return [v for v, _ in pairs], any(c for _, c in pairs)
    return value, False


def write_native(
    fmt: Format,
    tasks: Iterable[Task],
    to_row: ToRow,
    target: Target,
    path: Path,
    adjust: Adjust | None = None,
) -> list[Path]:
    """A row format's split as one Parquet file: `_rows.native_rows`, each as Parquet holds
    it. The one way a Parquet row format writes."""
    from taskpack.converters._rows import native_rows

    rows = native_rows(fmt, tasks, to_row, target, adjust)
    write_parquet_rows((parquet_row(row, task, target.losses) for row, task in rows), path)
    return [path]


def write_parquet_rows(rows: Iterable[dict[str, Any]], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from taskpack.base.parquet import parquet_file

    parts_dir = path.with_name(f".{path.name}.parts")
    parts_dir.mkdir()
    try:
        # Batches go into one file as long as their types agree (the usual case: one pass,
        # memory flat); from the first that disagrees, each is a part of its own, to join.
        streamed = parts_dir / "0.parquet"
        writer: pq.ParquetWriter | None = None
        parts: list[Path] = []
        for batch in _batches(rows):
            table = _table(batch)
            if not parts and writer is None:
                writer = pq.ParquetWriter(streamed, table.schema)
            if not parts and writer is not None and table.schema.equals(writer.schema):
                writer.write_table(table)
                continue
            if writer is not None:
                writer.close()
                writer, parts = None, [streamed]
            parts.append(parts_dir / f"{len(parts)}.parquet")
            pq.write_table(table, parts[-1])
        if writer is not None:
            writer.close()
            parts = [streamed]
        if len(parts) == 1:
            os.replace(parts[0], path)
            return
        schemas = [pq.read_schema(p) for p in parts]
        schema = pa.unify_schemas(schemas, promote_options="permissive")
        with pq.ParquetWriter(path, schema) as joined:
            for part in parts:
                for chunk in parquet_file(part).iter_batches():
                    joined.write_table(_conform(pa.Table.from_batches([chunk]), schema))
    finally:
        shutil.rmtree(parts_dir, ignore_errors=True)


def _table(rows: list[dict[str, Any]]) -> Any:
    """The rows as a table with every key any of them has, in order of appearance (a row
    without one gets null there): `pa.Table.from_pylist` takes the first row's keys only, and
    would drop the others silently."""
    import pyarrow as pa

    from taskpack.converters._arrowjson import schema_of, typed_column

    typed: dict[str, pa.Field] = {}
    for types in dict.fromkeys(row.pop(TYPES) for row in rows if TYPES in row):
        for f in schema_of(types):
            typed.setdefault(f.name, f)
    names = list(dict.fromkeys(key for row in rows for key in row))
    columns = {}
    for name in names:
        values = [row.get(name) for row in rows]
        columns[name] = typed_column(values, typed[name]) if name in typed else values
    return pa.table(columns)


def _batches(rows: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """`rows` in lists of BATCH_ROWS (at least one list, empty when there are no rows)."""
    batch: list[dict[str, Any]] = []
    sent = False
    for row in rows:
        batch.append(row)
        if len(batch) == BATCH_ROWS:
            yield batch
            batch, sent = [], True
    if batch or not sent:
        yield batch


def _conform(table: Any, schema: Any) -> Any:
    """`table` under the unified `schema`: missing columns null, types widened."""
    import pyarrow as pa

    try:
        columns = [
            table.column(f.name).cast(f.type)
            if f.name in table.column_names
            else pa.nulls(table.num_rows, f.type)
            for f in schema
        ]
        return pa.Table.from_arrays(columns, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return pa.Table.from_pylist(table.to_pylist(), schema=schema)  # older pyarrow casts less
