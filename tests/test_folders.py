"""The one walker every folder format reads with: nothing outside the folder it was given is
ever opened (symbolic links, `..`, absolute paths, an index's `folder`), each refusal one line
naming the place, and a split folder reads the same with or without its index."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from taskpack.cli import main

SECRET = "/etc/hostname"


def harbor_task(root: Path, name: str = "t") -> Path:
    folder = root / name
    (folder / "tests").mkdir(parents=True)
    (folder / "task.toml").write_text('version = "1.0"\n')
    (folder / "instruction.md").write_text("Do it.\n")
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\n")
    return folder


def convert(src: Path, fmt: str, out: Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["convert", str(src), "--from", fmt, "-o", str(out)])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


@pytest.mark.parametrize("fmt", ["harbor", "openreward", "terminal-bench"])
def test_symlinked_file_is_refused(tmp_path: Path, fmt: str) -> None:
    src = tmp_path / "src"
    folder = harbor_task(src)
    (folder / "task.yaml").write_text("instruction: Do it.\n")
    os.symlink(SECRET, folder / "tests" / "leak.txt")
    code, output = convert(src / "t", fmt, tmp_path / "out")
    assert code == 1 and "tests/leak.txt: symbolic links are not carried" in output
    assert not (tmp_path / "out").exists()


def test_symlinked_marker_and_folder_are_refused(tmp_path: Path) -> None:
    src = tmp_path / "src"
    folder = src / "t"
    folder.mkdir(parents=True)
    os.symlink(SECRET, folder / "task.yaml")
    code, output = convert(src, "terminal-bench", tmp_path / "out")
    assert code == 1 and "task.yaml: symbolic links are not carried" in output
    assert Path(SECRET).read_text().strip() not in output  # never parsed, never echoed
    other = harbor_task(tmp_path / "src2")
    os.symlink("/etc", other / "environment")
    code, output = convert(tmp_path / "src2", "harbor", tmp_path / "out2")
    assert code == 1 and "environment: symbolic links are not carried" in output


@pytest.mark.parametrize("folder", ["../outside", "/etc", "a/../../outside"])
def test_index_folder_outside_the_split_is_refused(tmp_path: Path, folder: str) -> None:
    split = tmp_path / "split"
    harbor_task(split)
    harbor_task(tmp_path, "outside")
    (split / "index.json").write_text(json.dumps({"tasks": [{"id": "x", "folder": folder}]}))
    code, output = convert(split, "harbor", tmp_path / "out")
    assert code == 1 and "index.json: folder" in output, output


def test_fifo_instead_of_a_file_is_refused(tmp_path: Path) -> None:
    folder = harbor_task(tmp_path / "src")
    os.mkfifo(folder / "tests" / "pipe")
    code, output = convert(tmp_path / "src", "harbor", tmp_path / "out")
    assert code == 1 and "tests/pipe: not a regular file" in output


def test_openreward_folder_without_index_reads_like_with_it(tmp_path: Path) -> None:
    import taskpack
    from taskpack.exporter import export
    from taskpack.importer import import_sources

    from .conftest import make_task

    taskpack.write(tmp_path / "ts", {"test": [make_task(i) for i in range(3)]}, name="t")
    export(taskpack.open(tmp_path / "ts"), "openreward", tmp_path / "or")
    import_sources(
        tmp_path / "a", {"test": [str(tmp_path / "or" / "test")]}, "openreward", name="a"
    )
    (tmp_path / "or" / "test" / "index.json").unlink()
    import_sources(
        tmp_path / "b", {"test": [str(tmp_path / "or" / "test")]}, "openreward", name="b"
    )
    a, b = (list(taskpack.open(tmp_path / p).split("test")) for p in ("a", "b"))
    assert [t.digest for t in a] == [t.digest for t in b]
    assert [t.instruction.split("\n")[0] for t in a] == [f"What is {i} + 1?" for i in range(3)]


def test_a_tasks_own_taskpack_json_is_its_file_and_never_merged(tmp_path: Path) -> None:
    """`tests/taskpack.json` is where `embed` puts the whole task: a task's own file of that
    name reads as its file, round-trips byte for byte, and refuses `embed` with one line."""

    def to_harbor(src: Path, out: Path, *options: str) -> tuple[int, str]:
        args = ["convert", str(src), "--from", "harbor", "--to", "harbor", "-o", str(out)]
        result = CliRunner().invoke(main, [*args, *options])
        assert "Traceback" not in result.output
        return result.exit_code, result.output

    own = b'{"threshold": 0.5, "id": "not a task"}\n'
    folder = harbor_task(tmp_path / "src")
    (folder / "tests" / "taskpack.json").write_bytes(own)
    code, output = to_harbor(tmp_path / "src", tmp_path / "out")
    assert code == 0, output
    assert (tmp_path / "out" / "train" / "t" / "tests" / "taskpack.json").read_bytes() == own
    code, output = to_harbor(tmp_path / "src", tmp_path / "e", "--embed")
    assert code == 1
    assert "its own file tests/taskpack.json is where `embed` puts the whole task" in output

    # An export with `embed`: its copy is recognised and read back, the task whole.
    plain = harbor_task(tmp_path / "src2")
    (plain / "tests" / "data.bin").write_bytes(b"\x00\xff")
    code, output = to_harbor(tmp_path / "src2", tmp_path / "e2", "--embed")
    assert code == 0, output
    copy = json.loads((tmp_path / "e2" / "train" / "t" / "tests" / "taskpack.json").read_text())
    assert set(copy) == {"taskpack"} and copy["taskpack"]["id"] == "t"
    code, output = to_harbor(tmp_path / "e2" / "train", tmp_path / "again")
    assert code == 0, output
    again = tmp_path / "again" / "train" / "t" / "tests"
    assert not (again / "taskpack.json").exists()
    assert (again / "data.bin").read_bytes() == b"\x00\xff"
