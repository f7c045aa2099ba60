"""A grader answers whatever a policy writes, in bounded time, and nothing raises out of it.
Number literals past the bounds (`1e10000000`, a 5,000-digit integer) are compared by their
spelling, never built; a reply of 10 MB, NUL bytes, lone surrogates, deep braces and nested
boxes is read only where its answer can be. The same checks run the grader files the exports
ship (Verifiers' taskset and environment, SkyRL's), byte for byte what a trainer imports."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import taskpack
from taskpack.exporter import export
from taskpack.rewards import grader

CPU_BOUND = 0.010  # seconds of CPU a reply, the worst of every kind (the issue's bound)

SPECS: list[tuple[dict[str, Any], Any]] = [
    ({"kind": "exact_match", "strip": True, "case_sensitive": False}, "Paris"),
    ({"kind": "numeric_match", "tolerance": 0.0}, "42"),
    ({"kind": "numeric_match", "tolerance": 1e-6}, "1e400"),
    ({"kind": "math_match"}, "\\frac{1}{2}"),
    ({"kind": "math_match"}, "1e10000000"),
    ({"kind": "multiple_choice", "choices": [{"label": x, "text": x} for x in "ABCD"]}, "B"),
]
BIG = 10 << 20
FIXED = [
    "1e10000000",
    "1e1000000000",
    "1e400",
    "-1e309",
    "\\boxed{1e10000000}",
    "\\boxed{1e1000000000}",
    "1/1e99999999",
    "\\frac{1e999999}{3}",
    "9" * 5000,
    "0." + "0" * 100_000 + "1",
    "1" + "0" * 100_000 + "/1" + "0" * 100_000,
    "1e" + "9" * 100_000,
    "7" * BIG,
    " " * BIG,
    "\\boxed{" * (BIG // 7) + "1" + "}" * (BIG // 7),
    "{" * BIG,
    "$" * BIG,
    "```python\n" * (BIG // 10),
    "\x00" * 1000 + "42",
    "\ud800 42 \udfff",
    "A" * BIG,
    "(" * BIG,
    "1," * (BIG // 2),
    "\\frac{" * 100_000 + "1" + "}{2}" * 100_000,
    # an answer line's spaces that two repeats could share (18 s and 10 s of CPU before)
    "answer" + " " * 60_000 + "y",
    "Answer: the final answer is " + " " * 60_000 + "x",
    "Final Answer: The final answer is " + "." * 60_000 + " I hope it is correct.",
]


def _cpu(call: Callable[[], float]) -> tuple[float, float]:
    """(the result, the least CPU time of five calls): a reply's own cost, not a GC's or a
    neighbour's on a loaded machine."""
    best, out = float("inf"), 0.0
    for _ in range(5):
        start = time.process_time()
        out = call()
        best = min(best, time.process_time() - start)
    return out, best


