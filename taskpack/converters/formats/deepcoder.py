"""DeepCoder (agentica-org/DeepCoder-Preview-Dataset, and the rLLM files it was made from):
contest problems judged on input/output tests. A row has the problem text (`problem`, or
`question`) and `tests`, as a JSON string or parsed, in either shape the dataset mixes:

- a list of `{input, output, testtype}` (LiveCodeBench, Codeforces): `testtype` `stdin` feeds
  the input to the program; `functional` calls the function the row's `metadata.func_name`
  names, its input one JSON value an argument a line (LiveCodeBench's encoding);
- a dict `{inputs, outputs, fn_name?}` (TACO, APPS, CodeContests): without `fn_name` the
  inputs are standard input (a list of lines is joined); with it, each input is the list of
  a call's arguments and each output the value wrapped in a one-item list (APPS's encoding).

Each becomes an `io_tests` reward over `tests.jsonl` (one test a line, in one encoding: a
call's arguments as a JSON list), so graders never guess an encoding. The rest of the row
stays in metadata; a reference solution is taken where the row has one (`solutions`, first).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from taskpack.converters._format import Format, Options
from taskpack.converters._sources.records import Record, RowError, map_rows
from taskpack.converters._sources.tables import iter_table_rows

TEST_FILE = "tests.jsonl"
_MAPPED = ("problem", "question", "tests", "solutions", "id", "problem_id", "task_id")


def _parsed(value: Any, field: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError as e:
            raise RowError(f"field {field!r}: not JSON ({e.args[0]})") from None
    return value


def _text(value: Any, where: str) -> str:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    if not isinstance(value, str):
        raise RowError(f"{where}: expected text, got {type(value).__name__}")
    return value


def _cases(tests: Any, func: str | None) -> tuple[list[dict[str, Any]], str | None]:
    """The tests in taskpack's encoding, and the function they call (None: standard input)."""
    if isinstance(tests, dict):
        inputs, outputs, call = tests.get("inputs"), tests.get("outputs"), tests.get("fn_name")
        if not isinstance(inputs, list) or not isinstance(outputs, list):
            raise RowError("field 'tests': expected lists `inputs` and `outputs`")
        if len(inputs) != len(outputs):
            raise RowError(f"field 'tests': {len(inputs)} inputs but {len(outputs)} outputs")
        if call is None:
            return [
                {"input": _text(i, f"tests.inputs[{n}]"), "output": _text(o, f"tests.outputs[{n}]")}
                for n, (i, o) in enumerate(zip(inputs, outputs, strict=True))
            ], None
        called = []
        for n, (args, out) in enumerate(zip(inputs, outputs, strict=True)):
            if not isinstance(args, list):
                raise RowError(f"tests.inputs[{n}]: expected the list of a call's arguments")
            wrapped = isinstance(out, list) and len(out) == 1
            called.append({"args": args, "output": out[0] if wrapped else out})
        return called, str(call)
    if not isinstance(tests, list) or not tests:
        raise RowError("field 'tests': expected a list of tests or {inputs, outputs}")
    cases: list[dict[str, Any]] = []
    calls: set[str | None] = set()
    for n, test in enumerate(tests):
        if not isinstance(test, dict) or "input" not in test:
            raise RowError(f"tests[{n}]: expected {{input, output, testtype}}")
        if "output" not in test:
            raise RowError(f"tests[{n}]: no output")
        if test.get("testtype", "stdin") == "functional":
            if not func:
                raise RowError(f"tests[{n}]: a functional test, but no metadata.func_name")
            lines = _text(test["input"], f"tests[{n}].input").split("\n")
            try:
                args = [json.loads(line) for line in lines if line.strip()]
                out = json.loads(_text(test["output"], f"tests[{n}].output"))
            except ValueError as e:
                raise RowError(f"tests[{n}]: not one JSON value a line ({e.args[0]})") from None
            cases.append({"args": args, "output": out})
            calls.add(func)
        else:
            cases.append({"input": _text(test["input"], f"tests[{n}].input"),
                          "output": _text(test["output"], f"tests[{n}].output")})  # fmt: skip
            calls.add(None)
    if len(calls) > 1:
        raise RowError("field 'tests': standard-input and functional tests in one row")
    return cases, calls.pop()


def to_task(row: dict[str, Any], split: str, ordinal: int) -> dict[str, Any]:
    problem = row.get("problem", row.get("question"))
    if not isinstance(problem, str) or not problem.strip():
        raise RowError("field 'problem' (or 'question'): missing or empty")
    if "tests" not in row:
        raise RowError("field 'tests': missing")
    meta = _parsed(row.get("metadata"), "metadata")
    func = meta.get("func_name") if isinstance(meta, dict) else None
    cases, call = _cases(_parsed(row["tests"], "tests"), func)
    if not cases:
        raise RowError("field 'tests': no tests")
    solutions = _parsed(row.get("solutions"), "solutions")
    reference = solutions[0] if isinstance(solutions, list) and solutions else None
    reward: dict[str, Any] = {"kind": "io_tests", "test_file": TEST_FILE}
    if call is not None:
        reward["call"] = call
    named = [row[k] for k in ("id", "problem_id", "task_id") if row.get(k) not in (None, "")]
    task_id = named[0] if named else f"{split}-{ordinal:05d}"
    data = "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases).encode()
    return {
        "id": str(task_id),
        "prompt": problem,
        "solution": reference if isinstance(reference, str) else None,
        "reward": reward,
        "files": [{"path": TEST_FILE, "role": "tests", "data": data}],
        "source": {"format": "deepcoder", "split": split, "row": ordinal},
        "metadata": {k: v for k, v in row.items() if k not in _MAPPED},
    }


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return map_rows(iter_table_rows(uri), lambda row, n: to_task(row, split, n))


FORMAT = Format(
    name="deepcoder",
    summary="DeepCoder rows: a contest problem and its input/output tests, either shape.",
    read=read,
)
