"""taskpack's reward function for verl, written by taskpack's `verl` writer beside the Parquet
it exports, as `taskpack_reward.py` (with `taskpack_grade.py`, taskpack's grader), and named in
the export's `verl_data.yaml` as verl 0.9 reads it:

    reward:
      custom_reward_function: {path: EXPORT/taskpack_reward.py, name: compute_score}

verl calls `compute_score(data_source, solution_str, ground_truth, extra_info)` for every
response. A row whose reward verl's own `default_compute_score` lacks (unit tests, multiple
choice, exact text) carries its reward spec, tests and prompt in `extra_info.taskpack_reward`
(JSON text): the reply is read and scored by taskpack's rule and grader, code run against the
tests in a child process that only answers their calls. Every other row goes to
`default_compute_score`, as verl would have scored it. verl has no "no reward": a reply that
cannot be scored (a grader out of time) scores 0.0 here.
"""

from __future__ import annotations

import importlib.util
import json
import os
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
_SPEC = importlib.util.spec_from_file_location(
    "taskpack_grade", os.path.join(_HERE, "taskpack_grade.py")
)
assert _SPEC is not None and _SPEC.loader is not None
grade = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(grade)


def compute_score(
    data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None, **kwargs: Any
) -> float:
    held = (extra_info or {}).get("taskpack_reward") if isinstance(extra_info, dict) else None
    if isinstance(held, str) and held:
        fields = json.loads(held)
        return float(
            grade.reply_score(
                fields["reward"],
                fields.get("answer"),
                solution_str,
                fields.get("tests") or "",
                fields.get("prompt") or "",
            )
        )
    from verl.utils.reward_score import default_compute_score

    score = default_compute_score(data_source, solution_str, ground_truth, extra_info, **kwargs)
    return score  # type: ignore[no-any-return]
