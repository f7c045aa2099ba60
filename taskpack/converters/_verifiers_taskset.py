"""A Verifiers taskset (verifiers 0.4, `verifiers.v1`) of tasks exported by taskpack, written
by its `verifiers` writer as the `__init__.py` of an installable package, beside the tasks
(`data/<split>.jsonl`) and taskpack's grader (`taskpack_grade.py`):

    pip install EXPORT_DIR
    from verifiers.v1 import TasksetConfig
    from verifiers.v1.utils.loaders import load_taskset
    taskset = load_taskset(TasksetConfig(id="PACKAGE"))

`load()` yields one task per line of one split's file: the config's `split`
(`TaskpackConfig(id=..., split="train")`, `--env.taskset.split train`), else `test` or,
failing that, the first of validation, eval, train and the rest by name (and of a mixture's,
the config's `source` only). The tasks come from
the package's own files, so a training node needs neither taskpack nor a registry, and the
tasks are exactly the ones exported. Each task scores its reply by the reward kind it
declares (exact, numeric, math and multiple-choice answers; Python unit tests run against the
task's tests in a child process), with taskpack's grader; `validate` checks that the
reference scores 1.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Iterator
from importlib import resources
from typing import Any

import pydantic
import verifiers.v1 as vf

# taskpack's grader, copied in beside this file (named at run time: in taskpack's own tree this
# module is a template, and the grader there has another name).
grade = importlib.import_module(f"{__name__}.taskpack_grade")

__all__ = ["TaskpackTaskset"]

PREFERRED = ("test", "validation", "eval", "train")


class TaskpackData(vf.TaskData):  # type: ignore[misc]  # verifiers is untyped here
    answer: Any = None
    """The reference answer (any JSON value)."""
    reward: dict[str, Any] | None = None
    """taskpack's reward spec: `kind` and its settings."""
    tests: str | None = None
    """A unit-test task's test code."""
    reference: str | None = None
    """What a correct reply holds: the answer, or the reference code in a fenced block."""
    solution: str | None = None
    """The task's reference solution as its source gave it (a worked answer, a code body)."""
    metadata: dict[str, Any] = pydantic.Field(default_factory=dict)
    """The source's own fields, verbatim."""


class TaskpackTask(vf.Task[TaskpackData]):  # type: ignore[misc]
    @property
    def key(self) -> str:
        """The task's id (its source's, unique in its split and the same in every export):
        what prime-rl's curriculum keeps a task's pass rate by; the content hash without."""
        return str(self.data.id) if self.data.id is not None else str(super().key)

    @vf.reward  # type: ignore[untyped-decorator]
    async def correct(self, trace: Any) -> float:
        # Unit tests run the code in a child process: off the event loop.
        return await asyncio.to_thread(score, self.data, trace.last_reply)

    async def validate(self, runtime: Any) -> bool | None:
        """Whether the reference reply scores 1 (None where the task has none)."""
        if self.data.reference is None:
            return None
        return await asyncio.to_thread(score, self.data, self.data.reference) == 1.0


def score(data: TaskpackData, reply: str) -> float:
    reward = data.reward or {"kind": "exact_match"}
    return float(grade.reply_score(reward, data.answer, reply, data.tests or ""))


class TaskpackConfig(vf.TasksetConfig):  # type: ignore[misc]
    split: str | None = None
    """The split to load (`--env.taskset.split train`); unset: `default_split()`."""
    source: str | None = None
    """Of a mixture's split, only the tasks of this source (ids `SOURCE/...`): one trainer
    environment per source, weighted as the mixture was (its `prime_rl.toml`)."""


class TaskpackTaskset(vf.Taskset[TaskpackTask, TaskpackConfig]):  # type: ignore[misc]
    def load(self) -> Iterator[TaskpackTask]:
        split = getattr(self.config, "split", None) or default_split()
        source = getattr(self.config, "source", None)
        with resources.files(__name__).joinpath("data").joinpath(f"{split}.jsonl").open("rb") as f:
            for line in f:
                data = TaskpackData(**json.loads(line))
                if source is None or str(data.id).startswith(f"{source}/"):
                    yield TaskpackTask(data, self.config.task)


def splits() -> list[str]:
    found = resources.files(__name__).joinpath("data").iterdir()
    return sorted(p.name[: -len(".jsonl")] for p in found if p.name.endswith(".jsonl"))


def default_split() -> str:
    names = splits()
    if not names:
        raise ValueError(f"{__name__}: no tasks in data/")
    return next((n for n in PREFERRED if n in names), names[0])
