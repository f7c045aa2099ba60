"""A Verifiers environment over the datasets exported beside this file, written by taskpack's
`verifiers` writer as `taskpack_env.py` (with `taskpack_grade.py`, taskpack's grader):

    import sys, verifiers as vf
    sys.path.insert(0, EXPORT_DIR)
    env = vf.load_environment("taskpack_env")

`load_environment` returns a `vf.SingleTurnEnv` over the exported splits whose rubric scores
each completion by its task's own reward kind, read from the row's `info`: exact, numeric and
multiple-choice answers (the last `\\boxed{...}` if there is one, else the whole reply), and
Python unit tests (the last fenced code block, run against the task's tests in a child
process). A reward kind it cannot score gives 0.0 and was reported lost at export.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import taskpack_grade as grade  # type: ignore[import-not-found]  # noqa: E402


def _reply(completion: Any) -> str:
    if isinstance(completion, str):
        return completion
    message = completion[-1] if completion else {}
    # Messages are dicts or, in verifiers' own types, objects with a `content`.
    content = message.get("content", "") if isinstance(message, dict) else message.content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content or "")


def score(completion: Any, answer: Any, info: Any = None, **kwargs: Any) -> float:
    """The reward of one completion, by the kind its task declares."""
    spec = json.loads(info) if isinstance(info, str) and info else (info or {})
    reward = spec.get("reward") or {"kind": "exact_match"}
    return float(grade.reply_score(reward, answer, _reply(completion), spec.get("tests", "")))


def load_environment(train_split: str = "train", eval_split: str = "test", **kwargs: Any) -> Any:
    import verifiers as vf
    from datasets import load_from_disk

    splits = {p.name: p for p in HERE.iterdir() if (p / "dataset_info.json").is_file()}
    if not splits:
        raise ValueError(f"no exported datasets beside {__file__}")
    train = splits.get(train_split) or next(iter(splits.values()))
    evaluation = splits.get(eval_split)
    return vf.SingleTurnEnv(
        dataset=load_from_disk(str(train)),
        eval_dataset=load_from_disk(str(evaluation)) if evaluation else None,
        rubric=vf.Rubric(funcs=[score]),
        **kwargs,
    )
