"""Folder exports written by forked processes give the same folders, index and loss report as
one process writing them, and a child's error reaches the caller."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import taskpack
from taskpack.base.fs import remove_later
from taskpack.converters import _folders
from taskpack.errors import TaskpackError
from taskpack.exporter import export
from taskpack.importer import import_sources

from .conftest import make_task


def tree(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mode & 0o777)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def tasks(tmp_path: Path) -> taskpack.TaskSet:
    rows = [
        make_task(
            i, reward={"kind": "rubric", "criteria": [{"description": "right"}]} if i % 5 else None
        )
        for i in range(61)
    ]
    taskpack.write(tmp_path / "ts", {"train": rows}, name="many")
    return taskpack.open(tmp_path / "ts")


@pytest.mark.parametrize("fmt", ["harbor", "openreward"])
def test_forked_writers_write_what_one_process_writes(
    fmt: str, tasks: taskpack.TaskSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_folders, "_BLOCK", 8)  # 7 full blocks, each split between processes
    monkeypatch.setattr(_folders, "_LATER_BLOCK", 8)  # the same for a split's `Later` tasks
    monkeypatch.setattr(_folders.os, "cpu_count", lambda: 3)
    forked = export(tasks, fmt, tmp_path / "forked")
    monkeypatch.setattr(_folders.os, "cpu_count", lambda: 1)  # no fork: one process
    alone = export(tasks, fmt, tmp_path / "alone")
    assert forked.losses == alone.losses and any("lost in 48 task(s)" in x for x in alone.losses)
    assert tree(tmp_path / "forked") == tree(tmp_path / "alone")
    assert len([p for p in (tmp_path / "forked" / "train").iterdir() if p.is_dir()]) == 61


def test_forked_writers_build_the_tasks_and_the_parent_reads_only_ids(
    tasks: taskpack.TaskSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An export of a split hands the writers `Later` tasks: each child builds its own share
    (the last, partial block too), so the parent's share of the work is the ids."""
    from taskpack.storage import taskset

    built: list[str] = []
    real = taskset.Split._task
    monkeypatch.setattr(
        taskset.Split,
        "_task",
        lambda self, row, i: (built.append(row["id"]), real(self, row, i))[1],
    )
    monkeypatch.setattr(_folders, "_BLOCK", 8)
    monkeypatch.setattr(_folders, "_LATER_BLOCK", 8)
    monkeypatch.setattr(_folders.os, "cpu_count", lambda: 2)
    export(tasks, "harbor", tmp_path / "forked")
    assert built == []  # the children's builds stayed in the children
    monkeypatch.setattr(_folders.os, "cpu_count", lambda: 1)
    export(tasks, "harbor", tmp_path / "alone")
    assert built == [f"t{i}" for i in range(61)]
    assert tree(tmp_path / "forked") == tree(tmp_path / "alone")


def test_later_tasks_are_the_splits_and_each_row_group_is_let_go_once_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from taskpack.storage import writer

    monkeypatch.setattr(writer, "ROW_GROUP_ROWS", 16)  # 61 tasks: 4 row groups
    taskpack.write(tmp_path / "ts", {"train": [make_task(i) for i in range(61)]}, name="g")
    split = taskpack.open(tmp_path / "ts").split("train")
    later = list(split.later())
    groups = {id(x.group): x.group for x in later}
    assert len(groups) == 4 and all(g.rows is None for g in groups.values())  # ids alone read
    built = [x.task() for x in later[:20]]
    assert [g.rows is None for g in groups.values()] == [True, False, True, True]
    built += [x.task() for x in later[20:]]
    assert all(g.rows is None for g in groups.values())
    assert [t.canonical() for t in built] == [t.canonical() for t in split]


def test_a_childs_error_reaches_the_caller(
    tasks: taskpack.TaskSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_folders, "_BLOCK", 8)
    monkeypatch.setattr(_folders.os, "cpu_count", lambda: 2)
    with pytest.raises(
        TaskpackError, match=r"split 'train' task 't0': harbor cannot carry .* --strict"
    ):
        export(tasks, "harbor", tmp_path / "strict", strict=True)
    assert not (tmp_path / "strict").exists()  # nothing half-written left in place
    real = _folders._write_task

    def clash(folder: str, files: _folders.Files) -> None:
        if folder.endswith("t33"):
            files = {**files, "task.toml/x": (b"", 0o644)}
        real(folder, files)

    monkeypatch.setattr(_folders, "_write_task", clash)
    with pytest.raises(TaskpackError, match=r"split 'train' task 't33': task.toml/x: another"):
        export(tasks, "harbor", tmp_path / "clash")


