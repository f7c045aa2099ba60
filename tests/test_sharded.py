"""Ray: an import's parts as Ray tasks merge into the single import, and `split.to_ray()`
reads a split's rows with each one's digest checked, on a Ray cluster the test starts on
127.0.0.1: a head node of 2 CPUs and a second node of 1 (`ray start` twice), no dashboard, no
usage reports."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import taskpack
from taskpack.errors import TaskpackError
from taskpack.importer import import_sources

from .conftest import make_task
from .test_merge import _gsm8k_lines

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """`ray start --head` on 127.0.0.1, the test process connected to it as a driver."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = Path(sys.executable).with_name("ray")
    # No usage reports; no token auth, which a token file left by an earlier local Ray
    # (~/.ray/auth_token) would otherwise turn on for the head but not for this driver.
    quiet = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    os.environ.update(quiet)
    env = {**os.environ, **quiet}
    head = [str(command), "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}"]
    head += ["--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats"]
    head += ["--resources", '{"head": 1}']
    subprocess.run(head, check=True, env=env, capture_output=True, timeout=180)
    address = f"127.0.0.1:{port}"
    second = [str(command), "start", f"--address={address}", "--node-ip-address=127.0.0.1"]
    second += ["--num-cpus=1", "--disable-usage-stats", "--resources", '{"second": 1}']
    subprocess.run(second, check=True, env=env, capture_output=True, timeout=180)
    try:
        ray.init(address=address, log_to_driver=False)
        yield address
    finally:
        ray.shutdown()
        subprocess.run([str(command), "stop", "--force"], env=env, capture_output=True, timeout=120)


def test_parts_on_ray_merge_into_the_single_import(cluster: str, tmp_path: Path) -> None:
    """A JSON Lines source of several 1 MiB blocks, blank lines among its rows, in 5 parts,
    and a Parquet source (one part) for a second split."""
    source = tmp_path / "train.jsonl"
    source.write_bytes(b"".join(_gsm8k_lines(12_000)))
    test_rows = [json.loads(line) for line in _gsm8k_lines(300) if line.strip()]
    pq.write_table(pa.Table.from_pylist(test_rows), tmp_path / "test.parquet")
    sources = {"train": [str(source)], "test": [str(tmp_path / "test.parquet")]}
    whole = import_sources(tmp_path / "whole", sources, "gsm8k", name="g", version="1.0.0")
    merged = taskpack.import_sharded(
        tmp_path / "merged", sources, "gsm8k", parts=5, name="g", version="1.0.0"
    )
    # the same tasks: the same split digests (the version digest also pins the parts' sizes)
    assert {n: s.digest for n, s in merged.splits.items()} == {
        n: s.digest for n, s in whole.manifest.splits.items()
    }
    assert {n: s.rows for n, s in merged.splits.items()} == {"train": 12_000, "test": 300}
    for split in ("train", "test"):
        stored = [taskpack.open(tmp_path / p).split(split).to_arrow() for p in ("whole", "merged")]
        assert stored[0].equals(stored[1])
    assert not [p for p in tmp_path.iterdir() if ".parts-" in p.name]  # scratch removed


def test_a_bad_row_in_a_part_is_the_single_imports_error(cluster: str, tmp_path: Path) -> None:
    lines = _gsm8k_lines(3000)
    lines[2222] = b'{"question": "no answer"}\n'
    source = tmp_path / "train.jsonl"
    source.write_bytes(b"".join(lines))
    sources = {"train": [str(source)]}
    with pytest.raises(TaskpackError) as single:
        import_sources(tmp_path / "whole", sources, "gsm8k", name="g")
    with pytest.raises(TaskpackError) as sharded:
        taskpack.import_sharded(tmp_path / "m", sources, "gsm8k", parts=4, name="g")
    assert str(sharded.value) == str(single.value)
    assert f"{source}:2223: field 'answer': missing" in str(sharded.value)
    assert not (tmp_path / "m").exists()


