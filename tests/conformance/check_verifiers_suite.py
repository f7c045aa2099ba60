"""Runs inside the verifiers 0.3.1 venv: Verifiers' own `tests/test_singleturn_env.py` (from its
source distribution on the package index, unmodified), with its `sample_chat_dataset` fixture
answered by the first two rows of a saved dataset instead of the two rows its conftest builds.

A plugin answers that one fixture (`pytest_fixture_setup`, ahead of the conftest's); every other
fixture and test is Verifiers' own.

    python check_verifiers_suite.py SCRATCH DATASET.parquet  ->  JSON on stdout:
        {"tests": {name: "passed" | "failed: <first line>"}}
"""

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from sdist import unpacked

scratch, dataset = Path(sys.argv[1]), sys.argv[2]
source = unpacked(scratch, "verifiers==0.3.1")

PLUGIN = """
import os

import pytest
from datasets import Dataset


@pytest.hookimpl(tryfirst=True)
def pytest_fixture_setup(fixturedef, request):
    if fixturedef.argname != "sample_chat_dataset":
        return None
    rows = Dataset.from_parquet(os.environ["TASKPACK_DATASET"]).select(range(2))
    fixturedef.cached_result = (rows, fixturedef.cache_key(request), None)
    return rows
"""
(scratch / "taskpack_dataset.py").write_text(PLUGIN)
report = scratch / "report.xml"
ran = subprocess.run(
    [sys.executable, "-m", "pytest", "-p", "taskpack_dataset", "-q", "-p", "no:cacheprovider",
     f"--junitxml={report}", "tests/test_singleturn_env.py"],
    cwd=source, env={"PYTHONPATH": str(scratch), "TASKPACK_DATASET": dataset, "PATH": "",
                     "HOME": str(scratch)},
    check=False, capture_output=True, text=True,
)  # fmt: skip
if not report.exists():
    sys.exit(f"pytest did not run:\n{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}")
outcomes = {}
for case in ET.parse(report).getroot().iter("testcase"):
    failed = case.find("failure")
    if failed is None:
        failed = case.find("error")
    first = (failed.get("message") or "").splitlines()[0] if failed is not None else ""
    outcomes[case.get("name")] = "passed" if failed is None else f"failed: {first}"
print(json.dumps({"tests": outcomes}))
