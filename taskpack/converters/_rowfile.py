"""Row formats written to Parquet a batch at a time, so a million-task export holds one batch
in memory, not the split. Each batch's types are inferred as `pa.Table.from_pylist` infers
them for the whole split; when batches disagree (a column null in one, text in another; a key
some rows lack), the parts are joined under their unified schema, so the file is the one a
single `from_pylist` of every row would give."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

BATCH_ROWS = 8192


def write_parquet_rows(rows: Iterable[dict[str, Any]], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts_dir = path.with_name(f".{path.name}.parts")
    parts_dir.mkdir()
    try:
        parts: list[Path] = []
        batch: list[dict[str, Any]] = []
        for row in rows:
            batch.append(row)
            if len(batch) == BATCH_ROWS:
                parts.append(_write_part(batch, parts_dir / f"{len(parts)}.parquet"))
                batch = []
        if batch or not parts:
            parts.append(_write_part(batch, parts_dir / f"{len(parts)}.parquet"))
        if len(parts) == 1:
            os.replace(parts[0], path)
            return
        schemas = [pq.read_schema(p) for p in parts]
        schema = pa.unify_schemas(schemas, promote_options="permissive")
        with pq.ParquetWriter(path, schema) as writer:
            for part in parts:
                for chunk in pq.ParquetFile(part).iter_batches():
                    writer.write_table(_conform(pa.Table.from_batches([chunk]), schema))
    finally:
        shutil.rmtree(parts_dir, ignore_errors=True)


def _write_part(rows: list[dict[str, Any]], path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


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
