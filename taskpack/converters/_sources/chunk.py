"""A chunk of a source's rows, read two ways: as Arrow reads them, for the columnar path, and as
the row path reads the very same rows; and the refusal that sends rows to the row path."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache, partial
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias, cast

from taskpack.converters._sources.records import Record

if TYPE_CHECKING:
    from concurrent.futures import Executor

    import pyarrow as pa

# Bytes of source text per batch: Arrow's parser works in several times this, so it bounds
# the import's memory (a line over 1 MiB, past Arrow's block, is read row by row).
BLOCK = 1 << 20


class NotColumnar(Exception):
    """This source needs the row path (the columnar reader could not map it exactly); with
    `rows`, only these rows of the batch (0-based, ascending)."""

    def __init__(self, reason: str, rows: list[int] | None = None) -> None:
        super().__init__(reason)
        self.rows = rows


# The lines (first, last; 1-based, inclusive) of the source a sharded import's part keeps.
Lines: TypeAlias = "tuple[int, int] | None"


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
    return Chunk(table, records, parsed_once(records, rows), rows, cut)


def parsed_once(records: Records, rows: int) -> Parsed:
    """The `rows` rows of `records` as the row path reads them, parsed when first asked."""
    return cache(partial(_parsed_rows, records, rows))


def _parsed_rows(records: Records, size: int) -> list[dict[str, Any]]:
    """The `size` rows of `records` as the row path reads them (each a dict, else the rows
    are not columnar)."""
    rows = [record.task for record in records()]
    if len(rows) != size or not all(isinstance(row, dict) for row in rows):
        raise NotColumnar("rows the row path reads otherwise")
    return cast("list[dict[str, Any]]", rows)


def parsed_ahead(chunks: Iterator[Chunk | int]) -> Iterator[Chunk | int]:
    """The chunks, each one's table parsed on a thread while the one before it is mapped: a
    parser that releases the GIL (Arrow's) then runs on the second core. One chunk is parsed
    ahead at most, so memory grows by one chunk's table; and only while tables are asked for
    (rows gone to the row path are not parsed for nothing)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="taskpack-parse") as pool:
        held: Chunk | int | None = None
        handed: _Early | None = None  # the table of the chunk handed out last
        for item in chunks:
            if isinstance(item, Chunk):
                early = _Early(item.table, pool if handed is None or handed.asked else None)
                item = item._replace(table=early)
            if held is not None:
                yield held
                if isinstance(held, Chunk):
                    handed = cast(_Early, held.table)
            held = item
        if held is not None:
            yield held


class _Early:
    """A chunk's table: parsed on `pool` from the start when given one, else when asked."""

    def __init__(self, table: Callable[[], pa.Table], pool: Executor | None) -> None:
        self.asked = False
        self._table = table
        self._future = None if pool is None else pool.submit(table)

    def __call__(self) -> pa.Table:
        self.asked = True
        return self._table() if self._future is None else self._future.result()