def _check(grade: ModuleType, reply: str) -> float:
    """Every answer kind through both entries (a reply, and an agent's answer file's text):
    a reward in [0, 1], returned, within the CPU bound. The worst time is returned."""
    worst = 0.0
    for spec, answer in SPECS:
        answered = {**spec, "answer": answer, "labels": list("ABCD")}
        for call in (
            lambda s=spec, a=answer: grade.reply_score(s, a, reply),
            lambda s=answered: grade.answer_score(s, reply),
        ):
            score, cpu = _cpu(call)
            assert score in (0.0, 1.0), (spec, reply[:40])
            worst = max(worst, cpu)
    return worst


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> list[ModuleType]:
    """The grader files the exports ship, imported from the exported folders."""
    root = tmp_path_factory.mktemp("shipped")
    tasks = [
        {"id": "q", "prompt": "2+2?", "answer": "4", "reward": {"kind": "numeric_match"}},
        {"id": "m", "prompt": "1/2?", "answer": "\\frac{1}{2}", "reward": {"kind": "math_match"}},
        {"id": "e", "prompt": "Say x", "answer": "x", "reward": {"kind": "exact_match"}},
    ]
    taskpack.write(root / "set", {"train": tasks, "test": tasks}, name="hostile")
    ts = taskpack.open(root / "set")
    export(ts, "verifiers", root / "taskset", options={"package": "hostile_taskset"})
    export(ts, "verifiers", root / "env", options={"form": "dataset"})
    export(ts, "skyrl", root / "skyrl")
    found = [
        root / "taskset" / "hostile_taskset" / "taskpack_grade.py",
        root / "env" / "taskpack_grade.py",
        root / "skyrl" / "taskpack_grade.py",
    ]
    modules = []
    for n, path in enumerate(found):
        assert path.read_bytes() == Path(grader.__file__).read_bytes()
        spec = importlib.util.spec_from_file_location(f"shipped_grade_{n}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules.append(module)
    return modules


def test_the_issues_replies_are_scored_in_bounds(shipped: list[ModuleType]) -> None:
    worst = {reply[:24]: 0.0 for reply in FIXED}
    for grade in [grader, *shipped]:
        for reply in FIXED:
            worst[reply[:24]] = max(worst[reply[:24]], _check(grade, reply))
    slow = {k: round(v * 1000, 2) for k, v in worst.items() if v > CPU_BOUND}
    assert not slow, f"ms of CPU past the bound: {slow}"


@pytest.mark.parametrize(
    ("got", "want", "same"),
    [
        ("1e10000000", "1e10000000", True),  # equal spellings, never computed
        ("10e9999999", "1e10000000", True),  # the same value spelled otherwise
        ("1e10000000", "1e10000001", False),
        ("-1e10000000", "1e10000000", False),
        ("1e400", "1e400", True),
        ("1e400", "10" + "0" * 399, True),  # within the bounds: as numbers
        ("1e400", "2e400", False),
        ("9" * 5000, "9" * 5000, True),
        ("9" * 5000, "9" * 4999 + "8", False),
        ("1e1000000000", "1e1000000000", True),
        ("1e1000000000", "1e1000000001", False),
        ("0.5", "\\frac{1}{2}", True),  # small numbers as before
    ],
)
def test_numbers_past_the_bounds_compare_by_value_spelled(got: str, want: str, same: bool) -> None:
    assert grader.same_number(got, want, 0.0) is same
    assert grader.same_number(got, want, 1e-6) is same
    score = grader.answer_score({"kind": "math_match", "answer": want}, f"\\boxed{{{got}}}")
    assert score == (1.0 if same else 0.0)


_TOKENS = [
    "9", "0", "1", "e", "E", "-", "+", ".", ",", "/", "\\boxed{", "\\fbox{", "{", "}", "$",
    "\\frac{", "}{", "\\(", "\\)", "%", "```", "```python\n", "<think>", "</think>", "\x00",
    "\ud800", "\u2028", " ", "\n", "A", "Answer:", "\\left(", "\\text{", "answer", "is",
    "The final answer is ", "I hope it is correct.", "*",
]  # fmt: skip


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.lists(st.tuples(st.sampled_from(_TOKENS), st.integers(1, 60_000)), min_size=1, max_size=8)
)
def test_any_reply_of_the_fields_tokens_is_scored_in_bounds(parts: list[tuple[str, int]]) -> None:
    reply = "".join(token * n for token, n in parts)
    assert _check(grader, reply) <= CPU_BOUND, [(t, n) for t, n in parts]


@pytest.mark.parametrize(
    "reply",
    [
        "```" + "a" * BIG,
        "```" + " " * BIG,
        "```\n" * (BIG // 4),
        ("```py" + " " * 50) * (BIG // 55),
    ],
)
def test_code_is_read_out_of_any_reply_in_bounds(reply: str) -> None:
    """A fence's info string read by one class: "```" and a megabyte without a newline took
    4 s for 60 KB (quadratic) before."""
    _, cpu = _cpu(lambda: float(len(grader.extract_code(reply, "f", "def f(x):\n"))))
    assert cpu <= 50 * CPU_BOUND, cpu


def test_code_replies_that_cannot_compile_score_zero() -> None:
    spec = {"kind": "unit_tests", "entry_point": "f", "test_file": "test.py", "timeout_sec": 5}
    tests = "def check(f):\n    assert f(1) == 2\n"
    huge = "def f(x):\n" + " " * 10 + "x" * BIG
    for reply in ("def f(x):\x00 return x + 1", "(" * 200_000, huge):
        assert grader.reply_score(spec, None, reply, tests) == 0.0
    assert grader.reply_score(spec, None, "```python\ndef f(x):\n    return x + 1\n```", tests) == 1
