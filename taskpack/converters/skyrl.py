"""SkyRL (NovaSky) training Parquet: `data_source`, `prompt` (chat messages), `env_class`,
`reward_spec` {method, ground_truth} and `extra_info`, as SkyRL's dataset scripts write it.

prompt -> prompt; `reward_spec.ground_truth` -> answer; `env_class` `gsm8k` -> a numeric-match
reward (SkyRL-Gym's GSM8K environment scores that), and back. `data_source`, other `env_class`
values, `extra_info` and the reward method are kept in `extras.skyrl` and written back where
they were. A task from elsewhere gets its id in `extra_info.id` and, with no SkyRL environment
for its reward, the reward kind as `env_class`, for an environment the user registers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from taskpack.converters._chat import read_messages, text_messages
from taskpack.converters._format import Format, Options, Target
from taskpack.converters._payload import PAYLOAD_KEY, payload_json, task_from_payload
from taskpack.converters._rows import Hints, read_rows, write_row
from taskpack.converters._source import Record, iter_table_rows
from taskpack.model import Task

ENV_CLASSES = {"numeric_match": "gsm8k"}
REWARDS = {env: kind for kind, env in ENV_CLASSES.items()}


def to_task(row: dict[str, Any], split: str, ordinal: int) -> tuple[dict[str, Any], Hints]:
    spec = row.get("reward_spec") or {}
    extra = row.get("extra_info") or {}
    kind = REWARDS.get(str(row.get("env_class")))
    tid = extra.get("id") if isinstance(extra, dict) else None
    task = {
        "id": str(tid) if tid else f"{split}-{ordinal:05d}",
        "prompt": read_messages(row.get("prompt"), "prompt"),
        "answer": spec.get("ground_truth") if isinstance(spec, dict) else None,
        "reward": {"kind": kind} if kind else None,
        "source": {"format": "skyrl", "split": split, "row": ordinal},
    }
    return task, {}


def _answer_text(task: Task, target: Target) -> str | None:
    if task.answer is None or isinstance(task.answer, str):
        return task.answer
    target.losses.lost("answer (not text; written as JSON text)", task)
    import json

    return json.dumps(task.answer, ensure_ascii=False)


def to_row(task: Task, hints: Hints, target: Target) -> dict[str, Any]:
    kind = task.reward.kind if task.reward is not None else None
    return {
        "data_source": (task.source.format if task.source else None) or "taskpack",
        "prompt": text_messages(task, target.losses),
        "env_class": ENV_CLASSES.get(kind or "", kind),
        "reward_spec": {"method": "rule", "ground_truth": _answer_text(task, target)},
        "extra_info": {"id": task.id},
    }


def write(tasks: Iterable[Task], out: Path, split: str, target: Target) -> list[Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = []
    for task in tasks:
        row = write_row(FORMAT, task, to_row, target)
        if target.options.embed:
            row["extra_info"] = {**(row.get("extra_info") or {}), PAYLOAD_KEY: payload_json(task)}
        rows.append(row)
    path = out / f"{split}.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    return [path]


def _embedded(row: dict[str, Any]) -> dict[str, Any] | None:
    extra = row.get("extra_info")
    if isinstance(extra, dict) and extra.get(PAYLOAD_KEY):
        return task_from_payload(extra[PAYLOAD_KEY], "extra_info.taskpack")
    return None


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return read_rows(
        FORMAT, iter_table_rows(uri), lambda row, n: to_task(row, split, n), to_row, _embedded
    )


FORMAT = Format(
    name="skyrl",
    summary="SkyRL training Parquet: data_source, prompt, env_class, reward_spec, extra_info.",
    read=read,
    write=write,
    carries=frozenset({"prompt", "answer", "reward"}),
)
