"""GSM8K (openai/grade-school-math): `{question, answer}`, the final answer after `####`.

question -> prompt; the whole worked answer -> solution (calculator notes `<<48/2=24>>` kept);
the number after `####`, thousands commas removed -> answer, rewarded by numeric match.
Ids are `<split>-<row>`, stable for a given file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from taskpack.converters._columnar import (
    ROW,
    Batch,
    Template,
    mapped,
    ordinal_ids,
    refuse,
    row_numbers,
    slot,
    strings,
    table_chunks,
)
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


def _task(split: str, question: str, solution: str, final: str, row: int) -> dict[str, Any]:
    """Task fields from a row's values: the row path's mapping, also the columnar template's."""
    return {
        "prompt": question,
        "answer": final,
        "solution": solution,
        "reward": {"kind": "numeric_match"},
        "source": {"format": "gsm8k", "split": split, "row": row},
    }


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return map_rows(iter_table_rows(uri), _converter(split))


def _converter(split: str) -> Callable[[dict[str, Any], int], dict[str, Any]]:
    def convert(row: dict[str, Any], ordinal: int) -> dict[str, Any]:
        solution = need(row, "answer")
        question = need(row, "question")
        return {
            "id": f"{split}-{ordinal:05d}",
            **_task(split, question, solution, final_answer(solution), ordinal),
            "metadata": {k: v for k, v in row.items() if k not in ("question", "answer")},
        }

    return convert


def read_columns(uri: str, split: str, options: Options) -> Iterator[Batch | Iterator[Record]]:
    """`read`, a batch at a time (see `_columnar`): rows of text `question` and `answer` only."""
    import pyarrow.compute as pc

    template = Template(_task(split, slot("question"), slot("answer"), slot("final"), ROW))

    def batch(table: pa.Table, first: int, _: object) -> Batch:
        question, solution = strings(table, "question", "answer")
        refuse(pc.invert(pc.match_substring(solution, "####")), "an answer without '####'")
        # [head, tail] per row, each row holding "####": the tails are every second value.
        halves = pc.split_pattern(solution, "####", max_splits=1, reverse=True)
        tail = pc.list_flatten(halves)[1::2]
        # Python's strip() and Arrow's ASCII trim agree on printable ASCII and its whitespace.
        plain = pc.match_substring_regex(tail, r"^[\t-\r -~]*$")
        refuse(pc.invert(plain), "a final answer that is not plain ASCII")
        final = pc.replace_substring(pc.ascii_trim_whitespace(tail), ",", "")
        refuse(pc.equal(pc.binary_length(final), 0), "nothing after '####'")
        rows = row_numbers(first, table.num_rows)
        columns = {"question": question, "answer": solution, "final": final}
        return template.fill(ordinal_ids(split, rows), columns, rows)

    convert = _converter(split)
    yield from mapped(table_chunks(uri), batch, lambda rows, n: map_rows(rows, convert, n))


def source_row(task: Task) -> dict[str, Any]:
    return {"question": task.instruction, "answer": task.solution, **task.metadata}


FORMAT = Format(
    name="gsm8k",
    summary="GSM8K JSONL: question, worked answer with the final number after ####.",
    read=read,
    read_columns=read_columns,
)
