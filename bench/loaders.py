"""256 loaders at once, two ways: taskpack through one `taskpack serve --mirror` in front of
the Hub, against `datasets.load_dataset(..., streaming=True)` reading the Hub itself.

Hugging Face's streaming rework (datasets 4) reports "100x fewer startup requests" and "0
worker crashes at 256 concurrent workers" (64 nodes... x 4 loaders). This runs the same count
on one machine: N simulated nodes x M loaders (default 4 x 64), all launched at once, each node
with a cache folder (and an HF_HOME) of its own. Every loader reads one task of the same
published split: loader k of K reads row k, which is the first row `split_dataset_by_node`
hands rank k of K in a stream of one file.

- taskpack: `taskpack.load("bench@1.0.0", split="train", registry=MIRROR)[k]`, the cluster's
  mirror (`serve --mirror hf://ORG`) the only client of the Hub;
- datasets: `load_dataset("ORG/bench", revision="1.0.0", split="train", streaming=True)`,
  split by node, its first row; straight to the Hub, as datasets has no mirror of its own.

The Hub is the tests' stand-in (olah serving the repositories) behind a proxy counting each
request that reaches it and the bytes it returns. Time to first task counts from the moment
all loaders are launched. The floor is what starting that many bare interpreters costs on
this machine's cores: loaders x one bare start / cores.

    python bench/loaders.py [--tasks 20000] [--nodes 4 --per-node 64]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, build_taskset, fresh_process, machine, served
from hub_mirror import BARE, LOAD, Job, buckets, launch, p99

STREAM = """
import json, sys, time
import datasets
from datasets.distributed import split_dataset_by_node
ds = datasets.load_dataset(sys.argv[1], revision=sys.argv[2], split="train", streaming=True)
row = next(iter(split_dataset_by_node(ds, rank=int(sys.argv[3]), world_size=int(sys.argv[4]))))
print(json.dumps({"t": time.time(), "id": row["id"]}))
"""


def main() -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--per-node", type=int, default=64, help="loaders a node")
    parser.add_argument(
        "--at-once",
        action="store_true",
        help="launch every node's loaders together (default: node after node, each node's "
        "loaders together: a datasets loader holds about 146 MB of its own, 256 hold 37 GB)",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import taskpack
    from tests.countproxy import CountingProxy
    from tests.hubserver import start_hub

    n, m = args.nodes, args.per_node
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp_name, contextlib.ExitStack() as stack:
        tmp = Path(tmp_name)
        hub = start_hub(tmp / "hub")
        stack.callback(hub.stop)
        os.environ.update(HF_HUB_DISABLE_XET="1", HF_TOKEN="test-token", HF_ENDPOINT=hub.endpoint)
        ts = build_taskset(tmp / "bench.taskset", args.tasks)
        taskpack.publish(ts, registry="hf://benchorg")
        ids = taskpack.open(ts).split("train").ids()
        proxy = CountingProxy(int(hub.endpoint.rsplit(":", 1)[1]))
        stack.callback(proxy.close)
        bare = statistics.median(fresh_process("pass") for _ in range(9))

        def run(name: str, jobs_of: list[list[Job]]) -> None:
            """Each group of jobs launched together, the groups one after another (or all
            at once with --at-once); the Hub counted from the first launch on."""
            groups = [list(itertools.chain(*jobs_of))] if args.at_once else jobs_of
            got = []
            for g, jobs in enumerate(groups):
                got += launch(jobs, tmp / "out" / name / str(g), failing=True)
            loaders = len(got)
            wrong = [k for k, (_, i, _) in enumerate(got) if i is not None and i != ids[k]]
            assert not wrong, f"{name}: loaders {wrong} read the wrong task"
            times = [t for t, _, _ in got if t is not None]
            results[name] = {
                "loaders": loaders,
                "no task": sum(t is None for t, _, _ in got),
                "failed": sum(code != 0 for _, _, code in got),
                "upstream": proxy.requests,
                "bytes": proxy.bytes_down,
                "buckets": buckets(proxy.paths),
                "p50_s": statistics.median(times),
                "p99_s": p99(times),
                "floor_s": len(groups[0]) * bare / (os.cpu_count() or 1),
            }

        def taskpack_loaders(nodes: int, per: int) -> list[list[Job]]:
            proxy.reset()
            cluster = tmp / f"mirror-{nodes}x{per}"
            env = {"HF_ENDPOINT": proxy.url, "TASKPACK_CACHE": str(cluster)}
            mirror = stack.enter_context(served("--mirror", "hf://benchorg", env=env))[1]
            return [
                [
                    (
                        [sys.executable, "-c", LOAD, mirror, str(j * per + k)],
                        {"TASKPACK_CACHE": str(cluster / f"node{j}")},
                    )
                    for k in range(per)
                ]
                for j in range(nodes)
            ]

        def datasets_loaders(nodes: int, per: int) -> list[list[Job]]:
            proxy.reset()
            home = tmp / f"hf-{nodes}x{per}"
            return [
                [
                    (
                        [
                            sys.executable,
                            "-c",
                            STREAM,
                            "benchorg/bench",
                            "1.0.0",
                            str(j * per + k),
                            str(nodes * per),
                        ],
                        {"HF_ENDPOINT": proxy.url, "HF_HOME": str(home / f"node{j}")},
                    )
                    for k in range(per)
                ]
                for j in range(nodes)
            ]

        run("taskpack, 1 loader", taskpack_loaders(1, 1))
        run("datasets, 1 loader", datasets_loaders(1, 1))
        run(f"taskpack, {n}x{m}", taskpack_loaders(n, m))
        run(f"datasets, {n}x{m}", datasets_loaders(n, m))
        proxy.reset()
        run(f"bare python, {m}", [[([sys.executable, "-c", BARE, ids[k]], {}) for k in range(m)]])
    how = "all nodes at once" if args.at_once else "node after node, a node's loaders at once"
    print(f"{machine()}; {args.tasks} tasks on the Hub stand-in (olah); {how}:")
    for name, r in results.items():
        b = r["buckets"]
        print(
            f"  {name:22} Hub {r['upstream']:5d} requests ({b['resolvers']} resolve, "
            f"{b['api']} api, {b['pages']} other), {r['bytes']:>11,} bytes; "
            f"first task p50 {r['p50_s']:6.2f} s p99 {r['p99_s']:6.2f} s "
            f"(floor {r['floor_s']:.2f} s)"
            + (
                f"; {r['failed']} of {r['loaders']} exited failing, {r['no task']} with no task"
                if r["failed"] or r["no task"]
                else ""
            )
        )
    print(
        f"  floor: loaders launched together x a bare start ({bare * 1000:.0f} ms) / "
        f"{os.cpu_count()} cores"
    )
    return results


if __name__ == "__main__":
    main()
