"""SWE-bench tasks as the official harness runs them (`swebench` 4.1.0, the optional extra
`taskpack[swebench]`): the instance image it names, the eval script it builds from the instance
record (test patch, test directives per repository and version) and its grading.

Only the harness's eval part is used: its environment-setup part fetches requirement files
from GitHub for some repositories and cannot run offline.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from taskpack.model import Task

NAMESPACE = "swebench"  # the harness's images on Docker Hub: swebench/sweb.eval.x86_64.<id>
REPO_DIR = "/testbed"
_TEST = """#!/bin/bash
# taskpack verifier: run the SWE-bench harness's eval script for this instance, then grade
# with the harness's own parser (tests/grade_swebench.py) what the test runner reported
# (tests/swe_report/); the reward is the grader's alone.
rm -f /logs/verifier/reward.txt /logs/verifier/reward.json /logs/verifier/test_report.jsonl
mkdir -p /logs/verifier
key=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')
{report}bash /tests/eval.sh > /logs/verifier/test_output.txt 2>&1
if ! TASKPACK_SWE_KEY="$key" python3 /tests/grade_swebench.py; then
    rm -f /logs/verifier/reward.txt /logs/verifier/reward.json
    echo 0 > /logs/verifier/reward.txt
fi
"""
_REPORT = """TASKPACK_SWE_REPORT="{runner}:$key:/logs/verifier/test_report.jsonl" \\
PYTHONPATH="/tests/swe_report${{PYTHONPATH:+:$PYTHONPATH}}" \\
    """
_SITECUSTOMIZE = b"import taskpack_swe_report\n\ntaskpack_swe_report.install()\n"


def available() -> bool:
    try:
        import swebench.harness.test_spec.create_scripts  # noqa: F401
    except ImportError:
        return False
    return True


def instance(task: Task) -> dict[str, Any]:
    """The SWE-bench instance record the task was read from."""
    from taskpack.converters import swebench

    return swebench.source_row(task)


def _lists(record: dict[str, Any], key: str) -> list[str]:
    value = record.get(key, "[]")
    return list(json.loads(value) if isinstance(value, str) else value)


def test_spec(record: dict[str, Any]) -> Any:
    """The harness's TestSpec for `record`, its eval script only (no environment setup)."""
    from swebench.harness.constants import MAP_REPO_TO_EXT, MAP_REPO_VERSION_TO_SPECS
    from swebench.harness.test_spec.create_scripts import make_eval_script_list
    from swebench.harness.test_spec.test_spec import TestSpec

    specs = MAP_REPO_VERSION_TO_SPECS[record["repo"]][record["version"]]
    eval_script = make_eval_script_list(
        record, specs, "testbed", REPO_DIR, record["base_commit"], record["test_patch"]
    )
    return TestSpec(
        instance_id=record["instance_id"],
        repo=record["repo"],
        version=record["version"],
        repo_script_list=[],
        eval_script_list=eval_script,
        env_script_list=[],
        arch="x86_64",
        FAIL_TO_PASS=_lists(record, "FAIL_TO_PASS"),
        PASS_TO_PASS=_lists(record, "PASS_TO_PASS"),
        language=MAP_REPO_TO_EXT[record["repo"]],
        docker_specs=specs.get("docker_specs", {}),
        namespace=NAMESPACE,
    )


def runner(repo: str) -> str | None:
    """Which runner's report `_swe_report` reads for `repo`; None for the harness's other
    languages, whose runners it does not hook and whose printed log is all there is."""
    from swebench.harness.log_parsers import MAP_REPO_TO_PARSER_PY

    parser = MAP_REPO_TO_PARSER_PY.get(repo)
    if parser is None:
        return None
    return {"parse_log_django": "django", "parse_log_sympy": "sympy"}.get(parser.__name__, "pytest")


def files(task: Task) -> dict[str, tuple[bytes, int]]:
    """Dockerfile, verifier and oracle of a SWE-bench task, as folder paths."""
    record = instance(task)
    spec = test_spec(record)
    package = resources.files("taskpack.converters")
    how = runner(record["repo"])
    graded = {
        k: spec.FAIL_TO_PASS if k == "FAIL_TO_PASS" else spec.PASS_TO_PASS
        for k in ("FAIL_TO_PASS", "PASS_TO_PASS")
    }
    graded.update({k: record[k] for k in ("instance_id", "repo", "version")})
    graded["runner"] = how
    out = {
        "environment/Dockerfile": (
            f"FROM {spec.instance_image_key}\nWORKDIR {REPO_DIR}\n".encode(),
            0o644,
        ),
        "tests/test.sh": (
            _TEST.format(report=_REPORT.format(runner=how) if how else "").encode(),
            0o755,
        ),
        "tests/eval.sh": (spec.eval_script.encode("utf-8"), 0o755),
        "tests/instance.json": ((json.dumps(graded, indent=2) + "\n").encode(), 0o644),
        "tests/grade_swebench.py": (package.joinpath("_swe_grade.py").read_bytes(), 0o644),
    }
    if how is not None:
        report = package.joinpath("_swe_report.py").read_bytes()
        out["tests/swe_report/taskpack_swe_report.py"] = (report, 0o644)
        out["tests/swe_report/sitecustomize.py"] = (_SITECUSTOMIZE, 0o644)
    if task.solution is not None:
        patch = task.solution.encode("utf-8")
        out["solution/solve.sh"] = (
            b"#!/bin/bash\n# Apply the gold patch.\ncd "
            + REPO_DIR.encode()
            + b" && git apply -v - <<'TASKPACK_GOLD_PATCH'\n"
            + patch
            + (b"" if patch.endswith(b"\n") else b"\n")
            + b"TASKPACK_GOLD_PATCH\n",
            0o755,
        )
    return out
