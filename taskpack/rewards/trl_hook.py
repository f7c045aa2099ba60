"""taskpack's reward function for TRL, written by taskpack's `trl` writer beside the JSON
Lines it exports, as `taskpack_trl_reward.py` (with `taskpack_grade.py`, taskpack's grader):

    import sys; sys.path.insert(0, EXPORT_DIR)
    from taskpack_trl_reward import taskpack_reward
    trainer = GRPOTrainer(model, reward_funcs=[taskpack_reward], train_dataset=dataset, ...)

TRL hands a reward function every dataset column by name: each row's `taskpack_reward` (JSON
text: its reward spec, reference answer, and a unit-test task's tests and prompt) says how its
completion is scored, by taskpack's reader and grader (reasoning dropped, the fenced block
defining the entry point, the last `\\boxed{}`; code run against the tests in a child process
that only answers their calls). A row taskpack does not score, or a reply nothing could score
(a test's reference overran its own limit: the machine was too slow), gets None, which TRL
reads as "no reward from this function", never a 0. `taskpack.trl.reward_func(split)` scores
the same way, from a split's tasks.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Sequence
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
# beside an export, the grader is `taskpack_grade.py`; in taskpack's own tree, `_grade.py`
_PATH = next(
    p
    for p in (os.path.join(_HERE, "taskpack_grade.py"), os.path.join(_HERE, "grader.py"))
    if os.path.exists(p)
)
_SPEC = importlib.util.spec_from_file_location("taskpack_grade", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
grade = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(grade)


def taskpack_reward(
    completions: Sequence[Any] = (), taskpack_reward: Sequence[Any] = (), **kwargs: Any
) -> list[float | None]:
    """One reward per completion (see the module's doc)."""
    if len(taskpack_reward) != len(completions):
        raise ValueError(
            "taskpack_reward: the dataset needs its `taskpack_reward` column (a taskpack trl "
            "export has it)"
        )
    out: list[float | None] = []
    for completion, held in zip(completions, taskpack_reward, strict=True):
        if not held:
            out.append(None)
            continue
        fields = json.loads(held) if isinstance(held, str) else held
        score = grade.reply_outcome(  # None where nothing could score it: TRL's "no reward"
            fields["reward"],
            fields.get("answer"),
            _text(completion),
            fields.get("tests") or "",
            fields.get("prompt") or "",
        )
        out.append(None if score is None else float(score))
    return out


trl_reward = taskpack_reward  # its name in taskpack's converters' face


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
