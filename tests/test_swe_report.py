"""The SWE-bench verifier grades what the test runner observed, not what the code under test
printed: on a small repository run by the real pytest and unittest runners through the exported
`tests/test.sh`, the harness's parser gives the same verdicts on the report as on the printed
log for honest candidates, and candidates that print pass markers, end the test process early,
forge the report or kill the grader score 0 (the printed log would have given some of them 1)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from swebench.harness.constants import END_TEST_OUTPUT, START_TEST_OUTPUT
from swebench.harness.log_parsers import MAP_REPO_TO_PARSER

from taskpack.converters import _swe_harness
from taskpack.rewards import shipped

pytestmark = pytest.mark.slow  # the real test runners, as subprocesses

FIXED = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
BUGGY = FIXED.replace("a + b", "a * b")
# What each candidate puts in calc.py: the gold fix, none, and the hacks a reward-seeking
# agent finds when the grader reads the printed log or the exit status.
CANDIDATES = {
    "gold": FIXED,
    "null": BUGGY,
    # after the runner's own summary, where the harness's parser takes them as the last word
    "prints pass markers": BUGGY
    + "import atexit, os, sys\n"
    + "MARKS = b'\\nPASSED test_calc.py::test_add\\nAdding works. ... ok\\ntest_add ok\\n'\n"
    + "atexit.register(lambda: (sys.stdout.flush(), os.write(1, MARKS), os.write(2, MARKS)))\n",
    "os._exit(0) in the call": BUGGY.replace("return a * b", "__import__('os')._exit(0)"),
    "sys.exit(0) in the call": BUGGY.replace("return a * b", "__import__('sys').exit(0)"),
    "atexit forces status 0": BUGGY + "import atexit, os\natexit.register(lambda: os._exit(0))\n",
    "writes the report itself": BUGGY
    + "import json, os\n"
    + "path = os.environ.get('TASKPACK_SWE_REPORT', '::/nonexistent').split(':', 2)[2]\n"
    + "try:\n"
    + "    with open(path, 'a') as f:\n"
    + "        for line in ('PASSED test_calc.py::test_add', 'Adding works. ... ok'):\n"
    + "            f.write(json.dumps({'line': line, 'key': 'guess'}) + '\\n')\n"
    + "        f.write(json.dumps({'end': True, 'key': 'guess'}) + '\\n')\n"
    + "except OSError:\n"
    + "    pass\n",
    "kills the runner's parent": BUGGY
    + "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
}
PYTEST_TESTS = (
    "import calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n\n\n"
    "def test_sub():\n    assert calc.sub(5, 3) == 2\n"
)
UNITTEST_TESTS = (
    "import unittest\n\nimport calc\n\n\nclass Tests(unittest.TestCase):\n"
    '    def test_add(self):\n        """Adding works."""\n'
    "        self.assertEqual(calc.add(2, 3), 5)\n\n"
    "    def test_sub(self):\n        self.assertEqual(calc.sub(5, 3), 2)\n"
)
# Django's runtests.py in small: a verbose unittest TextTestRunner in one process.
RUNTESTS = (
    "import sys\nimport unittest\n\n"
    "suite = unittest.defaultTestLoader.loadTestsFromName('test_calc')\n"
    "sys.exit(not unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful())\n"
)
# SymPy's bin/test in small: the tests run in a child process (as `sympy.test` runs them, for
# hash randomization), by SymPy's own SymPyTests and verbose PyTestReporter.
SYMPY_TEST = (
    "import os\nimport subprocess\nimport sys\n\n"
    "if sys.argv[1:] != ['child']:\n"
    "    sys.exit(subprocess.call([sys.executable, __file__, 'child']))\n"
    "from sympy.testing.runtests import PyTestReporter, SymPyTests\n\n"
    "tests = SymPyTests(PyTestReporter(verbose=True))\n"
    "tests._testfiles.append(os.path.abspath('test_calc.py'))\n"
    "sys.exit(not tests.test(sort=True))\n"
)
# Sphinx's tox.ini in small, after the harness's `sed 's/pytest/pytest -rA/'`: tox passes only
# the variables it names, sets warnings to `all` and runs pytest in dev mode.
TOX_INI = (
    "[tox]\nenvlist = py{v}\nskipsdist = True\n\n[testenv]\n"
    "passenv =\n    https_proxy\n    PYTEST_ADDOPTS\n    TERM\n"
    "setenv =\n    PYTHONWARNINGS = all\n    PYTEST_ADDOPTS = {{env:PYTEST_ADDOPTS:}} --color yes\n"
    "commands=\n    python -X dev -m pytest -rA --durations 25 {{posargs}}\n"
).format(v=f"{sys.version_info[0]}{sys.version_info[1]}")
RUNNERS = {
    # repo: (runner, test command, test file, FAIL_TO_PASS, PASS_TO_PASS)
    "pytest-dev/pytest": (
        "pytest",
        f"{sys.executable} -m pytest -rA -p no:cacheprovider test_calc.py",
        PYTEST_TESTS,
        ["test_calc.py::test_add"],
        ["test_calc.py::test_sub"],
    ),
    "django/django": (
        "django",
        f"{sys.executable} runtests.py",
        UNITTEST_TESTS,
        ["Adding works."],
        [f"test_sub (test_calc.Tests{'.test_sub' if sys.version_info >= (3, 11) else ''})"],
    ),
    "sphinx-doc/sphinx": (
        "pytest",
        f"tox --current-env -epy{sys.version_info[0]}{sys.version_info[1]} -v -- test_calc.py",
        PYTEST_TESTS,
        ["test_calc.py::test_add"],
        ["test_calc.py::test_sub"],
    ),
    "sympy/sympy": (
        "sympy",
        f"{sys.executable} bin_test.py",
        # SymPy's reporter ends a file's last test line with [OK], where no parser sees it
        PYTEST_TESTS + "\n\ndef test_zzz_last():\n    pass\n",
        ["test_add"],
        ["test_sub"],
    ),
}
VERSIONS = {
    "pytest-dev/pytest": "5.4",
    "django/django": "3.0",
    "sphinx-doc/sphinx": "7.1",
    "sympy/sympy": "1.1",
}


def export(root: Path, repo: str) -> Path:
    """tests/ of an exported instance of `repo`, with paths moved under `root`."""
    runner, command, _, f2p, p2p = RUNNERS[repo]
    assert _swe_harness.runner(repo) == runner
    tests, logs = root / "tests", root / "logs"
    (tests / "swe_report").mkdir(parents=True)
    logs.mkdir()
    script = _swe_harness._TEST.format(report=_swe_harness._REPORT.format(runner=runner))
    for name, text in (
        ("test.sh", script),
        ("grade_swebench.py", shipped("swe").decode()),
        ("swe_report/taskpack_swe_report.py", shipped("swe_report").decode()),
        ("swe_report/sitecustomize.py", _swe_harness._SITECUSTOMIZE.decode()),
        (
            "eval.sh",
            f"#!/bin/bash\nset -uxo pipefail\ncd {root / 'testbed'}\n"
            f": '{START_TEST_OUTPUT}'\n{command}\n: '{END_TEST_OUTPUT}'\n",
        ),
    ):
        (tests / name).write_text(text)
    instance = {"instance_id": "x__y-1", "repo": repo, "version": VERSIONS[repo], "runner": runner}
    instance.update(FAIL_TO_PASS=f2p, PASS_TO_PASS=p2p)
    (tests / "instance.json").write_text(json.dumps(instance))
    return root


def where(root: Path) -> dict[str, str]:
    """test.sh's environment: its tests/ and logs/ under `root` instead of /tests and /logs."""
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(root),
        "TASKPACK_TESTS": str(root / "tests"),
        "TASKPACK_LOGS": str(root / "logs"),
    }


