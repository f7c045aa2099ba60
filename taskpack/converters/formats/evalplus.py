"""EvalPlus (HumanEval+ and MBPP+, the release files `HumanEvalPlus.jsonl`, `MbppPlus.jsonl`):
`task_id`, `prompt`, `entry_point`, `canonical_solution`, `base_input`, `plus_input`, `atol`,
and `contract` (HumanEval+) or `code`, `assertion`, `test_list` (MBPP+).

EvalPlus grades by differential testing: on every base and plus input, the candidate's output
must equal the reference solution's, floats within `atol` (1e-6 where the set gives none and
the output is floating point; relative 1e-7 beside it), with its special rules for a few
tasks (outputs compared as sets, or only for being None; HumanEval/32's root checked by its
polynomial). The task's `test.py` does exactly that: its `check(candidate)` runs the reference
(the prompt completed by `canonical_solution`, or MBPP+'s whole function) on a copy of each
input, the candidate on another, and compares. MBPP+'s inputs are stored as JSON lists where
the original tests pass tuples or sets; they are given back the containers of the arguments in
the set's first test (`test_list`), found by parsing it. The reference runs in the grader,
never beside the candidate. prompt -> prompt; canonical_solution -> solution; `test.py` under
a unit-tests reward on `entry_point`; other fields -> metadata (the inputs live in test.py).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from typing import Any

from taskpack.converters._format import Format, Options
from taskpack.converters._sources.records import Record, RowError, map_rows, need
from taskpack.converters._sources.tables import iter_table_rows

TEST_FILE = "test.py"
_MAPPED = ("task_id", "prompt", "entry_point", "canonical_solution", "base_input", "plus_input")
# EvalPlus's special oracles, by entry point: outputs compared as sets, or only for whether
# they are None; the root of HumanEval/32's polynomial checked by evaluating it.
SET_EQUAL = {
    "similar_elements", "find_char_long", "common_in_nested_lists", "extract_singly",
    "larg_nnum", "intersection_array", "find_dissimilar", "Diff",
}  # fmt: skip
NOT_NONE = {"check_str", "text_match_three", "text_starta_endb"}
_RULES = {
    "equal": "equal, floats within atol",
    "set": "as sets",
    "not_none": "only in being None or not",
    "root": "a root of the polynomial, within atol",
}
# The test's docstring names the task: an id that could end it or break its line is refused.
_DOCSTRING_SAFE = re.compile(r'[^"\\\x00-\x1f\x7f\x85\u2028\u2029]+')
_TEST = '''"""EvalPlus's differential test of {entry} ({task_id}): on each of its {count} base and
plus inputs, the candidate's output must match the reference solution's ({how})."""

import copy
import json
import time

# Each input's call may take the reference's own time on it, LIMIT_FACTOR over (EvalPlus's
# factor), at least MIN_LIMIT seconds: above EvalPlus's 1 s floor, as the candidate's result
# crosses a process boundary here (pickled back), which on a loaded machine takes seconds for
# a large one. The whole run, references included, has TASKPACK_TIMEOUT_SEC, so a slow machine
# slows the reference without failing the candidate.
MIN_LIMIT = 5.0
LIMIT_FACTOR = 4.0
TASKPACK_TIMEOUT_SEC = 900
ENTRY = {entry!r}
ATOL = {atol!r}
RULE = {rule!r}
SHAPES = json.loads({shapes!r})
REFERENCE = {reference!r}
INPUTS = json.loads({inputs!r})


def _tuples(value):
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _shaped(value, shape):
    """A JSON value as the set's own test passes it: lists as its containers (tuple, set,
    list, nested), numbers EvalPlus stores as text (a complex `1j`) as numbers. The shape
    comes from the first test, which another input of the same argument need not share (a
    number there, a list or a dict here): a shape is applied only to a value it fits."""
    if isinstance(shape, str):  # "number" or "complex": only text is made a number
        if isinstance(value, str):
            for kind in (int, float, complex) if shape == "number" else (complex,):
                try:
                    return kind(value)
                except ValueError:
                    pass
        return value
    if shape == ["tuples"]:  # the test's argument holds tuples only, at every depth
        return _tuples(value)
    if not (isinstance(value, list) and isinstance(shape, list) and len(shape) == 2):
        return value
    kind, inner = shape
    if kind == "tuple":  # by position
        return tuple(_shaped(v, inner[i] if i < len(inner) else None) for i, v in enumerate(value))
    items = [_shaped(v, inner) for v in value]  # every item of one shape
    if kind == "set":
        try:
            return set(items)
        except TypeError:  # items a set cannot hold: not the shape of this input
            return items
    return tuple(items) if kind == "tuple*" else items


def _floats(value):
    if isinstance(value, float):
        return True
    return isinstance(value, (list, tuple)) and bool(value) and all(
        isinstance(v, float) for v in value
    )


def _close(out, exp, atol):
    numbers = (int, float)
    if isinstance(out, numbers) and isinstance(exp, numbers):
        if isinstance(out, bool) or isinstance(exp, bool):
            return out == exp
        return abs(out - exp) <= atol + 1e-7 * abs(exp)
    if isinstance(out, (list, tuple)) and isinstance(exp, (list, tuple)):
        return len(out) == len(exp) and all(_close(a, b, atol) for a, b in zip(out, exp))
    return False


def _poly(xs, x):
    return sum(c * x**i for i, c in enumerate(xs))


def _same(out, exp, args):
    if RULE == "set":
        return set(out) == set(exp)
    if RULE == "not_none":
        return out == exp if isinstance(out, bool) else (out is not None) == (exp is not None)
    if RULE == "root":
        return abs(_poly(args[0], out)) <= ATOL
    if out == exp:
        return True
    atol = ATOL or (1e-6 if _floats(exp) else 0)
    return bool(atol) and type(out) is type(exp) and _close(out, exp, atol)


def check(candidate):
    scope = {{"__name__": "reference"}}
    exec(compile(REFERENCE, "reference.py", "exec"), scope)
    reference = scope[ENTRY]
    for raw in INPUTS:
        args = [_shaped(a, SHAPES[i] if i < len(SHAPES) else None) for i, a in enumerate(raw)]
        start = time.perf_counter()
        expected = reference(*copy.deepcopy(args))
        # EvalPlus's limit for this input: its reference's own time, a factor over, a floor
        limit = max(MIN_LIMIT, LIMIT_FACTOR * (time.perf_counter() - start))
        call = candidate.within(limit) if hasattr(candidate, "within") else candidate
        try:
            got = call(*copy.deepcopy(args))
        except TimeoutError:
            _judge_slowness(reference, args, limit, raw)
            raise
        assert _same(got, expected, args), "input " + repr(raw)[:200]


def _judge_slowness(reference, args, limit, raw):
    """The code under test overran `limit`: where the reference, run again, overruns it too,
    the machine is too slow to judge, and the grader's Unscorable says so (never a 0)."""
    start = time.perf_counter()
    reference(*copy.deepcopy(args))
    took = time.perf_counter() - start
    if took > limit and "Unscorable" in globals():
        raise Unscorable(  # noqa: F821 - the grader puts it in the tests' namespace
            "the reference itself took %.1f s on input %s, over its limit of %.1f s"
            % (took, repr(raw)[:80], limit)
        )
