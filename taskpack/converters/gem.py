"""GEM (axon-rl) rows: `problem` and `question` (the text GEM's math and QA environments read)
and `answer`, written as Parquet for `datasets`. GEM's math environments score numeric answers,
its QA environments exact ones (a choice's letter too); other reward kinds are reported lost.

The instruction (the last user message) -> both `problem` and `question`; answer -> answer.
Other columns are kept in `extras.gem`; the task id rides in `id`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from taskpack import records
from taskpack.converters._columnar import (
    Batch,
    Lines,
    NotColumnar,
    Parsed,
    Template,
    json_columns,
    json_slot,
    mapped,
    ordinal_ids,
    own_names,
    refuse,
    row_numbers,
    slot,
    table_chunks,
    task_ids,
    text_columns,
)
from taskpack.converters._format import Format, Options, Target
from taskpack.converters._payload import PAYLOAD_KEY, embedded, payload_json
from taskpack.converters._rowfile import parquet_row, write_parquet_rows
from taskpack.converters._rows import Hints, native_template, read_rows, write_row
from taskpack.converters._source import Record, iter_table_rows
from taskpack.model import Task


def to_task(row: dict[str, Any], split: str, ordinal: int) -> tuple[dict[str, Any], Hints]:
    tid = row.get("id")
    task = {
        "id": str(tid) if isinstance(tid, (str, int)) and str(tid) else f"{split}-{ordinal:05d}",
        "prompt": row.get("problem") or row.get("question"),
        "answer": row.get("answer"),
        "source": {"format": "gem", "split": split, "row": ordinal},
    }
    return task, {}


# Reward kinds GEM's own environments score: math (numeric answers, `\boxed{}`) and QA
# (exact match of `<answer>...</answer>`, which takes a choice's letter too).
GEM_ENVS = {
    "numeric_match": "math",
    "math_match": "math",
    "exact_match": "qa",
    "multiple_choice": "qa",
}


def to_row(task: Task, hints: Hints, target: Target) -> dict[str, Any]:
    if task.reward is not None and task.reward.kind not in GEM_ENVS:
        target.losses.lost(f"reward kind {task.reward.kind!r} (no GEM environment scores it)", task)
    if any(not (isinstance(m, records.Message) and m.role == "user") for m in task.prompt):
        target.losses.lost("prompt messages other than the question", task)
    text = task.instruction
    answer = task.answer
    if answer is not None and not isinstance(answer, str):
        target.losses.lost("answer (not text; written as JSON text)", task)
        answer = json.dumps(answer, ensure_ascii=False)
    return {"id": task.id, "problem": text, "question": text, "answer": answer or ""}


def write(tasks: Iterable[Task], out: Path, split: str, target: Target) -> list[Path]:
    def rows() -> Iterator[dict[str, Any]]:
        for task in tasks:
            row = write_row(FORMAT, task, to_row, target)
            if target.options.embed:
                row[PAYLOAD_KEY] = payload_json(task)
            yield parquet_row(row, task, target.losses)

    path = out / f"{split}.parquet"
    write_parquet_rows(rows(), path)
    return [path]


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return _native(iter_table_rows(uri), split)


def _native(records: Iterator[Record], split: str, first: int = 0) -> Iterator[Record]:
    return read_rows(
        FORMAT, records, lambda row, n: to_task(row, split, n), to_row, embedded, first
    )


def read_columns(
    uri: str, split: str, options: Options, lines: Lines = None
) -> Iterator[Batch | Iterator[Record]]:
    """`read`, a batch at a time (see `_columnar`), for tables of `problem` and/or `question`
    (text, the first one never empty), `answer` (text), an optional text `id`, and other
    columns of JSON values; with both texts, the question either always or never the problem.
    The residue is the row path's, computed once on a row of slots these checks keep true."""
    import pyarrow.compute as pc

    template: Template | None = None
    constants: tuple[Any, ...] = ()

    def batch(table: pa.Table, first: int, parsed: Parsed) -> Batch:
        nonlocal template, constants
        names = table.schema.names
        texts = [n for n in ("problem", "question") if n in names]
        if not texts or "answer" not in names or PAYLOAD_KEY in names or not table.num_rows:
            raise NotColumnar(f"columns {names}")
        own_names(names)
        asked = text_columns(table, [*texts, "answer", *(["id"] if "id" in names else [])])
        refuse(pc.equal(asked[0], ""), f"an empty {texts[0]}")  # the row path asks the next
        same = len(texts) == 2 and pc.all(pc.equal(asked[0], asked[1])).as_py()
        if len(texts) == 2 and not same and pc.any(pc.equal(asked[0], asked[1])).as_py():
            raise NotColumnar("a question that is the problem only in some rows")
        others = [n for n in names if n not in ("problem", "question", "answer", "id")]
        if template is None:
            constants = (names, same)
            row: dict[str, Any] = {n: json_slot(n) for n in others}
            row |= {n: slot(texts[0] if same else n) for n in texts}
            row |= {n: slot(n) for n in ("answer", "id") if n in names}
            template = native_template(
                FORMAT, row, names, lambda r, n: to_task(r, split, n), to_row
            )
        if (names, same) != constants:
            raise NotColumnar("a shape that changes between rows")
        columns = dict(zip([*texts, "answer"], asked, strict=False))
        values, hashed = json_columns(table, others, parsed)
        columns |= values
        rows = row_numbers(first, table.num_rows)
        ids = task_ids(asked[-1]) if "id" in names else ordinal_ids(split, rows)
        return template.fill(ids, columns, rows, hashed)

    yield from mapped(
        table_chunks(uri, keyed=True, lines=lines), batch, lambda rows, n: _native(rows, split, n)
    )


FORMAT = Format(
    name="gem",
    summary="GEM rows (Parquet): problem, question, answer.",
    read=read,
    read_columns=read_columns,
    write=write,
    split_globs=(("*.parquet", "file"),),
    carries=frozenset({"prompt", "answer", "reward"}),
)
