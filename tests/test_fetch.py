"""`taskpack.fetch`: a task from `taskpack serve` with the standard library alone, checked up to
the version digest; a pinned version whose digests the machine holds costs one request; a server
that lies is caught."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import taskpack
from taskpack.fetch import FetchError, file, task
from taskpack.serve.app import Api, App, Catalog, Response, background

from .conftest import make_task
from .countproxy import CountingProxy


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, taskpack.TaskSet]]:
    path = tmp_path / "ts"
    tasks = [make_task(i) for i in range(40)]
    tasks.append(make_task(40, files=[{"path": "big.bin", "data": b"z" * 100_000}]))
    taskpack.write(path, {"train": tasks, "dev": [make_task(99)]}, name="f", version="1.0.0")
    ts = taskpack.open(path)
    with background(App(api=Api(Catalog(ts)))) as url:
        yield url, ts


def test_a_task_by_index_or_id_is_its_published_content(served: tuple[str, Any]) -> None:
    url, ts = served
    digest = ts.manifest.digest
    split = ts.split("train")
    assert task(url, "train", 7) == split[7].canonical()
    assert task(url, "train", id="t40", digest=digest) == split[40].canonical()
    big = task(url, "train", 40)["files"][0]
    assert file(url, big["sha256"]) == b"z" * 100_000
    with pytest.raises(FetchError, match="not the pinned"):
        task(url, "dev", 0, digest="sha256:" + "0" * 64)
    with pytest.raises(FetchError, match="no split 'nope'"):
        task(url, "nope", 0)
    with pytest.raises(FetchError, match="HTTP 404: index 41 out of range"):
        task(url, "train", 41)


def test_a_pinned_version_whose_digests_are_here_costs_one_request(
    served: tuple[str, Any],
) -> None:
    url, ts = served
    digest = ts.manifest.digest
    proxy = CountingProxy(int(url.rsplit(":", 1)[1]))
    try:
        via = proxy.url
        task(via, "train", 1, digest=digest)  # the version, then the digests, then the task
        first = proxy.requests
        proxy.reset()
        assert task(via, "train", 2, digest=digest) == ts.split("train")[2].canonical()
        assert (first, proxy.requests) == (3, 1)
    finally:
        proxy.close()


def test_fetch_keeps_its_digests_in_the_cache_pulls_use(
    served: tuple[str, Any], tmp_path: Path
) -> None:
    """One rule places the cache (`settings.cache_root`): with TASKPACK_CACHE unset, a worker's
    kept digest list lands under XDG_CACHE_HOME's taskpack folder, where `taskpack cache` and
    pulls keep theirs; and reading the setting costs the worker no `typing` import."""
    url, ts = served
    code = (
        "import sys; from taskpack.fetch import task; "
        "task(sys.argv[1], 'train', 3, digest=sys.argv[2]); typed = 'typing' in sys.modules; "
        "from taskpack.base.objects import default_cache_dir; print(default_cache_dir(), typed)"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "TASKPACK_CACHE"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    out = subprocess.run(
        [sys.executable, "-c", code, url, ts.manifest.digest],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    root = tmp_path / "xdg" / "taskpack"
    assert out == [str(root), "False"]
    assert [p.name for p in root.iterdir()] == ["fetch"]
    assert any(p.is_file() for p in (root / "fetch").rglob("*"))


def test_processes_starting_at_once_fetch_the_digests_once(
    served: tuple[str, Any], tmp_path: Path
) -> None:
    """Sixteen processes of one machine, cold, at once: the split's digest list is fetched
    (and checked) by one of them; the others wait for it and read it. The list's answer is
    held back a second, so that every process reaches it."""
    url, ts = served
    proxy = CountingProxy(int(url.rsplit(":", 1)[1]), hold=("/digests", 1.0))
    code = (
        "import sys, json; from taskpack.fetch import task; "
        "print(json.dumps(task(sys.argv[1], 'train', int(sys.argv[2]), digest=sys.argv[3])))"
    )
    env = {**__import__("os").environ, "TASKPACK_CACHE": str(tmp_path / "cache")}
    try:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", code, proxy.url, str(k), ts.manifest.digest],
                stdout=subprocess.PIPE,
                env=env,
                text=True,
            )
            for k in range(16)
        ]
        got = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
        assert got == [ts.split("train")[k].canonical() for k in range(16)]
        assert sum("/digests" in path for path in proxy.paths) == 1
    finally:
        proxy.close()


def test_a_lying_server_is_caught(served: tuple[str, Any]) -> None:
    """A server answering other content than the version's: a task or a file."""
    _, ts = served
    api = Api(Catalog(ts))
    honest_task, honest_file = api.r_task, api.r_file

    def lying_task(query: dict[str, list[str]], split: str, index: str) -> Response:
        response = honest_task(query, split, index)
        body = json.loads(response.body)
        body["canonical"]["answer"] = "forged"
        response.body = json.dumps(body).encode()
        return response

    def lying_file(query: dict[str, list[str]], sha256: str) -> Response:
        response = honest_file(query, sha256)
        response.body, response.path = b"forged", None
        return response

    api.r_task = lying_task  # type: ignore[method-assign]
    api.r_file = lying_file  # type: ignore[method-assign]
    sha = ts.split("train")[40].files[0].sha256
    with background(App(api=api)) as liar:
        with pytest.raises(FetchError, match="not the one published"):
            task(liar, "train", 3)
        with pytest.raises(FetchError, match="other bytes"):
            file(liar, sha)


def test_fetching_imports_neither_pyarrow_nor_pydantic(served: tuple[str, Any]) -> None:
    """Nor typing or http.client: a fresh worker's start is mostly its imports."""
    url, _ = served
    code = (
        "import sys, taskpack.fetch as f\n"
        "t = f.task(sys.argv[1], 'train', 5)\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in "
        "('pyarrow', 'pydantic', 'numpy', 'pydantic_core', 'typing', 'http', 'email')]\n"
        "print(t['id'], heavy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, url], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["t5", "[]"]
