"""Harbor task folders: task.toml + instruction.md + environment/ + tests/test.sh (+ solution/).

instruction.md -> prompt; every file -> a task file with its mode (the folder is rebuilt exactly
by materializing the task); tests/test.sh -> a test_command reward; environment/Dockerfile and
task.toml's [environment] (build timeout, cpus, memory, storage) -> environment; [verifier] and
[agent] timeouts -> environment.test_timeout_sec and limits.timeout_sec; solution/solve.sh ->
solution; task.toml's tables -> metadata.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from taskpack.converters._folders import (
    INDEX,
    payload_files,
    place_files,
    read_index,
    test_paths,
    write_file,
    write_split,
)
from taskpack.converters._payload import last_user_text
from taskpack.converters._source import Record, RowError, folder_files, read_folders, text_file
from taskpack.model import SweTests, Task, TestCommand, UnitTests

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
    if (folder / PAYLOAD_FILE).is_file():  # written by taskpack: the whole task
        return payload_files(folder, json.loads((folder / PAYLOAD_FILE).read_text("utf-8")))
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
    if (Path(uri) / INDEX).is_file():  # a split written by taskpack: its order
        entries = read_index(Path(uri))
        for n, entry in enumerate(entries):
            folder = Path(uri) / entry["folder"]
            try:
                yield Record(str(folder), task=convert(entry["id"], folder), line=n + 1)
            except (RowError, OSError, ValueError, KeyError) as e:
                yield Record(str(folder), error=str(e), line=n + 1)
        return
    yield from read_folders(uri, MARKER, convert)


# --- writing -------------------------------------------------------------------------------
# A Harbor task per task: instruction.md, task.toml, environment/ (the task's files as the
# build context, with its Dockerfile or one made from its image), tests/test.sh written for
# the reward kind (it writes /logs/verifier/reward.txt), solution/solve.sh when a reference
# solution exists. The whole task is kept in tests/taskpack.json (the verifier's side, never
# the agent's), so reading back is exact.

PAYLOAD_FILE = "tests/taskpack.json"
DEFAULT_IMAGE = "python:3.12-slim"

_ANSWER_TEST = """#!/bin/bash
# Compare /app/answer.txt with the reference answer ({kind}).
mkdir -p /logs/verifier
expected={expected}
actual="$(tr -d '[:space:]' < /app/answer.txt 2>/dev/null)"
reward=0
[ "$actual" = "$expected" ] && reward=1
echo $reward > /logs/verifier/reward.txt
"""
_COMMAND_TEST = """#!/bin/bash
# Run the task's own check and record pass (1) or fail (0).
mkdir -p /logs/verifier
reward=0
(cd /app && {command}) && reward=1
echo $reward > /logs/verifier/reward.txt
"""


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _test_script(task: Task, losses: Any) -> str:
    reward = task.reward
    if isinstance(reward, TestCommand):
        return _COMMAND_TEST.format(command=reward.command)
    if isinstance(reward, UnitTests) and reward.language == "python":
        name = reward.test_file.rsplit("/", 1)[-1]
        check = (
            f'python3 -c \'import runpy, sys; sys.path.insert(0, "/app"); '
            f'import solution; ns = runpy.run_path("/tests/{name}"); '
            f'ns["check"](getattr(solution, "{reward.entry_point}"))\''
        )
        return _COMMAND_TEST.format(command=check)
    if isinstance(reward, SweTests):
        tests = " ".join(_shell_quote(t) for t in reward.fail_to_pass + reward.pass_to_pass)
        patch = "git apply /tests/test.patch && " if reward.test_patch else ""
        return _COMMAND_TEST.format(command=f"{patch}python3 -m pytest {tests}")
    if task.answer is not None:
        expected = _shell_quote("".join(task.answer.split()))
        return _ANSWER_TEST.format(kind=reward.kind if reward else "exact", expected=expected)
    losses.lost("reward (no check Harbor can run)", task)
    return _COMMAND_TEST.format(command="false")


def _toml_value(value: Any) -> Any:
    """TOML has no null: drop None (reported by the caller), keep the rest."""
    if isinstance(value, dict):
        return {k: _toml_value(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_toml_value(v) for v in value if v is not None]
    return value


def _toml_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return json.dumps(value, ensure_ascii=False)  # JSON strings and numbers are TOML too
    if isinstance(value, list):
        return "[" + ", ".join(_toml_literal(v) for v in value) + "]"
    items = ", ".join(f"{json.dumps(k)} = {_toml_literal(v)}" for k, v in value.items())
    return "{ " + items + " }" if items else "{}"


def _toml(config: dict[str, Any]) -> str:
    lines = [f"{k} = {_toml_literal(v)}" for k, v in config.items() if not isinstance(v, dict)]
    for table, values in config.items():
        if isinstance(values, dict):
            lines.append(f"\n[{table}]")
            lines.extend(f"{json.dumps(k)} = {_toml_literal(v)}" for k, v in values.items())
    return "\n".join(lines) + "\n"


def _solve_script(task: Task, target: str) -> str:
    assert task.solution is not None
    if task.solution.startswith("#!"):
        return task.solution
    return f"#!/bin/bash\ncat > {target} <<'TASKPACK_EOF'\n{task.solution}\nTASKPACK_EOF\n"


def _task_toml(task: Task) -> str:
    env, limits = task.environment, task.limits
    config: dict[str, Any] = {
        "version": "1.0",
        # The verifier runs in a fresh container (never the agent's) and sees the agent's /app.
        "artifacts": ["/app"],
        "metadata": _toml_value({"taskpack_id": task.id, **task.metadata}),
        "verifier": {
            "timeout_sec": float((env.test_timeout_sec if env else None) or 600.0),
            "environment_mode": "separate",
        },
        "agent": {"timeout_sec": float((limits.timeout_sec if limits else None) or 600.0)},
    }
    resources = {k: getattr(env, k) for k in _ENV_FIELDS if env and getattr(env, k) is not None}
    if resources:
        config["environment"] = resources
    return _toml(config)


def _write_task(task: Task, folder: Path, losses: Any) -> None:
    reward = task.reward
    tests = test_paths(task)
    payload = place_files(
        task,
        folder,
        lambda path: f"tests/{path.rsplit('/', 1)[-1]}" if path in tests else f"environment/{path}",
    )
    if not (folder / "environment" / "Dockerfile").is_file():
        image = (task.environment.image if task.environment else None) or DEFAULT_IMAGE
        has_files = any(f["stored_as"].startswith("environment/") for f in payload["files"])
        body = f"FROM {image}\nWORKDIR /app\n" + ("COPY . /app/\n" if has_files else "")
        write_file(folder / "environment" / "Dockerfile", body.encode())
    instruction = last_user_text(task)
    if task.answer is not None and not isinstance(reward, (UnitTests, SweTests)):
        instruction += "\n\nWrite your final answer to /app/answer.txt."
    write_file(folder / "instruction.md", instruction.encode("utf-8"))
    write_file(folder / "tests" / "test.sh", _test_script(task, losses).encode(), 0o755)
    write_file(folder / PAYLOAD_FILE, json.dumps(payload, ensure_ascii=False).encode("utf-8"))
    if task.solution is not None:
        target = "/app/solution.py" if isinstance(reward, UnitTests) else "/app/answer.txt"
        write_file(folder / "solution" / "solve.sh", _solve_script(task, target).encode(), 0o755)
    write_file(folder / MARKER, _task_toml(task).encode("utf-8"))


def write(tasks: Iterable[Task], out: Path, split: str, losses: Any) -> list[Path]:
    return write_split(tasks, out, split, lambda task, folder: _write_task(task, folder, losses))
