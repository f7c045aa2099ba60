"""GEM (axon-rl) rows: `problem` and `question` (the text GEM's math and QA environments read)
and `answer`, written as Parquet for `datasets`; the whole task as JSON in `taskpack`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from taskpack.converters._payload import (
    PAYLOAD_KEY,
    Losses,
    last_user_text,
    payload_json,
    task_from_payload,
)
from taskpack.converters._source import Record, RowError, iter_table_rows, map_rows
from taskpack.model import Task


def write(tasks: Iterable[Task], out: Path, split: str, losses: Losses) -> list[Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = []
    for task in tasks:
        text = last_user_text(task)
        rows.append(
            {
                "problem": text,
                "question": text,
                "answer": task.answer or "",
                PAYLOAD_KEY: payload_json(task),
            }
        )
    schema = pa.schema([(k, pa.string()) for k in ("problem", "question", "answer", PAYLOAD_KEY)])
    path = out / f"{split}.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return [path]


def read(uri: str, split: str) -> Iterator[Record]:
    def convert(row: dict[str, Any], ordinal: int) -> dict[str, Any]:
        if row.get(PAYLOAD_KEY):
            try:
                return task_from_payload(json.loads(row[PAYLOAD_KEY]))
            except json.JSONDecodeError as e:
                raise RowError(f"field {PAYLOAD_KEY!r}: not JSON ({e.msg})") from None
        text = row.get("problem") or row.get("question")
        rest = {k: v for k, v in row.items() if k not in ("problem", "question", "answer")}
        return {
            "id": f"{split}-{ordinal:05d}",
            "prompt": text,
            "answer": row.get("answer") or None,
            "metadata": rest,
        }

    return map_rows(iter_table_rows(uri), convert)
