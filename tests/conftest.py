from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def make_task(i: int = 0, **overrides: Any) -> dict[str, Any]:
    """A valid task mapping with a file, a reward and metadata; overrides replace fields."""
    task: dict[str, Any] = {
        "id": f"t{i}",
        "prompt": f"What is {i} + 1?",
        "answer": str(i + 1),
        "reward": {"kind": "numeric_match"},
        "files": [{"path": "tests/check.py", "data": f"assert {i} + 1 == {i + 1}\n".encode()}],
        "metadata": {"row": i, "tags": ["a", "b"], "nested": {"x": 1.5, "y": None}},
    }
    task.update(overrides)
    return task


@pytest.fixture(autouse=True)
def _isolated_registry_and_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No test reads or writes the user's own registry or cache."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("TASKPACK_REGISTRY", str(home / "registry"))
    monkeypatch.setenv("TASKPACK_CACHE", str(home / "cache"))
    for name in ("TASKPACK_OFFLINE", "TASKPACK_LOCKFILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def data_dir() -> Path:
    if not DATA.is_dir():
        pytest.fail(f"shared data not found at {DATA}")
    return DATA
