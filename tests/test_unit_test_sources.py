"""The datasets whose reward is Python unit tests: KodCode (pytest functions over `solution`)
and AceCode (assert lists) import with their references, graded as taskpack's grader runs
unit tests; in `check` each reference scores 1, no solution 0, and no forger above 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import taskpack
from taskpack.converters import reply_fields
from taskpack.importer import import_sources
from taskpack.rewards import grader

from .conftest import DATA

KODCODE = DATA / "code_rl" / "kodcode" / "KodCode_prefill_200_1741214325.json"
# The KodCode rows whose tests need what a grader that runs the code under test in a process of
# its own cannot give: an object of the solution's own class back (a linked list, a tree), an
# argument changed in place, or the solution's printed output.
BEYOND_THE_BOUNDARY = {
    "Prefill_00000045_I", "Prefill_00000045_C", "Prefill_00000101_I", "Prefill_00000101_C",
    "Prefill_00000136_I", "Prefill_00000136_C", "Prefill_00000186_I", "Prefill_00000186_C",
    "Prefill_00000191_I", "Prefill_00000191_C", "Prefill_00000195_I", "Prefill_00000195_C",
}  # fmt: skip


@pytest.fixture(scope="module")
def kodcode(tmp_path_factory: pytest.TempPathFactory) -> taskpack.TaskSet:
    out = tmp_path_factory.mktemp("kodcode") / "kod"
    import_sources(out, {"train": [str(KODCODE)]}, "kodcode", name="kodcode")
    return taskpack.open(out)


def _score(task: taskpack.Task, reply: str) -> float:
    fields = reply_fields(task)  # type: ignore[arg-type]
    assert fields is not None
    return grader.reply_score(fields["reward"], None, reply, fields["tests"], fields["prompt"])


def test_kodcode_imports_every_row_with_its_tests_made_runnable(kodcode: taskpack.TaskSet) -> None:
    rows = {r["question_id"]: r for r in json.loads(KODCODE.read_text())}
    split = kodcode.split("train")
    assert len(split) == len(rows) == 172
    task = split.get("Prefill_00000001_I")
    assert task is not None and task.solution == rows["Prefill_00000001_I"]["solution"]
    assert task.reward.entry_point == "selection_sort"  # type: ignore[union-attr]
    assert task.instruction.endswith("Note that the output function should be selection_sort.")
    assert task.metadata["gpt_difficulty"] == "easy" and "test_code" not in task.metadata
    for task in split:
        tests = task.file("test.py").read_bytes().decode()
        assert "from solution import" not in tests and "def check(candidate)" in tests
        assert "import pytest" not in tests  # the part of pytest the tests use is in the file


@pytest.mark.parametrize("qid", ["Prefill_00000001_I", "Prefill_00000005_I", "Prefill_00000002_C"])
def test_kodcode_references_pass_and_wrong_code_fails(kodcode: taskpack.TaskSet, qid: str) -> None:
    task = kodcode.split("train").get(qid)
    assert task is not None and task.solution is not None
    assert _score(task, f"```python\n{task.solution}\n```") == 1.0
    entry = task.reward.entry_point  # type: ignore[union-attr]
    assert _score(task, f"```python\ndef {entry}(*args):\n    return None\n```") == 0.0
    assert _score(task, "") == 0.0


ACECODE = [  # three rows in AceCode-87K's published shape
    {"id": "oss_1", "source": "oss", "question": "Write `add(a, b)` returning the sum.",
     "test_cases": ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"],
     "inferences": [
         {"model_name": "m", "completion_id": 0, "completion": "def add(a, b):\n    return a - b",
          "pass_rate": 0.5},
         {"model_name": "m", "completion_id": 1,
          "completion": "```python\ndef add(a, b):\n    return a + b\n```", "pass_rate": 1.0},
     ], "context_messages": [{"role": "user", "content": "Write add."}]},
    {"id": "oss_2", "source": "oss", "question": "Write `first(xs)`.",
     "test_cases": ["assert first([3, 4]) == 3"], "inferences": [
         {"model_name": "m", "completion_id": 0, "completion": "def first(xs): return xs[-1]",
          "pass_rate": 0.0}]},
    {"id": "evol_3", "source": "evol", "question": "Write `sq(x)`.",
     "tests": ["assert sq(3) == 9", "assert len(str(sq(10))) == 3"],
     "inferences": [{"model_name": "m", "completion_id": 0, "completion":
                     "def sq(x):\n    return x * x\n", "pass_rate": 1}]},
]  # fmt: skip


def test_acecode_imports_its_asserts_and_a_passing_inference_as_reference(tmp_path: Path) -> None:
    source = tmp_path / "acecode.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in ACECODE))
    import_sources(tmp_path / "ace", {"train": [str(source)]}, "acecode", name="ace")
    split = taskpack.open(tmp_path / "ace").split("train")
    add, first, sq = (split.get(i) for i in ("oss_1", "oss_2", "evol_3"))
    assert add is not None and first is not None and sq is not None
    assert add.solution == "def add(a, b):\n    return a + b\n"
    assert first.solution is None  # no inference passed every test: no reference
    assert [t.reward.entry_point for t in (add, first, sq)] == ["add", "first", "sq"]  # type: ignore[union-attr]
    assert add.file("test.py").read_bytes() == b"assert add(1, 2) == 3\nassert add(-1, 1) == 0\n"
    assert len(add.metadata["inferences"]) == 2 and add.metadata["source"] == "oss"
    for task in (add, sq):
        assert _score(task, task.solution or "") == 1.0
        assert _score(task, f"def {task.reward.entry_point}(*a):\n    return 0") == 0.0  # type: ignore[union-attr]
    assert _score(first, "def first(xs):\n    return xs[0]") == 1.0


@pytest.mark.slow
def test_kodcode_in_check_every_reference_but_the_known_ones_scores_and_no_forger_does(
    kodcode: taskpack.TaskSet, tmp_path: Path
) -> None:
    from taskpack.exporter import export
    from taskpack.rewards.trials import check_export

    export(kodcode, "harbor", tmp_path / "h")
    results = check_export(tmp_path / "h", None, 2, None, adversarial=True, sample=8)
    failed = {r.folder.name for r in results if r.status != "ok"}
    assert failed == BEYOND_THE_BOUNDARY, sorted(failed ^ BEYOND_THE_BOUNDARY)
    assert all(not r.forged for r in results)
