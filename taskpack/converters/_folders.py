"""Writing one folder per task, shared by the folder formats (OpenReward, Harbor).

Task ids become folder names (`HumanEval/0` -> `HumanEval__0`, kept unique), and a split index
lists them with their ids, so readers find the tasks in order.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from taskpack.model import Task

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


def task_files(task: Task) -> dict[str, tuple[bytes, int]]:
    return {f.path: (f.read_bytes(), f.mode) for f in task.files}
