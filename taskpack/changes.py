"""What changed between two versions of a task set, by task digest: cheap (two columns per
split, no task is built) and exact (a task whose content changed has another digest); for the
changed tasks, which fields changed, from what to what."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from taskpack.storage.taskset import TaskSet

if TYPE_CHECKING:
    from taskpack.model import Task


@dataclass(frozen=True)
class FieldChange:
    path: str  # `answer`, `metadata.difficulty`, `prompt.0.content`, `files.test.py`
    old: Any
    new: Any


@dataclass(frozen=True)
class SplitDiff:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    fields: dict[str, list[FieldChange]] = field(default_factory=dict)  # id -> its changes


def diff(old: TaskSet, new: TaskSet) -> dict[str, SplitDiff]:
    """Per split of either version: ids added, removed, and changed (same id, other digest),
    with the field-level changes of each changed task."""
    out = {}
    for name in sorted(set(old.splits) | set(new.splits)):
        before = old.split(name).digests() if name in old.splits else {}
        after = new.split(name).digests() if name in new.splits else {}
        changed = sorted(k for k in before.keys() & after.keys() if before[k] != after[k])
        fields = {}
        if changed:
            a, b = old.split(name), new.split(name)
            for tid in changed:
                was, now = a.get(tid), b.get(tid)
                assert was is not None and now is not None
                fields[tid] = field_changes(was, now)
        out[name] = SplitDiff(
            added=sorted(after.keys() - before.keys()),
            removed=sorted(before.keys() - after.keys()),
            changed=changed,
            fields=fields,
        )
    return out


def field_changes(old: Task, new: Task) -> list[FieldChange]:
    """The leaves that differ between two tasks' content (files by path, compared by hash)."""
    found: list[FieldChange] = []
    _walk(_content(old), _content(new), "", found)
    return found


def _content(task: Task) -> dict[str, Any]:
    content = task.canonical()
    content["files"] = {
        "/".join(filter(None, (f["step"], f["role"], f["path"]))): {
            "mode": f["mode"],
            "sha256": f["sha256"],
            "size": f["size"],
        }
        for f in content["files"]
    }
    return content


def _walk(old: Any, new: Any, path: str, found: list[FieldChange]) -> None:
    if old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(old.keys() | new.keys(), key=str):
            _walk(old.get(key), new.get(key), f"{path}.{key}" if path else str(key), found)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            _walk(a, b, f"{path}.{i}", found)
    else:
        found.append(FieldChange(path, old, new))
