"""taskpack's reading of code out of a reply (`grader.extract_code`) against the field's, on the
same HumanEval replies: EvalPlus's own `sanitize` (run in its venv) and open-r1's
`extract_code` (the last ```python block; open-r1 is not on PyPI, so its six-line rule, at
commit 1416fa0 of src/open_r1/rewards.py, is restated here). Codes are compared by what they
score: each one read is graded by the task's own tests, and the verdicts agree but for the reply
forms named, each a choice taskpack makes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from taskpack.importer import read_source
from taskpack.rewards import grader

from .conftest import DATA

pytestmark = [pytest.mark.conformance, pytest.mark.slow]
_OPEN_R1 = re.compile(r"```python\n(.*?)```", re.DOTALL)


def open_r1_code(reply: str) -> str:
    found = _OPEN_R1.findall(reply)
    return found[-1] if found else ""


def forms(prompt: str, body: str, entry: str) -> dict[str, str]:
    """Replies as models write them, each holding the reference solution."""
    whole = prompt + body
    return {
        "fenced": f"```python\n{whole}```",
        "prose around": f"Here is the solution:\n\n```python\n{whole}```\n\nIt loops once.",
        "test block after": f"```python\n{whole}```\nTry it:\n```python\nprint({entry}(1))\n```",
        "think first": f"<think>maybe\n```python\ndef {entry}(*a):\n    return None\n```\n</think>"
        f"\n```python\n{whole}```",
        "py fence": f"```py\n{whole}```",
        "unfenced": f"{whole}\n",
        "body only": body,
        "wrong": f"```python\ndef {entry}(*args):\n    return None\n```",
    }


# How the verdicts part, by reply form: (taskpack, evalplus sanitize, open-r1) rewards.
EXPECTED = {
    "fenced": (1.0, 1.0, 1.0),
    "prose around": (1.0, 1.0, 1.0),
    # open-r1 reads the last python block, the test call
    "test block after": (1.0, 1.0, 0.0),
    # sanitize reads the longest valid run of lines, which ignores <think>; here it is the
    # reference either way
    "think first": (1.0, 1.0, 1.0),
    "py fence": (1.0, 1.0, 0.0),  # open-r1 reads ```python only
    "unfenced": (1.0, 1.0, 0.0),  # open-r1 reads a fence only
    # HumanEval's own convention: a body continuing the prompt's stub, which taskpack joins
    # to the prompt as HumanEval's harness does; sanitize alone sees no function
    "body only": (1.0, 0.0, 0.0),
    "wrong": (0.0, 0.0, 0.0),
}


def test_code_is_read_as_the_field_reads_it_or_the_difference_is_named(tmp_path: Path) -> None:
    from .test_conformance import run_check

    source = DATA / "humaneval" / "HumanEval.jsonl.gz"
    tasks = list(read_source(source, "humaneval", split="test"))[:30]
    cases = []
    for task in tasks:
        reward = task.reward
        tests = task.file(reward.test_file).read_bytes().decode()
        body = str(task.solution)  # HumanEval's canonical body, continuing the prompt
        cases += [(task, tests, how, reply) for how, reply in forms(task.instruction, body,
                  reward.entry_point).items()]  # fmt: skip
    (tmp_path / "replies.json").write_text(
        json.dumps([[reply, t.reward.entry_point] for t, _, _, reply in cases])
    )
    sanitized = run_check("evalplus", "check_evalplus_sanitize.py", str(tmp_path / "replies.json"))
    verdicts: dict[tuple[str, str], float] = {}

    def verdict(task_id: str, spec: dict[str, str], code: str, tests: str) -> float:
        if (task_id, code) not in verdicts:
            verdicts[task_id, code] = grader.unit_test_score(spec, code, tests, str(tmp_path))
        return verdicts[task_id, code]

    parted = {}
    for (task, tests, how, reply), theirs in zip(cases, sanitized["code"], strict=True):
        spec = {"entry_point": task.reward.entry_point, "test_file": task.reward.test_file}
        ours = grader.extract_code(reply, spec["entry_point"], task.instruction)
        got = tuple(
            verdict(task.id, spec, code, tests) for code in (ours, theirs, open_r1_code(reply))
        )
        if got != EXPECTED[how]:
            parted.setdefault(how, []).append((task.id, got))
    assert not parted, parted
