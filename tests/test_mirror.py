"""`taskpack serve --mirror`: clients read a registry through it with `--registry http://...`,
everything checked on the client as from any registry, and what reaches the upstream registry
does not grow with the number of nodes: N nodes (each a cache of its own) of M processes cost
upstream what one process costs. Upstream is SeaweedFS on 127.0.0.1 behind a counting proxy."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import taskpack
from taskpack.errors import TaskpackError
from taskpack.registry.cache import Cache
from taskpack.registry.mirror import Mirror
from taskpack.serve.app import App, Registered, background

from .conftest import make_task
from .countproxy import CountingProxy

Upstream = tuple[str, CountingProxy, taskpack.TaskSet]
WORKER = """
import json, sys, taskpack
split = taskpack.load(sys.argv[1], split="train", registry=sys.argv[2])
task = split[int(sys.argv[3])]
print(json.dumps({"id": task.id, "digest": task.digest}))
"""


@pytest.fixture
def upstream(bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Upstream]:
    """A published version in S3, and a counting proxy in front of S3 for the mirror."""
    import os

    path = tmp_path / "ts"
    big = {"path": "big.bin", "data": b"x" * 200_000}
    tasks = [make_task(i) for i in range(300)] + [make_task(300, files=[big])]
    taskpack.write(
        path, {"train": tasks, "test": [make_task(400)]}, name="mirrored", version="1.0.0"
    )
    taskpack.publish(path, registry=bucket)
    port = int(os.environ["AWS_ENDPOINT_URL_S3"].rsplit(":", 1)[1])
    proxy = CountingProxy(port)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", proxy.url)  # the mirror reaches S3 through it
    yield bucket, proxy, taskpack.open(path)
    proxy.close()


def mirror_app(bucket: str, cache: Path) -> App:
    return App(registered=Registered(Mirror(bucket, Cache(cache), ttl=60)))


def run_nodes(url: str, nodes: int, procs: int, root: Path, ref: str) -> list[dict[str, str]]:
    """`nodes` caches of their own, `procs` fresh processes each loading a task at once."""
    import os

    running = []
    for n in range(nodes):
        env = {**os.environ, "TASKPACK_CACHE": str(root / f"node{n}"), "TASKPACK_REGISTRY": url}
        for p in range(procs):
            args = [sys.executable, "-c", WORKER, ref, url, str((n * procs + p) * 7 % 301)]
            running.append(subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True))
    out = []
    for proc in running:
        stdout, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0
        out.append(json.loads(stdout))
    return out


def test_upstream_traffic_does_not_grow_with_the_nodes(upstream: Upstream, tmp_path: Path) -> None:
    bucket, proxy, original = upstream
    expected = {t.id: t.digest for t in original.split("train")}
    seen = []
    for nodes, procs in ((1, 1), (3, 4)):
        proxy.reset()
        with background(mirror_app(bucket, tmp_path / f"mirror-{nodes}")) as url:
            got = run_nodes(url, nodes, procs, tmp_path / f"clients-{nodes}", "mirrored@1.0.0")
        assert all(expected[t["id"]] == t["digest"] for t in got) and len(got) == nodes * procs
        seen.append((proxy.requests, proxy.bytes_down))
    one, many = seen
    assert one[0] > 0 and many == one, seen  # 12 processes on 3 nodes: one process's upstream


def test_the_mirror_serves_reads_and_refuses_writes(upstream: Upstream, tmp_path: Path) -> None:
    bucket, _, original = upstream
    with background(mirror_app(bucket, tmp_path / "m")) as url:
        assert taskpack.listing(registry=url) == {"mirrored": "1.0.0"}
        assert taskpack.versions("mirrored", registry=url) == {"1.0.0": ["latest"]}
        latest = taskpack.load("mirrored@latest", split="test", registry=url)
        assert [t.digest for t in latest] == [t.digest for t in original.split("test")]
        big = taskpack.load("mirrored@1", split="train", registry=url)[300]
        assert big.file("big.bin").read_bytes() == b"x" * 200_000  # a large file, by hash
        with pytest.raises(TaskpackError, match="read-only mirror"):
            taskpack.publish(tmp_path / "ts", registry=url)
        missing = httpx.get(url + "/registry/v1/sets/mirrored/versions/9.9.9")
        assert missing.status_code == 404 and "no version" in missing.json()["error"]


def test_lockfiles_and_offline_work_through_a_mirror(
    upstream: Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lockfile written through the mirror pins the version read through it; once cached,
    the version opens offline with the mirror gone."""
    from taskpack.registry.client import write_lockfile

    bucket, _, original = upstream
    monkeypatch.setenv("TASKPACK_CACHE", str(tmp_path / "node"))
    lock = tmp_path / "taskpack.lock"
    with background(mirror_app(bucket, tmp_path / "m")) as url:
        entries = write_lockfile(["mirrored@1"], lock, registry=url)
        assert entries["mirrored@1"]["digest"] == original.manifest.digest
        split = taskpack.load("mirrored@1", split="train", registry=url, lockfile=lock)
        assert split[5].digest == original.split("train")[5].digest
    monkeypatch.setenv("TASKPACK_OFFLINE", "1")  # the mirror is gone: the cache serves it
    again = taskpack.load("mirrored@1.0.0", split="train", registry=url, lockfile=lock)
    assert again[7].digest == original.split("train")[7].digest
    with pytest.raises(TaskpackError, match="offline"):
        taskpack.load("mirrored@latest", split="train", registry=url)


def test_a_lying_mirror_is_caught_by_the_client(upstream: Upstream, tmp_path: Path) -> None:
    """The client hash-checks objects from a mirror as from any registry."""
    bucket, _, original = upstream
    app = mirror_app(bucket, tmp_path / "m")
    sha = original.manifest.splits["test"].files()[0].sha256
    real = app.registered.mirror.object  # type: ignore[union-attr]

    def tampered(name: str, version: str, wanted: str) -> Path:
        path = real(name, version, wanted)
        if wanted != sha:
            return path
        bad = tmp_path / "bad"
        bad.write_bytes(path.read_bytes()[:-1] + b"!")
        return bad

    app.registered.mirror.object = tampered  # type: ignore[union-attr, method-assign]
    with background(app) as url, pytest.raises(TaskpackError, match="hash"):
        taskpack.load("mirrored@1.0.0", split="test", registry=url)[0]


def test_http_registry_locations_parse_and_print_back() -> None:
    from taskpack.registry import Location

    for text in ("http://127.0.0.1:8000", "https://mirror.example/taskpack/"):
        where = Location.parse(text)
        assert Location.parse(where.url) == where and where.scheme in ("http", "https")
    for bad in ("http://", "http://host:port", "http://h/?q=1"):
        with pytest.raises(TaskpackError):
            Location.parse(bad)
