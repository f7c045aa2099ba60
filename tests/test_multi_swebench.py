"""Multi-SWE-bench rows (tests/fixtures/multi_swebench/sample.jsonl, hand-made in the dataset's
shape): fields mapped, the per-PR image named, and exports verified by that benchmark's own
harness: its parser for the repository and its report rules, run in a pinned venv of
`multi-swe-bench` 1.1.2 on test logs in each repository's format (Maven's, `go test -v`'s)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from taskpack.exporter import convert_format
from taskpack.importer import read_source

from .conformance.frameworks import ensure

SAMPLE = Path(__file__).parent / "fixtures" / "multi_swebench" / "sample.jsonl"
ROWS = [json.loads(line) for line in SAMPLE.read_text().splitlines()]


def test_rows_become_swe_tasks_with_their_images() -> None:
    java, go = list(read_source(SAMPLE, "multi-swebench", split="test"))
    assert (java.id, go.id) == ("fasterxml__jackson-core-9001", "cli__cli-9002")
    assert java.environment is not None and go.environment is not None
    assert java.environment.image == "mswebench/fasterxml_m_jackson-core:pr-9001"
    assert (java.environment.repo, java.environment.workdir) == (
        "fasterxml/jackson-core",
        "/home/jackson-core",
    )
    assert java.environment.commit == ROWS[0]["base"]["sha"]
    issue = ROWS[0]["resolved_issues"][0]
    assert java.prompt[0].text == issue["title"] + "\n\n" + issue["body"]  # \r\n kept
    assert go.prompt[0].text == "gh pr list --limit 0 lists 30"  # a body of null is no text
    assert java.solution == ROWS[0]["fix_patch"]
    assert java.file("test.patch").read_bytes().decode() == ROWS[0]["test_patch"]
    reward = java.reward
    assert reward is not None and reward.kind == "swe_tests"
    assert reward.fail_to_pass == list(ROWS[0]["f2p_tests"])
    assert reward.pass_to_pass == list(ROWS[0]["p2p_tests"])
    assert java.metadata["f2p_tests"] == ROWS[0]["f2p_tests"]  # verbatim, with the results


def test_exports_carry_the_benchmarks_own_verifier(tmp_path: Path) -> None:
    result = convert_format({"test": [str(SAMPLE)]}, "multi-swebench", "harbor", tmp_path / "h")
    assert not any("eval script" in loss for loss in result.losses), result.losses
    folder = tmp_path / "h" / "test" / "fasterxml__jackson-core-9001"
    dockerfile = (folder / "environment" / "Dockerfile").read_text()
    assert (
        dockerfile
        == "FROM mswebench/fasterxml_m_jackson-core:pr-9001\nWORKDIR /home/jackson-core\n"
    )
    test_sh = (folder / "tests" / "test.sh").read_text()
    assert ROWS[0]["test_patch"].rstrip("\n") in test_sh and "bash /home/test-run.sh" in test_sh
    instance = json.loads((folder / "tests" / "instance.json").read_text())
    assert instance["f2p_tests"] == ROWS[0]["f2p_tests"] and instance["number"] == 9001
    assert "/home/jackson-core" in (folder / "instruction.md").read_text()
    assert "git apply" in (folder / "solution" / "solve.sh").read_text()
    sky = convert_format({"test": [str(SAMPLE)]}, "multi-swebench", "skyrl", tmp_path / "s")
    assert not any("eval script" in loss for loss in sky.losses), sky.losses
    instance = pq.read_table(tmp_path / "s" / "test.parquet").to_pylist()[0]["instance"]
    assert instance["image_name"] == "mswebench/fasterxml_m_jackson-core:pr-9001"
    assert instance["eval_script"].startswith("#!/bin/bash\n# taskpack: this SWE-bench")


MAVEN = "[INFO] Tests run: {n}, Failures: {f}, Errors: 0, Skipped: 0, Time elapsed: 0.1 s - in {c}"
A, B = (
    "com.fasterxml.jackson.core.read.NumberParsingTest",
    "com.fasterxml.jackson.core.read.FloatParsingTest",
)
LOGS = {
    "fasterxml__jackson-core-9001": {
        "gold": [MAVEN.format(n=4, f=0, c=A), MAVEN.format(n=3, f=0, c=B)],
        "null": [MAVEN.format(n=4, f=0, c=A), MAVEN.format(n=3, f=1, c=B)],
        "breaks another test": [MAVEN.format(n=4, f=1, c=A), MAVEN.format(n=3, f=0, c=B)],
        "no test ran": ["[ERROR] COMPILATION ERROR"],
    },
    "cli__cli-9002": {
        "gold": ["--- PASS: TestPRList (0.01s)", "--- PASS: TestPRList_zeroLimit (0.00s)"],
        "null": ["--- PASS: TestPRList (0.01s)", "--- FAIL: TestPRList_zeroLimit (0.00s)"],
        "breaks another test": ["--- FAIL: TestPRList (0.01s)", "--- PASS: TestPRList_zeroLimit"],
        "no test ran": ["# github.com/cli/cli/v2/pkg/cmd/pr/list [build failed]"],
    },
}


@pytest.mark.conformance
@pytest.mark.parametrize("instance_id", sorted(LOGS))
def test_the_harness_grades_the_exported_task(tmp_path: Path, instance_id: str) -> None:
    """The exported grader, in a venv holding what it installs in an image, gives 1 to the
    gold run's log only: a failing fixed test, a newly failing test and a run that never got
    to the tests all score 0, by the harness's own parser and rules."""
    convert_format({"test": [str(SAMPLE)]}, "multi-swebench", "harbor", tmp_path / "h")
    tests = tmp_path / "h" / "test" / instance_id / "tests"
    python = str(ensure("multi_swebench"))
    rewards = {}
    for name, lines in LOGS[instance_id].items():
        logs = tmp_path / "logs" / name.replace(" ", "-")
        logs.mkdir(parents=True)
        (logs / "test_output.txt").write_text("\n".join(lines) + "\n")
        subprocess.run(
            [python, str(tests / "grade_multi_swebench.py")],
            env={"TASKPACK_LOGS": str(logs), "PATH": "/usr/bin:/bin"},
            check=True,
            timeout=300,
        )
        rewards[name] = (logs / "reward.txt").read_text().strip()
    assert rewards == {"gold": "1", "null": "0", "breaks another test": "0", "no test ran": "0"}