def test_row_files_written_in_batches_equal_one_table_of_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from taskpack.converters import _rowfile

    rows = [
        {"id": "a", "answer": None, "extra": {"x": 1}},
        {"id": "b", "answer": None, "extra": {"x": 2}},
        {"id": "c", "answer": "3", "extra": {"x": 3, "y": [1.5]}},  # new type, new key
        {"id": "d", "extra": None, "more": True},  # a column this batch alone has
        {"id": "e", "answer": "5", "extra": {"x": 5}},
    ]
    monkeypatch.setattr(_rowfile, "BATCH_ROWS", 2)
    _rowfile.write_parquet_rows(iter(rows), tmp_path / "batched.parquet")
    # One table of every row, with every key (`from_pylist` would keep the first row's only).
    names = ["id", "answer", "extra", "more"]
    whole = pa.table({n: [row.get(n) for row in rows] for n in names})
    got = pq.read_table(tmp_path / "batched.parquet")
    assert got.to_pylist() == whole.to_pylist()
    assert got.schema.equals(whole.schema)
    assert got.column("more").to_pylist() == [None, None, None, True, None]
    assert [p.name for p in tmp_path.iterdir()] == ["batched.parquet"]  # parts removed


@pytest.mark.parametrize("late", [False, True])
def test_row_files_stream_batches_that_agree_and_join_from_the_first_that_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, late: bool
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from taskpack.converters import _rowfile

    rows: list[dict[str, object]] = [{"id": str(i), "answer": str(i)} for i in range(8)]
    if late:  # three batches agree; the fourth's answers are all null (a null column)
        rows[6]["answer"] = rows[7]["answer"] = None
    joined: list[object] = []
    monkeypatch.setattr(_rowfile, "BATCH_ROWS", 2)
    monkeypatch.setattr(_rowfile, "_conform", lambda t, s: joined.append(1) or t.cast(s))
    _rowfile.write_parquet_rows(iter(rows), tmp_path / "out.parquet")
    got = pq.read_table(tmp_path / "out.parquet")
    whole = pa.Table.from_pylist(rows)
    assert got.to_pylist() == whole.to_pylist() and got.schema.equals(whole.schema)
    assert bool(joined) == late  # one pass when every batch agrees
    assert [p.name for p in tmp_path.iterdir()] == ["out.parquet"]


def test_a_skyrl_export_keeps_the_fields_only_later_rows_have(tmp_path: Path) -> None:
    """A GSM8K-shaped task first, then SWE-bench ones (whose rows carry `instance` and the
    instance fields): every row keeps its fields, and the SWE-bench tasks read back whole."""
    import json

    import pyarrow.parquet as pq

    import taskpack
    from taskpack.exporter import export
    from taskpack.importer import read_source

    from .conftest import DATA

    swe = list(read_source(DATA / "swebench" / "swebench_verified_sample50.jsonl", "swebench"))
    simple = {"id": "g0", "prompt": "1+1?", "answer": "2", "reward": {"kind": "numeric_match"}}
    taskpack.write(tmp_path / "ts", {"train": [simple, *swe[:2]]}, name="mixed")
    export(taskpack.open(tmp_path / "ts"), "skyrl", tmp_path / "out")
    rows = pq.read_table(tmp_path / "out" / "train.parquet").to_pylist()
    assert rows[0]["instance"] is None and rows[1]["instance"]["instance_id"] == swe[0].id
    assert json.loads(rows[2]["FAIL_TO_PASS"]) == swe[1].reward.fail_to_pass  # type: ignore[union-attr]
    back = list(read_source(tmp_path / "out" / "train.parquet", "skyrl"))
    assert [t.reward.kind for t in back if t.reward] == ["numeric_match", "swe_tests", "swe_tests"]
    assert back[1].file("test.patch").read_bytes() == swe[0].file("test.patch").read_bytes()


