"""Row formats, natively: a module maps a row to task fields (`to_task`) and task fields to a
row (`to_row`); what the row holds beyond that mapping is its residue, kept in
`extras.<format>` and put back on writing (see `_residue`). A few style choices a row makes
that the model has no field for (NeMo's `input` as a bare string) travel as `hints`, under
`extras.<format>["$style"]`, so that the residue never has to copy task content.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from taskpack.converters._format import Format, Losses, Target, options, report_uncarried
from taskpack.converters._residue import apply, residue
from taskpack.converters._sources.records import Record, RowError
from taskpack.errors import describe_error
from taskpack.model import Task

if TYPE_CHECKING:
    from taskpack.converters._columnar.template import Template

STYLE = "$style"
ARROW = "arrow"  # under STYLE: the Arrow types of the row's non-JSON columns
Hints = dict[str, Any]
ToTask = Callable[[dict[str, Any], int], tuple[dict[str, Any], Hints]]
ToRow = Callable[[Task, Hints, Target], dict[str, Any]]


def read_rows(
    fmt: Format,
    records: Iterator[Record],
    to_task: ToTask,
    to_row: ToRow,
    embedded: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
    first: int = 0,
) -> Iterator[Record]:
    """Tasks from native rows, each with its residue in `extras.<format>`.

    `embedded(row)` returns the whole task when the row carries one (written with `embed`);
    it is then taken as is. `first`: the ordinal of the first record (see `map_rows`).
    """
    probe = _probe(fmt)
    for ordinal, record in enumerate(records, start=first):
        row = record.task
        if isinstance(row, dict):
            try:
                whole = embedded(row) if embedded else None
                record.task = (
                    whole
                    if whole is not None
                    else _native(fmt, row, ordinal, to_task, to_row, probe)
                )
                if record.types is not None and whole is None:  # for the writer to type back
                    extra = record.task.extras.setdefault(fmt.name, {})
                    extra.setdefault(STYLE, {})[ARROW] = record.types
            except RowError as e:
                record.task, record.error = None, str(e)
        yield record


def native_template(
    fmt: Format, row: dict[str, Any], names: list[str], to_task: ToTask, to_row: ToRow
) -> Template:
    """The columnar template of a native row of slots (its fields in the source's order
    `names`): its task, residue in `extras.<format>` and all, as `read_rows` reads a row."""
    from taskpack.converters._columnar.template import ROW, Template

    ordered = {n: row[n] for n in names}
    task = _native(fmt, ordered, ROW, to_task, to_row, _probe(fmt))
    return Template(task.model_dump(mode="json"))


def _probe(fmt: Format) -> Target:
    """Where `to_row` writes when a residue is computed (its losses are not the reader's)."""
    return Target(options(fmt, {}, write=True), Losses(fmt.name))


def _native(
    fmt: Format, row: dict[str, Any], ordinal: int, to_task: ToTask, to_row: ToRow, probe: Target
) -> Task:
    mapped, hints = to_task(row, ordinal)
    try:
        task = Task.model_validate(mapped)
    except ValidationError as e:
        raise RowError(describe_error(e)) from None
    extra = residue(row, to_row(task, hints, probe))
    if hints:
        extra[STYLE] = hints
    if extra:
        task.extras[fmt.name] = extra
    return task


def own_extras(task: Task, fmt: str) -> tuple[dict[str, Any], Hints]:
    """The task's residue and style hints from format `fmt` ({} when it came from elsewhere)."""
    extra: dict[str, Any] = dict(task.extras.get(fmt, {}))
    hints = extra.pop(STYLE, {})
    return extra, hints if isinstance(hints, dict) else {}


def write_row(fmt: Format, task: Task, to_row: ToRow, target: Target) -> dict[str, Any]:
    """The native row of `task`: its mapped fields, then its own residue, if it came from here."""
    report_uncarried(fmt, task, target.losses)
    extra, hints = own_extras(task, fmt.name)
    return dict(apply(to_row(task, hints, target), extra))


Adjust = Callable[[dict[str, Any], Task, int], None]


def native_rows(
    fmt: Format,
    tasks: Iterable[Task],
    to_row: ToRow,
    target: Target,
    adjust: Adjust | None = None,
) -> Iterator[tuple[dict[str, Any], Task]]:
    """Each task's row as a row format writes it: `write_row`, then what the format does with a
    row's place in the split (`adjust`, in place), then what taskpack adds in the format's free
    field (`Format.free`: pass rates, and with `embed` the whole task)."""
    for index, task in enumerate(tasks):
        row = write_row(fmt, task, to_row, target)
        if adjust is not None:
            adjust(row, task, index)
        if fmt.free is not None:
            fmt.free.put(row, task, target)
        yield row, task
