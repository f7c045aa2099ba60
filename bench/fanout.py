"""Fan-out: many processes start at once on cold caches and each reads one task of a version in a
real S3 server (SeaweedFS on 127.0.0.1).

Floor: 64 processes on one machine, taskpack (`taskpack.load(...)[0]`: one download per object
per machine, the rest wait on it) against the least a process could do without taskpack (import
pyarrow and boto3, download the split's Parquet object, read one row). Rounds alternate, each on
fresh caches; p50 and p99 time to first task, from the moment all are launched, and the ratio.

Mirror: N nodes (caches of their own) x M processes reading through one `taskpack serve --mirror`
that reaches S3 through a counting proxy: the requests and bytes reaching S3 for 1 node and for
N nodes (the same when one fetch serves the cluster), every process checked to get its task.

    python bench/fanout.py [--processes 64] [--tasks 100000] [--rounds 3] [--nodes 4 --per-node 16]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, build_taskset, s3_client, s3_server, served

TASKPACK = """
import json, sys, time
import taskpack
task = taskpack.load("bench@1.0.0", split="train", registry=sys.argv[1])[int(sys.argv[2])]
print(json.dumps({"t": time.time(), "id": task.id}))
"""
FLOOR = """
import json, sys, time
import boto3
import pyarrow.parquet as pq
from botocore.config import Config
s3 = boto3.session.Session().client("s3", config=Config(s3={"addressing_style": "path"}))
s3.download_file("fanout", sys.argv[1], sys.argv[2])
row = pq.ParquetFile(sys.argv[2]).read_row_group(0).slice(0, 1).to_pylist()[0]
print(json.dumps({"t": time.time(), "id": row["id"]}))
"""


def launch(commands: list[list[str]], envs: list[dict[str, str]]) -> tuple[list[float], list[str]]:
    """Start every command at once: (seconds from launch to each one's task, the task ids)."""
    started = time.time()
    procs = [
        subprocess.Popen(c, stdout=subprocess.PIPE, env={**os.environ, **e}, text=True)
        for c, e in zip(commands, envs, strict=True)
    ]
    times, ids = [], []
    for proc in procs:
        out, _ = proc.communicate(timeout=900)
        if proc.returncode != 0:
            raise SystemExit("a reader failed")
        answer = json.loads(out)
        times.append(answer["t"] - started)
        ids.append(answer["id"])
    return times, ids


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def floor(args: argparse.Namespace, tmp: Path, object_key: str, first_id: str) -> dict[str, Any]:
    runs: dict[str, list[tuple[float, float]]] = {"taskpack": [], "floor": []}
    for r in range(args.rounds):
        cache = tmp / f"cache{r}"
        commands = [[sys.executable, "-c", TASKPACK, "s3://fanout/reg", "0"]] * args.processes
        times, ids = launch(commands, [{"TASKPACK_CACHE": str(cache)}] * args.processes)
        assert set(ids) == {first_id}
        runs["taskpack"].append((statistics.median(times), p99(times)))
        scratch = tmp / f"floor{r}"
        scratch.mkdir()
        commands = [
            [sys.executable, "-c", FLOOR, object_key, str(scratch / f"{k}.parquet")]
            for k in range(args.processes)
        ]
        times, ids = launch(commands, [{}] * args.processes)
        assert set(ids) == {first_id}
        runs["floor"].append((statistics.median(times), p99(times)))
    result = {
        name: {
            "p50_s": statistics.median(a for a, _ in v),
            "p99_s": statistics.median(b for _, b in v),
        }
        for name, v in runs.items()
    }
    print(
        f"fan-out: {args.processes} processes at once on a cold cache, S3 on 127.0.0.1, "
        f"{args.tasks} tasks; median of {args.rounds} alternating rounds:"
    )
    for name, r in result.items():
        print(
            f"  {name:9} time to first task p50 {r['p50_s']:6.2f} s  p99 {r['p99_s']:6.2f} s"
            f"   / floor: p50 {r['p50_s'] / result['floor']['p50_s']:.2f}"
            f"  p99 {r['p99_s'] / result['floor']['p99_s']:.2f}"
        )
    return result


def mirrored(args: argparse.Namespace, tmp: Path, ids: list[str]) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    from tests.countproxy import CountingProxy

    port = int(os.environ["AWS_ENDPOINT_URL_S3"].rsplit(":", 1)[1])
    proxy = CountingProxy(port)
    result: dict[str, Any] = {}
    try:
        for nodes in (1, args.nodes):
            env = {"AWS_ENDPOINT_URL_S3": proxy.url, "TASKPACK_CACHE": str(tmp / f"mirror-{nodes}")}
            with served("--mirror", "s3://fanout/reg", env=env) as (_, url):
                proxy.reset()
                count = nodes * args.per_node
                picks = [(k * 7919) % len(ids) for k in range(count)]
                commands = [[sys.executable, "-c", TASKPACK, url, str(i)] for i in picks]
                envs = [
                    {"TASKPACK_CACHE": str(tmp / f"nodes{nodes}" / str(k // args.per_node))}
                    for k in range(count)
                ]
                times, got = launch(commands, envs)
                assert got == [ids[i] for i in picks], "a process got another task"
                result[f"{nodes}x{args.per_node}"] = {
                    "upstream_requests": proxy.requests,
                    "upstream_bytes": proxy.bytes_down,
                    "p50_s": statistics.median(times),
                }
    finally:
        proxy.close()
    print("mirror: nodes x processes through one taskpack serve --mirror, S3 counted:")
    for key, r in result.items():
        print(
            f"  {key:7} upstream {r['upstream_requests']:4d} requests {r['upstream_bytes']:>10,} "
            f"bytes; time to first task p50 {r['p50_s']:.2f} s"
        )
    return result


def object_of_row0(ts_path: Path) -> str:
    """The S3 key of the Parquet object holding the split's first row."""
    import taskpack

    first = taskpack.open(ts_path).manifest.splits["train"].files()[0]
    keys = [
        o["Key"]
        for page in s3_client().get_paginator("list_objects_v2").paginate(Bucket="fanout")
        for o in page.get("Contents", [])
    ]
    found = [k for k in keys if k.endswith(first.sha256)]
    assert len(found) == 1, (first, keys[:20])
    return found[0]


def main() -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=64)
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--per-node", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        server = s3_server(tmp / "s3")
        try:
            import taskpack

            ts = build_taskset(tmp / "bench.taskset", args.tasks)
            s3_client().create_bucket(Bucket="fanout")
            taskpack.publish(ts, registry="s3://fanout/reg")
            train = taskpack.open(ts).split("train")
            result = {"floor": floor(args, tmp, object_of_row0(ts), train[0].id)}
            result["mirror"] = mirrored(args, tmp, train.ids())
        finally:
            server.stop()
    return result


if __name__ == "__main__":
    main()
