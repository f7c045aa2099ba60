"""Grades one exported Multi-SWE-bench task inside its container with that benchmark's own
harness (`multi-swe-bench` 1.1.2): `python3 /tests/grade_multi_swebench.py` after
/home/test-run.sh (the image's own test command, the test patch applied to the agent's work)
wrote its log.

taskpack copies this file into `tests/` of Multi-SWE-bench tasks it exports to folder formats,
next to `instance.json` (the pull request, the dataset's test transitions and its recorded
run and test-patch results). The harness's parser for the repository reads the log, and its
report rules decide, as its evaluation does: the run is valid (tests ran, nothing that passed
with the test patch fails now, something was fixed) and every p2p, f2p, s2p and n2p test of
the dataset is one again. The harness is installed with pip if the image lacks it (the
verifier needs the network for that, and a Python 3.10 or later).

The log is the tests' printed output, which the code under test can write to (as with the
SWE-bench harness's non-Python repositories); see SECURITY.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
LOGS = os.environ.get("TASKPACK_LOGS", "/logs/verifier")
HARNESS = ["multi-swe-bench==1.1.2", "dataclasses-json", "unidiff"]
TRANSITIONS = ("p2p_tests", "f2p_tests", "s2p_tests", "n2p_tests")


def _harness() -> None:
    try:
        import multi_swe_bench  # noqa: F401
    except ImportError:  # --no-deps: its docker and GitHub clients are not needed to grade
        pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", *HARNESS]
        subprocess.run(pip, check=False)
        deps = [sys.executable, "-m", "pip", "install", "-q", "marshmallow", "typing-inspect"]
        subprocess.run(deps, check=False)


def resolved(instance: dict, log: str) -> bool:  # type: ignore[type-arg]
    import multi_swe_bench.harness.repos  # noqa: F401  # registers every repository's parser
    from multi_swe_bench.harness.image import Config
    from multi_swe_bench.harness.instance import Instance
    from multi_swe_bench.harness.pull_request import Base, PullRequest
    from multi_swe_bench.harness.report import generate_report
    from multi_swe_bench.harness.test_result import TestResult

    pr = PullRequest(
        org=instance["org"],
        repo=instance["repo"],
        number=instance["number"],
        state="",
        title="",
        body="",
        base=Base(label="", ref="", sha=""),
        resolved_issues=[],
        fix_patch="",
        test_patch="",
        tag=instance.get("tag") or "",
        number_interval=instance.get("number_interval") or "",
    )
    harness = Instance.create(pr, Config(need_clone=False, global_env=None, clear_env=False))
    report = generate_report(
        harness,
        TestResult.from_dict(instance["run_result"]),
        TestResult.from_dict(instance["test_patch_result"]),
        log,
    )
    if not report.valid:
        return False
    return all(
        name in getattr(report, key) for key in TRANSITIONS for name in instance.get(key) or {}
    )


def main() -> int:
    _harness()
    with open(os.path.join(TESTS, "instance.json"), encoding="utf-8") as f:
        instance = json.load(f)
    try:
        with open(os.path.join(LOGS, "test_output.txt"), encoding="utf-8", errors="replace") as f:
            log = f.read()
        reward = 1.0 if resolved(instance, log) else 0.0
    except (OSError, ImportError, KeyError, ValueError, TypeError):
        reward = 0.0
    with open(os.path.join(LOGS, "reward.txt"), "w") as f:
        f.write(f"{reward:g}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
