"""GEM (axon-rl) rows: `problem` and `question` (the text GEM's math and QA environments read)
and `answer`, written as Parquet for `datasets`. GEM's math environments score numeric answers,
its QA environments exact ones (a choice's letter too); other reward kinds are reported lost.

The instruction (the last user message) -> both `problem` and `question`; answer -> answer.
Other columns are kept in `extras.gem`; the task id rides in `id`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from taskpack import records
from taskpack.converters._columnar.fieldmap import FieldMap, IdOr, Native, Ordinal
from taskpack.converters._columnar.kinds import Maybe, SameAs, Text
from taskpack.converters._format import Format, FreeField, Target
from taskpack.converters._payload import PAYLOAD_KEY
from taskpack.converters._rowfile import write_native
from taskpack.converters._rows import Hints
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
    return write_native(FORMAT, tasks, to_row, target, out / f"{split}.parquet")


# `problem` and/or `question`, the question either always or never the problem (the template
# compares them as each row would), the first one never empty (the row path asks the next).
FIELDS = FieldMap(
    {
        "problem": Maybe(Text(never=("",))),
        "question": Maybe(SameAs("problem", never=("",))),
        "answer": Text(),
        "id": Maybe(Text()),
    },
    id=IdOr("id", Ordinal()),
    mapping=Native(lambda: FORMAT, to_task, to_row),
    rest=True,
    keyed=True,
    never=(PAYLOAD_KEY,),
)


FORMAT: Format = Format(
    name="gem",
    summary="GEM rows (Parquet): problem, question, answer.",
    read=FIELDS.read,
    read_columns=FIELDS.read_columns,
    write=write,
    free=FreeField(None),
    split_globs=(("*.parquet", "file"),),
    carries=frozenset({"prompt", "answer", "reward"}),
)
