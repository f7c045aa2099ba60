"""A converted task scores every candidate as its original does, and no candidate forges a
reward: the wrappers taskpack writes keep a verifier's own reward (partial and multi-key) and
always leave one; `check --against` finds a conversion that changes a reward; the battery of
forgers scores 0 on every task kind taskpack exports, in both folder formats.

Fixtures are hand-made task folders of the shapes public sets use: Harbor verifiers that write
their own partial or multi-key rewards and exit 0, Terminal-Bench `run-tests.sh` under
`set -euo pipefail`. They use `python:3.12-slim`, which the sandbox stands in for.
"""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path

import pytest
from click.testing import CliRunner

import taskpack
from taskpack.cli import main
from taskpack.converters._verifier import REWARD_FILES, with_exit_reward
from taskpack.exporter import convert_format, export
from taskpack.importer import read_source
from taskpack.rewards.trials import FORGERS, Bounds, check_export, summary

from .conftest import PYTHON_IMAGE, REAL_SETS, harbor_folder

pytestmark = pytest.mark.slow  # every forger in the sandbox

# Verifiers that grade /app/out.txt themselves and exit 0 whatever they wrote (as the public
# sets' pytest-then-echo verifiers do): PARTIAL writes reward.txt, 1 for "done", 0.37 for
# "partial", 0 otherwise; MULTI writes two named rewards to reward.json.
_READ = """#!/bin/bash
mkdir -p /logs/verifier
python3 - <<'EOF'
import json
try:
    text = open("/app/out.txt").read().strip()
except OSError:
    text = ""
"""
PARTIAL = (
    _READ
    + """score = {"done": 1, "partial": 0.37}.get(text, 0)
open("/logs/verifier/reward.txt", "w").write(f"{score}\\n")
EOF
"""
)
MULTI = (
    _READ
    + """done = int(text == "done")
json.dump({"correctness": done, "style": done}, open("/logs/verifier/reward.json", "w"))
EOF
"""
)


def harbor_task(root: Path, name: str, test: str, solution: str) -> Path:
    return harbor_folder(root, name, test, f"#!/bin/bash\necho {solution} > /app/out.txt\n")


def terminal_bench_task(root: Path, name: str) -> Path:
    """A Terminal-Bench folder whose run-tests.sh stops at the first failure (`set -e`)."""
    folder = root / name
    (folder / "tests").mkdir(parents=True)
    (folder / "task.yaml").write_text("instruction: Write done to /app/out.txt.\n")
    (folder / "Dockerfile").write_text(PYTHON_IMAGE)
    (folder / "run-tests.sh").write_text(
        "#!/bin/bash\nset -euo pipefail\npython3 /tests/test_out.py\necho 'all passed'\n"
    )
    (folder / "tests" / "test_out.py").write_text(
        "assert open('/app/out.txt').read().strip() == 'done'\n"
    )
    (folder / "solution.sh").write_text("#!/bin/bash\necho done > /app/out.txt\n")
    return folder


QUICK = Bounds(timeout=60)


@pytest.fixture
def harbor_set(tmp_path: Path) -> Path:
    root = tmp_path / "harbor"
    harbor_task(root, "partial", PARTIAL, "partial")  # the reference earns 0.37, no more
    harbor_task(root, "full", PARTIAL, "done")
    harbor_task(root, "multi", MULTI, "done")
    return root


def test_a_wrapped_verifier_keeps_its_own_reward(harbor_set: Path, tmp_path: Path) -> None:
    """Harbor -> OpenReward wraps each task's test.sh; the rewards it writes stay exactly."""
    convert_format({"test": [str(harbor_set)]}, "harbor", "openreward", tmp_path / "or")
    sources = list(read_source(harbor_set, "harbor", split="test"))
    results = {r.folder.name: r for r in check_export(tmp_path / "or", QUICK, sources=sources)}
    assert {name: r.parity for name, r in results.items()} == {
        "partial": [],
        "full": [],
        "multi": [],
    }
    assert (results["partial"].oracle, results["partial"].null) == (0.37, 0.0)
    assert results["full"].status == "ok" and results["multi"].status == "ok"
    assert all(r.forged == {} for r in results.values())
    wrapped = (tmp_path / "or" / "test" / "partial" / "tests" / "test.sh").read_bytes()
    assert PARTIAL.encode() in wrapped  # the original, byte for byte, inside the wrapper
    assert with_exit_reward(wrapped) == wrapped  # wrapping again changes nothing


