"""What framework formats share: the task as a JSON payload, and the loss report.

Row formats (verifiers, skyrl, nemo, gem) map what they can into their native columns and carry
the whole task as JSON in the free-form field each one has (`info`, `extra_info`, a top-level
key), so that reading back gives the task with the same digest. What a format cannot carry even
so is reported through one mechanism, `Losses`, whose strict mode makes any loss an error.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from typing import Any

from taskpack.errors import TaskpackError
from taskpack.model import Task

PAYLOAD_KEY = "taskpack"


class Losses:
    """Fields a target format could not carry, counted by field (sqlglot's `unsupported`)."""

    def __init__(self, fmt: str, strict: bool = False) -> None:
        self.fmt = fmt
        self.strict = strict
        self.counts: Counter[str] = Counter()

    def lost(self, field: str, task: Task) -> None:
        if self.strict:
            raise TaskpackError(f"{self.fmt} cannot carry {field} (task {task.id!r}); --strict")
        self.counts[field] += 1

    def report(self) -> list[str]:
        return [
            f"{self.fmt}: {field} lost in {n} task(s)" for field, n in sorted(self.counts.items())
        ]


def task_payload(task: Task) -> dict[str, Any]:
    """Every field of the task as JSON; file contents as text when UTF-8, else base64."""
    payload = task.model_dump(mode="json", exclude={"files"})
    files = []
    for f in task.files:
        data = f.read_bytes()
        entry: dict[str, Any] = {"path": f.path, "mode": f.mode}
        try:
            entry["text"] = data.decode("utf-8")
        except UnicodeDecodeError:
            entry["base64"] = base64.b64encode(data).decode("ascii")
        files.append(entry)
    payload["files"] = files
    return payload


def task_from_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The task mapping a payload describes (validated by the caller like any source row)."""
    task = dict(payload)
    files = []
    for entry in payload.get("files", []):
        data = (
            entry["text"].encode("utf-8") if "text" in entry else base64.b64decode(entry["base64"])
        )
        files.append({"path": entry["path"], "mode": entry["mode"], "data": data})
    task["files"] = files
    return task


def payload_json(task: Task) -> str:
    return json.dumps(task_payload(task), ensure_ascii=False, sort_keys=True)


def last_user_text(task: Task) -> str:
    """The text a single-question framework shows: the last user message."""
    users = [m.content for m in task.prompt if m.role == "user"]
    return users[-1] if users else task.prompt[-1].content