'''


def _only_tuples(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_only_tuples(v) for v in value)
    return not isinstance(value, (list, set, frozenset, dict))


def _shape(value: Any) -> Any:
    """The shape of a literal: ["tuples"] for a tuple holding no other container at any depth
    (every list of the input becomes a tuple), ["list", item shape], ["set", item shape],
    ["tuple*", item shape] for a tuple whose items share one, else ["tuple", [shape by
    position]]; "complex" and "number" for numbers (which EvalPlus may store as text, as
    MBPP+'s complex inputs are); None for anything else."""
    if isinstance(value, complex):
        return "complex"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "number"
    if isinstance(value, tuple) and _only_tuples(value):
        return ["tuples"]
    if isinstance(value, (list, set, frozenset)):
        items = list(value)
        return ["list" if isinstance(value, list) else "set", _shape(items[0]) if items else None]
    if isinstance(value, tuple):
        shapes = [_shape(v) for v in value]
        if all(s == shapes[0] for s in shapes[1:]):
            return ["tuple*", shapes[0] if shapes else None]
        return ["tuple", shapes]
    return None


def argument_shapes(tests: Any, entry: str) -> list[Any]:
    """The containers of each argument in the first test calling `entry` (MBPP+'s test_list
    or assertion): `f((1, 2), [3])` -> tuple, list."""
    texts = tests if isinstance(tests, list) else [tests]
    for text in texts:
        try:
            tree = ast.parse(str(text))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == entry:
                try:
                    return [_shape(ast.literal_eval(arg)) for arg in node.args]
                except (ValueError, SyntaxError, TypeError):
                    return []
    return []


def _rule(entry: str, task_id: str) -> str:
    if task_id.startswith("Mbpp/") and entry in SET_EQUAL:
        return "set"
    if task_id.startswith("Mbpp/") and entry in NOT_NONE:
        return "not_none"
    if task_id == "HumanEval/32":
        return "root"
    return "equal"


def to_task(row: dict[str, Any], split: str, ordinal: int) -> dict[str, Any]:
    task_id, prompt = need(row, "task_id"), need(row, "prompt")
    entry, canonical = need(row, "entry_point"), need(row, "canonical_solution")
    if not entry.isidentifier():
        raise RowError(f"field 'entry_point': expected a Python name, got {entry!r}")
    if not _DOCSTRING_SAFE.fullmatch(task_id):
        raise RowError(f"field 'task_id': {task_id!r} holds a quote, backslash or line break")
    inputs = [*need(row, "base_input", list), *(row.get("plus_input") or [])]
    atol = row.get("atol") or 0
    if not isinstance(atol, (int, float)) or isinstance(atol, bool):
        raise RowError("field 'atol': expected a number")
    # HumanEval+'s solution is the body completing the prompt's stub; MBPP+'s a whole function.
    reference = canonical if f"def {entry}" in canonical else prompt + canonical
    shapes = argument_shapes(row.get("test_list") or row.get("assertion") or [], entry)
    rule = _rule(entry, task_id)
    test = _TEST.format(
        entry=entry,
        task_id=task_id,
        count=len(inputs),
        rule=rule,
        how=_RULES[rule],
        atol=atol,
        shapes=json.dumps(shapes),
        reference=reference,
        inputs=json.dumps(inputs),
    )
    return {
        "id": task_id,
        "prompt": prompt,
        "solution": canonical,
        "reward": {"kind": "unit_tests", "entry_point": entry, "test_file": TEST_FILE},
        "files": [{"path": TEST_FILE, "role": "tests", "data": test.encode("utf-8")}],
        "source": {"format": "evalplus", "split": split, "row": ordinal},
        "metadata": {k: v for k, v in row.items() if k not in _MAPPED},
    }


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return map_rows(iter_table_rows(uri), lambda row, n: to_task(row, split, n))


FORMAT = Format(
    name="evalplus",
    summary="EvalPlus HumanEval+ and MBPP+: base and plus inputs, the reference as the oracle.",
    read=read,
)
