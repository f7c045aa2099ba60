"""A source row as every reader yields it: a `Record` carries the row or its error, so the
importer decides whether to stop (the default) or skip it and report it (`--skip-invalid`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass
class Record:
    """One source row on its way to a task: where it is, and the task mapping or the reason."""

    where: str
    task: Any = None  # the source row, then the task (a mapping, or a Task already validated)
    error: str | None = None
    line: int | None = None
    types: str | None = None  # the Arrow types of the row's non-JSON columns (`_arrowjson`)


class RowError(ValueError):
    """A source row that cannot become a task; `str(e)` says which field and why."""


def need(row: dict[str, Any], key: str, kind: type = str) -> Any:
    """`row[key]`, which must be present and of `kind`, named in the error otherwise."""
    if key not in row:
        own = getattr(row, "source", row)  # a row a field map checks: its source's fields
        raise RowError(f"field {key!r}: missing (fields: {', '.join(map(str, own)) or 'none'})")
    value = row[key]
    if not isinstance(value, kind):
        raise RowError(f"field {key!r}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def map_rows(
    records: Iterator[Record],
    convert: Callable[[dict[str, Any], int], dict[str, Any]],
    first: int = 0,
) -> Iterator[Record]:
    """Turn each good record's source row into a task mapping; a RowError marks the record bad.

    `convert` gets the row and its ordinal among the source's rows, for stable generated ids
    (`first`: the ordinal of the first record, when they start past the source's first row).
    """
    for ordinal, record in enumerate(records, start=first):
        if record.task is not None:
            try:
                record.task = convert(record.task, ordinal)
            except RowError as e:
                record.task, record.error = None, str(e)
        yield record
