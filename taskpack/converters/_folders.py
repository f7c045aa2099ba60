"""Writing one folder per task, shared by the folder formats (OpenReward, Harbor).

Task ids become folder names (`HumanEval/0` -> `HumanEval__0`, kept unique), and a split index
lists them with their ids, so readers find the tasks in order.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from taskpack.model import SweTests, Task, UnitTests

INDEX = "index.json"


def folder_name(task_id: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "__", task_id).strip(".") or "task"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name)
    return name


def write_file(path: Path, data: bytes, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.chmod(path, mode)


def write_index(split_dir: Path, entries: list[dict[str, str]]) -> Path:
    path = split_dir / INDEX
    path.write_text(json.dumps({"tasks": entries}, indent=2, ensure_ascii=False) + "\n")
    return path


def read_index(split_dir: Path) -> list[dict[str, str]]:
    return list(json.loads((split_dir / INDEX).read_text(encoding="utf-8"))["tasks"])


def test_paths(task: Task) -> set[str]:
    """The task files its reward runs as tests (a unit-test file, a SWE-bench test patch)."""
    reward = task.reward
    if isinstance(reward, UnitTests):
        return {reward.test_file}
    if isinstance(reward, SweTests) and reward.test_patch:
        return {reward.test_patch}
    return set()


def place_files(task: Task, folder: Path, where: Callable[[str], str]) -> dict[str, Any]:
    """Write the task's files at `where(path)` inside `folder`; the task's payload (every
    field, file contents excepted) with each file's `stored_as`, for exact reading back."""
    payload = task.model_dump(mode="json", exclude={"files"})
    payload["files"] = []
    used: set[str] = set()
    for f in task.files:
        stored = where(f.path)
        if stored in used:  # two paths mapped onto one: keep the second under files/
            stored = f"files/{f.path}"
        used.add(stored)
        write_file(folder / stored, f.read_bytes(), f.mode)
        payload["files"].append({"path": f.path, "mode": f.mode, "stored_as": stored})
    return payload


def payload_files(folder: Path, payload: dict[str, Any]) -> dict[str, Any]:
    """The task mapping a folder's payload describes, file contents read back from the folder."""
    task = dict(payload)
    task["files"] = [
        {"path": f["path"], "mode": f["mode"], "data": (folder / f["stored_as"]).read_bytes()}
        for f in payload["files"]
    ]
    return task


def write_split(
    tasks: Iterable[Task], out: Path, split: str, write_task: Callable[[Task, Path], None]
) -> list[Path]:
    """One folder per task under `out/split`, then the split index."""
    split_dir = out / split
    taken: set[str] = set()
    entries = []
    for task in tasks:
        folder = split_dir / folder_name(task.id, taken)
        folder.mkdir(parents=True)
        write_task(task, folder)
        entries.append({"id": task.id, "folder": folder.name})
    return [write_index(split_dir, entries)]
