"""Terminal-Bench task folders: task.yaml (+ Dockerfile, run-tests.sh, solution.sh, tests/).

task.yaml's `instruction` (or the older `descriptions:` list, its `base` entry) -> prompt; every
file of the folder -> a task file with its mode, task.yaml included, so the folder is rebuilt
exactly by materializing the task; run-tests.sh -> a test_command reward with the yaml's parser;
timeouts -> environment and limits; the yaml's other fields -> metadata. Missing optional files
(Dockerfile, run-tests.sh, solution.sh) are tolerated.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from taskpack.converters._source import Record, RowError, folder_files, read_folders, text_file

MARKER = "task.yaml"


def _instruction(config: dict[str, Any]) -> str:
    """The prompt; in the older form `instruction` names an entry of the `descriptions` list."""
    instruction = config.get("instruction")
    descriptions = config.get("descriptions")
    if isinstance(descriptions, list) and descriptions:
        key = instruction if isinstance(instruction, str) else "base"
        chosen = next(
            (d for d in descriptions if isinstance(d, dict) and d.get("key") == key), None
        )
        if chosen is None or not isinstance(chosen.get("description"), str):
            raise RowError(f"{MARKER}: no description with key {key!r} in 'descriptions'")
        return str(chosen["description"])
    if isinstance(instruction, str):
        return instruction
    raise RowError(f"{MARKER}: no 'instruction' (or 'descriptions' list)")


def _config(folder: Path) -> dict[str, Any]:
    try:
        config = yaml.safe_load(text_file(folder, MARKER) or "")
    except yaml.YAMLError as e:
        raise RowError(f"{MARKER}: not valid YAML ({e})") from None
    if not isinstance(config, dict):
        raise RowError(f"{MARKER}: expected a mapping")
    return config


def _test_command(folder: Path) -> str:
    for script in ("run-tests.sh", "tests/run-tests.sh"):
        if (folder / script).is_file():
            return f"bash {script}"
    return "pytest tests"  # Terminal-Bench's default harness when a task brings no script


def convert(task_id: str, folder: Path) -> dict[str, Any]:
    config = _config(folder)
    return {
        "id": task_id,
        "prompt": _instruction(config),
        "solution": text_file(folder, "solution.sh"),
        "reward": {
            "kind": "test_command",
            "command": _test_command(folder),
            "parser": config.get("parser_name"),
        },
        "files": folder_files(folder),
        "environment": {
            "dockerfile": "Dockerfile" if (folder / "Dockerfile").is_file() else None,
            "test_timeout_sec": config.get("max_test_timeout_sec"),
        },
        "limits": {"timeout_sec": config.get("max_agent_timeout_sec")},
        "source": {"format": "terminal-bench"},
        "metadata": {k: v for k, v in config.items() if k not in ("instruction", "descriptions")},
    }


def read(uri: str, split: str) -> Iterator[Record]:
    return read_folders(uri, MARKER, convert)
