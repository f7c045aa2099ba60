"""Many writers and many readers at once, against the real S3 server."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import taskpack
from taskpack.registry import VersionExists, open_registry
from taskpack.registry.client import publish
from taskpack.storage.rows import INLINE_MAX

from .conftest import make_task

pytestmark = pytest.mark.slow  # many processes racing on one registry

PUBLISHERS, ROUNDS, READERS = 16, 20, 32


def race(url: str, paths: list[Path]) -> list[object]:
    """Publish every task set at once, each from its own registry client; True, False or the
    VersionExists error, per publisher."""
    barrier = threading.Barrier(len(paths))
    outcomes: list[object] = [None] * len(paths)

    def run(p: int) -> None:
        registry = open_registry(url)
        ts = taskpack.open(paths[p])
        barrier.wait()
        try:
            outcomes[p] = registry.publish(ts)
        except VersionExists as e:
            outcomes[p] = e

    threads = [threading.Thread(target=run, args=(p,)) for p in range(len(paths))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


def test_racing_publishers_exactly_one_wins(tmp_path: Path, bucket: str) -> None:
    for round_no in range(ROUNDS):
        version = f"1.0.{round_no}"
        paths = []
        for p in range(PUBLISHERS):
            path = tmp_path / f"r{round_no}-p{p}"
            rows = [make_task(p, answer=f"publisher {p}")]
            taskpack.write(path, {"train": rows}, name="race", version=version)
            paths.append(path)
        outcomes = race(bucket, paths)
        winners = [p for p, o in enumerate(outcomes) if o is True]
        losers = [o for o in outcomes if isinstance(o, VersionExists)]
        assert len(winners) == 1, (round_no, outcomes)
        assert len(losers) == PUBLISHERS - 1
        expected = f"race@{version} already exists with different content"
        assert all(expected in str(e) for e in losers)
        published = open_registry(bucket).resolve(f"race@{version}")
        assert published.digest == taskpack.open(paths[winners[0]]).manifest.digest


READER = """
import json, sys
from taskpack.registry import s3
real = s3.S3Store.download
def counted(self, key, dest, progress=None):
    with open(sys.argv[3], "a") as log:
        log.write(key + "\\n")
    real(self, key, dest, progress)
s3.S3Store.download = counted
import taskpack
split = taskpack.load("fan@1.0.0", split="train", registry=sys.argv[1])
task = split.get("t999")
task.materialize(sys.argv[2])
print(json.dumps([t.digest for t in split]))
"""


def test_readers_on_a_cold_cache_fetch_each_object_once(tmp_path: Path, bucket: str) -> None:
    big = b"b" * (INLINE_MAX * 4)
    tasks = [make_task(i) for i in range(300)]
    tasks.append(make_task(999, files=[{"path": "big.bin", "data": big}]))
    taskpack.write(
        tmp_path / "fan", {"train": tasks, "test": [make_task(1)]}, name="fan", version="1.0.0"
    )
    publish(tmp_path / "fan", registry=bucket)
    log = tmp_path / "downloads.log"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", READER, bucket, str(tmp_path / f"out{i}"), str(log)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(READERS)
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        outputs.append(json.loads(out))
    assert all(o == outputs[0] for o in outputs) and len(outputs[0]) == 301
    expected = [t.digest for t in taskpack.open(tmp_path / "fan").split("train")]
    assert outputs[0] == expected
    m = taskpack.open(tmp_path / "fan").manifest
    keys = log.read_text().split()
    wanted = {m.splits["train"].sha256, *m.splits["train"].blobs}
    assert sorted(k.rsplit("/", 1)[-1] for k in keys) == sorted(wanted)  # each once, no test split
    assert all((tmp_path / f"out{i}" / "big.bin").read_bytes() == big for i in range(READERS))