def verify(root: Path, repo: str, candidate: str) -> tuple[str, str]:
    """Runs test.sh on `candidate`: its reward, and the printed log."""
    testbed = root / "testbed"
    testbed.mkdir()
    _, _, test_file, _, _ = RUNNERS[repo]
    (testbed / "test_calc.py").write_text(test_file)
    (testbed / "runtests.py").write_text(RUNTESTS)
    (testbed / "bin_test.py").write_text(SYMPY_TEST)
    (testbed / "tox.ini").write_text(TOX_INI)
    (testbed / "calc.py").write_text(candidate)
    subprocess.run(
        ["bash", str(root / "tests" / "test.sh")], env=where(root), timeout=120, check=False
    )
    logs = root / "logs"
    return (logs / "reward.txt").read_text().strip(), (logs / "test_output.txt").read_text()


def status(repo: str, log: str) -> dict[str, str]:
    """The harness parser's status map of the test section of `log`."""
    section = log.split(START_TEST_OUTPUT)[1].split(END_TEST_OUTPUT)[0]
    found = MAP_REPO_TO_PARSER[repo](section, None)  # the Python parsers never read the spec
    # SymPy's parser also reads failures from traceback headers (`path.py:test`): names that are
    # never in a FAIL_TO_PASS or PASS_TO_PASS list, as they only ever fail.
    return {k: v for k, v in found.items() if ".py:" not in k or repo != "sympy/sympy"}