@pytest.mark.parametrize(
    "value",
    [
        {"tasks": [{"id": "a", "folder": "a"}, {"id": 'é"\n', "folder": "b"}]},
        [
            {
                "name": "s",
                "description": "",
                "tasks": [],
                "about": {"a": [1, {}], "b": None, "é": "ü"},
            }
        ],
        [],
    ],
)
def test_json_text_is_json_indented_with_each_task_on_a_line(value: object) -> None:
    """index.json and registry.json: what an indented dump holds, laid out as one except for
    the tasks, one a line."""
    import json

    text = _folders.json_text(value)
    assert json.loads(text) == value and text.endswith("\n")
    if isinstance(value, dict):
        first, second = (json.dumps(t, ensure_ascii=False) for t in value["tasks"])
        assert text.splitlines()[2:4] == [f"    {first},", f"    {second}"]
    else:
        assert text == json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _settled(folder: Path, name: str, wanted: list[str]) -> list[str]:
    """What `folder` holds by `name` (itself, or set aside: `.name.old-...`), once it is
    `wanted` or background removals have had a minute."""
    for _ in range(600):
        left = sorted(p.name for p in folder.iterdir() if name in p.name)
        if left == wanted:
            break
        time.sleep(0.1)
    return left


@pytest.mark.slow
def test_an_interrupted_export_ends_and_leaves_nothing(tmp_path: Path) -> None:
    """SIGINT while forked writers write, to the export alone (`kill -INT`) and to its whole
    process group (a terminal's Ctrl-C): the export ends, nothing is put in place, and the
    half-written folder goes (a process of its own removes it). Writers blocked answering the
    interrupted parent once kept it from exiting."""
    from .conftest import DATA

    source = {"train": [str(DATA / "gsm8k" / "train.jsonl")]}
    import_sources(tmp_path / "g", source, "gsm8k", name="g")
    command = [sys.executable, "-m", "taskpack", "export", str(tmp_path / "g"), "--to", "harbor"]
    for to_group in (False, True):
        proc = subprocess.Popen(
            [*command, "-o", str(tmp_path / "h"), "-q"],
            start_new_session=True,
            stderr=subprocess.PIPE,
            text=True,
            # as a terminal's command: a test run in the background (`cmd &` in a script)
            # ignores SIGINT, and Python keeps a SIGINT ignored at its start ignored, so the
            # export never heard it and wrote every task (a failure in the test, not the code)
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        for _ in range(600):  # until its writers have begun
            if any(p.name.startswith(".h.tmp") for p in tmp_path.iterdir()):
                break
            time.sleep(0.05)
        time.sleep(0.5)
        if to_group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 1 and "Aborted" in err, err
        assert _settled(tmp_path, "h", []) == []


def test_an_overwritten_export_is_removed_without_waiting(tmp_path: Path) -> None:
    """--force sets the old export aside and a process of its own removes it: the new one is
    in place, and the old goes."""
    ts = taskpack.write(tmp_path / "ts", {"train": [make_task(i) for i in range(50)]}, name="x")
    assert ts.digest
    opened = taskpack.open(tmp_path / "ts")
    export(opened, "harbor", tmp_path / "out")
    (tmp_path / "out" / "marker").write_text("old")
    export(opened, "harbor", tmp_path / "out", overwrite=True)
    assert not (tmp_path / "out" / "marker").exists()
    assert (tmp_path / "out" / "train" / "index.json").is_file()
    assert _settled(tmp_path, "out", ["out"]) == ["out"]


def test_remove_later_removes_a_tree_from_another_process(tmp_path: Path) -> None:
    tree = tmp_path / "aside"
    for k in range(20):
        (tree / f"d{k}").mkdir(parents=True)
        (tree / f"d{k}" / "f").write_text("x")
    remove_later(tree)
    assert _settled(tmp_path, "aside", []) == []


@pytest.mark.slow
def test_the_export_bar_counts_folders_written(tmp_path: Path) -> None:
    """The folder formats read a split's tasks well before their forked writers write them:
    the bar counts what is written, never more than the folders there are."""
    from .conftest import DATA

    source = {"train": [str(DATA / "gsm8k" / "train.jsonl")]}
    import_sources(tmp_path / "g", source, "gsm8k", name="g")
    seen: list[tuple[int, int]] = []  # (ticks, folders on disk) at each tick

    def bar(items: Any, name: str) -> Any:
        for n, item in enumerate(items, 1):
            if n == 1 or n % 1000 == 0:  # a look at the folders now and then: each costs
                written = tmp_path.glob(".out.tmp-*/train/*/task.toml")
                seen.append((n, sum(1 for _ in written)))
            yield item

    result = export(taskpack.open(tmp_path / "g"), "harbor", tmp_path / "out", progress=bar)
    assert result.tasks == {"train": 7473} and seen[-1][0] == 7000
    assert all(ticks <= folders for ticks, folders in seen), seen
    assert len({folders for _, folders in seen}) > 2, seen  # it moved while the writers wrote
