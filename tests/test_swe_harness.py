"""SWE-bench tasks in folder exports run as the official harness (swebench 4.1.0) runs them:
its instance image, its eval script (test patch, test directives per repository and version)
and its grading. Checked on every SWE-bench Lite and Verified instance in shared/data against
the harness's own functions fed the raw instance record, and by grading harness-style logs."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from swebench.harness.constants import (
    END_TEST_OUTPUT,
    MAP_REPO_VERSION_TO_SPECS,
    START_TEST_OUTPUT,
)
from swebench.harness.log_parsers import MAP_REPO_TO_PARSER
from swebench.harness.test_spec.create_scripts import make_eval_script_list

from taskpack.exporter import convert_format

from .conftest import DATA

pytestmark = pytest.mark.slow  # the SWE-bench harness end to end

FILES = {
    "lite": DATA / "swebench" / "swebench_lite_test.jsonl",
    "verified": DATA / "swebench" / "swebench_verified_sample50.jsonl",
}


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture(
    scope="module", params=[(n, f) for n in sorted(FILES) for f in ("harbor", "openreward")]
)
def exported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    name, fmt = request.param
    path = FILES[name]
    out = tmp_path_factory.mktemp("swe") / "out"
    result = convert_format({"test": [str(path)]}, "swebench", fmt, out)
    assert not any("SWE-bench harness" in loss for loss in result.losses)
    return records(path), out / "test"


def test_every_instance_gets_the_harness_image_and_eval_script(exported: Any) -> None:
    rows, split = exported
    assert len(rows) in (300, 50)
    for raw in rows:
        folder = split / raw["instance_id"]
        specs = MAP_REPO_VERSION_TO_SPECS[raw["repo"]][raw["version"]]
        theirs = make_eval_script_list(
            raw, specs, "testbed", "/testbed", raw["base_commit"], raw["test_patch"]
        )
        script = "\n".join(["#!/bin/bash", "set -uxo pipefail", *theirs]) + "\n"
        assert (folder / "tests" / "eval.sh").read_text(encoding="utf-8") == script, folder
        image = f"swebench/sweb.eval.x86_64.{raw['instance_id'].lower()}:latest"
        dockerfile = (folder / "environment" / "Dockerfile").read_text()
        assert dockerfile.startswith(f"FROM {image.replace('__', '_1776_')}\n")
        instance = json.loads((folder / "tests" / "instance.json").read_text())
        assert instance["FAIL_TO_PASS"] == json.loads(raw["FAIL_TO_PASS"])
        assert instance["PASS_TO_PASS"] == json.loads(raw["PASS_TO_PASS"])
        assert raw["patch"] in (folder / "solution" / "solve.sh").read_text(encoding="utf-8")
        instruction = folder / (
            "instruction.md" if (folder / "task.toml").exists() else "task.yaml"
        )
        assert raw["patch"] not in instruction.read_text(encoding="utf-8")


def harness_log(repo: str, passing: list[str], failing: list[str]) -> str | None:
    """A log as the harness's eval script writes it, in the repo's test runner's words."""
    parser = MAP_REPO_TO_PARSER[repo].__name__
    if parser.startswith("parse_log_pytest"):
        lines = [f"PASSED {t}" for t in passing] + [f"FAILED {t}" for t in failing]
    elif parser == "parse_log_django":
        lines = [f"{t} ... ok" for t in passing] + [f"{t} ... FAIL" for t in failing]
    else:
        return None  # matplotlib, seaborn, sympy parsers: not generated here
    return "\n".join(["+ : '" + START_TEST_OUTPUT + "'", *lines, "+ : '" + END_TEST_OUTPUT + "'"])


def test_the_exported_grader_gives_the_harness_verdict(exported: Any, tmp_path: Path) -> None:
    rows, split = exported
    grader_path = split / rows[0]["instance_id"] / "tests" / "grade_swebench.py"
    spec = importlib.util.spec_from_file_location("grade_swebench", grader_path)
    assert spec is not None and spec.loader is not None
    grader = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(grader)
    graded = 0
    for raw in rows:
        instance = json.loads((split / raw["instance_id"] / "tests" / "instance.json").read_text())
        f2p, p2p = instance["FAIL_TO_PASS"], instance["PASS_TO_PASS"]
        good = harness_log(raw["repo"], f2p + p2p, [])
        if good is None:
            continue
        bad = harness_log(raw["repo"], p2p, f2p)
        assert bad is not None
        for log, verdict in ((good, True), (bad, False)):
            path = tmp_path / "log.txt"
            path.write_text(log, encoding="utf-8")
            assert grader.resolved(instance, str(path)) is verdict, raw["instance_id"]
        graded += 1
    assert graded >= {300: 150, 50: 20}[len(rows)]


def test_the_exported_test_script_grades_end_to_end(exported: Any, tmp_path: Path) -> None:
    """tests/grade_swebench.py as test.sh runs it: the runner's report decides, not the log."""
    rows, split = exported
    raw = next(r for r in rows if r["repo"] == "django/django")
    tests = split / raw["instance_id"] / "tests"
    instance = json.loads((tests / "instance.json").read_text())
    assert instance["runner"] == "django"
    assert (tests / "swe_report" / "taskpack_swe_report.py").is_file()
    f2p, p2p = instance["FAIL_TO_PASS"], instance["PASS_TO_PASS"]
    good = harness_log(raw["repo"], f2p + p2p, [])
    bad = harness_log(raw["repo"], p2p, f2p)
    assert good is not None and bad is not None
    cases = {  # name: (printed log, reported log, key the grader is given, reward)
        "passes": (good, good, "k", "1"),
        "fails": (good, bad, "k", "0"),  # the printed log lies; the report does not
        "no report": (good, None, "k", "0"),
        "wrong key": (good, good, "other", "0"),
    }
    for name, (printed, reported, key, reward) in cases.items():
        logs = tmp_path / name
        logs.mkdir()
        (logs / "test_output.txt").write_text(printed)
        if reported is not None:
            section = reported.split(START_TEST_OUTPUT)[1].split(END_TEST_OUTPUT)[0]
            records = [{"line": t, "key": "k"} for t in section.splitlines()[1:-1]]
            report = "".join(json.dumps(r) + "\n" for r in [*records, {"end": True, "key": "k"}])
            (logs / "test_report.jsonl").write_text(report)
        subprocess.run(
            [sys.executable, str(tests / "grade_swebench.py")],
            env={"TASKPACK_LOGS": str(logs), "TASKPACK_SWE_KEY": key, "PATH": "/usr/bin:/bin"},
            check=True,
        )
        assert (logs / "reward.txt").read_text().strip() == reward, name
