"""Grades one exported SWE-bench task inside its container with the official harness
(`swebench` 4.1.0): `python3 /tests/grade_swebench.py` after /tests/eval.sh wrote its log.

taskpack copies this file into `tests/` of SWE-bench tasks it exports to folder formats, next
to `instance.json` (the instance's id, repo, version and test lists). The harness's own log
parser and resolution rules decide: the task scores 1 when every FAIL_TO_PASS and PASS_TO_PASS
test passes, as `swebench.harness.grading.get_eval_report` says. The harness is installed
with pip if the image lacks it (the verifier needs the network for that).

Where the instance's test runner reports through `swe_report/` (`instance.json`'s "runner":
pytest, Django's unittest runner, SymPy's), the parser reads what the runner itself observed
(`test_report.jsonl`, only records carrying this run's key, and only if the run reached its end)
instead of the printed output, which the code under test can write to: a candidate printing
pass markers gains nothing, one that ends the test process early scores 0. Markers of the eval
script's own failures (patch did not apply, reset failed) still come from the printed log.
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
    if instance.get("parser") == "pytest":
        return _pytest_resolved(instance, _read(log_path))
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


def _pytest_resolved(instance: dict, log: str) -> bool:  # type: ignore[type-arg]
    """An instance the harness has no spec for: its pytest log parser and resolution rule on
    the test section of the log (all FAIL_TO_PASS and PASS_TO_PASS tests pass)."""
    from swebench.harness import constants as c
    from swebench.harness.grading import (
        ResolvedStatus,
        get_eval_tests_report,
        get_resolution_status,
    )
    from swebench.harness.log_parsers.python import parse_log_pytest

    failed = (c.APPLY_PATCH_FAIL, c.RESET_FAILED, c.TESTS_ERROR, c.TESTS_TIMEOUT)
    if any(m in log for m in failed) or c.START_TEST_OUTPUT not in log:
        return False
    section = log.split(c.START_TEST_OUTPUT, 1)[1].split(c.END_TEST_OUTPUT, 1)
    if len(section) < 2:
        return False
    status = parse_log_pytest(section[0], None)
    gold = {"FAIL_TO_PASS": instance["FAIL_TO_PASS"], "PASS_TO_PASS": instance["PASS_TO_PASS"]}
    report = get_eval_tests_report(status, gold)
    return bool(get_resolution_status(report) == ResolvedStatus.FULL.value)


def observed(printed: str, report: str, key: str) -> str | None:
    """The log the harness's parser is given: the eval script's failure markers from the printed
    log, then the lines the test runner reported with `key`; None if the run did not end."""
    from swebench.harness import constants as c

    lines, ended = [], False
    for text in report.splitlines():
        try:
            record = json.loads(text)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("key") != key:
            continue
        if record.get("end") is True:
            ended = True
        elif isinstance(record.get("line"), str):
            lines.append(record["line"])
    if not ended:
        return None
    failed = [
        m
        for m in (c.APPLY_PATCH_FAIL, c.RESET_FAILED, c.TESTS_ERROR, c.TESTS_TIMEOUT)
        if m in printed
    ]
    if failed or c.START_TEST_OUTPUT not in printed or c.END_TEST_OUTPUT not in printed:
        return "\n".join(failed) + "\n"
    return "\n".join([c.START_TEST_OUTPUT, *lines, c.END_TEST_OUTPUT]) + "\n"


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def score(instance: dict) -> float:  # type: ignore[type-arg]
    log_path = os.path.join(LOGS, "test_output.txt")
    if instance.get("runner"):
        report = os.path.join(LOGS, "test_report.jsonl")
        key = os.environ.get("TASKPACK_SWE_KEY", "")
        log = observed(_read(log_path), _read(report) if os.path.exists(report) else "", key)
        if log is None or not key:
            return 0.0
        log_path = os.path.join(LOGS, "test_observed.txt")
        with open(log_path, "w", encoding="utf-8") as f:
            f.write(log)
    return 1.0 if resolved(instance, log_path) else 0.0


def main() -> int:
    _harness()
    with open(os.path.join(TESTS, "instance.json"), encoding="utf-8") as f:
        instance = json.load(f)
    try:
        reward = score(instance)
    except (OSError, ImportError, KeyError, ValueError):
        reward = 0.0
    with open(os.path.join(LOGS, "reward.txt"), "w") as f:
        f.write(f"{reward:g}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
