"""TRL's reward hook: `reward_func(split)` is a `reward_funcs` entry for TRL's `GRPOTrainer`
that scores each completion by its task's own verifier, as every other grader taskpack ships
scores it (the reply read by the field's rule: reasoning dropped, the fenced block defining the
entry point, the last `\\boxed{}` or `Answer:` line; code run against the task's tests in a child
process that only answers their calls).

    from trl import GRPOConfig, GRPOTrainer
    split = taskpack.load("humaneval@1", split="test")
    trainer = GRPOTrainer(model, reward_funcs=[taskpack.trl.reward_func(split)],
                          train_dataset=split.to_hf(typed=True), args=GRPOConfig(...))

The dataset's `id` column names each completion's task (TRL hands every column to a reward
function). A task taskpack's grader does not score gets None, which TRL reads as "no reward
from this function", never a 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from taskpack.errors import TaskpackError
from taskpack.storage.taskset import Split

Reward = Callable[..., list["float | None"]]


def reward_func(split: Split) -> Reward:
    """A reward function for TRL's `GRPOTrainer` over the tasks of `split` (see the module's
    doc): the one a `trl` export ships, each row's reward read from its task (once per task)
    instead of the export's `taskpack_reward` column."""
    import json

    from taskpack.converters import reply_fields
    from taskpack.rewards.trl_hook import trl_reward

    held: dict[str, str] = {}

    def fields(task_id: str) -> str:
        if task_id not in held:
            task = split.get(task_id)
            if task is None:
                raise TaskpackError(f"taskpack_reward: no task {task_id!r} in split {split.name!r}")
            found = reply_fields(task)
            held[task_id] = json.dumps(found) if found is not None else ""
        return held[task_id]

    def taskpack_reward(
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] = (),
        id: Sequence[Any] = (),
        **kwargs: Any,
    ) -> list[float | None]:
        if len(id) != len(completions):
            raise TaskpackError(
                "taskpack_reward: the dataset needs an `id` column naming each row's task "
                "(split.to_hf() has one)"
            )
        return trl_reward(completions, [fields(str(i)) for i in id])

    return taskpack_reward
