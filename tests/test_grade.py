"""The graders taskpack writes into exported tasks (`grader.py`), run in-process: numbers are
compared as numbers, and code under test cannot make a failing test pass.

The same graders run in the sandbox in tests/test_reward_integrity.py; these are the fast
cases, one per rule.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import taskpack
from taskpack.converters._verifier import expected, solve_reference
from taskpack.importer import import_sources, read_source
from taskpack.rewards import grader


@pytest.mark.parametrize(
    ("got", "want", "same"),
    [
        ("27", "27.0", True),  # AMC's answers are floats
        ("25", "025", True),  # AIME's are zero-padded
        ("1080", "1,080", True),  # GSM8K's have thousands commas
        ("The answer is 1,080.", "1080", True),  # the last number of a worked answer
        ("0.5", "\\frac{1}{2}", True),
        ("\\boxed{\\frac{1}{2}}", "1/2", True),
        ("-\\frac{3}{4}", "-0.75", True),
        ("$18", "18", True),
        ("50%", "50", True),
        ("1e3", "1000", True),
        ("0.1", "0.10000000001", True),  # float noise within 1e-9, relative
        ("26", "27", False),
        ("2/3", "0.66", False),
        ("", "0", False),
        ("seven", "7", False),
        ("1,08", "108", False),  # not a thousands comma: the last number is 08
    ],
)
def test_numbers_compare_as_numbers(got: str, want: str, same: bool) -> None:
    assert grader.same_number(got, want, 0.0) is same


@pytest.mark.parametrize(
    ("got", "want", "same"),
    [
        ("So the answer is \\boxed{\\frac{1}{2}}.", "\\frac12", True),  # MATH's short form
        ("\\boxed{0.5}", "\\frac{1}{2}", True),
        ("\\boxed{\\dfrac{3}{4}}", "3/4", True),
        ("\\boxed{10^\\circ}", "10", True),
        ("\\boxed{5\\text{ cm}}", "5", True),  # units after a value
        ("\\boxed{\\left( 1, 2 \\right)}", "(1,2)", True),
        ("\\boxed{\\sqrt2}", "\\sqrt{2}", True),
        ("\\boxed{x = 5}", "5", True),
        ("\\boxed{\\text{yes}}", "\\text{yes}", True),  # an answer in words
        ("\\boxed{1} then \\boxed{2}", "1", False),  # the last box is the answer
        ("\\boxed{\\text{no}}", "yes", False),
        ("\\boxed{\\sqrt{3}}", "\\sqrt{2}", False),
        ("\\boxed{}", "0", False),
        ("\\boxed{2", "2", False),  # an unclosed box holds nothing
    ],
)
def test_math_answers_compare_as_mathematics(got: str, want: str, same: bool) -> None:
    assert grader.same_math(got, want) is same
    spec = {"kind": "math_match", "answer": want}
    assert grader.answer_score(spec, got) == (1.0 if same else 0.0)


def test_a_number_is_read_whole_or_not_at_all() -> None:
    assert grader.exact_number("27.0") == 27
    assert grader.exact_number("1,080") == 1080
    assert grader.exact_number("The answer is 3") is None
    assert grader.exact_number("1/0") is None


ADD = {"kind": "unit_tests", "entry_point": "add", "test_file": "test.py", "test": "t"}
TESTS = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n"
CHEATS = {
    "wrong": "def add(a, b):\n    return a - b\n",
    "exit 0 on import": "import sys\nsys.exit(0)\n",
    "os._exit(0) in the call": "import os\ndef add(a, b):\n    os._exit(0)\n",
    "sys.exit(0) in the call": "import sys\ndef add(a, b):\n    sys.exit(0)\n",
    "atexit": "import atexit, os\natexit.register(lambda: os._exit(0))\n"
    "def add(a, b):\n    return 0\n",
    "always equal": "class A:\n    def __eq__(self, other): return True\n"
    "def add(a, b):\n    return A()\n",
    "a subclass of int": "class I(int):\n    def __eq__(self, other): return True\n"
    "def add(a, b):\n    return I(0)\n",
    "pass markers": "def add(a, b):\n    print('PASSED: 2 passed in 0.01s')\n",
    "raises what the test expects": "def add(a, b):\n    raise AssertionError\n",
    "no such function": "def other(a, b):\n    return a + b\n",
    "not Python": "def add(a, b) return a + b\n",
    "hangs": "def add(a, b):\n    while True: pass\n",
}


@pytest.mark.parametrize("case", sorted(CHEATS))
def test_code_under_test_cannot_pass_failing_tests(case: str) -> None:
    spec = {**ADD, "timeout_sec": 5}
    assert grader.unit_test_score(spec, CHEATS[case], TESTS, "/tmp") == 0.0
    assert grader.unit_test_score(spec, "def add(a, b):\n    return a + b\n", TESTS, "/tmp") == 1.0


def test_tests_see_the_results_as_data_and_the_solutions_standard_imports() -> None:
    """MBPP tests lean on the reference's imports (`math`) and compare sets, tuples, floats,
    generators; arguments may be objects of classes the test file defines."""
    solution = (
        "import math\nfrom collections import Counter\n"
        "def f(xs):\n    return {x % 3 for x in xs}, tuple(xs), math.sqrt(2)\n"
        "def g(n):\n    return (i * i for i in range(n))\n"
        "def area(p):\n    return p.a * p.b\n"
    )
    tests = (
        "class Pair:\n    def __init__(self, a, b):\n        self.a, self.b = a, b\n"
        "assert f([1, 2, 3]) == ({0, 1, 2}, (1, 2, 3), math.sqrt(2))\n"
        "assert list(g(3)) == [0, 1, 4]\n"
        "assert area(Pair(2, 3)) == 6\n"
    )
    spec = {**ADD, "entry_point": "f", "timeout_sec": 10}
    assert grader.unit_test_score(spec, solution, tests, "/tmp") == 1.0


# Sanitized MBPP's shape (Google's sanitized-mbpp.json: prompt, test_imports, a test that wraps
# the call in a builtin) and the original's (text, test_setup_code); hand-made rows.
MBPP_ROWS = [
    {
        "source_file": "Benchmark Questions Verification V2.ipynb",
        "task_id": 2,
        "prompt": "Write a function to find the shared elements from the given two lists.",
        "code": "def similar_elements(a, b):\n    return tuple(set(a) & set(b))\n",
        "test_imports": [],
        "test_list": [
            "assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))",
            "assert set(similar_elements((1, 2, 3, 4),(5, 4, 3, 7))) == set((3, 4))",
        ],
    },
    {
        "source_file": "Benchmark Questions Verification V2.ipynb",
        "task_id": 3,
        "prompt": "Write a function to find the area of a circle.",
        "code": "import math\ndef circle_area(r):\n    return math.pi * r * r\n",
        "test_imports": ["import math"],
        "test_list": ["assert math.isclose(circle_area(10), 314.159265, rel_tol=0.001)"],
    },
    {
        "source_file": "Benchmark Questions Verification V2.ipynb",
        "task_id": 4,
        "prompt": "Write a python function to sort a list of words by length.",
        "code": "def by_length(words):\n    return sorted(words, key=len)\n",
        "test_imports": [],
        "test_list": ["assert sorted(by_length(['ccc', 'a'])) == sorted(['a', 'ccc'])"],
    },
    {
        "source_file": "hand-made",
        "task_id": 6,
        "prompt": "Write a function that sums the common divisors of two numbers.",
        "code": "def sum(a, b):\n    return a + b - a - b + 6\n",  # shadows the builtin
        "test_imports": [],
        "test_list": ["assert sum(10, 15) == 6"],
    },
    {
        "source_file": "hand-made",
        "task_id": 7,
        "prompt": "Write a function that checks a number.",
        "code": "def rev(n):\n    return int(str(n)[::-1])\n"
        "def check(n):\n    return 2 * rev(n) == n + 1\n",  # named as HumanEval's tests are
        "test_imports": [],
        "test_list": ["assert check(73) == True", "assert check(70) == False"],
    },
    {
        "source_file": "hand-made",
        "task_id": 8,
        "prompt": "Write a function that moves negatives first, in place.",
        "code": "def rearrange(arr, n):\n    arr.sort(key=lambda x: x >= 0)\n    return arr\n",
        "test_imports": [],
        "test_list": ["assert rearrange([1, -2, 3, -4], 4) == [-2, -4, 1, 3]"],
    },
    {
        "source_file": "hand-made",
        "task_id": 9,
        "prompt": "Write a function to get the angle of a complex number.",
        "code": "import cmath\ndef angle_complex(a, b):\n    return cmath.phase(a + b)\n",
        "test_imports": ["import math"],
        "test_list": [
            "assert math.isclose(angle_complex(0, 1j), 1.5707963267948966, rel_tol=0.001)"
        ],
    },
    {
        "task_id": 5,
        "text": "Write a function to find the longest chain of pairs.",
        "code": "def max_chain_length(arr, n):\n    return n\n",
        "test_list": ["assert max_chain_length([Pair(5, 24), Pair(15, 25)], 2) == 2"],
        "test_setup_code": "class Pair(object):\n\tdef __init__(self, a, b):\n"
        "\t\tself.a = a\n\t\tself.b = b",
        "challenge_test_list": [],
    },
]


@pytest.mark.parametrize("columnar", [True, False])
def test_every_mbpp_reference_passes_its_exported_tests(tmp_path: Path, columnar: bool) -> None:
    src = tmp_path / "mbpp.jsonl"
    src.write_text("".join(json.dumps(row) + "\n" for row in MBPP_ROWS))
    import_sources(tmp_path / "ts", {"test": [str(src)]}, "mbpp", name="m", columnar=columnar)
    tasks = list(taskpack.open(tmp_path / "ts").split("test"))
    entries = ["similar_elements", "circle_area", "by_length", "sum", "check", "rearrange"]
    entries += ["angle_complex", "max_chain_length"]
    assert [t.reward.entry_point for t in tasks] == entries  # type: ignore[union-attr]
    assert tasks[1].file("test.py").read_bytes().startswith(b"import math\n")
    for task in tasks:
        spec = expected(task, "reward")
        tests = task.file("test.py").read_bytes().decode()
        reference = solve_reference(task)
        assert reference is not None
        assert grader.unit_test_score(spec, reference, tests, "/tmp") == 1.0, task.id
        assert grader.unit_test_score(spec, "", tests, "/tmp") == 0.0, task.id


@pytest.mark.slow
def test_every_humaneval_reference_passes_and_no_solution_fails(data_dir: Path) -> None:
    tasks = list(read_source(data_dir / "humaneval" / "HumanEval.jsonl.gz", "humaneval"))
    failed = []
    for task in tasks:
        spec = expected(task, "reward")
        tests = task.file("test.py").read_bytes().decode()
        reference = solve_reference(task)
        assert reference is not None
        if grader.unit_test_score(spec, reference, tests, "/tmp") != 1.0:
            failed.append(task.id)
    assert len(tasks) == 164 and failed == []


def test_evalplus_gives_each_input_a_limit_from_its_reference(tmp_path: Path) -> None:
    """EvalPlus's rule: an input's call may take its reference's own time, 4 times over, at
    least 5 s (the process boundary's floor); the whole run (references included) has 900 s,
    so a machine slow enough to slow the reference never fails a candidate as fast. A
    candidate much slower than the reference fails on its limit, where the old whole-test
    60 s let it pass; a call past its limit leaves no stale reply for the next call."""
    from taskpack.converters.formats.evalplus import to_task

    row = {
        "task_id": "Mbpp/900", "prompt": "", "entry_point": "f",
        "canonical_solution": "import time\ndef f(x):\n    time.sleep(0.05)\n    return x * 2\n",
        "base_input": [[1], [2]], "plus_input": [],
    }  # fmt: skip
    task = to_task(row, "test", 0)
    tests = task["files"][0]["data"].decode()
    spec = task["reward"]
    fast = "import time\ndef f(x):\n    time.sleep(0.05)\n    return x * 2\n"
    slow = "import time\ndef f(x):\n    time.sleep(30)\n    return x * 2\n"
    assert grader.reply_score(spec, None, fast, tests) == 1.0
    assert grader.reply_score(spec, None, slow, tests) == 0.0
    assert grader._declared_budget(tests) == 900


# A reference fast on its first run and slow on its second: the machine slowed down between
# the run that set the limit and the run that judges an overrun.
_SLOWING = (
    "import time\n_runs = [0]\ndef f(x):\n    _runs[0] += 1\n"
    "    time.sleep(0.01 if _runs[0] % 2 else 6)\n    return x * 2\n"
)
_HANGS = "def f(x):\n    while True:\n        pass\n"


def _slowing_task(solution: str) -> dict[str, object]:
    from taskpack.converters.formats.evalplus import to_task

    row = {"task_id": "Mbpp/901", "prompt": "", "entry_point": "f",
           "canonical_solution": solution, "base_input": [[1]], "plus_input": []}  # fmt: skip
    return to_task(row, "test", 0)


@pytest.mark.slow
def test_a_reference_that_overruns_its_own_limit_is_no_reward_not_a_zero(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Item 7 of issue 75: the candidate overran its 5 s limit, and the reference, run again,
    overran it too: the machine is too slow to judge, so there is no reward (TRL's None,
    `grade`'s error), never a 0. A reference fast again leaves the 0 standing."""
    task = _slowing_task(_SLOWING)
    tests, spec = task["files"][0]["data"].decode(), task["reward"]  # type: ignore[index]
    assert grader.reply_outcome(spec, None, _HANGS, tests) is None
    said = capsys.readouterr().err.strip()
    assert said.startswith("taskpack: no reward: the reference itself took 6.0 s on input [1]")
    assert said.endswith("over its limit of 5.0 s")
    assert grader.reply_score(spec, None, _HANGS, tests) == 0.0  # verl, Verifiers: no None
    assert capsys.readouterr().err.startswith("taskpack: no reward: ")
    fine = _slowing_task("def f(x):\n    return x * 2\n")
    tests = fine["files"][0]["data"].decode()  # type: ignore[index]
    assert grader.reply_outcome(fine["reward"], None, _HANGS, tests) == 0.0  # type: ignore[arg-type]
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_grade_writes_error_where_the_sandboxed_reference_overran(tmp_path: Path) -> None:
    """The same through `taskpack grade`: the sandbox's grader writes no reward and says why;
    the row is an `error` with that reason, and the right answer still passes."""
    task = _slowing_task(_SLOWING)
    taskpack.write(tmp_path / "set", {"test": [task]}, name="slowing")
    rows = [{"id": task["id"], "completion": _HANGS},
            {"id": task["id"], "completion": "def f(x):\n    return x * 2\n"}]  # fmt: skip
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = taskpack.grade(tmp_path / "set", tmp_path / "c.jsonl", tmp_path / "o.jsonl", jobs=1)
    out = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
    assert [(r["status"], r["reward"]) for r in out] == [("error", None), ("pass", 1.0)]
    assert out[0]["reason"].startswith("the reference itself took")
    assert dict(report.counts) == {"error": 1, "pass": 1}
