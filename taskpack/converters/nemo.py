"""NeMo Gym JSONL: `responses_create_params.input` as Responses-API messages (type `message`,
roles user/system/developer/assistant) and the verifier's fields at the top level: `question`
and `expected_answer`, or `verifier_metadata` for code (unit tests, entry point). No `agent_ref`
or `task_source`: NeMo Gym's collate step adds the right one. The whole task rides along under
`taskpack`, a top-level key NeMo Gym's validation leaves alone.
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
    task_from_payload,
    task_payload,
)
from taskpack.converters._source import Record, iter_table_rows, map_rows
from taskpack.model import Task, UnitTests

ROLES = {"user", "system", "developer", "assistant"}


def row(task: Task, losses: Losses) -> dict[str, Any]:
    messages = []
    for m in task.prompt:
        if m.role not in ROLES:
            losses.lost(f"prompt messages with role {m.role!r}", task)
            continue
        messages.append({"type": "message", "role": m.role, "content": m.content})
    out: dict[str, Any] = {"responses_create_params": {"input": messages}}
    if isinstance(task.reward, UnitTests):
        out["verifier_metadata"] = {
            "entry_point": task.reward.entry_point,
            "language": task.reward.language,
            "unit_tests": task.file(task.reward.test_file).read_bytes().decode("utf-8", "replace"),
        }
    else:
        out["question"] = last_user_text(task)
        if task.answer is not None:
            out["expected_answer"] = task.answer
    out[PAYLOAD_KEY] = task_payload(task)
    return out


def write(tasks: Iterable[Task], out: Path, split: str, losses: Losses) -> list[Path]:
    path = out / f"{split}.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for task in tasks:
            f.write(json.dumps(row(task, losses), ensure_ascii=False) + "\n")
    return [path]


def read(uri: str, split: str) -> Iterator[Record]:
    def convert(data: dict[str, Any], ordinal: int) -> dict[str, Any]:
        if isinstance(data.get(PAYLOAD_KEY), dict):
            return task_from_payload(data[PAYLOAD_KEY])
        params = data.get("responses_create_params") or {}
        messages = params.get("input")
        if isinstance(messages, list):
            messages = [{"role": m.get("role"), "content": m.get("content")} for m in messages]
        rest = {
            k: v for k, v in data.items() if k not in ("responses_create_params", "expected_answer")
        }
        return {
            "id": f"{split}-{ordinal:05d}",
            "prompt": messages,
            "answer": data.get("expected_answer"),
            "metadata": rest,
        }

    return map_rows(iter_table_rows(uri), convert)
