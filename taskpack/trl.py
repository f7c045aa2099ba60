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
    doc). What a task is scored by is read once per task, when it is first asked for."""
    from taskpack.converters import reply_fields, reply_score

    held: dict[str, dict[str, Any] | None] = {}

    def fields(task_id: str) -> dict[str, Any] | None:
        if task_id not in held:
            task = split.get(task_id)
            if task is None:
                raise TaskpackError(f"taskpack_reward: no task {task_id!r} in split {split.name!r}")
            held[task_id] = reply_fields(task)
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
        out: list[float | None] = []
        for completion, task_id in zip(completions, id, strict=True):
            held_fields = fields(str(task_id))
            if held_fields is None:
                out.append(None)
                continue
            out.append(
                float(
                    reply_score(
                        held_fields["reward"],
                        held_fields.get("answer"),
                        _text(completion),
                        held_fields.get("tests") or "",
                        held_fields.get("prompt") or "",
                    )
                )
            )
        return out

    return taskpack_reward


def _text(completion: Any) -> str:
    """A completion as TRL hands it: text, or (conversational) the assistant's messages."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(
            str(m.get("content") or "")
            for m in completion
            if isinstance(m, dict) and m.get("role", "assistant") == "assistant"
        )
    return str(completion)
