"""What taskpack wrote, it reads back whole, by the folder it wrote: `convert DIR --from F` on
an export folder of any format that writes folders or a file per split gives back every split
under its name (issue 39), with the ids it was written with; a split named explicitly
(`SPLIT=PATH`, `--split`) still wins."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import taskpack
from taskpack.cli import main
from taskpack.exporter import export

from .conftest import make_task

WRITERS = ["harbor", "openreward", "verl", "skyrl", "gem", "nemo", "verifiers"]


@pytest.fixture(scope="module")
def two_splits(tmp_path_factory: pytest.TempPathFactory) -> taskpack.TaskSet:
    path = tmp_path_factory.mktemp("whole") / "ts"
    train = [make_task(i, id=f"q/{i}", files=[]) for i in range(7)]
    test = [make_task(100 + i, id=f"q/{100 + i}", files=[]) for i in range(3)]
    taskpack.write(path, {"train": train, "test": test}, name="whole")
    return taskpack.open(path)


@pytest.mark.parametrize("fmt", WRITERS)
def test_an_export_folder_reads_back_every_split(
    fmt: str, two_splits: taskpack.TaskSet, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    export(two_splits, fmt, out)
    back = tmp_path / "back"
    result = CliRunner().invoke(main, ["convert", str(out), "--from", fmt, "-o", str(back)])
    assert result.exit_code == 0, result.output
    read = taskpack.open(back)
    assert sorted(read.splits) == ["test", "train"]
    for name in ("train", "test"):
        assert len(read.split(name)) == len(two_splits.split(name)), (fmt, name)
    if fmt in ("harbor", "openreward"):  # their index keeps each task's id
        assert read.split("train").ids() == two_splits.split("train").ids()


def test_a_split_named_explicitly_still_wins(two_splits: taskpack.TaskSet, tmp_path: Path) -> None:
    out = tmp_path / "out"
    export(two_splits, "verl", out)
    back = tmp_path / "back"
    args = ["convert", f"eval={out / 'test.parquet'}", "--from", "verl", "-o", str(back)]
    assert CliRunner().invoke(main, args).exit_code == 0
    assert taskpack.open(back).splits == ["eval"]
    folders = tmp_path / "folders"
    export(two_splits, "harbor", folders)
    again = tmp_path / "again"
    args = ["convert", str(folders), "--from", "harbor", "--split", "all", "-o", str(again)]
    assert CliRunner().invoke(main, args).exit_code == 0
    whole = taskpack.open(again)
    assert whole.splits == ["all"] and len(whole.split("all")) == 10
