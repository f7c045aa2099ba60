"""Programs judged on input/output tests (`io_tests`): DeepCoder's rows in both shapes, read
into one test encoding; LiveCodeBench's comparison; the program run on each test's input, as
the candidate's user, bounded; graded by `grade` and `check` with the cheats that fit a
program (exit 0, print nothing, read the expected output from the test files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import taskpack
from taskpack.converters._sources.records import RowError
from taskpack.converters.formats.deepcoder import to_task
from taskpack.importer import read_source
from taskpack.rewards import grader

from .conftest import DATA

CONTESTS = DATA / "code_rl" / "deepcoder" / "code_contests.json"
SUM = "a, b = map(int, input().split())\nprint(a + b)\n"
# The first CodeContests problem of the file: asc-desc-ending order of book titles.
BOOKS = (
    "import sys\n"
    "data = sys.stdin.read().split()\n"
    "n, m = int(data[0]), int(data[1])\n"
    "titles = data[2:2 + n]\n"
    "key = lambda i: [ord(c) if j % 2 == 0 else -ord(c) for j, c in enumerate(titles[i])]\n"
    "print(' '.join(str(i + 1) for i in sorted(range(n), key=key)))\n"
)


def _tests(task: dict[str, object]) -> str:
    return task["files"][0]["data"].decode()  # type: ignore[index,no-any-return]


def test_deepcoders_code_contests_file_reads_every_test() -> None:
    tasks = list(read_source(CONTESTS, "deepcoder", split="test"))
    assert len(tasks) == 165
    rows = json.loads(CONTESTS.read_text(encoding="utf-8"))
    for task, row in zip(tasks, rows, strict=True):
        assert task.reward.kind == "io_tests" and task.reward.call is None
        cases = [json.loads(line) for line in task.file("tests.jsonl").read_bytes().splitlines()]
        assert [c["input"] for c in cases] == row["tests"]["inputs"]
        assert [c["output"] for c in cases] == row["tests"]["outputs"]
    assert sum(len(r["tests"]["inputs"]) for r in rows) == 1837


def test_both_shapes_and_both_call_encodings_read_to_one() -> None:
    """A LiveCodeBench functional row (one JSON value an argument a line, the function named
    in metadata) and an APPS call-based row (argument lists, outputs wrapped in a list) give
    the same tests; stdin rows as a JSON string or parsed, the same."""
    lcb = {"question": "Add.", "metadata": json.dumps({"func_name": "add"}),
           "tests": json.dumps([{"input": "1\n2", "output": "3", "testtype": "functional"},
                                {"input": "[1]\n[2]", "output": "[1, 2]",
                                 "testtype": "functional"}])}  # fmt: skip
    apps = {"problem": "Add.", "tests": {"fn_name": "add", "inputs": [[1, 2], [[1], [2]]],
                                         "outputs": [[3], [[1, 2]]]}}  # fmt: skip
    a, b = to_task(lcb, "train", 0), to_task(apps, "train", 1)
    assert a["reward"] == b["reward"] == {"kind": "io_tests", "test_file": "tests.jsonl",
                                          "call": "add"}  # fmt: skip
    assert (
        _tests(a)
        == _tests(b)
        == ('{"args": [1, 2], "output": 3}\n{"args": [[1], [2]], "output": [1, 2]}\n')
    )
    stdin = [{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]
    parsed = to_task({"problem": "Add.", "tests": stdin}, "t", 0)
    text = to_task({"problem": "Add.", "tests": json.dumps(stdin)}, "t", 0)
    assert _tests(parsed) == _tests(text) == '{"input": "1 2\\n", "output": "3\\n"}\n'


@pytest.mark.parametrize(
    ("row", "said"),
    [
        ({"problem": "x", "tests": [{"input": "1"}]}, "tests[0]: no output"),
        ({"problem": "x", "tests": "[{"}, "field 'tests': not JSON"),
        ({"problem": "x", "tests": [{"input": "1", "output": "1", "testtype": "functional"}]},
         "tests[0]: a functional test, but no metadata.func_name"),
        ({"problem": "x", "tests": {"inputs": ["1"], "outputs": []}},
         "field 'tests': 1 inputs but 0 outputs"),
        ({"tests": []}, "field 'problem' (or 'question'): missing or empty"),
    ],
)  # fmt: skip
def test_bad_rows_get_one_line(row: dict[str, object], said: str) -> None:
    with pytest.raises(RowError, match=None) as e:
        to_task(row, "t", 0)
    assert str(e.value).startswith(said)


@pytest.mark.parametrize(
    ("got", "want", "same"),
    [
        ("5 2 1 3 4\n", "5 2 1 3 4 \n", True),  # trailing blank and newline
        ("  3\n\n", "3", True),
        ("3.0\n", "3", True),  # numbers respelled
        ("1e-6\n", "0.000001", True),
        ("0.30000001\n", "0.3", False),  # LiveCodeBench compares decimals exactly
        ("YES\n", "yes\n", False),  # case kept
        ("1\n2\n", "1\n", False),  # an extra line
        ("1 2\n", "1\n2\n", False),
        ("", "0", False),
    ],
)
def test_outputs_are_compared_as_livecodebench_compares_them(
    got: str, want: str, same: bool
) -> None:
    assert grader.lcb_same(got, want) is same


CHEATS = {
    "wrong": "a, b = map(int, input().split())\nprint(a * b)\n",
    "exits 0 first": "import sys\nsys.exit(0)\n" + SUM,
    "prints nothing": "pass\n",
    "right, then fails": SUM + "raise SystemExit(1)\n",
    "hangs": "while True:\n    pass\n",
    "floods": "while True:\n    print('3' * 4096)\n",
    "forks a printer": "import os, time\nif os.fork() == 0:\n    time.sleep(0.5)\n    print(3)\n",
}
TESTS = '{"input": "1 2\\n", "output": "3\\n"}\n{"input": "5 7\\n", "output": "12"}\n'
SPEC = {"kind": "io_tests", "test_file": "tests.jsonl", "time_limit_sec": 2}


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_a_program_passes_only_by_printing_each_right_output(cheat: str) -> None:
    assert grader.reply_score(SPEC, None, f"```python\n{SUM}```", TESTS) == 1.0
    assert grader.reply_score(SPEC, None, f"```python\n{CHEATS[cheat]}```", TESTS) == 0.0


def test_a_program_runs_under_livecodebenchs_imports() -> None:
    """LiveCodeBench's testing_util runs a program under star imports of the standard
    modules contest code uses: a program that relies on them passes there, and here."""
    code = "n = int(input())\nd = defaultdict(int)\nd[n] += 1\nprint(int(sqrt(n)) + d[n])\n"
    tests = '{"input": "16\\n", "output": "5\\n"}\n'
    assert grader.reply_score(SPEC, None, code, tests) == 1.0
    calls = '{"args": [[3, 1, 2]], "output": [1, 2, 3]}\n'
    code = "def f(xs):\n    return list(sorted(xs, key=cmp_to_key(lambda a, b: a - b)))\n"
    assert grader.reply_score({**SPEC, "call": "f"}, None, code, calls) == 1.0


def test_call_based_tests_call_the_function_or_solutions_method() -> None:
    tests = '{"args": [[1, 2, 3]], "output": [3, 2, 1]}\n{"args": [[]], "output": []}\n'
    spec = {**SPEC, "call": "rev"}
    for code, reward in [
        ("def rev(xs):\n    return xs[::-1]\n", 1.0),
        ("def rev(xs):\n    return tuple(reversed(xs))\n", 1.0),  # a tuple is JSON's list
        ("class Solution:\n    def rev(self, xs):\n        return xs[::-1]\n", 1.0),
        ("def rev(xs):\n    return xs\n", 0.0),
        ("import os\ndef rev(xs):\n    os._exit(0)\n", 0.0),
    ]:
        assert grader.reply_score(spec, None, code, tests) == reward, code


def test_a_task_that_needs_a_special_judge_is_not_scored(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = {**SPEC, "special_judge": True}
    assert grader.reply_outcome(spec, None, SUM, TESTS) is None
    assert "needs a special judge" in capsys.readouterr().err


def test_a_real_contest_problem_is_solved_and_failed() -> None:
    task = next(iter(read_source(CONTESTS, "deepcoder", split="test")))
    tests = task.file("tests.jsonl").read_bytes().decode()
    spec = task.reward.model_dump(mode="json")
    assert grader.reply_score(spec, None, f"Sort them:\n```python\n{BOOKS}```", tests) == 1.0
    assert grader.reply_score(spec, None, BOOKS.replace("-ord", "ord"), tests) == 0.0


def _set(tmp_path: Path) -> Path:
    cases = [json.loads(t) for t in TESTS.splitlines()]
    row = {"problem": "Print a + b.", "tests": cases, "solutions": [SUM], "id": "sum"}
    tasks = [to_task(row, "test", 0)]
    taskpack.write(tmp_path / "set", {"test": tasks}, name="sums")
    return tmp_path / "set"


@pytest.mark.slow
def test_grade_runs_programs_in_the_sandbox(tmp_path: Path) -> None:
    folder = _set(tmp_path)
    replies = [f"```python\n{SUM}```", *(f"```python\n{c}```" for c in CHEATS.values())]
    source = tmp_path / "c.jsonl"
    source.write_text("".join(json.dumps({"id": "sum", "completion": r}) + "\n" for r in replies))
    report = taskpack.grade(folder, source, tmp_path / "o.jsonl", jobs=2)
    rows = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [r["status"] for r in rows] == ["pass"] + ["fail"] * len(CHEATS)
    assert dict(report.counts) == {"pass": 1, "fail": len(CHEATS)}


@pytest.mark.slow
def test_check_runs_an_exported_contest_task_against_every_forger(tmp_path: Path) -> None:
    from taskpack.exporter import export
    from taskpack.rewards.trials import check_task

    export(taskpack.open(_set(tmp_path)), "harbor", tmp_path / "harbor")
    folder = next(p for p in (tmp_path / "harbor").rglob("task.toml")).parent
    result = check_task(folder)
    assert (result.status, result.oracle, result.null) == ("ok", 1.0, 0.0), result.reason
    assert result.forged == {}


@pytest.mark.slow
@pytest.mark.conformance
def test_verls_own_reward_loading_scores_an_exported_contest_problem(tmp_path: Path) -> None:
    """A DeepCoder problem exported to verl: verl 0.9.1's reward loading (its venv) takes the
    shipped function from `verl_data.yaml` and scores the right program 1, a wrong one and one
    exiting 0 first 0."""
    from taskpack.exporter import export

    from .test_conformance import run_check

    task = next(iter(read_source(CONTESTS, "deepcoder", split="test")))
    taskpack.write(tmp_path / "set", {"train": [task.model_dump()]}, name="contests")
    export(taskpack.open(tmp_path / "set"), "verl", tmp_path / "v")
    parquet = str((tmp_path / "v" / "train.parquet").absolute())
    replies = [f"```python\n{BOOKS}```", BOOKS.replace("-ord", "ord"), f"exit(0)\n{BOOKS}"]
    (tmp_path / "r.json").write_text(
        json.dumps([{"file": parquet, "row": 0, "reply": r} for r in replies])
    )
    config = str(tmp_path / "v" / "verl_data.yaml")
    out = run_check("verl", "check_verl_reward.py", config, str(tmp_path / "r.json"))
    assert out["scores"] == [1.0, 0.0, 0.0]


@pytest.mark.slow
@pytest.mark.conformance
def test_skyrl_gyms_own_make_scores_an_exported_contest_problem(tmp_path: Path) -> None:
    """The SkyRL export ships the environment for `io_tests`: in skyrl-gym's venv,
    PromptDataset loads the row and `skyrl_gym.make` of its env_class scores the right program
    1, a wrong one 0."""
    from taskpack.exporter import export

    from .test_conformance import run_check

    task = next(iter(read_source(CONTESTS, "deepcoder", split="test")))
    taskpack.write(tmp_path / "set", {"test": [task.model_dump()]}, name="contests")
    result = export(taskpack.open(tmp_path / "set"), "skyrl", tmp_path / "sky")
    assert not any("io_tests" in loss for loss in result.losses), result.losses
    replies = [[0, f"```python\n{BOOKS}```"], [0, BOOKS.replace("-ord", "ord")]]
    (tmp_path / "r.json").write_text(json.dumps(replies))
    parquet = str(tmp_path / "sky" / "test.parquet")
    out = run_check("skyrl", "check_skyrl_envs.py", parquet, str(tmp_path / "r.json"))
    assert out["env_classes"] == ["io_tests"]
    assert out["rewards"] == [[0, 1.0], [0, 0.0]]


@pytest.mark.slow
@pytest.mark.conformance
def test_verifiers_04_scores_an_exported_contest_problem(tmp_path: Path) -> None:
    """A Verifiers 0.4 taskset package of contest problems: verifiers' own `load_taskset`
    loads it, its scoring path gives the reference program 1 and a wrong reply 0, and
    `validate` passes; the package reads back to the same tasks."""
    from taskpack.exporter import export

    from .test_conformance import installed, run_check

    task = next(iter(read_source(CONTESTS, "deepcoder", split="test")))
    taskpack.write(tmp_path / "set", {"test": [{**task.model_dump(), "solution": BOOKS}]},
                   name="contests")  # fmt: skip
    result = export(taskpack.open(tmp_path / "set"), "verifiers", tmp_path / "vf",
                    options={"package": "contests_tp"})  # fmt: skip
    assert result.losses == []
    env = installed(tmp_path / "vf", tmp_path)
    out = run_check("verifiers04", "check_verifiers_taskset.py", "contests_tp", env=env)
    assert (out["reference"], out["wrong"], out["valid"]) == ([1.0], [0.0], [True])
    back = list(read_source(tmp_path / "vf", "verifiers", split="test"))
    assert [t.reward for t in back] == [taskpack.open(tmp_path / "set").split("test")[0].reward]
    assert back[0].file("tests.jsonl").read_bytes() == task.file("tests.jsonl").read_bytes()


@pytest.mark.slow
@pytest.mark.conformance
def test_nemo_gyms_code_gen_grades_an_exported_contest_problem(tmp_path: Path) -> None:
    """The NeMo Gym export writes `verifier_metadata.unit_tests` as its `code_gen` server
    reads it: that server's own model, code extraction and LiveCodeBench check (its venv)
    score the right program 1 and a wrong one 0, stdin and call-based alike."""
    from taskpack.exporter import export

    from .test_conformance import run_check

    task = next(iter(read_source(CONTESTS, "deepcoder", split="test")))
    tests = {"fn_name": "rev", "inputs": [[[1, 2, 3]], [[]]], "outputs": [[[3, 2, 1]], [[]]]}
    call = to_task({"problem": "Reverse.", "id": "rev", "tests": tests}, "test", 1)
    taskpack.write(tmp_path / "set", {"test": [task.model_dump(), call]}, name="contests")
    result = export(taskpack.open(tmp_path / "set"), "nemo", tmp_path / "nemo")
    assert not any("reward" in loss for loss in result.losses), result.losses
    replies = [
        [0, f"```python\n{BOOKS}```"],
        [0, f"```python\n{BOOKS.replace('-ord', 'ord')}```"],
        [1, "```python\nclass Solution:\n    def rev(self, xs):\n        return xs[::-1]\n```"],
        [1, "```python\nclass Solution:\n    def rev(self, xs):\n        return xs\n```"],
    ]
    (tmp_path / "r.json").write_text(json.dumps(replies))
    rows = str(tmp_path / "nemo" / "test.jsonl")
    out = run_check("nemo", "check_nemo_code_gen.py", rows, str(tmp_path / "r.json"))
    assert out["rewards"] == [1.0, 0.0, 1.0, 0.0]
    # and taskpack's own grader agrees on the same replies
    ours = [grader.reply_score(t.reward.model_dump(mode="json"), None, reply,
                               t.file("tests.jsonl").read_bytes().decode())
            for row, reply in replies
            for t in [taskpack.open(tmp_path / "set").split("test")[row]]]  # fmt: skip
    assert ours == out["rewards"]
