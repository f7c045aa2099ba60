"""Task sets written by format version 1 (tests/fixtures/v1: a task-set folder and a local registry
holding it, both written by taskpack 0.1 before task model 2) still open, verify, load from a
registry and export. Their files get roles: the files a reward runs as tests become `tests`."""

from __future__ import annotations

import shutil
from pathlib import Path

import taskpack
from taskpack.exporter import export

V1 = Path(__file__).parent / "fixtures" / "v1"


def test_v1_folder_opens_verifies_and_exports(tmp_path: Path) -> None:
    ts = taskpack.open(V1 / "folder")
    assert ts.manifest.format_version == 1
    assert taskpack.verify(ts) == []
    tasks = {t.id: t for t in ts.split("test")}
    assert tasks["test-00000"].answer == "18" and tasks["test-00000"].instruction.startswith(
        "Janet"
    )
    assert [(f.role, f.path) for f in tasks["HumanEval/0"].files] == [("tests", "test.py")]
    assert [(f.role, f.path) for f in tasks["astropy__astropy-12907"].files] == [
        ("tests", "test.patch")
    ]
    hello = tasks["hello-world"]  # Terminal-Bench: the roles today's reader gives
    assert {(f.role, f.path) for f in hello.files} == {
        ("other", "task.yaml"),
        ("solution", "solve.sh"),
        ("tests", "test_outputs.py"),
    }
    big = tasks["big-file"].file("data.bin")
    assert big.role == "workspace" and len(big.read_bytes()) == 76800
    result = export(ts, "harbor", tmp_path / "hb")
    assert (tmp_path / "hb" / "test" / "HumanEval__0" / "tests" / "test.py").is_file()
    export(ts, "nemo", tmp_path / "nemo")
    assert len((tmp_path / "nemo" / "test.jsonl").read_text().splitlines()) == len(tasks)
    assert "harbor: reward (no check a folder export can run) lost in 1 task(s)" in result.losses


def test_v1_published_version_loads_from_its_registry(tmp_path: Path) -> None:
    registry = tmp_path / "registry"
    shutil.copytree(V1 / "registry", registry)
    split = taskpack.load("v1set@1.0.0", split="test", registry=str(registry))
    assert len(split) == 8 and split.get("HumanEval/1") is not None
    pulled = taskpack.load("v1set@1", split="test", registry=str(registry))
    assert [t.id for t in pulled] == [t.id for t in taskpack.open(V1 / "folder").split("test")]
