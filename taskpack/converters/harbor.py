"""Harbor task folders: task.toml + instruction.md + environment/ + tests/test.sh (+ solution/).

instruction.md -> prompt; every file -> a task file with its mode (the folder is rebuilt exactly
by materializing the task); tests/test.sh -> a test_command reward; environment/Dockerfile and
task.toml's [environment] (build timeout, cpus, memory, storage) -> environment; [verifier] and
[agent] timeouts -> environment.test_timeout_sec and limits.timeout_sec; solution/solve.sh ->
solution; task.toml's tables -> metadata.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from taskpack.converters._source import Record, RowError, folder_files, read_folders, text_file

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

MARKER = "task.toml"
_ENV_FIELDS = ("build_timeout_sec", "cpus", "memory_mb", "storage_mb", "gpus")


def _table(config: dict[str, Any], name: str) -> dict[str, Any]:
    value = config.get(name, {})
    if not isinstance(value, dict):
        raise RowError(f"{MARKER}: [{name}] must be a table")
    return value


def convert(task_id: str, folder: Path) -> dict[str, Any]:
    try:
        config = tomllib.loads(text_file(folder, MARKER) or "")
    except tomllib.TOMLDecodeError as e:
        raise RowError(f"{MARKER}: not valid TOML ({e})") from None
    instruction = text_file(folder, "instruction.md")
    if instruction is None:
        raise RowError("instruction.md: missing")
    env = _table(config, "environment")
    dockerfile = "environment/Dockerfile"
    return {
        "id": task_id,
        "prompt": instruction,
        "solution": text_file(folder, "solution/solve.sh"),
        "reward": {"kind": "test_command", "command": "bash tests/test.sh"},
        "files": folder_files(folder),
        "environment": {
            "dockerfile": dockerfile if (folder / dockerfile).is_file() else None,
            "image": env.get("docker_image"),
            "test_timeout_sec": _table(config, "verifier").get("timeout_sec"),
            **{k: env[k] for k in _ENV_FIELDS if k in env},
        },
        "limits": {"timeout_sec": _table(config, "agent").get("timeout_sec")},
        "source": {"format": "harbor"},
        "metadata": config,
    }


def read(uri: str, split: str) -> Iterator[Record]:
    return read_folders(uri, MARKER, convert)
