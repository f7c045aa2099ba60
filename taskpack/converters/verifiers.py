"""Verifiers (PrimeIntellect, the HF-Dataset API of 0.3): `prompt` (chat messages), `answer`,
`info` (a JSON string). Written as a Hugging Face dataset saved to disk (`<split>/`) and as
Parquet (`<split>.parquet`).

`info` holds the whole task (id, reward, files, environment, metadata...) as JSON, so every
field survives a round trip; it never has a `task` key and there is no `task` column, since
current verifiers releases read those as task routes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from taskpack.converters._payload import Losses, payload_json, task_from_payload
from taskpack.converters._source import Record, RowError, iter_table_rows, map_rows
from taskpack.model import Task


def write(tasks: Iterable[Task], out: Path, split: str, losses: Losses) -> list[Path]:
    import datasets

    rows = [
        {
            "prompt": [{"role": m.role, "content": m.content} for m in task.prompt],
            "answer": task.answer or "",
            "info": payload_json(task),
        }
        for task in tasks
    ]
    features = datasets.Features(
        {
            "prompt": datasets.List(
                {"role": datasets.Value("string"), "content": datasets.Value("string")}
            ),
            "answer": datasets.Value("string"),
            "info": datasets.Value("string"),
        }
    )
    ds = datasets.Dataset.from_list(rows, features=features)
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


def read(uri: str, split: str) -> Iterator[Record]:
    def convert(row: dict[str, Any], ordinal: int) -> dict[str, Any]:
        try:
            info = json.loads(row.get("info") or "{}")
        except json.JSONDecodeError as e:
            raise RowError(f"field 'info': not JSON ({e.msg})") from None
        if isinstance(info, dict) and "id" in info and "prompt" in info:
            return task_from_payload(info)  # written by taskpack: the whole task
        return {  # a verifiers dataset from elsewhere: what its columns say
            "id": f"{split}-{ordinal:05d}",
            "prompt": row.get("prompt") or row.get("question"),
            "answer": row.get("answer") or None,
            "metadata": info if isinstance(info, dict) else {"info": info},
        }

    return map_rows(_rows(uri), convert)
