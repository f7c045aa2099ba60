"""Parquet sources: the row path's reader, and the chunks the columnar path reads."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial
from itertools import pairwise
from typing import IO, TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    import pyarrow.parquet as pq

from taskpack.base.parquet import parquet_file
from taskpack.converters._sources.chunk import Chunk, NotColumnar, _chunk
from taskpack.converters._sources.jsonl import _CONFIRMED
from taskpack.converters._sources.records import Record
from taskpack.errors import TaskpackError


def _parquet_rows(stream: IO[bytes], where: str) -> Iterator[Record]:
    import pyarrow as pa

    try:
        yield from arrow_records(parquet_file(stream).iter_batches(batch_size=1024), where)
    except (pa.ArrowInvalid, OSError) as e:
        raise TaskpackError(f"{where}: not a readable Parquet file ({e})") from None


def arrow_records(
    batches: Iterable[Any], where: str, first: int = 0, lines: bool = True
) -> Iterator[Record]:
    """The records of a table's rows read as Arrow record batches, the first being row `first`
    of `where`; `lines`: row N is line N + 1, as for Parquet (a CSV row's line is not known
    from its table)."""
    from taskpack.converters._arrowjson import json_row, row_types

    number = first
    for batch in batches:
        types = row_types(batch.schema)  # timestamps, decimals, bytes: as JSON, typed beside
        for row in batch.to_pylist():
            if types is not None:
                row = json_row(row, batch.schema)
            line = number + 1 if lines else None
            yield Record(f"{where}: row {number}", task=row, line=line, types=types)
            number += 1


_PARQUET_ROWS = 64 * 1024  # rows per batch of a Parquet source, at most...
# ...and bytes, uncompressed: 64k rows of 120 KB each were one batch of the whole file, and
# converting it held 6.7x the file (801 MiB of Arrow memory for a 120 MB source)
_PARQUET_BYTES = 16 << 20


def _batch_rows(pf: pq.ParquetFile) -> int:
    """Rows per batch: `_PARQUET_ROWS`, fewer where rows are large (from the footer's sizes)."""
    meta = pf.metadata
    size = sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups))
    per_row = size / max(meta.num_rows, 1)
    return max(1, min(_PARQUET_ROWS, int(_PARQUET_BYTES / max(per_row, 1.0))))


def parquet_chunks(uri: str) -> Iterator[Chunk]:
    first = 0
    try:
        pf = parquet_file(uri)
        for batch in pf.iter_batches(batch_size=_batch_rows(pf)):
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