def test_parity_catches_a_wrapper_that_overwrites_the_reward(
    harbor_set: Path, tmp_path: Path
) -> None:
    """The writer as it was (exit-code lines appended after the task's own test.sh): the
    partial task's reference scores 1 instead of 0.37 and no solution 1 instead of 0, and check
    says so, with both rewards."""
    convert_format({"test": [str(harbor_set)]}, "harbor", "openreward", tmp_path / "or")
    appended = "\n_EXIT_CODE=$?\nif [ $_EXIT_CODE -eq 0 ]; then reward=1; else reward=0; fi\n"
    appended += "echo $reward > /logs/verifier/reward.txt\nexit $_EXIT_CODE\n"
    script = tmp_path / "or" / "test" / "partial" / "tests" / "test.sh"
    script.write_text(PARTIAL + appended)
    out = CliRunner().invoke(
        main,
        [
            *("check", str(tmp_path / "or"), "--against", str(harbor_set), "--from", "harbor"),
            *("--no-adversarial", "--json", "-q"),
        ],
    )
    assert out.exit_code == 1
    lines = {x["task"]: x for x in map(json.loads, out.output.splitlines()[:-1])}
    assert lines["test/partial"]["parity"] == [
        "oracle: source 0.37, export 1",
        "no solution: source 0, export 1",
    ]
    assert lines["test/full"]["parity"] == lines["test/multi"]["parity"] == []


def test_a_set_e_script_still_leaves_a_reward(tmp_path: Path) -> None:
    """Terminal-Bench -> Harbor: a failing run-tests.sh under `set -e` exits before any line
    after it; the wrapper runs it in a shell of its own and writes 0."""
    terminal_bench_task(tmp_path / "tb", "set-e")
    convert_format({"test": [str(tmp_path / "tb")]}, "terminal-bench", "harbor", tmp_path / "hb")
    sources = list(read_source(tmp_path / "tb", "terminal-bench", split="test"))
    [result] = check_export(tmp_path / "hb", QUICK, sources=sources)
    assert (result.status, result.oracle, result.null, result.parity) == ("ok", 1.0, 0.0, [])
    assert result.source_null == 0.0


def test_stale_rewards_go_before_the_tests_run() -> None:
    wrapped = with_exit_reward(b"#!/bin/bash\nexit 0")
    head, _, _ = wrapped.partition(b"exit 0")
    assert f"rm -f {REWARD_FILES}".encode() in head and wrapped.endswith(
        b"exit $_taskpack_status\n"
    )


# Every task kind taskpack writes a verifier for, from the real data: unit tests (HumanEval),
# numbers (GSM8K), multiple choice (the Science Exam), exact text (the Science Exam read as a
# plain table).
KINDS = {
    "unit tests": REAL_SETS["humaneval"],
    "numeric": REAL_SETS["gsm8k"],
    "multiple choice": REAL_SETS["science-exam"],
    "exact text": (
        "kaggle",
        REAL_SETS["science-exam"][1],
        {"id_column": "id", "prompt_column": "prompt", "answer_column": "answer"},
    ),
}


