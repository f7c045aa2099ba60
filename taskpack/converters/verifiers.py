"""Verifiers (PrimeIntellect, the HF-Dataset API of 0.3) datasets as `vf.SingleTurnEnv`
formats them: `prompt` (chat messages, the system prompt included), `question`, `answer`,
`example_id`, and an optional `info` (a JSON string). Read from Parquet, JSONL or a dataset
saved with `save_to_disk`; written as both (`<split>.parquet`, `<split>/`).

prompt -> prompt; answer -> answer; `example_id` -> the task id; `question` is the
instruction (the last user message) and is written from it. Anything else, `info` included, is
kept in `extras.verifiers`. There is never a `task` column: verifiers releases read that as a
task route.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from taskpack.converters._chat import read_messages, text_messages
from taskpack.converters._format import Format, Options, Target
from taskpack.converters._payload import payload_json, task_from_payload
from taskpack.converters._rows import Hints, read_rows, write_row
from taskpack.converters._source import Record, iter_table_rows
from taskpack.model import Task


def to_task(row: dict[str, Any], split: str, ordinal: int) -> tuple[dict[str, Any], Hints]:
    eid = row.get("example_id")
    prompt = row.get("prompt")
    task = {
        "id": str(eid) if isinstance(eid, (int, str)) and str(eid) else f"{split}-{ordinal:05d}",
        "prompt": row.get("question") if prompt is None else read_messages(prompt, "prompt"),
        "answer": row.get("answer"),
        "source": {"format": "verifiers", "split": split, "row": ordinal},
    }
    return task, {}


def to_row(task: Task, hints: Hints, target: Target) -> dict[str, Any]:
    row: dict[str, Any] = {"question": task.instruction}
    if task.answer is None or isinstance(task.answer, str):
        row["answer"] = task.answer or ""
    else:
        target.losses.lost("answer (not text; written as JSON text)", task)
        row["answer"] = json.dumps(task.answer, ensure_ascii=False)
    if task.id.isdigit():
        row["example_id"] = int(task.id)
    else:
        row["info"] = json.dumps({"id": task.id}, ensure_ascii=False)
    row["prompt"] = text_messages(task, target.losses)
    return row


def write(tasks: Iterable[Task], out: Path, split: str, target: Target) -> list[Path]:
    import datasets

    rows = []
    for task in tasks:
        row = write_row(FORMAT, task, to_row, target)
        if target.options.embed:
            row["info"] = payload_json(task)
        rows.append(row)
    ds = datasets.Dataset.from_list(rows)
    ds.save_to_disk(str(out / split))
    ds.to_parquet(str(out / f"{split}.parquet"))
    return [out / split, out / f"{split}.parquet"]


def _rows(uri: str) -> Iterator[Record]:
    path = Path(uri)
    if path.is_dir():  # a dataset saved with save_to_disk
        import datasets

        for n, row in enumerate(datasets.load_from_disk(str(path))):
            yield Record(f"{uri}: row {n}", task=dict(row), line=n + 1)
    else:
        yield from iter_table_rows(uri)


def _embedded(row: dict[str, Any]) -> dict[str, Any] | None:
    info = row.get("info")
    if isinstance(info, str) and info.startswith("{"):
        try:
            whole = json.loads(info)
        except json.JSONDecodeError:
            return None
        if isinstance(whole, dict) and {"id", "prompt", "files"} <= whole.keys():
            return task_from_payload(whole, "info")
    return None


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return read_rows(FORMAT, _rows(uri), lambda row, n: to_task(row, split, n), to_row, _embedded)


FORMAT = Format(
    name="verifiers",
    summary="Verifiers 0.3 datasets (SingleTurnEnv): prompt, question, answer, example_id, info.",
    read=read,
    write=write,
    carries=frozenset({"prompt", "answer"}),
)
