"""The whole task as JSON, for the opt-in `embed` write option of the row formats: a copy of
every field (file contents as text when UTF-8, else base64) in the format's free field. Native
fields and `extras` round-trip without it; it serves readers that want a byte-exact task
(files, rewards) from a format that has no place for them.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from taskpack.base.nesting import parse_json
from taskpack.converters._sources.records import RowError
from taskpack.model import Task

if TYPE_CHECKING:
    from taskpack.converters._format import Target

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


@dataclass(frozen=True)
class FreeField:
    """Where a row format's framework hands on what it does not read, and so where taskpack
    puts what it adds to a row: the task's pass rates, and with `embed` the whole task. `key`:
    a column holding an object (verl's `extra_info`), or None for the row itself; `whole`: the
    task is the column's whole value, as JSON text (Verifiers' `info`), which then holds no
    pass rates; `text`: the task as JSON text (Parquet) or as an object (JSON Lines). A format
    states it once (`Format.free`); its writer and its reader both go by it."""

    key: str | None
    whole: bool = False
    text: bool = True

    def put(self, row: dict[str, Any], task: Task, target: Target) -> None:
        """What taskpack adds to `task`'s native row, in place."""
        embed = bool(getattr(target.options, "embed", False))
        if embed:
            payload: Any = payload_json(task) if self.text else task_payload(task)
            if self.key is None:
                row[PAYLOAD_KEY] = payload
            elif self.whole:
                row[self.key] = payload
            else:
                row[self.key] = {**(row.get(self.key) or {}), PAYLOAD_KEY: payload}
        if self.key is not None and not (self.whole and embed):
            target.note_pass_rates(row, self.key, task)

    def embedded(self, row: dict[str, Any]) -> dict[str, Any] | None:
        """The whole task `row` carries (written with `embed`), if any."""
        if self.key is None:
            return task_from_payload(row[PAYLOAD_KEY]) if row.get(PAYLOAD_KEY) else None
        value = row.get(self.key)
        if not self.whole:
            if isinstance(value, dict) and value.get(PAYLOAD_KEY):
                return task_from_payload(value[PAYLOAD_KEY], f"{self.key}.{PAYLOAD_KEY}")
            return None
        if isinstance(value, str) and value.startswith("{"):
            try:
                whole = parse_json(value)
            except ValueError:
                return None
            if isinstance(whole, dict) and {"id", "prompt", "files"} <= whole.keys():
                return task_from_payload(whole, self.key)
        return None


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
