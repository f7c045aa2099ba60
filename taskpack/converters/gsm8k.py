"""GSM8K (openai/grade-school-math): `{question, answer}`, the final answer after `####`.

question -> prompt; the whole worked answer -> solution (calculator notes `<<48/2=24>>` kept);
the number after `####`, thousands commas removed -> answer, rewarded by numeric match.
Ids are `<split>-<row>`, stable for a given file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from taskpack.converters._format import Format, Options
from taskpack.converters._source import Record, RowError, iter_table_rows, map_rows, need
from taskpack.model import Task


def final_answer(solution: str) -> str:
    if "####" not in solution:
        raise RowError("field 'answer': no '#### <final answer>' line")
    final = solution.rsplit("####", 1)[1].strip().replace(",", "")
    if not final:
        raise RowError("field 'answer': nothing after '####'")
    return final


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    def convert(row: dict[str, Any], ordinal: int) -> dict[str, Any]:
        solution = need(row, "answer")
        return {
            "id": f"{split}-{ordinal:05d}",
            "prompt": need(row, "question"),
            "answer": final_answer(solution),
            "solution": solution,
            "reward": {"kind": "numeric_match"},
            "source": {"format": "gsm8k", "split": split, "row": ordinal},
            "metadata": {k: v for k, v in row.items() if k not in ("question", "answer")},
        }

    return map_rows(iter_table_rows(uri), convert)


def source_row(task: Task) -> dict[str, Any]:
    return {"question": task.instruction, "answer": task.solution, **task.metadata}


FORMAT = Format(
    name="gsm8k",
    summary="GSM8K JSONL: question, worked answer with the final number after ####.",
    read=read,
)
