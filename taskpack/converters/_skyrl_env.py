"""SkyRL-Gym environments for the reward kinds skyrl-gym does not ship, written by taskpack's
`skyrl` writer beside the Parquet it exports, as `taskpack_skyrl_env.py` (with
`taskpack_grade.py`, taskpack's grader). Importing it registers one environment per reward
kind the grader scores (`exact_match`, `math_match`, `multiple_choice`, `unit_tests`,
`io_tests`; numeric answers are skyrl-gym's own `gsm8k`), named as the rows' `env_class`:

    import sys, skyrl_gym
    sys.path.insert(0, EXPORT_DIR)
    import taskpack_skyrl_env  # registers them
    env = skyrl_gym.make(row["env_class"], extras=row)

Each scores a reply in one step by the task's own reward, read from the row's `extra_info`: an
answer (the last `\\boxed{...}` if there is one, else the whole reply) as the exported grader
compares it, or Python code (the last fenced block) run against the task's tests in a child
process that only answers their calls (`taskpack_grade.unit_test_score`), or a program run on
each test's input (`taskpack_grade.io_test_score`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import skyrl_gym
import taskpack_grade as grade  # type: ignore[import-not-found]
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput


class TaskpackEnv(BaseTextEnv):  # type: ignore[misc]
    """One task: its reward spec and tests from `extra_info`, its reference answer from
    `reward_spec.ground_truth`; one reply, scored, and the episode is done."""

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
        super().__init__()
        extras = extras or {}
        info = extras.get("extra_info") or {}
        # Parquet gives each row every field of its column's struct: another kind's are null
        reward = {k: v for k, v in (info.get("reward") or {}).items() if v is not None}
        self.reward = reward or {"kind": "exact_match"}
        self.tests = info.get("tests") or ""
        self.answer = (extras.get("reward_spec") or {}).get("ground_truth")

    def step(self, action: str) -> Any:
        score = float(grade.reply_score(self.reward, self.answer, action, self.tests))
        return BaseTextEnvStepOutput(observations=[], reward=score, done=True, metadata={})


for _kind in (*grade.ANSWER_KINDS, "unit_tests", "io_tests"):
    if _kind not in skyrl_gym.registry:
        skyrl_gym.register(id=_kind, entry_point=TaskpackEnv)