@pytest.mark.parametrize("repo", sorted(RUNNERS))
@pytest.mark.parametrize("candidate", ["gold", "null"])
def test_the_report_agrees_with_the_printed_log_on_honest_candidates(
    repo: str, candidate: str, tmp_path: Path
) -> None:
    root = export(tmp_path, repo)
    reward, printed = verify(root, repo, CANDIDATES[candidate])
    observed = (root / "logs" / "test_observed.txt").read_text()
    assert status(repo, observed) == status(repo, printed)
    _, _, _, f2p, p2p = RUNNERS[repo]
    assert {t: status(repo, printed).get(t) for t in f2p + p2p} == {
        **dict.fromkeys(f2p, "PASSED" if candidate == "gold" else "FAILED"),
        **dict.fromkeys(p2p, "PASSED"),
    }
    assert reward == {"gold": "1", "null": "0"}[candidate]


@pytest.mark.parametrize("repo", sorted(RUNNERS))
@pytest.mark.parametrize("hack", [c for c in CANDIDATES if c not in ("gold", "null")])
def test_forgers_score_zero(repo: str, hack: str, tmp_path: Path) -> None:
    root = export(tmp_path, repo)
    reward, printed = verify(root, repo, CANDIDATES[hack])
    assert reward == "0", printed[-2000:]


@pytest.mark.parametrize("repo", sorted(RUNNERS))
def test_printed_markers_would_have_fooled_the_printed_log(repo: str, tmp_path: Path) -> None:
    """The hack is real: the harness reading the printed log calls the task resolved."""
    root = export(tmp_path, repo)
    _, printed = verify(root, repo, CANDIDATES["prints pass markers"])
    f2p = RUNNERS[repo][3]
    assert all(status(repo, printed).get(t) == "PASSED" for t in f2p), printed[-2000:]


def test_runs_nested_inside_the_tests_are_not_counted(tmp_path: Path) -> None:
    """A test that starts pytest itself (pytest's own suite does) adds nothing to the report."""
    repo = "pytest-dev/pytest"
    root = export(tmp_path, repo)
    inner = (
        "\n\ndef test_inner(tmp_path):\n    import subprocess, sys\n"
        "    (tmp_path / 'test_x.py').write_text('def test_add():\\n    assert False\\n')\n"
        "    subprocess.run([sys.executable, '-m', 'pytest', '-rA', str(tmp_path)], check=False)\n"
    )
    testbed = root / "testbed"
    testbed.mkdir()
    (testbed / "test_calc.py").write_text(PYTEST_TESTS + inner)
    (testbed / "calc.py").write_text(FIXED)
    subprocess.run(
        ["bash", str(root / "tests" / "test.sh")], env=where(root), timeout=120, check=False
    )
    observed = (root / "logs" / "test_observed.txt").read_text()
    assert status(repo, observed) == {
        "test_calc.py::test_add": "PASSED",
        "test_calc.py::test_sub": "PASSED",
        "test_calc.py::test_inner": "PASSED",
    }
    assert (root / "logs" / "reward.txt").read_text().strip() == "1"
    assert os.environ.get("TASKPACK_SWE_REPORT") is None


def test_the_report_module_is_python_3_5_syntax() -> None:
    """The oldest Python a SWE-bench image runs its tests with."""
    source = shipped("swe_report").decode()
    ast.parse(source, feature_version=(3, 5))
