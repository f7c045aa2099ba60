"""Grades one exported SWE-bench task inside its container with the official harness
(`swebench` 4.1.0): `python3 /tests/grade_swebench.py` after /tests/eval.sh wrote its log.

taskpack copies this file into `tests/` of SWE-bench tasks it exports to folder formats, next
to `instance.json` (the instance's id, repo, version and test lists). The harness's own log
parser and resolution rules decide: the task scores 1 when every FAIL_TO_PASS and PASS_TO_PASS
test passes, as `swebench.harness.grading.get_eval_report` says. The harness is installed
with pip if the image lacks it (the verifier needs the network for that).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
LOGS = os.environ.get("TASKPACK_LOGS", "/logs/verifier")
HARNESS = "swebench==4.1.0"


def _harness() -> None:
    try:
        import swebench  # noqa: F401
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", HARNESS], check=False)


def resolved(instance: dict, log_path: str) -> bool:  # type: ignore[type-arg]
    from swebench.harness.grading import get_eval_report
    from swebench.harness.test_spec.test_spec import TestSpec

    spec = TestSpec(
        instance_id=instance["instance_id"],
        repo=instance["repo"],
        version=instance["version"],
        repo_script_list=[],
        eval_script_list=[],
        env_script_list=[],
        arch="x86_64",
        FAIL_TO_PASS=instance["FAIL_TO_PASS"],
        PASS_TO_PASS=instance["PASS_TO_PASS"],
        language="py",
        docker_specs={},
        namespace=None,
    )
    prediction = {
        "instance_id": instance["instance_id"],
        "model_patch": "(the agent's changes in /testbed)",
        "model_name_or_path": "agent",
    }
    report = get_eval_report(spec, prediction, log_path, include_tests_status=False)
    return bool(report[instance["instance_id"]]["resolved"])


def main() -> int:
    _harness()
    with open(os.path.join(TESTS, "instance.json"), encoding="utf-8") as f:
        instance = json.load(f)
    log_path = os.path.join(LOGS, "test_output.txt")
    try:
        score = 1.0 if resolved(instance, log_path) else 0.0
    except (OSError, ImportError, KeyError, ValueError):
        score = 0.0
    with open(os.path.join(LOGS, "reward.txt"), "w") as f:
        f.write(f"{score:g}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
