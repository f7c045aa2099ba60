"""Publish and pull through a network that breaks on purpose (tests/faultproxy.py): every
operation succeeds or fails with one clear error in bounded time; a version is visible whole or
not at all; no wrong byte is ever served. Against SeaweedFS and the test Hub server."""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

import taskpack
from taskpack.errors import TaskpackError
from taskpack.registry import open_registry
from taskpack.registry.cache import Cache
from taskpack.storage.rows import INLINE_MAX

from .conftest import make_task
from .faultproxy import FaultProxy

pytestmark = pytest.mark.slow

TIMEOUT = 1.5  # TASKPACK_NETWORK_TIMEOUT during the faults: stalls outlast it
BOUND = 120.0  # no operation may take longer, retries included


def _source(tmp: Path, i: int) -> Path:
    tasks = [make_task(k, answer=f"{i}-{k}") for k in range(3)]
    big = make_task(9, files=[{"path": "big.bin", "data": bytes([i % 256]) * (INLINE_MAX + i)}])
    path = tmp / f"src-{i}"
    taskpack.write(path, {"train": [*tasks, big]}, name="faulty", version=f"1.0.{i}")
    return path


def _attempt(outcomes: Counter[str], what: str, op: Callable[[], Any]) -> bool:
    start = time.monotonic()
    try:
        op()
        ok = True
    except TaskpackError as e:  # anything else is a bug, and fails the test
        message = str(e)
        assert "\n" not in message and "Traceback" not in message, message
        assert "test-token" not in message and "secret" not in message.lower(), message
        ok = False
    elapsed = time.monotonic() - start
    assert elapsed < BOUND, f"{what} took {elapsed:.0f} s"
    outcomes[f"{what} {'ok' if ok else 'failed'}"] += 1
    return ok


def _whole_or_absent(registry: str, source: Path, cache: Path) -> bool:
    """Read directly (no faults): the version is absent, or every byte of it is right."""
    m = taskpack.open(source).manifest
    found = open_registry(registry).manifest(m.name, m.version)
    if found is None:
        return False
    assert found.digest == m.digest
    ts = taskpack.registry.client.resolve(m.ref, registry=registry, cache=Cache(cache))
    assert taskpack.verify(ts) == []
    return True


def _expected(source: Path) -> list[Any]:
    return [
        (t.id, t.answer, [f.read_bytes() for f in t.files])
        for t in taskpack.open(source).split("train")
    ]


def _served(ts_split: Any) -> list[Any]:
    return [(t.id, t.answer, [f.read_bytes() for f in t.files]) for t in ts_split]


def _run(
    tmp_path: Path, registry: str, versions: int, through_proxy: Callable[[bool], None]
) -> Counter[str]:
    outcomes: Counter[str] = Counter()
    for i in range(versions):
        source = _source(tmp_path, i)
        m = taskpack.open(source).manifest
        through_proxy(True)
        _attempt(outcomes, "publish", lambda s=source: taskpack.publish(s, registry=registry))
        through_proxy(False)
        if not _whole_or_absent(registry, source, tmp_path / f"check-{i}"):
            outcomes["absent after a failed publish"] += 1
            taskpack.publish(source, registry=registry)  # a re-run completes it
        through_proxy(True)
        served: list[Any] = []

        def pull(i: int = i, m: Any = m, served: list[Any] = served) -> None:
            split = taskpack.load(
                m.ref, "train", registry=registry, cache=Cache(tmp_path / f"c{i}")
            )
            served.extend(_served(split))

        if _attempt(outcomes, "pull", pull):
            assert served == _expected(source), "a pull served other bytes"
        through_proxy(False)
    return outcomes


def test_s3_through_a_faulty_network(
    tmp_path: Path, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    direct = os.environ["AWS_ENDPOINT_URL_S3"]
    proxy = FaultProxy(urlparse(direct).port or 80, seed=7, rate=0.4, stall=TIMEOUT * 2)
    monkeypatch.setenv("TASKPACK_NETWORK_TIMEOUT", str(TIMEOUT))

    def through_proxy(on: bool) -> None:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", proxy.url if on else direct)

    try:
        outcomes = _run(tmp_path, bucket, 60, through_proxy)
    finally:
        proxy.close()
    _report("s3", outcomes, proxy)
    assert outcomes["publish ok"] + outcomes["publish failed"] == 60
    assert sum(v for k, v in proxy.counts.items() if k != "none") >= 40


def test_hub_through_a_faulty_network(
    tmp_path: Path, hub: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    direct = hub.endpoint
    proxy = FaultProxy(urlparse(direct).port or 80, seed=11, rate=0.25, stall=TIMEOUT * 2)
    monkeypatch.setenv("TASKPACK_NETWORK_TIMEOUT", str(TIMEOUT))

    def through_proxy(on: bool) -> None:
        monkeypatch.setenv("HF_ENDPOINT", proxy.url if on else direct)
        huggingface_hub.close_session()  # a new client, with this timeout

    try:
        outcomes = _run(tmp_path, f"hf://{hub.owner}", 40, through_proxy)
    finally:
        proxy.close()
        monkeypatch.setenv("TASKPACK_NETWORK_TIMEOUT", "60")
        huggingface_hub.close_session()
    _report("hub", outcomes, proxy)
    assert sum(v for k, v in proxy.counts.items() if k != "none") >= 20


def _report(name: str, outcomes: Counter[str], proxy: FaultProxy) -> None:
    """Printed for the closing note (`pytest -s`): operations, outcomes, faults injected."""
    faults = {k: v for k, v in proxy.counts.items() if k != "none"}
    print(f"\n{name}: {dict(outcomes)}; connections {sum(proxy.counts.values())}; faults {faults}")
