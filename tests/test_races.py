"""Races between processes on one machine, and what killed writers leave: a cold cache filled
by many loaders at once serves every one of them, a folder swapped for a link while
`materialize` runs never redirects it, and the next writer removes a dead writer's temporary
files (and never a live one's)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import taskpack
from taskpack.base.fs import _HOST, temp_name, write_atomic
from taskpack.errors import TaskpackError
from taskpack.model import Task
from taskpack.registry.cache import Cache
from taskpack.registry.client import publish

from .conftest import make_task

LOADER = """
import sys, taskpack
split = taskpack.load("race@1.0.0", split="train", registry=sys.argv[1])
print(sum(len(f.read_bytes()) for t in split for f in t.files))
"""


def test_a_fresh_object_renamed_in_while_another_process_looks_is_kept(tmp_path: Path) -> None:
    """The interleaving behind a loader dying with FileNotFoundError: process A finds the
    object absent, process B renames its download into place, A goes on. A must not remove
    B's object (it used to, as "corrupt")."""
    cache = Cache(tmp_path / "cache")
    data = b"object bytes"
    import hashlib

    sha = hashlib.sha256(data).hexdigest()
    path = cache.object_path(sha)
    real = Cache.holds

    def holds_then_b_renames(self: Cache, p: Path, s: str) -> bool:
        found = real(self, p, s)
        write_atomic(path, data)  # B, between A's look and whatever A does next
        return found

    cache.holds = holds_then_b_renames.__get__(cache)  # type: ignore[method-assign]
    assert cache.verified(sha) is None
    assert path.read_bytes() == data


@pytest.mark.slow
def test_loaders_racing_on_a_cold_cache_all_succeed(tmp_path: Path, bucket: str) -> None:
    """8 processes load one version from S3 into one cold cache at once, 4 times over."""
    big = [{"path": "f.bin", "data": bytes([i]) * 70_000} for i in range(40)]
    tasks = [make_task(i, files=[f]) for i, f in enumerate(big)]
    taskpack.write(tmp_path / "ts", {"train": tasks}, name="race", version="1.0.0")
    publish(tmp_path / "ts", registry=bucket)
    split = taskpack.open(tmp_path / "ts").split("train")
    expected = str(sum(len(f.read_bytes()) for t in split for f in t.files))
    for run in range(4):
        cache = tmp_path / f"cache{run}"
        env = {**os.environ, "TASKPACK_CACHE": str(cache)}
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", LOADER, bucket],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(8)
        ]
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0 and out.strip() == expected, (run, err[-2000:])


def test_a_folder_swapped_for_a_link_during_materialize_never_redirects_it(
    tmp_path: Path,
) -> None:
    task = Task.model_validate(
        {"id": "t", "files": [{"path": f"sub/f{i}", "data": b"x"} for i in range(20)]}
    )
    outside = tmp_path / "outside"
    outside.mkdir()
    target = tmp_path / "target"
    stop = threading.Event()

    def swap() -> None:  # `sub` flips between a folder and a link to `outside`
        while not stop.is_set():
            sub = target / "sub"
            try:
                if sub.is_symlink():
                    sub.unlink()
                elif sub.is_dir():
                    shutil.rmtree(sub, ignore_errors=True)
                    os.symlink(outside, sub)
            except OSError:
                pass

    refused = 0
    for _ in range(200):
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir()
        swapper = threading.Thread(target=swap)
        stop.clear()
        swapper.start()
        try:
            task.materialize(target)
        except TaskpackError as e:
            assert any(w in str(e) for w in ("a symbolic link", "is a file", "removed")), e
            refused += 1
        finally:
            stop.set()
            swapper.join()
        assert list(outside.iterdir()) == []
    assert refused > 0  # the swap did land in the middle of some runs


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _left_by(pid: int, name: str) -> str:
    return f".{name}.tmp-{_HOST}-{pid}-0123456789ab"


@pytest.mark.parametrize("where", ["registry", "cache", "materialize"])
def test_temporary_files_of_killed_writers_are_removed_by_the_next_writer(
    tmp_path: Path, where: str, request: pytest.FixtureRequest
) -> None:
    dead, live = _dead_pid(), os.getpid()
    task = make_task(0, files=[{"path": "f.bin", "data": b"z" * 70_000}])
    taskpack.write(tmp_path / "ts", {"train": [task]}, name="x", version="1.0.0")
    ts = taskpack.open(tmp_path / "ts")
    sha = ts.manifest.splits["train"].sha256
    if where == "registry":
        folder = tmp_path / "reg" / "objects" / "sha256" / sha[:2]
        name = sha

        def write() -> object:
            return publish(tmp_path / "ts", registry=str(tmp_path / "reg"))

    elif where == "cache":  # fetched from S3 into the cache
        bucket = str(request.getfixturevalue("bucket"))
        publish(tmp_path / "ts", registry=bucket)
        folder = Path(os.environ["TASKPACK_CACHE"]) / "objects" / "sha256" / sha[:2]
        name = sha

        def write() -> object:
            return taskpack.load("x@1.0.0", split="train", registry=bucket)[0]
    else:
        folder, name = tmp_path / "out", "f.bin"

        def write() -> object:
            return ts.split("train")[0].materialize(tmp_path / "out")

    folder.mkdir(parents=True, exist_ok=True)
    for pid in (dead, live):
        (folder / _left_by(pid, name)).write_bytes(b"partial")
    write()
    left = sorted(p.name for p in folder.iterdir() if p.name.startswith("."))
    assert left == [_left_by(live, name)], left
    assert temp_name(name).startswith(f".{name}.tmp-{_HOST}-{live}-")