@pytest.mark.parametrize("fmt", ["harbor", "openreward"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_no_forger_scores_on_any_task_kind(tmp_path: Path, kind: str, fmt: str) -> None:
    reader, source, options = KINDS[kind]
    tasks = list(islice(read_source(source, reader, split="test", **options), 3))
    taskpack.write(tmp_path / "ts", {"test": tasks}, name="t")
    export(taskpack.open(tmp_path / "ts"), fmt, tmp_path / "out")
    results = check_export(tmp_path / "out", QUICK, sources=tasks)
    print(f"\n{kind} in {fmt}: " + "\n".join(summary(results)))  # the figures, with -s
    assert [(r.status, r.forged, r.parity) for r in results] == [("ok", {}, [])] * 3


def test_the_battery_catches_a_verifier_that_trusts_the_exit_status(tmp_path: Path) -> None:
    """A unit-test verifier of the kind taskpack wrote before: the code under test runs in the
    grading process, whose exit status is the reward. Every code forger scores 1 on it."""
    task = {
        "id": "add",
        "prompt": "Write add.",
        "solution": "def add(a, b):\n    return a + b\n",
        "reward": {"kind": "unit_tests", "entry_point": "add", "test_file": "test.py"},
        "files": [
            {"path": "test.py", "role": "tests", "data": b"assert add(1, 2) == 3\n"},
        ],
    }
    taskpack.write(tmp_path / "ts", {"test": [task]}, name="t")
    export(taskpack.open(tmp_path / "ts"), "harbor", tmp_path / "hb")
    naive = (
        "#!/bin/bash\nmkdir -p /logs/verifier\ncd /app\n"
        "python3 -c 'from solution import *; exec(open(\"/tests/test.py\").read())' "
        "&& echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
    )
    (tmp_path / "hb" / "test" / "add" / "tests" / "test.sh").write_text(naive)
    [result] = check_export(tmp_path / "hb", QUICK)
    assert result.status == "failed" and (result.oracle, result.null) == (1.0, 0.0)
    assert {"exit-0-on-import", "os-exit-in-call", "always-equal"} <= set(result.forged)
    assert "forged rewards: " in result.reason
    assert set(result.forged) <= set(FORGERS)


def test_a_forger_that_hangs_the_verifier_earned_nothing(tmp_path: Path) -> None:
    """A forger can stop a verifier that grades in its own process (SIGSTOP to its parent):
    the verifier then writes nothing before the timeout. That is no reward for the forger,
    not a task that cannot be checked: only the oracle and no solution must be graded."""
    hangs_on_strangers = (
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        'if [ -z "$(ls -A /app)" ]; then echo 0 > /logs/verifier/reward.txt\n'
        "elif grep -qx done /app/out.txt; then echo 1 > /logs/verifier/reward.txt\n"
        "else sleep 600; fi\n"
    )
    folder = harbor_task(tmp_path, "hang", hangs_on_strangers, "done")
    [result] = check_export(folder, Bounds(timeout=3))
    assert (result.status, result.oracle, result.null, result.forged) == ("ok", 1.0, 0.0, {})


def test_no_forger_scores_by_chance(tmp_path: Path) -> None:
    """A forger's answer is never a right one: not on tasks whose answer is 0, 1 or A (the
    GSM8K test set has answers 0 and 1, and a written "0" would have scored)."""
    tasks = [
        {"id": f"n{answer}", "prompt": "?", "answer": answer, "reward": {"kind": "numeric_match"}}
        for answer in ("0", "1")
    ]
    choices = [{"label": label, "text": label.lower()} for label in "AB"]
    tasks.append(
        {
            "id": "mc",
            "prompt": "?",
            "answer": "A",
            "reward": {"kind": "multiple_choice", "choices": choices},
        }
    )
    taskpack.write(tmp_path / "ts", {"test": tasks}, name="t")
    export(taskpack.open(tmp_path / "ts"), "harbor", tmp_path / "hb")
    results = check_export(tmp_path / "hb", QUICK)
    assert [(r.status, r.forged) for r in results] == [("ok", {})] * 3


def test_the_code_under_test_cannot_read_its_tests(tmp_path: Path) -> None:
    """HumanEval in both folder formats: `read-the-tests` (the code under test opens
    /tests/test.py, finds the assert for its input and returns the expected value) scores 0.
    With /tests left open to it, as the grader left it before, it scores 1 on all 5 tasks:
    the forger is real, and the battery would catch a grader that let it read."""
    from taskpack.rewards.trials import attempt, folder_side, forger, score

    reader, source, options = REAL_SETS["humaneval"]
    tasks = list(islice(read_source(source, reader, split="test", **options), 5))
    taskpack.write(tmp_path / "ts", {"test": tasks}, name="he")
    for fmt in ("harbor", "openreward"):
        export(taskpack.open(tmp_path / "ts"), fmt, tmp_path / fmt)
        folders = sorted(p for p in (tmp_path / fmt / "test").iterdir() if p.is_dir())
        assert len(folders) == 5

        def scores(folder: Path) -> float:
            side = folder_side(folder)
            cheat = {"solve.sh": (forger("read-the-tests", side), 0o755)}
            reward = attempt(side, cheat, QUICK)
            return -1.0 if reward is None else score(reward)

        assert [scores(f) for f in folders] == [0.0] * 5, fmt
        for folder in folders:
            grader = folder / "tests" / "grade.py"
            text = grader.read_text()
            assert "os.chmod(TESTS, 0o700)" in text
            grader.write_text(text.replace("os.chmod(TESTS, 0o700)", "pass"))
        assert [scores(f) for f in folders] == [1.0] * 5, fmt
