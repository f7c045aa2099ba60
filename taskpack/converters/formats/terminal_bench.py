"""Terminal-Bench task folders: task.yaml (+ Dockerfile, docker-compose.yaml, run-tests.sh,
solution.sh, tests/, and the files the Dockerfile copies).

task.yaml's `instruction` (or the older `descriptions:` list, its `base` entry) -> prompt;
its timeouts -> environment and limits, its other fields -> metadata. Files take the roles
Harbor's own Terminal-Bench mapper gives them: tests/ -> tests, run-tests.sh -> the tests'
entry script `test.sh`, solution.sh -> the solution's `solve.sh`, the Dockerfile and every
other file -> the environment (the build context). task.yaml and docker-compose.yaml are kept
as `other` files, so the source folder can be rebuilt byte for byte (`source_files`).
Missing optional files (Dockerfile, run-tests.sh, solution.sh) are tolerated.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from taskpack.converters._folders import file_entry, read_folders, read_text, walk
from taskpack.converters._format import Format, Options
from taskpack.converters._sources.records import Record, RowError
from taskpack.converters._yaml import load_yaml
from taskpack.layouts import TERMINAL_BENCH_MARKER, TERMINAL_BENCH_SPECIAL, terminal_bench_place
from taskpack.model import Task

MARKER = TERMINAL_BENCH_MARKER
SPECIAL = TERMINAL_BENCH_SPECIAL
place = terminal_bench_place  # role and path of a file of the folder (`taskpack.layouts`)


def source_path(role: str, path: str) -> str:
    """Where a file of a Terminal-Bench task lives in its source folder: `place` inverted."""
    for rel, placed in SPECIAL.items():
        if placed == (role, path):
            return rel
    return f"tests/{path}" if role == "tests" else path


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


def convert(task_id: str, folder: Path) -> dict[str, Any]:
    config = load_yaml(read_text(folder, MARKER) or "", MARKER)
    if not isinstance(config, dict):
        raise RowError(f"{MARKER}: expected a mapping")
    files = [file_entry(path, mode, place(rel)) for rel, path, mode in walk(folder)]
    has = {(f["role"], f["path"]) for f in files}
    return {
        "id": task_id,
        "prompt": _instruction(config),
        "reward": {
            "kind": "test_command",
            # Terminal-Bench's default harness when a task brings no script.
            "command": "bash /tests/test.sh" if ("tests", "test.sh") in has else "pytest /tests",
            "parser": config.get("parser_name"),
        },
        "files": files,
        "environment": {
            "dockerfile": "Dockerfile" if ("environment", "Dockerfile") in has else None,
            "test_timeout_sec": config.get("max_test_timeout_sec"),
        },
        "limits": {"timeout_sec": config.get("max_agent_timeout_sec")},
        "source": {"format": "terminal-bench"},
        "metadata": {k: v for k, v in config.items() if k not in ("instruction", "descriptions")},
    }


def source_files(task: Task) -> dict[str, tuple[bytes, int]]:
    """The source folder's files (path -> bytes, mode) a task read from it holds."""
    return {source_path(f.role, f.path): (f.read_bytes(), f.mode) for f in task.files}


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return read_folders(uri, MARKER, convert)


FORMAT = Format(
    name="terminal-bench",
    summary="Terminal-Bench folders: task.yaml, Dockerfile, run-tests.sh, solution.sh, tests/.",
    read=read,
)
