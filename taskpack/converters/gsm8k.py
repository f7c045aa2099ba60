"""GSM8K (openai/grade-school-math): `{question, answer}`, the final answer after `####`.

question -> prompt; the whole worked answer -> solution (calculator notes `<<48/2=24>>` kept);
the number after `####`, thousands commas removed -> answer, rewarded by numeric match.
Ids are `<split>-<row>`, stable for a given file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from taskpack.converters._columnar import (
    NotColumnar,
    json_string,
    jsonl_batches,
    row_numbers,
    strings,
    task_rows,
    text_json,
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


def read_columns(uri: str, split: str, options: Options) -> Iterator[pa.Table]:
    """`read`, a batch at a time (see `_columnar`): rows with exactly `question` and `answer`."""
    import pyarrow.compute as pc

    first = 0
    where = text_json(split)
    for table in jsonl_batches(uri):
        question, solution = strings(table, "question", "answer")
        if not pc.all(pc.match_substring(solution, "####")).as_py():
            raise NotColumnar("an answer without '####'")
        # [head, tail] per row, each row holding "####": the tails are every second value.
        halves = pc.split_pattern(solution, "####", max_splits=1, reverse=True)
        tail = pc.list_flatten(halves)[1::2]
        # Python's strip() and Arrow's ASCII trim agree on printable ASCII and its whitespace.
        if not pc.all(pc.match_substring_regex(tail, r"^[\t-\r -~]*$")).as_py():
            raise NotColumnar("a final answer that is not plain ASCII")
        final = pc.replace_substring(pc.ascii_trim_whitespace(tail), ",", "")
        if pc.any(pc.equal(pc.binary_length(final), 0)).as_py():
            raise NotColumnar("nothing after '####'")
        size = table.num_rows
        rows = pc.cast(row_numbers(first, size), pa.string())
        ids = pc.binary_join_element_wise(f"{split}-", pc.utf8_lpad(rows, 5, "0"), "")
        q = json_string(question)
        stored: dict[str, Any] = {
            "prompt": pc.binary_join_element_wise(
                '[{"type":"message","role":"user","content":',
                q,
                ',"name":null,"tool_calls":null,"tool_call_id":null}]',
                "",
            ),
            "answer": json_string(final),
            "reward": '{"kind":"numeric_match","tolerance":0.0}',
            "rewards": "{}",
            "tools": "[]",
            "steps": "[]",
            "environment": None,
            "limits": None,
            "source": pc.binary_join_element_wise(
                '{"format":"gsm8k","uri":null,"revision":null,"split":' + where + ',"row":',
                rows,
                "}",
                "",
            ),
            "metadata": "{}",
            "extras": "{}",
        }
        canonical = {
            "prompt": pc.binary_join_element_wise(
                '[{"content":',
                q,
                ',"name":null,"role":"user","tool_call_id":null,"tool_calls":null,'
                '"type":"message"}]',
                "",
            ),
            "source": pc.binary_join_element_wise(
                '{"format":"gsm8k","revision":null,"row":',
                rows,
                ',"split":' + where + ',"uri":null}',
                "",
            ),
        }
        yield task_rows(size, ids, solution, stored, canonical)
        first += size


def source_row(task: Task) -> dict[str, Any]:
    return {"question": task.instruction, "answer": task.solution, **task.metadata}


FORMAT = Format(
    name="gsm8k",
    summary="GSM8K JSONL: question, worked answer with the final number after ####.",
    read=read,
    read_columns=read_columns,
)
