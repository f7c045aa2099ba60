"""SkyRL (NovaSky): Parquet rows with `data_source`, `prompt` (chat messages), `env_class`,
`reward_spec` {method, ground_truth} and `extra_info`.

`env_class` is `gsm8k` for numeric-match tasks (SkyRL-Gym's GSM8K environment scores them) and
the reward kind otherwise, for an environment the user registers. `extra_info` is a struct of the
task id and the whole task as JSON: never an empty struct, which Parquet cannot store.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from taskpack.converters._payload import Losses, payload_json, task_from_payload
from taskpack.converters._source import Record, RowError, iter_table_rows, map_rows
from taskpack.model import Task

ENV_CLASSES = {"numeric_match": "gsm8k"}


def env_class(task: Task) -> str:
    kind = task.reward.kind if task.reward is not None else "none"
    return ENV_CLASSES.get(kind, kind)


def write(tasks: Iterable[Task], out: Path, split: str, losses: Losses) -> list[Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    schema = pa.schema(
        [
            ("data_source", pa.string()),
            ("prompt", pa.list_(message)),
            ("env_class", pa.string()),
            ("reward_spec", pa.struct([("method", pa.string()), ("ground_truth", pa.string())])),
            ("extra_info", pa.struct([("id", pa.string()), ("taskpack", pa.string())])),
        ]
    )
    rows = [
        {
            "data_source": (task.source.format if task.source else None) or "taskpack",
            "prompt": [{"role": m.role, "content": m.content} for m in task.prompt],
            "env_class": env_class(task),
            "reward_spec": {"method": "rule", "ground_truth": task.answer or ""},
            "extra_info": {"id": task.id, "taskpack": payload_json(task)},
        }
        for task in tasks
    ]
    path = out / f"{split}.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return [path]


def read(uri: str, split: str) -> Iterator[Record]:
    def convert(row: dict[str, Any], ordinal: int) -> dict[str, Any]:
        extra = row.get("extra_info") or {}
        if isinstance(extra, dict) and extra.get("taskpack"):
            try:
                return task_from_payload(json.loads(extra["taskpack"]))
            except json.JSONDecodeError as e:
                raise RowError(f"field 'extra_info.taskpack': not JSON ({e.msg})") from None
        spec = row.get("reward_spec") or {}
        return {
            "id": str(extra.get("id") or f"{split}-{ordinal:05d}"),
            "prompt": row.get("prompt"),
            "answer": spec.get("ground_truth") or None,
            "metadata": {k: row[k] for k in ("data_source", "env_class") if row.get(k)},
        }

    return map_rows(iter_table_rows(uri), convert)
