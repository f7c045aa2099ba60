"""Stored tasks are light records (no pydantic); they must equal the validated model everywhere.

Every task of every data set in shared/data (the sources and the frameworks' own files) is read
through its format's reader (validated `taskpack.model` objects), written to a task set and read
back (`taskpack.records` objects); then every field is compared, recursively, by value and by
kind, and the behaviour both share is run on both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import taskpack
from taskpack import model, records
from taskpack.importer import read_source

from .conftest import DATA

PEERS = DATA / "peers"
SOURCES: list[tuple[str, Path, dict[str, Any]]] = [
    ("gsm8k", DATA / "gsm8k" / "train.jsonl", {}),
    ("gsm8k", DATA / "gsm8k" / "test.jsonl", {}),
    ("humaneval", DATA / "humaneval" / "HumanEval.jsonl.gz", {}),
    ("kaggle", DATA / "kaggle_llm_science_exam" / "train.csv", {"preset": "multiple-choice"}),
    ("kaggle", DATA / "kaggle_llm_science_exam" / "test.csv", {"preset": "multiple-choice"}),
    ("swebench", DATA / "swebench" / "swebench_lite_test.jsonl", {}),
    ("swebench", DATA / "swebench" / "swebench_verified_sample50.jsonl", {}),
    ("terminal-bench", DATA / "terminal_bench", {}),
    ("harbor", PEERS / "harbor_cookbook", {}),
    *(("nemo", p, {}) for p in sorted((PEERS / "nemo_gym").glob("*.jsonl"))),
    *(("skyrl", p, {}) for p in sorted((PEERS / "skyrl").glob("*/*.parquet"))),
    *(("verifiers", PEERS / "verifiers" / "gsm8k" / n, {}) for n in ("train.parquet", "test_hf")),
]


def _id(source: tuple[str, Path, dict[str, Any]]) -> str:
    return f"{source[0]}:{source[1].relative_to(DATA)}"


def same_everywhere(stored: Any, validated: Any, where: str) -> None:
    """Equal field by field, each object of the same kind, down to the leaves."""
    if isinstance(validated, BaseModel):
        assert isinstance(stored, records.LightRecord), where
        assert not isinstance(stored, BaseModel), f"{where}: a stored object is a pydantic model"
        kind = records._kind(type(validated))
        assert type(stored) is kind, f"{where}: {type(stored).__name__} for {kind.__name__}"
        names = list(type(validated).model_fields)
        assert list(stored._fields()) == names, where
        for name in names:
            same_everywhere(getattr(stored, name), getattr(validated, name), f"{where}.{name}")
    elif isinstance(validated, list):
        assert isinstance(stored, list) and len(stored) == len(validated), where
        for i, (a, b) in enumerate(zip(stored, validated, strict=True)):
            same_everywhere(a, b, f"{where}[{i}]")
    elif isinstance(validated, dict):
        assert isinstance(stored, dict) and list(stored) == list(validated), where
        for k in validated:
            same_everywhere(stored[k], validated[k], f"{where}[{k!r}]")
    else:
        assert type(stored) is type(validated) and stored == validated, where


@pytest.mark.slow
@pytest.mark.parametrize("source", SOURCES, ids=_id)
def test_stored_tasks_equal_validated_ones(
    tmp_path: Path, source: tuple[str, Path, dict[str, Any]]
) -> None:
    fmt, path, options = source
    validated = list(read_source(path, fmt, split="test", **options))
    assert validated and all(isinstance(t, model.Task) for t in validated)
    taskpack.write(tmp_path / "ts", {"test": validated}, name="x")
    stored = list(taskpack.open(tmp_path / "ts").split("test"))
    assert len(stored) == len(validated)
    for s, v in zip(stored, validated, strict=True):
        same_everywhere(s, v, s.id)
        assert s == v and v == s
        for mode in ("python", "json"):
            assert s.model_dump(mode=mode) == v.model_dump(mode=mode)  # type: ignore[arg-type]
        assert s.canonical() == v.canonical() and s.digest == v.digest
        assert s.instruction == v.instruction
        assert isinstance(s.reward, records.LightRecord) == isinstance(
            v.reward, records.LightRecord
        )
        for f, g in zip(s.files, v.files, strict=True):
            assert f.read_bytes() == g.read_bytes() and f.key == g.key
            if f.step is None:
                assert s.file(f.path, f.role) == v.file(g.path, g.role)
        for role in {f.role for f in v.files}:
            steps = {f.step for f in v.files if f.role == role}
            for step in steps:
                assert s.files_of(role, step) == v.files_of(role, step)
                a = s.materialize(tmp_path / "s" / s.id / role / str(step), role, step)
                b = v.materialize(tmp_path / "v" / s.id / role / str(step), role, step)
                assert _tree(a) == _tree(b)


def _tree(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mode)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_every_model_class_stands_on_its_record() -> None:
    """Each validated class inherits the record of its name, and each kind table names the
    record of the model with that kind."""
    for name in dir(records):
        cls = getattr(records, name)
        if (
            isinstance(cls, type)
            and issubclass(cls, records.LightRecord)
            and cls is not records.LightRecord
        ):
            validated = getattr(model, name)
            assert issubclass(validated, cls) and issubclass(validated, BaseModel), name
            assert records._kind(validated) is cls
    tables = {
        "type": (records.PART_KINDS, records.ITEM_KINDS, records.TOOL_KINDS),
        "kind": (records.REWARD_KINDS,),
    }
    for field, kinds in tables.items():
        for table in kinds:
            for kind, cls in table.items():
                validated = getattr(model, cls.__name__)
                assert validated.model_fields[field].default == kind


def test_stored_objects_copy_print_and_serialize_as_the_model(tmp_path: Path) -> None:
    task = model.Task.model_validate(
        {
            "id": "t",
            "prompt": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "reward": {
                "kind": "multiple_choice",
                "choices": [{"label": "A", "text": "a"}, {"label": "B", "text": "b"}],
            },
            "answer": "A",
            "files": [{"path": "big.bin", "data": bytes(range(256)) * 300}],
        }
    )
    taskpack.write(tmp_path / "ts", {"train": [task]}, name="x")
    stored = taskpack.open(tmp_path / "ts").split("train")[0]
    assert isinstance(stored, records.Task) and not isinstance(stored, model.Task)
    assert stored.files[0].data is None and stored.files[0].read_bytes() == task.files[0].data
    copy = stored.model_copy(update={"answer": "B"})
    assert copy.answer == "B" and stored.answer == "A" and copy.reward == task.reward
    assert repr(stored.reward).startswith("MultipleChoice(kind='multiple_choice', choices=[")
    assert stored.model_dump(exclude={"files"}, exclude_none=True) == task.model_dump(
        exclude={"files"}, exclude_none=True
    )
    on_disk = taskpack.open(tmp_path / "ts").manifest
    light = records.stored_manifest(on_disk.model_dump_json().encode())  # as the cache reads it
    assert isinstance(light, records.Manifest) and not isinstance(light, model.Manifest)
    assert light.model_dump_json(indent=2) == on_disk.model_dump_json(indent=2)
    assert light.objects() == on_disk.objects() and light.ref == on_disk.ref
    # A stored task is taken as it is by every writer.
    taskpack.write(tmp_path / "again", {"train": [stored]}, name="x")
    assert taskpack.open(tmp_path / "again").manifest.digest == on_disk.digest


def test_a_file_compares_by_content_whoever_built_it(tmp_path: Path) -> None:
    f = model.TaskFile(path="a.txt", data=b"x")
    taskpack.write(tmp_path / "ts", {"t": [{"id": "a", "files": [f]}]}, name="x")
    stored = taskpack.open(tmp_path / "ts").split("t")[0].files[0]
    assert stored == f and f == stored
    assert stored != model.TaskFile(path="a.txt", data=b"y")
