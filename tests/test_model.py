"""The task model accepts what sources give and rejects, by field, what no format can hold."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from taskpack.model import Task, TaskFile

from .conftest import make_task


def errors_of(data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as info:
        Task.model_validate(data)
    return str(info.value)


def test_bare_string_prompt_becomes_one_user_message() -> None:
    task = Task.model_validate(make_task(prompt="hi"))
    assert [(m.role, m.content) for m in task.prompt] == [("user", "hi")]


def test_file_hash_and_size_are_computed_and_checked() -> None:
    f = TaskFile(path="a.txt", data=b"abc")
    assert f.sha256 == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert f.size == 3
    with pytest.raises(ValidationError, match="does not match the data"):
        TaskFile(path="a.txt", data=b"abc", sha256="0" * 64)
    with pytest.raises(ValidationError, match="either data or both sha256 and size"):
        TaskFile(path="a.txt")


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/etc/passwd", "absolute"),
        ("C:/x", "absolute"),
        ("../up.txt", "'..'"),
        ("a/../../b", "'..'"),
        ("a\\b", "backslash"),
        ("a\x00b", "NUL"),
        ("", "empty path"),
        ("a//b", "not normalized"),
        ("a/./b", "not normalized"),
    ],
)
def test_file_paths_that_could_escape_are_rejected(path: str, reason: str) -> None:
    message = errors_of(make_task(files=[{"path": path, "data": b"x"}]))
    assert "files.0.path" in message
    assert reason in message


def test_leading_dot_slash_is_normalized_away() -> None:
    task = Task.model_validate(make_task(files=[{"path": "./tests/x.py", "data": b""}]))
    assert task.files[0].path == "tests/x.py"


def test_missing_and_wrong_typed_fields_name_the_field() -> None:
    data = make_task()
    del data["id"]
    assert "id" in errors_of(data) and "Field required" in errors_of(data)
    assert "answer" in errors_of(make_task(answer=float("nan")))
    assert "prompt" in errors_of(make_task(prompt=[{"role": "narrator", "content": "x"}]))
    assert "reward.numeric_match.tolerance" in errors_of(
        make_task(reward={"kind": "numeric_match", "tolerance": "wide"})
    )
    assert "reward" in errors_of(make_task(reward={"kind": "vibes"}))
    assert "id" in errors_of(make_task(id=""))


def test_text_must_be_valid_utf8() -> None:
    assert "prompt" in errors_of(make_task(prompt=b"caf\xe9"))
    assert "not valid UTF-8" in errors_of(make_task(answer="bad \udc80 surrogate"))
    assert "metadata.note" in errors_of(make_task(metadata={"note": "\udcff"}))


def test_metadata_rejects_values_json_cannot_hold() -> None:
    assert "not representable" in errors_of(make_task(metadata={"x": float("nan")}))


def test_cross_field_rules() -> None:
    assert "duplicate paths" in errors_of(
        make_task(files=[{"path": "a", "data": b"1"}, {"path": "a", "data": b"2"}])
    )
    assert "is not one of the task's files" in errors_of(
        make_task(reward={"kind": "unit_tests", "entry_point": "f", "test_file": "missing.py"})
    )
    choices = [{"label": "A", "text": "x"}, {"label": "B", "text": "y"}]
    assert "not one of the choices" in errors_of(
        make_task(answer="C", reward={"kind": "multiple_choice", "choices": choices})
    )


def test_digest_ignores_key_order_and_file_storage() -> None:
    a = Task.model_validate(make_task(metadata={"a": 1, "b": {"c": 2, "d": 3}}))
    b = Task.model_validate(make_task(metadata={"b": {"d": 3, "c": 2}, "a": 1}))
    assert a.digest == b.digest
    blob_ref = a.files[0].model_copy(update={"data": None})
    assert blob_ref == a.files[0]
    assert a.model_copy(update={"files": [blob_ref]}).digest == a.digest


def test_digest_changes_with_any_field() -> None:
    base = Task.model_validate(make_task()).digest
    assert Task.model_validate(make_task(answer="2.0")).digest != base
    assert Task.model_validate(make_task(metadata={"row": 0})).digest != base
    changed_file = [{"path": "tests/check.py", "data": b"assert 0 + 1 == 1\n\n"}]
    assert Task.model_validate(make_task(files=changed_file)).digest != base
    executable = [{"path": "tests/check.py", "data": b"assert 0 + 1 == 1\n", "mode": 0o755}]
    assert Task.model_validate(make_task(files=executable)).digest != base
