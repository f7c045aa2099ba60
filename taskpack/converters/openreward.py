"""OpenReward (SETA-style) task folders: `<split>/<task>/task.yaml` (instruction and metadata),
`tests/` with the test files, `weights.json` (test name -> weight, summing to 1.0), the task's
other files beside them, and `<split>/index.json` listing the tasks in order.

`weights.json` comes from the reward: weighted tests as given (normalized), a unit-test file or
each FAIL_TO_PASS test equally, else one `reward` entry. task.yaml also keeps the whole task
(`taskpack:`, file contents excepted, with where each file went), so reading back is exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from taskpack.converters._folders import (
    payload_files,
    place_files,
    read_index,
    test_paths,
    write_file,
    write_split,
)
from taskpack.converters._payload import PAYLOAD_KEY, Losses, last_user_text
from taskpack.converters._source import Record, RowError
from taskpack.model import SweTests, Task, UnitTests, WeightedTests

RESERVED = {"task.yaml", "weights.json"}


def weights(task: Task) -> dict[str, float]:
    reward = task.reward
    if isinstance(reward, WeightedTests):
        raw = dict(reward.weights)
    elif isinstance(reward, UnitTests):
        raw = {reward.test_file: 1.0}
    elif isinstance(reward, SweTests) and reward.fail_to_pass:
        raw = dict.fromkeys(reward.fail_to_pass, 1.0)
    else:
        raw = {"reward": 1.0}
    total = sum(raw.values())
    return {name: value / total for name, value in raw.items()}


def _stored_path(path: str, tests: set[str]) -> str:
    """Test files go under tests/; others keep their path unless it clashes with ours."""
    if path in tests and not path.startswith("tests/"):
        return f"tests/{path.rsplit('/', 1)[-1]}"
    if path in RESERVED or (path.startswith("tests/") and path not in tests):
        return f"files/{path}"
    return path


def _write_task(task: Task, folder: Path) -> None:
    tests = test_paths(task)
    config = {
        "id": task.id,
        "instruction": last_user_text(task),
        "metadata": task.metadata,
        PAYLOAD_KEY: place_files(task, folder, lambda path: _stored_path(path, tests)),
    }
    (folder / "task.yaml").write_text(
        yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8"
    )
    write_file(folder / "weights.json", _json(weights(task)))


def write(tasks: Iterable[Task], out: Path, split: str, losses: Losses) -> list[Path]:
    return write_split(tasks, out, split, _write_task)


def _json(value: Any) -> bytes:
    import json

    return (json.dumps(value, indent=2) + "\n").encode()


def read(uri: str, split: str) -> Iterator[Record]:
    split_dir = Path(uri)
    for n, entry in enumerate(read_index(split_dir)):
        folder = split_dir / entry["folder"]
        where = str(folder)
        try:
            config = yaml.safe_load((folder / "task.yaml").read_text(encoding="utf-8"))
            if not isinstance(config, dict):
                raise RowError("task.yaml: expected a mapping")
            yield Record(where, task=_task(folder, entry, config), line=n + 1)
        except (RowError, OSError, yaml.YAMLError, KeyError) as e:
            yield Record(where, error=str(e), line=n + 1)


def _task(folder: Path, entry: dict[str, str], config: dict[str, Any]) -> dict[str, Any]:
    payload = config.get(PAYLOAD_KEY)
    if isinstance(payload, dict):  # written by taskpack: the whole task
        return payload_files(folder, payload)
    # A SETA folder from elsewhere: its instruction, files and weights.
    files = [
        {
            "path": p.relative_to(folder).as_posix(),
            "data": p.read_bytes(),
            "mode": p.stat().st_mode & 0o777,
        }
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.relative_to(folder).as_posix() not in RESERVED
    ]
    weights_path = folder / "weights.json"
    reward = None
    if weights_path.is_file():
        import json

        reward = {"kind": "weighted_tests", "weights": json.loads(weights_path.read_text())}
    return {
        "id": str(config.get("id") or entry["id"]),
        "prompt": config.get("instruction"),
        "files": files,
        "reward": reward,
        "metadata": config.get("metadata") or {},
    }
