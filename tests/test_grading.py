"""`taskpack grade`: completions scored by their tasks' own verifiers, read as models write
them; pass, fail and error kept apart (an error is never a 0 in a pass rate); resumable; bad
input is one line naming it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import taskpack
from taskpack.cli import main
from taskpack.curation import annotate
from taskpack.rewards import grader

from .conftest import DATA

MC = {"kind": "multiple_choice", "choices": [{"label": x, "text": x} for x in "ABCD"]}
TASKS = [
    {"id": "add", "prompt": "2 + 2?", "answer": "4", "reward": {"kind": "numeric_match"}},
    {"id": "half", "prompt": "1/2?", "answer": "\\frac{1}{2}", "reward": {"kind": "math_match"}},
    {"id": "pick", "prompt": "Pick C.", "answer": "C", "reward": MC},
    {"id": "judge", "prompt": "Write a poem.",
     "reward": {"kind": "rubric", "criteria": [{"description": "It rhymes"}]}},
]  # fmt: skip
COMPLETIONS: list[tuple[str, str, str]] = [  # id, completion, expected status
    ("add", "2 + 2 is \\boxed{4}.", "pass"),
    ("add", "<think>maybe 5? no: 2 + 2 = 4</think>\nThe sum is 4.", "pass"),
    ("add", "Working: 2 + 2.\nAnswer: 4", "pass"),
    ("add", "<think>2 + 2 is 4 or 5, let me think", "fail"),  # never closed: no answer
    ("add", "\\boxed{5}", "fail"),
    ("half", "so it is \\boxed{0.5}", "pass"),
    ("half", "Final answer: 1/2", "pass"),
    ("half", "\\boxed{\\frac{1}{3}}", "fail"),
    ("pick", "C", "pass"),
    ("pick", "<think>not A</think>B", "fail"),
    ("judge", "Roses are red.", "error"),
]


@pytest.fixture()
def answers(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "set"
    taskpack.write(folder, {"test": TASKS}, name="answers")
    completions = tmp_path / "completions.jsonl"
    with completions.open("w") as f:
        for n, (task_id, text, _) in enumerate(COMPLETIONS):
            f.write(json.dumps({"id": task_id, "completion": text, "sample": n}) + "\n")
    return folder, completions


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_completions_are_graded_as_models_write_them(
    answers: tuple[Path, Path], tmp_path: Path
) -> None:
    folder, completions = answers
    out = tmp_path / "graded.jsonl"
    result = CliRunner().invoke(main, ["grade", str(folder), str(completions), "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = _read(out)
    assert [r["status"] for r in rows] == [s for _, _, s in COMPLETIONS]
    assert [r["sample"] for r in rows] == list(range(len(COMPLETIONS)))  # carried, in order
    assert all(r["reward"] == (1.0 if r["status"] == "pass" else 0.0) for r in rows[:-1])
    assert rows[-1]["reward"] is None and "rubric" in rows[-1]["reason"]
    assert "graded 11 completions: 6 pass, 4 fail, 1 error" in result.output


def test_an_output_that_exists_is_continued_not_redone(
    answers: tuple[Path, Path], tmp_path: Path
) -> None:
    folder, completions = answers
    whole = tmp_path / "whole.jsonl"
    taskpack.grade(folder, completions, whole)
    out = tmp_path / "cut.jsonl"
    lines = whole.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:4]) + lines[4][:10])  # a run stopped in the middle of a line
    report = taskpack.grade(folder, completions, out)
    assert report.resumed == 4 and sum(report.counts.values()) == len(COMPLETIONS) - 4
    assert out.read_text() == whole.read_text()


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ({"id": "ad", "completion": "4"}, "answers@0.1.0: no task 'ad'; did you mean 'add'?"),
        ({"id": "add"}, "no `completion` text (its fields: id)"),
        ({"completion": "4"}, "no task `id`"),
        ({"id": "add", "completion": "4", "split": "tset"}, "no split 'tset'; did you mean"),
    ],
)
def test_bad_input_is_one_line_naming_it(
    answers: tuple[Path, Path], tmp_path: Path, line: dict[str, Any], says: str
) -> None:
    folder, _ = answers
    completions = tmp_path / "bad.jsonl"
    completions.write_text(json.dumps({"id": "add", "completion": "4"}) + "\n" + json.dumps(line))
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(main, ["grade", str(folder), str(completions), "-o", str(out)])
    assert result.exit_code == 1
    assert f"{completions}:2: " in result.output and says in result.output, result.output
    assert len(_read(out)) == 1  # what was graded before it is kept


def test_annotate_reads_the_output_and_leaves_errors_out(
    answers: tuple[Path, Path], tmp_path: Path
) -> None:
    folder, completions = answers
    out = tmp_path / "graded.jsonl"
    taskpack.grade(folder, completions, out)
    report = annotate(folder, [str(out)], model="m")
    rows = {r["id"]: r for r in report.rows["test"]}
    assert (rows["add"]["count"], rows["add"]["correct"]) == (5, 3)
    assert "judge" not in rows and report.errors == ["judge"]
    assert report.record["counted"]["errors"] == 1


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        ("```python\ndef f(x):\n    return 1\n```", "def f(x):\n    return 1\n"),
        # the last block that defines the entry point, not the last block
        ("```python\ndef f(x):\n    return 1\n```\nTest:\n```python\nprint(f(2))\n```",
         "def f(x):\n    return 1\n"),
        # reasoning dropped, even when it holds a fenced block
        ("<think>```python\ndef f(x): return 0\n```</think>```py\ndef f(x): return 2\n```",
         "def f(x): return 2\n"),
        ("no fence at all\ndef f(x): return 3", "no fence at all\ndef f(x): return 3"),
        # a body continuing the prompt's stub is joined to it (HumanEval's harness)
        ("```python\n    return x + 1\n```", "def f(x):\n    \"\"\"doc\"\"\"\n    return x + 1\n"),
    ],
)  # fmt: skip
def test_code_is_read_as_the_field_reads_it(reply: str, code: str) -> None:
    assert grader.extract_code(reply, "f", 'def f(x):\n    """doc"""\n') == code


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("so \\boxed{\\frac{1}{2}} it is", "\\frac{1}{2}"),
        ("\\boxed{1} then \\boxed{2}", "2"),
        ("The work.\nAnswer: 42", "42"),
        ("**Final Answer:** 7", "7"),
        ("<think>\\boxed{9}</think> 10", " 10"),
        ("<think>unfinished \\boxed{9}", ""),
        ("just text", "just text"),
    ],
)
def test_answers_are_read_as_the_field_reads_them(reply: str, answer: str) -> None:
    assert grader.extract_answer(reply) == answer


@pytest.mark.slow
def test_humaneval_code_as_models_write_it_runs_in_the_sandbox(tmp_path: Path) -> None:
    """HumanEval's first tasks: the whole reference in a fence passes, the reference's body
    alone (HumanEval's own convention) passes, a wrong body fails, code that exits 0 before
    the tests fails, and a task whose verifier times out is an error, not a 0."""
    from taskpack.importer import import_sources

    folder = tmp_path / "he"
    import_sources(folder, {"test": [str(DATA / "humaneval" / "HumanEval.jsonl.gz")]},
                   "humaneval", name="he", version="1.0.0")  # fmt: skip
    tasks = taskpack.open(folder).split("test")
    lines = []
    for task in tasks[:3]:
        whole = task.instruction + (task.solution or "")
        lines += [
            (task.id, f"Here it is:\n```python\n{whole}```\n", "pass"),
            (task.id, f"```python\n{task.solution}```", "pass"),
            (task.id, "    return None\n", "fail"),
            (task.id, f"```python\nimport os\nos._exit(0)\n{whole}```", "fail"),
        ]
    completions = tmp_path / "c.jsonl"
    completions.write_text(
        "".join(json.dumps({"id": i, "completion": c}) + "\n" for i, c, _ in lines)
    )
    out = tmp_path / "out.jsonl"
    report = taskpack.grade(folder, completions, out, jobs=2)
    assert [r["status"] for r in _read(out)] == [s for _, _, s in lines], _read(out)
    assert report.counts == {"pass": 6, "fail": 6}
    slow = tmp_path / "slow.jsonl"
    forever = "```python\nimport time\ndef has_close_elements(a, b):\n    time.sleep(60)\n```"
    slow.write_text(json.dumps({"id": tasks[0].id, "completion": forever}) + "\n")
    taskpack.grade(folder, slow, tmp_path / "slow-out.jsonl", timeout=3)
    [row] = _read(tmp_path / "slow-out.jsonl")
    assert (row["status"], row["reward"]) == ("error", None), row
    assert row["reason"] == "the verifier timed out after 3 s"


def test_trls_reward_function_scores_by_id_and_says_none_where_it_cannot(
    answers: tuple[Path, Path],
) -> None:
    """`taskpack.trl.reward_func(split)` as TRL calls it (every dataset column by name, text
    or conversational completions): the same scores as `grade`, None for a task taskpack does
    not score, one line when the dataset has no `id` column."""
    from taskpack.errors import TaskpackError

    folder, _ = answers
    reward = taskpack.trl.reward_func(taskpack.open(folder).split("test"))
    texts = [c for _, c, _ in COMPLETIONS]
    ids = [i for i, _, _ in COMPLETIONS]
    want = [1.0 if s == "pass" else 0.0 if s == "fail" else None for _, _, s in COMPLETIONS]
    assert reward(prompts=texts, completions=texts, id=ids, trainer_state=None) == want
    chat = [[{"role": "assistant", "content": c}] for c in texts]
    assert reward(prompts=texts, completions=chat, id=ids) == want
    with pytest.raises(TaskpackError, match="needs an `id` column"):
        reward(prompts=texts, completions=texts)