def test_to_ray_reads_the_rows_checked(cluster: str, tmp_path: Path) -> None:
    tasks = [make_task(i, metadata={"even": i % 2 == 0}) for i in range(40)]
    taskpack.write(tmp_path / "ts", {"train": tasks}, name="r")
    split = taskpack.open(tmp_path / "ts").split("train")
    rows = split.to_ray().take_all()
    assert [r["id"] for r in rows] == [f"t{i}" for i in range(40)]
    assert rows[3]["digest"] == split[3].digest
    even = split.filter(**{"metadata.even": True}).to_ray().take_all()
    assert [r["id"] for r in even] == [f"t{i}" for i in range(0, 40, 2)]
    # A row whose text was changed, its stored digest and the manifest's file hash made to
    # agree with the change: opening passes, a Ray worker reading the row refuses it.
    path = tmp_path / "ts" / "splits" / "train.parquet"
    table = pq.read_table(path)
    prompt = table.column("prompt").to_pylist()
    prompt[7] = prompt[7].replace("7 + 1", "8 + 1")
    pq.write_table(
        table.set_column(table.schema.get_field_index("prompt"), "prompt", pa.array(prompt)), path
    )
    manifest = tmp_path / "ts" / "manifest.json"
    data = json.loads(manifest.read_text())
    import hashlib

    data["splits"]["train"]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    data["splits"]["train"]["bytes"] = path.stat().st_size
    manifest.write_text(json.dumps(data))
    tampered = taskpack.open(tmp_path / "ts").split("train").to_ray()
    with pytest.raises(Exception, match="does not match content"):
        tampered.take_all()
    shutil.rmtree(tmp_path / "ts")


def test_convert_on_ray_from_the_command_line(cluster: str, tmp_path: Path, data_dir: Path) -> None:
    from click.testing import CliRunner

    from taskpack.cli import main

    src = str(data_dir / "gsm8k" / "test.jsonl")
    single = import_sources(tmp_path / "w", {"test": [src]}, "gsm8k", name="w").manifest
    args = ["convert", f"test={src}", "--from", "gsm8k", "-o", str(tmp_path / "r"), "--name", "w"]
    out = CliRunner().invoke(main, [*args, "--on-ray", "3", "-q"])
    assert out.exit_code == 0, out.output
    merged = taskpack.open(tmp_path / "r").manifest
    assert merged.splits["test"].digest == single.splits["test"].digest
    assert f"(test: 1319), digest {merged.digest}" in out.output


def test_streaming_split_hands_trainers_on_two_nodes_disjoint_complete_shares(
    cluster: str, tmp_path: Path
) -> None:
    """`to_ray()` read on the two-node cluster, its blocks dealt out by Ray's `streaming_split`
    to two trainer actors, one on each node, each taking a batch per training step: every
    task once, in one share or the other, both shares taken. (Ray deals blocks, and a split
    stored as one Parquet file is one block: `repartition` makes more.)"""
    assert sum(node["Alive"] for node in ray.nodes()) == 2
    taskpack.write(tmp_path / "ts", {"train": [make_task(i) for i in range(3000)]}, name="r")
    split = taskpack.open(tmp_path / "ts").split("train")
    shares = split.to_ray().repartition(8).streaming_split(2, equal=False)

    @ray.remote(num_cpus=0)
    class Trainer:
        def train(self, share: object) -> tuple[str, list[str]]:
            import time

            ids: list[str] = []
            for batch in share.iter_batches(batch_size=200, batch_format="pyarrow"):  # type: ignore[attr-defined]
                ids += batch.column("id").to_pylist()
                time.sleep(0.05)  # a training step
            return ray.get_runtime_context().get_node_id(), ids

    trainers = [Trainer.options(resources={node: 0.01}).remote() for node in ("head", "second")]
    (one, first), (two, second) = ray.get(
        [t.train.remote(share) for t, share in zip(trainers, shares, strict=True)]
    )
    assert one != two  # a trainer on each node
    assert first and second and not set(first) & set(second)
    assert sorted(first + second) == sorted(split.ids())
