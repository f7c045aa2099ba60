"""Grades one exported task inside its sandbox: `python3 /tests/grade.py`, standard library
only, so it runs in any image with a Python 3.

taskpack copies this file into the `tests/` folder of every task it exports to a folder
format whose reward it can check itself (answers, unit tests), next to `expected.json`: the
reward kind, the reference, and the name each check reports under. It reads the agent's work
from /app (`answer.txt`, `solution.py`) and writes /logs/verifier/reward.txt (the weighted score,
0 to 1) and reward.json (the score and each check's result). Nothing here trusts the agent's
files: any error in them scores 0.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from typing import Any

APP = os.environ.get("TASKPACK_APP", "/app")
TESTS = os.path.dirname(os.path.abspath(__file__))
LOGS = os.environ.get("TASKPACK_LOGS", "/logs/verifier")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|-?\.\d+")


def read_answer() -> str:
    with open(os.path.join(APP, "answer.txt"), encoding="utf-8") as f:
        return f.read()


def as_number(text: str) -> float | None:
    cleaned = text.strip().replace(",", "").replace("$", "").rstrip("%").strip()
    try:
        return float(cleaned)
    except ValueError:
        found = _NUMBER.findall(text)
        return float(found[-1].replace(",", "")) if found else None


def same_number(got: str, expected: Any, tolerance: float) -> bool:
    a, b = as_number(got), as_number(str(expected))
    if a is None or b is None:
        return False
    return abs(a - b) <= max(tolerance, 1e-9 * max(1.0, abs(b)))


def same_text(got: str, expected: Any, spec: dict[str, Any]) -> bool:
    want = expected if isinstance(expected, str) else json.dumps(expected)
    if spec.get("strip", True):
        got, want = got.strip(), want.strip()
    if not spec.get("case_sensitive", True):
        got, want = got.lower(), want.lower()
    return got == want


def same_choice(got: str, expected: Any, labels: list[str]) -> bool:
    match = re.match(r"\s*\(?([A-Za-z0-9]+)\)?(?:[.):]|\s|$)", got)
    return match is not None and match.group(1) == expected and expected in labels


def answer_score(spec: dict[str, Any], got: str) -> float:
    """`got` (the agent's answer) against the reference in `spec`: 1.0 or 0.0."""
    kind, expected = spec["kind"], spec["answer"]
    if kind == "numeric_match":
        ok = same_number(got, expected, spec.get("tolerance", 0.0))
    elif kind == "multiple_choice":
        ok = same_choice(got, expected, spec.get("labels", []))
    else:
        ok = same_text(got, expected, spec)
    return 1.0 if ok else 0.0


_RUN_TESTS = """
import sys
solution_path, test_path, entry_point = sys.argv[1:4]
namespace = {"__name__": "solution"}
exec(compile(open(solution_path, encoding="utf-8").read(), "solution.py", "exec"), namespace)
candidate = namespace[entry_point]
test_code = open(test_path, encoding="utf-8").read()
tests = dict(namespace)
exec(compile(test_code, test_path, "exec"), tests)
if "def check" in test_code:
    tests["check"](candidate)
"""


def unit_test_score(spec: dict[str, Any], solution: str, tests: str, cwd: str) -> float:
    """The code in file `solution` against the test file `tests`: 1.0 if they pass. The code
    runs in a child process, so nothing it does reaches this grader."""
    import subprocess

    args = [sys.executable, "-c", _RUN_TESTS, solution, tests, spec["entry_point"]]
    try:
        done = subprocess.run(
            args, cwd=cwd, timeout=spec.get("timeout_sec", 60), check=False, capture_output=True
        )
    except (OSError, subprocess.TimeoutExpired):
        return 0.0
    return 1.0 if done.returncode == 0 else 0.0


def score_app(spec: dict[str, Any]) -> float:
    """The agent's work in /app against `spec`."""
    if spec["kind"] == "unit_tests":
        solution = os.path.join(APP, "solution.py")
        return unit_test_score(spec, solution, os.path.join(TESTS, spec["test_file"]), APP)
    try:
        return answer_score(spec, read_answer())
    except (OSError, UnicodeDecodeError):
        return 0.0


def main() -> int:
    with open(os.path.join(TESTS, "expected.json"), encoding="utf-8") as f:
        spec = json.load(f)
    score = score_app(spec)
    if not math.isfinite(score):
        score = 0.0
    os.makedirs(LOGS, exist_ok=True)
    with open(os.path.join(LOGS, "reward.txt"), "w") as f:
        f.write(f"{score:g}\n")
    with open(os.path.join(LOGS, "reward.json"), "w") as f:
        json.dump({"reward": score, "tests": {spec["test"]: score}}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
