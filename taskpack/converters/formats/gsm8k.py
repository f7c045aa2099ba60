"""GSM8K (openai/grade-school-math): `{question, answer}`, the final answer after `####`.

question -> prompt; the whole worked answer -> solution (calculator notes `<<48/2=24>>` kept);
the number after `####`, thousands commas removed -> answer, rewarded by numeric match.
Ids are `<split>-<row>`, stable for a given file.
"""

from __future__ import annotations

from typing import Any

from taskpack.converters._columnar.fieldmap import FieldMap, Flat, Ordinal
from taskpack.converters._columnar.kinds import AfterLast, Text, Values
from taskpack.converters._format import Format
from taskpack.model import Task


def _task(values: Values, split: str, row: int) -> dict[str, Any]:
    return {
        "prompt": values["question"],
        "answer": values["#final"],
        "solution": values["answer"],
        "reward": {"kind": "numeric_match"},
        "source": {"format": "gsm8k", "split": split, "row": row},
        "metadata": values.rest("question", "answer"),
    }


FIELDS = FieldMap(
    {"answer": Text(), "question": Text(), "#final": AfterLast("answer", "####", drop=",")},
    id=Ordinal(),
    mapping=Flat(_task),
)


def source_row(task: Task) -> dict[str, Any]:
    return {"question": task.instruction, "answer": task.solution, **task.metadata}


FORMAT = Format(
    name="gsm8k",
    summary="GSM8K JSONL: question, worked answer with the final number after ####.",
    read=FIELDS.read,
    read_columns=FIELDS.read_columns,
)
