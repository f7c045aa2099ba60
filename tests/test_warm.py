"""A warm episode start: the second `taskpack.load` of an exact version reads its split from the
decoded copy the first left in the cache, with the standard library alone, and gives the same
tasks; a copy that changed since is not believed, and is written anew."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import taskpack
from taskpack.storage.warm import WarmSplit

from .conftest import make_task

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def published(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A version in a registry folder, its cache empty: 40 tasks, one with an inline file and
    one with a file kept out of the rows."""
    monkeypatch.setenv("TASKPACK_REGISTRY", str(tmp_path / "registry"))
    monkeypatch.setenv("TASKPACK_CACHE", str(tmp_path / "cache"))
    tasks = [make_task(i) for i in range(40)]
    tasks[3]["files"] = [{"path": "notes.txt", "data": b"inline bytes\n"}]
    tasks[4]["files"] = [{"path": "big.bin", "data": os.urandom(300_000)}]
    taskpack.write(tmp_path / "ts", {"train": tasks, "test": tasks[:5]}, name="w", version="1.0.0")
    taskpack.publish(tmp_path / "ts")
    return tmp_path / "ts"


def dumped(task: Any) -> dict[str, Any]:
    out: dict[str, Any] = task.model_dump(mode="json")
    out["bytes"] = [f.read_bytes().hex() for f in task.files]
    return out


PROBE = """
import json, sys
import taskpack
split = taskpack.load("w@1.0.0", split="train")
first = split[int(sys.argv[1])]
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("pyarrow", "pydantic", "numpy"))
print(json.dumps({"kind": type(split).__name__, "id": first.id, "loaded": loaded}))
"""


def fresh(index: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(index)], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


def test_a_second_start_reads_the_copy_without_pyarrow_and_gets_the_same_tasks(
    published: Path,
) -> None:
    first = taskpack.load("w@1.0.0", split="train")
    assert not isinstance(first, WarmSplit)  # the first load is checked, and leaves the copy
    assert fresh(7) == {"kind": "WarmSplit", "id": "t7", "loaded": []}
    warm = taskpack.load("w@1.0.0", split="train")
    assert isinstance(warm, WarmSplit)
    stored = taskpack.open(published).split("train")
    assert len(warm) == len(stored) == 40 and warm.digest == stored.digest
    assert [dumped(t) for t in warm] == [dumped(t) for t in stored]
    assert dumped(warm[-1]) == dumped(stored[39]) and dumped(warm[3]) == dumped(stored[3])
    assert [t.id for t in warm[5:9]] == ["t5", "t6", "t7", "t8"]
    assert warm.get("t12").id == "t12" and warm.get("nope") is None
    assert warm.ids() == stored.ids()
    with pytest.raises(IndexError, match="40 tasks"):
        warm[40]
    # what the copy does not answer, the checked split does
    assert warm.filter(id=["t1", "t2"]).ids() == ["t1", "t2"]
    assert [t.id for t in taskpack.Sampler(warm, seed=3)] == [
        t.id for t in taskpack.Sampler(stored, seed=3)
    ]
    import pickle

    copied = pickle.loads(pickle.dumps(warm))  # as a spawned DataLoader worker gets it
    assert dumped(copied[3]) == dumped(stored[3]) and copied.ids() == stored.ids()
    assert isinstance(taskpack.load("w@1.0.0", split="test"), taskpack.Split)  # its own copy
    assert isinstance(taskpack.load("w@1", split="train"), taskpack.Split)  # a range may move


def test_a_copy_changed_since_it_was_written_is_not_believed(published: Path) -> None:
    taskpack.load("w@1.0.0", split="train")
    (rows,) = (Path(os.environ["TASKPACK_CACHE"]) / "warm" / "data").glob("*/rows")
    text = rows.read_bytes()
    rows.write_bytes(text.replace(b'"t7"', b'"t9"', 1))  # same size, other content
    assert not isinstance(taskpack.load("w@1.0.0", split="train"), WarmSplit)
    again = taskpack.load("w@1.0.0", split="train")  # the checked load wrote it anew
    assert isinstance(again, WarmSplit) and again[7].id == "t7"
    assert rows.read_bytes() == text


def test_a_rewritten_copy_with_its_stamps_is_caught_by_validate_and_dropped(
    published: Path,
) -> None:
    """An attacker with write access to the cache rewrites the copy's answers and its
    stamps: `load` then reads the rewritten copy (its stamps hold), but `validate NAME@V`
    chains the copy's rows to the split digest of the checked manifest, names the split and
    drops the copy, and the next load reads the checked rows again."""
    from click.testing import CliRunner

    from taskpack.cli import main
    from taskpack.storage.warm import FILES, _stamp

    taskpack.load("w@1.0.0", split="train")
    valid = CliRunner().invoke(main, ["validate", "w@1.0.0"])
    assert valid.exit_code == 0, valid.output
    (rows,) = (Path(os.environ["TASKPACK_CACHE"]) / "warm" / "data").glob("*/rows")
    text = rows.read_bytes()
    rows.write_bytes(text.replace(b'"answer":"8"', b'"answer":"9"', 1))  # t7's answer
    stamps = rows.parent / "stamps"
    stamps.write_text(json.dumps([_stamp(rows.parent / f) for f in FILES]))
    forged = taskpack.load("w@1.0.0", split="train")
    assert isinstance(forged, WarmSplit) and forged[7].answer == "9"  # the copy's trust
    out = CliRunner().invoke(main, ["validate", "w@1.0.0"])
    assert out.exit_code != 0
    assert "split 'train': this machine's warm copy does not chain" in out.output
    assert not rows.exists()
    assert taskpack.load("w@1.0.0", split="train")[7].answer == "8"
    assert CliRunner().invoke(main, ["validate", "w@1.0.0"]).exit_code == 0
