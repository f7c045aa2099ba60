"""EvalPlus (tests/fixtures/evalplus, hand-made in the release files' shape): the task's test
runs the reference against the candidate on the base and plus inputs with the set's tolerance
and its special rules, graded by taskpack's grader (the code under test in a child process),
and its Harbor export passes `check`: reference 1, no solution 0, every forger 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskpack.converters._verifier import solve_reference
from taskpack.converters.formats.evalplus import argument_shapes
from taskpack.exporter import convert_format
from taskpack.importer import read_source
from taskpack.rewards import grader
from taskpack.rewards.trials import Bounds, check_task

FIXTURES = Path(__file__).parent / "fixtures" / "evalplus"
TASKS = {
    t.id: t
    for name in ("HumanEvalPlus.jsonl", "MbppPlus.jsonl")
    for t in read_source(FIXTURES / name, "evalplus", split="test")
}
# Candidates: the reference passes; `plus only` is right on every base input and wrong on a
# plus input (what the plus inputs are for); `near` differs within the tolerance.
CANDIDATES: dict[str, dict[str, tuple[str, float]]] = {
    "HumanEval/2": {
        "near": ("def truncate_number(number):\n    return number % 1.0 + 1e-9\n", 1.0),
        "off": ("def truncate_number(number):\n    return number % 1.0 + 1e-3\n", 0.0),
        "plus only": (
            "def truncate_number(number):\n    return 0.0 if number > 999 else number % 1.0\n",
            0.0,
        ),
    },
    "HumanEval/13": {
        "plus only": (
            "def greatest_common_divisor(a, b):\n    return 1 if 0 in (a, b) else __import__("
            "'math').gcd(a, b)\n",
            0.0,
        ),
        "int as float": (
            "def greatest_common_divisor(a, b):\n    return float(__import__('math').gcd(a, b))\n",
            1.0,  # EvalPlus: 5 == 5.0 is an exact match
        ),
    },
    "Mbpp/2": {  # tuples in, a tuple out, compared as sets
        "other order": (
            "def similar_elements(a, b):\n"
            "    return tuple(sorted(set(a) & set(b), reverse=True))\n",
            1.0,
        ),
        "needs tuples": (
            "def similar_elements(a, b):\n"
            "    return tuple(x for x in a + b if x in a and x in b)\n",
            1.0,  # a + b: tuples, as the set's own test passes them (lists would work too)
        ),
        "plus only": (
            "def similar_elements(a, b):\n"
            "    return (a[0],) if not b else tuple(set(a) & set(b))\n",
            0.0,
        ),
    },
    "Mbpp/17": {
        "plus only": ("def square_perimeter(a):\n    return 4 * abs(a)\n", 0.0),
    },
}


def score(task: Any, code: str, tmp_path: Path) -> float:
    reward = task.reward
    spec = {"entry_point": reward.entry_point, "test_file": reward.test_file}
    tests = task.file(reward.test_file).read_bytes().decode()
    return grader.unit_test_score(spec, code, tests, str(tmp_path))


def test_rows_map_to_unit_test_tasks() -> None:
    task = TASKS["Mbpp/2"]
    assert task.reward is not None and task.reward.kind == "unit_tests"
    assert task.reward.entry_point == "similar_elements"
    assert "base_input" not in task.metadata and task.metadata["atol"] == 0
    assert task.metadata["code"].startswith("def similar_elements")
    test = task.file("test.py").read_bytes().decode()
    assert "5 base and\nplus inputs" in test and "as sets" in test


def test_the_set_s_own_tests_give_the_arguments_their_containers() -> None:
    tests = ["assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))"]
    assert argument_shapes(tests, "similar_elements") == [["tuples"]] * 2
    nested = ["assert f([(1, 'a'), (2, [3])], {1, 2}, ((1, 2), 'x'), 'y', 1j) == 3"]
    assert argument_shapes(nested, "f") == [
        ["list", ["tuples"]],
        ["set", "number"],
        ["tuples"],
        None,
        "complex",
    ]


@pytest.mark.parametrize("task_id", sorted(TASKS))
def test_the_reference_passes_and_candidates_score_as_evalplus_would(
    task_id: str, tmp_path: Path
) -> None:
    task = TASKS[task_id]
    reference = solve_reference(task)
    assert reference is not None and score(task, reference, tmp_path) == 1.0
    assert score(task, f"def {task.reward.entry_point}(*a):\n    return None\n", tmp_path) == 0.0
    for name, (code, expected) in CANDIDATES[task_id].items():
        assert score(task, code, tmp_path) == expected, name


def passes_check_with_every_forger(source: Path, out: Path) -> None:
    """Exported to Harbor, every task: reference 1, no solution 0, every forger 0."""
    convert_format({"test": [str(source)]}, "evalplus", "harbor", out)
    for folder in sorted(p for p in (out / "test").iterdir() if p.is_dir()):
        result = check_task(folder, Bounds(timeout=120))
        outcome = (result.status, result.oracle, result.null, result.forged)
        assert outcome == ("ok", 1.0, 0.0, {}), result


@pytest.mark.slow
def test_exports_pass_check_with_every_forger(tmp_path: Path) -> None:
    for name in ("HumanEvalPlus.jsonl", "MbppPlus.jsonl"):
        passes_check_with_every_forger(FIXTURES / name, tmp_path / name)


# Rows of the shapes whose references once scored 0 against their own tests (fixtures/README):
# an entry point named `check` (which the test's own check() shadowed), complex numbers stored
# as text, tuples nested at any depth, `re.Match` results, and a result of a million tuples.
FALSE_ZEROS = {
    t.id: t for t in read_source(FIXTURES / "MbppPlusFalseZeros.jsonl", "evalplus", split="test")
}
SANITIZED = Path(__file__).parent / "fixtures" / "mbpp" / "sanitized_false_zeros.jsonl"


@pytest.mark.parametrize("task_id", sorted(FALSE_ZEROS))
def test_no_false_zero_on_the_shapes_that_gave_one(task_id: str, tmp_path: Path) -> None:
    task = FALSE_ZEROS[task_id]
    reference = solve_reference(task)
    assert reference is not None and score(task, reference, tmp_path) == 1.0
    assert score(task, f"def {task.reward.entry_point}(*a):\n    return None\n", tmp_path) == 0.0


def test_no_false_zero_on_sanitized_mbpp_of_those_shapes(tmp_path: Path) -> None:
    tasks = list(read_source(SANITIZED, "mbpp", split="test"))
    assert [t.id for t in tasks] == ["mbpp-56", "mbpp-737", "mbpp-787", "mbpp-794"]
    for task in tasks:
        reference = solve_reference(task)
        assert reference is not None and score(task, reference, tmp_path) == 1.0, task.id
        null = f"def {task.reward.entry_point}(*a):\n    return None\n"
        assert score(task, null, tmp_path) == 0.0, task.id


def test_a_result_that_is_not_data_equals_nothing(tmp_path: Path) -> None:
    """Its stand-in is truthy and not None (what a regex task checks), and equal to nothing:
    an object whose __eq__ says yes to everything still scores 0 where values are compared."""
    task = FALSE_ZEROS["Mbpp/56"]
    cheat = (
        "class _Yes:\n    def __eq__(self, other): return True\ndef check(n):\n    return _Yes()\n"
    )
    assert score(task, cheat, tmp_path) == 0.0


@pytest.mark.slow
def test_the_shapes_that_gave_false_zeros_pass_check_with_every_forger(tmp_path: Path) -> None:
    passes_check_with_every_forger(FIXTURES / "MbppPlusFalseZeros.jsonl", tmp_path / "h")


_SCALARS = st.one_of(
    st.integers(-5, 5), st.floats(-2, 2, allow_nan=False), st.text(max_size=3), st.booleans()
)
_JSON = st.recursive(
    st.one_of(_SCALARS, st.none()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=2), inner, max_size=2)
    ),
    max_leaves=8,
)
# What the set's first test may pass an argument as: Python literals of every container.
_LITERALS = st.recursive(
    st.one_of(_SCALARS, st.complex_numbers(max_magnitude=3, allow_nan=False, allow_infinity=False)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.sets(st.integers(-3, 3) | st.text(max_size=2), max_size=3),
        st.dictionaries(st.text(max_size=2), inner, max_size=2),
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=st.lists(_LITERALS, min_size=1, max_size=3),
    inputs=st.lists(st.lists(_JSON, min_size=1, max_size=3), min_size=1, max_size=4),
)
def test_the_reference_passes_every_input_whatever_the_first_test_shapes(
    first: list[Any], inputs: list[list[Any]]
) -> None:
    """An argument's inputs need not share the shape of the set's first test (Mbpp/808's `K`
    is 6 there, and `[4, 5, 6]`, `"banana"` or `{"a": 1}` elsewhere): the reference still
    passes every input of its own set, and gets each shaped as far as it fits."""
    from taskpack.converters.formats.evalplus import to_task

    call = ", ".join(repr(v) for v in first)
    row = {
        "task_id": "Mbpp/0",
        "prompt": "",
        "entry_point": "f",
        "canonical_solution": "def f(*a):\n    return [type(x).__name__ for x in a]\n",
        "base_input": inputs,
        "test_list": [f"assert f({call}) == 0"],
    }
    test = bytes(to_task(row, "test", 0)["files"][0]["data"]).decode()
    scope: dict[str, Any] = {}
    exec(compile(test, "test.py", "exec"), scope)
    seen: list[Any] = []
    scope["check"](lambda *a: seen.append(a) or [type(x).__name__ for x in a])
    assert len(seen) == len(inputs)
    for raw, args in zip(inputs, seen, strict=True):
        for value, shaped in zip(raw, args, strict=True):
            if isinstance(value, dict) or value is None or isinstance(value, bool):
                assert shaped == value  # no shape fits these: passed as stored
