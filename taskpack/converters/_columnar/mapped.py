"""A columnar reader's loop: each chunk mapped as a batch, what a check refuses cut out and sent
to the row path, and batches of several shapes mapped a shape at a time."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from functools import cache
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from taskpack.base.arrow import numbers, view
from taskpack.converters._columnar.template import Batch
from taskpack.converters._sources.chunk import Chunk, NotColumnar, Parsed
from taskpack.converters._sources.records import Record

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


# `grouped`: a batch of rows with more different templates than this many, or than one per
# this many rows, goes row by row (a template costs about as much as a few rows mapped).
_TEMPLATES = 8


_ROWS_PER_TEMPLATE = 32


def shapes(keys: Sequence[pa.Array]) -> tuple[Any, list[int]]:
    """Each row's group (rows alike in every one of `keys`, texts each row's shape in one
    respect: its roles, its tool list), numbered in the order of their first rows; and those
    first rows. Found in Arrow's hash tables, not by a Python dict of each row's texts: a tool
    list is hundreds of bytes on every row."""
    import numpy as np

    code = np.zeros(len(keys[0]), np.int64)
    for values in keys:
        encoded = pc.dictionary_encode(values, null_encoding="encode")
        code = code * len(encoded.dictionary) + view(encoded.indices)
        code = np.unique(code, return_inverse=True)[1]  # kept below the row count
    _, firsts, each = np.unique(code, return_index=True, return_inverse=True)
    order = np.argsort(firsts)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[each], firsts[order].tolist()


def grouped(
    codes: Any,
    keys: Sequence[str],
    table: pa.Table,
    rows: pa.Array,
    parsed: Parsed,
    one: Callable[[pa.Table, pa.Array, Parsed, str], Batch],
) -> Batch:
    """A batch whose rows differ in a constant of their template (row i's is `keys[codes[i]]`
    (see `shapes`): its roles, its tool list): the rows of each key mapped by `one` as a batch
    of their own (with their row numbers, parsed rows and key), put back in row order. A
    refusal names the batch's rows; a group refused whole goes row by row."""
    import numpy as np

    if len(keys) == 1:
        return one(table, rows, parsed, keys[0])
    if len(keys) > max(_TEMPLATES, len(codes) // _ROWS_PER_TEMPLATE):
        raise NotColumnar(f"{len(keys)} different templates in {len(codes)} rows")
    filled, order = [], []
    for number, key in enumerate(keys):
        at = np.flatnonzero(codes == number)
        order.append(at)
        take = numbers(at)
        some = cache(lambda at=at: [parsed()[i] for i in at.tolist()])
        try:
            filled.append(one(table.take(take), rows.take(take), some, key))
        except NotColumnar as e:
            refused = at.tolist() if e.rows is None else [int(at[i]) for i in e.rows]
            raise NotColumnar(str(e), refused) from None
    back = pc.sort_indices(numbers(np.concatenate(order)))
    table = pa.concat_tables([b.table for b in filled]).take(back)
    return Batch(table, pa.concat_arrays([b.canonical for b in filled]).take(back))
