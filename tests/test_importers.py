"""Importers on the real public files: every row, every quirk, and each source row rebuilt
exactly from the task set it was imported into."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import taskpack
from taskpack.converters.formats import gsm8k, humaneval, kaggle, swebench, terminal_bench
from taskpack.importer import import_sources, read_source


def jsonl(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def imported(
    tmp_path: Path, fmt: str, sources: dict[str, list[str]], **kw: Any
) -> taskpack.TaskSet:
    import_sources(tmp_path / "ts", sources, fmt, name=fmt.replace("-", ""), **kw)
    return taskpack.open(tmp_path / "ts")


def test_gsm8k_train_and_test_lossless(tmp_path: Path, data_dir: Path) -> None:
    files = {s: data_dir / "gsm8k" / f"{s}.jsonl" for s in ("train", "test")}
    ts = imported(tmp_path, "gsm8k", {s: [str(p)] for s, p in files.items()})
    for split, path in files.items():
        rows = jsonl(path)
        tasks = list(ts.split(split))
        assert len(tasks) == len(rows) == {"train": 7473, "test": 1319}[split]
        assert [gsm8k.source_row(t) for t in tasks] == rows
        assert tasks[0].id == f"{split}-00000"
        for task, row in zip(tasks, rows, strict=True):
            assert task.solution == row["answer"]  # calculator notes kept
            assert task.answer is not None and "," not in task.answer
            float(task.answer)  # ready for numeric matching
    with_comma = next(t for t in ts.split("train") if "#### 1,080" in (t.solution or ""))
    assert with_comma.answer == "1080"
    assert any(t.answer.startswith("-") for t in ts.split("train") if t.answer)
    assert ts.split("train")[0].reward is not None
    assert ts.split("train")[0].reward.kind == "numeric_match"


def test_humaneval_all_164_lossless(tmp_path: Path, data_dir: Path) -> None:
    path = data_dir / "humaneval" / "HumanEval.jsonl.gz"
    ts = imported(tmp_path, "humaneval", {"test": [str(path)]})
    rows, tasks = jsonl(path), list(ts.split("test"))
    assert len(tasks) == 164
    assert [humaneval.source_row(t) for t in tasks] == rows
    first = tasks[0]
    assert first.id == "HumanEval/0"
    assert first.reward is not None and first.reward.kind == "unit_tests"
    assert first.reward.entry_point == "has_close_elements"
    assert b"def check(candidate)" in first.file("test.py").read_bytes()
    assert first.solution == rows[0]["canonical_solution"]


@pytest.mark.parametrize(
    ("name", "count"),
    [("swebench_lite_test.jsonl", 300), ("swebench_verified_sample50.jsonl", 50)],
)
def test_swebench_lossless_with_its_quirks(
    tmp_path: Path, data_dir: Path, name: str, count: int
) -> None:
    path = data_dir / "swebench" / name
    ts = imported(tmp_path, "swebench", {"test": [str(path)]})
    rows, tasks = jsonl(path), list(ts.split("test"))
    assert len(tasks) == count
    rebuilt = [swebench.source_row(t) for t in tasks]
    assert rebuilt == rows
    # Byte-equal field values, not just equal after decoding:
    assert [json.dumps(r, sort_keys=True) for r in rebuilt] == [
        json.dumps(r, sort_keys=True) for r in rows
    ]
    for task, row in zip(tasks, rows, strict=True):
        assert task.reward is not None and task.reward.kind == "swe_tests"
        assert task.reward.fail_to_pass == json.loads(row["FAIL_TO_PASS"])
        assert task.metadata["version"] == row["version"] and isinstance(row["version"], str)
        assert row["patch"] not in task.prompt[0].content
        assert task.environment is not None and task.environment.commit == row["base_commit"]
    versions = {t.metadata["version"] for t in tasks}
    if count == 300:
        assert "0.20" in versions and "1.10" not in {str(float(v)) for v in versions}
        assert any("\r\n" in t.prompt[0].content for t in tasks)
        # (the data README mentions non-breaking spaces; this copy holds none, but non-ASCII)
        assert sum(any(ord(c) > 127 for c in t.prompt[0].content) for t in tasks) == 38
    else:
        assert all("difficulty" in t.metadata for t in tasks)


def kaggle_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("split", ["train", "test"])
def test_kaggle_llm_science_exam_lossless(tmp_path: Path, data_dir: Path, split: str) -> None:
    path = data_dir / "kaggle_llm_science_exam" / f"{split}.csv"
    assert b"\r\n" in path.read_bytes()
    ts = imported(tmp_path, "kaggle", {split: [str(path)]}, options={"preset": "multiple-choice"})
    rows, tasks = kaggle_rows(path), list(ts.split(split))
    assert len(tasks) == len(rows) == 200
    assert [kaggle.source_row(t, preset="multiple-choice") for t in tasks] == rows
    task = tasks[0]
    assert task.reward is not None and task.reward.kind == "multiple_choice"
    assert [c.label for c in task.reward.choices] == ["A", "B", "C", "D", "E"]
    assert task.prompt[0].content.startswith(rows[0]["prompt"])
    if split == "train":
        assert task.answer == rows[0]["answer"] and task.answer in "ABCDE"
    else:
        assert all(t.answer is None for t in tasks)


def test_kaggle_mapping_by_name_bom_stray_spaces_tsv_zip(tmp_path: Path) -> None:
    table = '\ufeff Question \tid\t gold \r\nWhat is 2+2?\tq1\t4\r\n"multi\r\nline"\tq2\t5\r\n'
    tsv = tmp_path / "t.tsv"
    tsv.write_bytes(table.encode("utf-8"))
    options = {"prompt_column": "Question", "id_column": "id", "answer_column": "gold"}
    with pytest.raises(taskpack.TaskpackError, match=r"missing required column\(s\) \['Question'"):
        list(read_source(tsv, "kaggle", **options))
    tasks = list(read_source(tsv, "kaggle", strip_headers=True, **options))
    assert [(t.id, t.prompt[0].content, t.answer) for t in tasks] == [
        ("q1", "What is 2+2?", "4"),
        ("q2", "multi\r\nline", "5"),
    ]
    import zipfile

    with zipfile.ZipFile(tmp_path / "dump.zip", "w") as zf:
        zf.writestr("data/t.tsv", table)
    zipped = list(read_source(tmp_path / "dump.zip", "kaggle", strip_headers=True, **options))
    assert zipped == tasks


def test_kaggle_generated_ids_template_and_numeric_cells(tmp_path: Path) -> None:
    src = tmp_path / "rows.jsonl"
    src.write_text('{"q": "Capital of France?", "a": 7, "n": 1}\n{"q": "2?", "a": 2, "n": 2}\n')
    opts = {"prompt_template": "Q: {q}", "answer_column": "a"}
    tasks = list(read_source(src, "kaggle", split="dev", **opts))
    assert [t.id for t in tasks] == ["dev-00000", "dev-00001"]
    assert tasks[0].prompt[0].content == "Q: Capital of France?"
    assert tasks[0].answer == "7" and tasks[0].metadata == {
        "q": "Capital of France?",
        "a": 7,
        "n": 1,
    }
    assert kaggle.source_row(tasks[0], **opts) == {"q": "Capital of France?", "a": 7, "n": 1}


MMLU_ROWS = [  # cais/mmlu's shape: the choices in one list column, the answer an index
    {
        "question": "Which gas do plants take in?",
        "subject": "biology",
        "choices": ["Oxygen", "Carbon dioxide", "Helium", "Neon"],
        "answer": 1,
    },
    {"question": "2 + 2?", "subject": "math", "choices": [3, 4, 5, 22], "answer": 1},
]


def test_multiple_choice_from_a_list_column_with_an_index_answer(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = tmp_path / "test.parquet"
    table = pa.table(
        {
            "question": [r["question"] for r in MMLU_ROWS],
            "subject": [r["subject"] for r in MMLU_ROWS],
            "choices": [[str(c) for c in r["choices"]] for r in MMLU_ROWS],
            "answer": pa.array([r["answer"] for r in MMLU_ROWS], pa.int64()),
        }
    )
    pq.write_table(table, src)
    tasks = list(read_source(src, "kaggle", split="test", preset="mmlu"))
    first = tasks[0]
    assert first.answer == "B" and first.reward is not None
    assert [(c.label, c.text) for c in first.reward.choices] == [
        ("A", "Oxygen"),
        ("B", "Carbon dioxide"),
        ("C", "Helium"),
        ("D", "Neon"),
    ]
    assert first.prompt[0].content == (
        "Which gas do plants take in?\n\nA. Oxygen\nB. Carbon dioxide\nC. Helium\nD. Neon"
    )
    assert first.metadata == {"subject": "biology", "answer": 1}  # the index, as it was
    assert [kaggle.source_row(t, preset="mmlu") for t in tasks] == table.to_pylist()
    # numbers as choices (JSON Lines) come back as numbers
    jsonl = tmp_path / "test.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in MMLU_ROWS))
    again = list(read_source(jsonl, "kaggle", split="test", preset="mmlu"))
    assert again[1].answer == "B" and again[1].reward.choices[1].text == "4"
    assert [kaggle.source_row(t, preset="mmlu") for t in again] == MMLU_ROWS


@pytest.mark.parametrize(
    ("answer", "label"), [("B", "B"), ("1", "B"), (1, "B"), ("Four", "B"), ("C", "C")]
)
def test_multiple_choice_from_text_columns_named_otherwise(
    tmp_path: Path, answer: object, label: str
) -> None:
    row = {"q": "2 + 2?", "AnswerAText": "Three", "AnswerBText": "Four", "AnswerCText": "Five"}
    src = tmp_path / "rows.jsonl"
    src.write_text(json.dumps({**row, "correct": answer}) + "\n")
    opts = {
        "prompt_column": "q",
        "choice_columns": "AnswerAText,AnswerBText,AnswerCText",
        "choice_labels": "A,B,C",
        "answer_column": "correct",
    }
    (task,) = read_source(src, "kaggle", **opts)
    assert task.answer == label and [c.label for c in task.reward.choices] == ["A", "B", "C"]
    assert kaggle.source_row(task, **opts) == {**row, "correct": answer}


def test_a_multiple_choice_answer_that_is_no_choice_is_one_error_line(tmp_path: Path) -> None:
    src = tmp_path / "rows.jsonl"
    src.write_text(json.dumps({**MMLU_ROWS[0], "answer": 7}) + "\n")
    with pytest.raises(taskpack.InvalidTask, match=r"answer 7: none of the choices \(labels A"):
        list(read_source(src, "kaggle", preset="mmlu"))


def tree(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mode & 0o777)
        for p in folder.rglob("*")
        if p.is_file()
    }


def test_terminal_bench_folders_rebuilt_exactly(tmp_path: Path, data_dir: Path) -> None:
    root = data_dir / "terminal_bench"
    ts = imported(tmp_path, "terminal-bench", {"test": [str(root)]})
    tasks = list(ts.split("test"))
    assert len(tasks) == 8
    for task in tasks:
        assert terminal_bench.source_files(task) == tree(root / task.id), task.id
        assert task.instruction.strip()
        # Harbor's roles: the verifier and the oracle are kept out of the build context.
        env = {f.path for f in task.files_of("environment")}
        assert not env & {"run-tests.sh", "solution.sh"} and not any(
            p.startswith("tests/") for p in env
        )
    by_id = {t.id.rsplit("/", 1)[-1]: t for t in tasks}
    old_style = by_id["lcbpro-1983a"]  # the `descriptions:` list form
    assert old_style.prompt[0].content.startswith("LiveCodeBench Pro (Mini)")
    hello = by_id["hello-world"]  # no Dockerfile, no run-tests.sh
    assert hello.environment is not None and hello.environment.dockerfile is None
    assert hello.reward is not None and hello.reward.kind == "test_command"
    assert hello.reward.parser == "pytest"
    assert hello.limits is not None and hello.limits.timeout_sec == 900.0
    assert hello.environment.test_timeout_sec == 180.0
    runner = by_id["polyglot_python_affine-cipher"].file("test.sh", role="tests")
    assert runner.mode & 0o100
    assert by_id["polyglot_python_affine-cipher"].file("solve.sh", role="solution")


def test_harbor_folder(tmp_path: Path) -> None:
    task_dir = tmp_path / "src" / "fix-bug"
    (task_dir / "environment").mkdir(parents=True)
    (task_dir / "tests").mkdir()
    (task_dir / "solution").mkdir()
    (task_dir / "task.toml").write_text(
        'version = "1.0"\n[metadata]\ndifficulty = "easy"\ntags = ["x"]\n'
        "[verifier]\ntimeout_sec = 120.0\n[agent]\ntimeout_sec = 600.0\n"
        "[environment]\nbuild_timeout_sec = 300.0\ncpus = 2\nmemory_mb = 4096\n"
    )
    (task_dir / "instruction.md").write_text("Fix the bug in /app/main.py.\n")
    (task_dir / "environment" / "Dockerfile").write_text("FROM python:3.12\n")
    (task_dir / "tests" / "test.sh").write_text("#!/bin/bash\npytest\n")
    (task_dir / "tests" / "test.sh").chmod(0o755)
    (task_dir / "solution" / "solve.sh").write_text("sed -i s/a/b/ main.py\n")
    ts = imported(tmp_path, "harbor", {"train": [str(tmp_path / "src")]})
    task = ts.split("train")[0]
    assert task.id == "fix-bug"
    assert task.prompt[0].content == "Fix the bug in /app/main.py.\n"
    assert task.file("solve.sh", role="solution").read_bytes() == b"sed -i s/a/b/ main.py\n"
    assert {(f.role, f.path) for f in task.files} == {
        ("environment", "Dockerfile"),
        ("tests", "test.sh"),
        ("solution", "solve.sh"),
    }
    assert task.environment is not None
    assert (task.environment.dockerfile, task.environment.cpus) == ("Dockerfile", 2)
    assert task.environment.memory_mb == 4096 and task.environment.test_timeout_sec == 120.0
    assert task.limits is not None and task.limits.timeout_sec == 600.0
    assert task.metadata == {"difficulty": "easy", "tags": ["x"]}
    assert task.extras == {"harbor": {"version": "1.0"}}
    assert tree(task.materialize(tmp_path / "env", role="environment")) == tree(
        task_dir / "environment"
    )
