"""TRL (Hugging Face's trainers): JSON Lines that `datasets.load_dataset("json", ...)` reads as
TRL's conversational datasets: `prompt` (the task's messages, `{role, content}` only: no null
keys), `completion` (the reference solution as the assistant's message, where the task has
one: what `SFTTrainer` trains on; `GRPOTrainer` reads `prompt` only), `id`, `answer`, and
`taskpack_reward` (JSON text), which the reward function written beside the files
(`taskpack_trl_reward.py`, with `taskpack_grade.py`) reads to score each completion by the
task's own verifier. Write-only: TRL keeps no format of its own to read back from.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from taskpack.base.fs import write_atomic
from taskpack.converters._chat import text_messages
from taskpack.converters._format import Format, Target
from taskpack.converters._rows import Hints, native_rows
from taskpack.converters._verifier import reply_fields, solve_reference
from taskpack.model import Task
from taskpack.rewards import shipped

HOOK = "taskpack_trl_reward.py"


def to_row(task: Task, hints: Hints, target: Target) -> dict[str, Any]:
    row: dict[str, Any] = {"id": task.id, "prompt": text_messages(task, target.losses)}
    reference = solve_reference(task)
    if reference is not None:
        row["completion"] = [{"role": "assistant", "content": reference}]
    if task.answer is not None:
        row["answer"] = task.answer if isinstance(task.answer, str) else json.dumps(task.answer)
    fields = reply_fields(task)
    if fields is None and task.reward is not None:
        target.losses.lost(
            f"reward kind {task.reward.kind!r} (taskpack's TRL reward function does not score "
            "it: its rows get no reward)",
            task,
        )
    row["taskpack_reward"] = json.dumps(fields, ensure_ascii=False) if fields else ""
    return row


def write(tasks: Iterable[Task], out: Path, split: str, target: Target) -> list[Path]:
    path = out / f"{split}.jsonl"
    scored: list[bool] = []

    def noted(tasks: Iterable[Task]) -> Iterator[Task]:
        for task in tasks:
            if not scored and reply_fields(task) is not None:
                scored.append(True)
            yield task

    with path.open("w", encoding="utf-8") as f:
        for row, _ in native_rows(FORMAT, noted(tasks), to_row, target):
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    if not scored:
        return [path]
    for name, module in ((HOOK, "trl_hook"), ("taskpack_grade.py", "grader")):
        write_atomic(out / name, shipped(module))
    return [path, out / HOOK, out / "taskpack_grade.py"]


_CARRIES = frozenset({"prompt", "answer", "reward", "solution"})


def carried(task: Task) -> frozenset[str]:
    """A unit-test task's tests ride in its `taskpack_reward`; other files have no place."""
    tests_only = all(f.role == "tests" for f in task.files)
    return _CARRIES | {"files"} if tests_only and reply_fields(task) is not None else _CARRIES


FORMAT = Format(
    name="trl",
    summary="TRL conversational JSON Lines (prompt, completion) and a reward function for them.",
    write=write,
    carries=carried,
)
