"""The whole task as JSON, for the opt-in `embed` write option of the row formats: a copy of
every field (file contents as text when UTF-8, else base64) in the format's free field. Native
fields and `extras` round-trip without it; it serves readers that want a byte-exact task
(files, rewards) from a format that has no place for them.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from taskpack.base.nesting import parse_json
from taskpack.converters._sources.records import RowError
from taskpack.model import Task

PAYLOAD_KEY = "taskpack"


def task_payload(task: Task) -> dict[str, Any]:
    payload = task.model_dump(mode="json", exclude={"files"})
    files = []
    for f in task.files:
        data = f.read_bytes()
        entry: dict[str, Any] = {"path": f.path, "role": f.role, "step": f.step, "mode": f.mode}
        try:
            entry["text"] = data.decode("utf-8")
        except UnicodeDecodeError:
            entry["base64"] = base64.b64encode(data).decode("ascii")
        files.append(entry)
    payload["files"] = files
    return payload


def payload_json(task: Task) -> str:
    return json.dumps(task_payload(task), ensure_ascii=False, sort_keys=True)


def task_from_payload(payload: Any, field: str = PAYLOAD_KEY) -> dict[str, Any]:
    """The task mapping a payload (a dict or its JSON text) describes."""
    if isinstance(payload, str):
        try:
            payload = parse_json(payload)
        except ValueError as e:
            raise RowError(f"field {field!r}: {e}") from None
    if not isinstance(payload, dict):
        raise RowError(f"field {field!r}: expected the task as a JSON object")
    task = dict(payload)
    entries = payload.get("files", [])
    if not isinstance(entries, list):
        raise RowError(f"field {field!r}: files: expected a list")
    files = []
    for i, entry in enumerate(entries):
        data = _file_bytes(entry)
        if data is None:
            raise RowError(f"field {field!r}: files.{i}: expected text or base64 content")
        files.append({k: entry.get(k) for k in ("path", "role", "step", "mode")} | {"data": data})
    task["files"] = [{k: v for k, v in f.items() if v is not None} for f in files]
    return task


def _file_bytes(entry: Any) -> bytes | None:
    if not isinstance(entry, dict):
        return None
    if isinstance(entry.get("text"), str):
        return bytes(entry["text"].encode("utf-8"))
    try:
        return base64.b64decode(entry["base64"], validate=True)
    except (KeyError, TypeError, ValueError):
        return None
