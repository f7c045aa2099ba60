"""The Hub behind a mirror, at cluster scale: what N nodes x M processes starting at once cost
the Hub when they read a published version through `taskpack serve --mirror hf://ORG`, against
what one process costs, and against the same processes reading the Hub themselves.

The Hub is the tests' stand-in (olah, the real Hub mirror, serving the repositories; its write
endpoints by tests/hubserver.py) behind a proxy that counts every request reaching it, sorted
into the Hub's rate-limit buckets (`/resolve/` file downloads, `/api/` calls, anything else a
page). Nodes are simulated as process groups, each with a cache folder of its own. Scenarios:

- one process: `taskpack.load(...)[i]` through the cluster's mirror;
- one level: N x M such processes at once, every one through the cluster's mirror;
- two levels, mirrors: a mirror per node (`serve --mirror http://CLUSTER`) in front of the
  cluster's, N x M such processes each through its node's;
- two levels, 1,000 at once: a task server per node (`serve NAME@VERSION --registry
  http://CLUSTER`, which fetches the version through the cluster's mirror as it starts; the
  nodes' servers start one after another, before their readers) and `--fetch-per-node` processes per
  node reading one task each with `taskpack.fetch` (the standard library alone, the version
  pinned by digest). A process that loads pyarrow takes about 90 MB, so a thousand of them
  would not fit this machine's 24 GiB; a `taskpack.fetch` reader takes 15 MB;
- fetch, one: the same with one node server and one reader, the cost to compare with;
- direct: processes reading `hf://ORG` themselves, each with its own cache, as a job without a
  mirror does; the report scales their requests to the thousand;
- bare python: as many interpreters as the thousand started at once, each printing at once:
  what starting them costs this machine, the floor under any reader's time to first task.

Time to first task counts from the moment all of a scenario's processes are launched.

    python bench/hub_mirror.py [--tasks 20000] [--nodes 4 --per-node 16] [--fetch-per-node 100]
"""

from __future__ import annotations

import argparse
import contextlib
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
from common import ROOT, build_taskset, machine, served

Job = tuple[list[str], dict[str, str]]
FETCH = """
import json, sys, time
from taskpack.fetch import task
t = task(sys.argv[1], "train", int(sys.argv[2]), digest=sys.argv[3])
print(json.dumps({"t": time.time(), "id": t["id"]}))
"""
BARE = """
import json, sys, time
print(json.dumps({"t": time.time(), "id": sys.argv[1]}))
"""
LOAD = """
import json, sys, time
import taskpack
t = taskpack.load("bench@1.0.0", split="train", registry=sys.argv[1])[int(sys.argv[2])]
print(json.dumps({"t": time.time(), "id": t.id}))
"""
# The Hub's published limits, per 5-minute window (huggingface.co/docs/hub/rate-limits).
LIMITS = {
    "anonymous": {"resolvers": 3000, "api": 500},
    "free user": {"resolvers": 5000, "api": 1000},
}


def launch(
    jobs: list[Job], out: Path, failing: bool = False
) -> list[tuple[float | None, str | None, int]]:
    """Start every job at once, each writing to a file of its own (a thousand pipes would
    outgrow the parent's descriptors): (seconds from launch to its task, the task id, its exit
    status), the first two None where it printed no task. A job that fails stops the
    benchmark, unless `failing` (failures are then what is measured, as for `datasets`)."""
    out.mkdir(parents=True)
    started = time.time()
    procs = []
    quiet = subprocess.DEVNULL if failing else None
    for k, (command, env) in enumerate(jobs):
        with (out / f"{k}.json").open("w") as f:
            procs.append(
                subprocess.Popen(command, stdout=f, stderr=quiet, env={**os.environ, **env})
            )
    codes = [proc.wait(timeout=1800) for proc in procs]
    got: list[tuple[float | None, str | None, int]] = []
    for k, (proc, code) in enumerate(zip(procs, codes, strict=True)):
        if code != 0 and not failing:
            raise SystemExit(f"a reader failed: {proc.args!r}")
        lines = (out / f"{k}.json").read_text().splitlines()
        answer = json.loads(lines[-1]) if lines else None
        got.append((answer["t"] - started, answer["id"], code) if answer else (None, None, code))
    return got


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def buckets(paths: list[str]) -> dict[str, int]:
    """Requests by the Hub's rate-limit bucket."""
    kinds = {"resolvers": 0, "api": 0, "pages": 0}
    for path in paths:
        kind = (
            "resolvers" if "/resolve/" in path else "api" if path.startswith("/api/") else "pages"
        )
        kinds[kind] += 1
    return kinds


def main() -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20_000)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--per-node", type=int, default=16, help="loading processes a node")
    parser.add_argument("--fetch-nodes", type=int, default=10)
    parser.add_argument("--fetch-per-node", type=int, default=100, help="fetch readers a node")
    parser.add_argument("--direct", type=int, default=16, help="processes reading the Hub")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import taskpack
    from tests.countproxy import CountingProxy
    from tests.hubserver import start_hub

    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp_name, contextlib.ExitStack() as stack:
        tmp = Path(tmp_name)
        hub = start_hub(tmp / "hub")
        stack.callback(hub.stop)
        os.environ.update(
            HF_ENDPOINT=hub.endpoint,
            HF_HUB_DISABLE_XET="1",
            HF_TOKEN="test-token",
            HF_HOME=str(tmp / "hf-home"),
        )
        ts = build_taskset(tmp / "bench.taskset", args.tasks)
        manifest, _ = taskpack.publish(ts, registry="hf://benchorg")
        ids = taskpack.open(ts).split("train").ids()
        proxy = CountingProxy(int(hub.endpoint.rsplit(":", 1)[1]))
        stack.callback(proxy.close)
        upstream = {"HF_ENDPOINT": proxy.url}

        def pick(k: int) -> int:
            return (k * 7919) % len(ids)

        def loader(registry: str, k: int, cache: Path) -> Job:
            return [sys.executable, "-c", LOAD, registry, str(pick(k))], {
                "TASKPACK_CACHE": str(cache)
            }

        def cluster_mirror(name: str) -> str:
            """A fresh cluster mirror; the Hub's count starts here, with the scenario."""
            proxy.reset()
            env = {**upstream, "TASKPACK_CACHE": str(tmp / name / "cluster")}
            return stack.enter_context(served("--mirror", "hf://benchorg", env=env))[1]

        def run(name: str, jobs: list[Job]) -> None:
            got = launch(jobs, tmp / "out" / name.replace(" ", "-"))
            assert [i for _, i, _ in got] == [ids[pick(k)] for k in range(len(jobs))], name
            times = [t for t, _, _ in got if t is not None]
            results[name] = {
                "processes": len(jobs),
                "upstream": proxy.requests,
                "bytes": proxy.bytes_down,
                "buckets": buckets(proxy.paths),
                "p50_s": statistics.median(times),
                "p99_s": p99(times),
            }

        n, m = args.nodes, args.per_node
        mirror = cluster_mirror("one")
        run("one process", [loader(mirror, 0, tmp / "one" / "node")])
        mirror = cluster_mirror("level1")
        run(
            f"one level, {n}x{m}",
            [loader(mirror, k, tmp / "level1" / f"node{k // m}") for k in range(n * m)],
        )
        mirror = cluster_mirror("level2")
        nodes = [
            stack.enter_context(
                served("--mirror", mirror, env={"TASKPACK_CACHE": str(tmp / "level2" / f"m{j}")})
            )[1]
            for j in range(n)
        ]
        run(
            f"two levels, {n}x{m}",
            [loader(nodes[k // m], k, tmp / "level2" / f"node{k // m}") for k in range(n * m)],
        )
        fn, fm = args.fetch_nodes, args.fetch_per_node
        for nodes_, per in ((1, 1), (fn, fm)):
            name = "fetch, one" if nodes_ == 1 else f"two levels, {nodes_}x{per} fetch"
            mirror = cluster_mirror(name)
            servers = [
                stack.enter_context(
                    served(
                        "bench@1.0.0",
                        "--registry",
                        mirror,
                        env={"TASKPACK_CACHE": str(tmp / name / f"server{j}")},
                    )
                )[1]
                for j in range(nodes_)
            ]
            run(
                name,
                [
                    (
                        [
                            sys.executable,
                            "-c",
                            FETCH,
                            servers[k // per],
                            str(pick(k)),
                            manifest.digest,
                        ],
                        {"TASKPACK_CACHE": str(tmp / name / f"node{k // per}")},
                    )
                    for k in range(nodes_ * per)
                ],
            )
        direct = [
            (
                [sys.executable, "-c", LOAD, "hf://benchorg", str(pick(k))],
                {
                    **upstream,
                    "TASKPACK_CACHE": str(tmp / "direct" / str(k)),
                    "HF_HOME": str(tmp / "direct-hf" / str(k)),
                },
            )
            for k in range(args.direct)
        ]
        proxy.reset()
        run("direct", direct)
        # The machine's own bound: as many interpreters started at once, doing nothing else.
        proxy.reset()
        run(
            f"bare python, {fn * fm}",
            [([sys.executable, "-c", BARE, ids[pick(k)]], {}) for k in range(fn * fm)],
        )
    print(
        f"{machine()}; {args.tasks} tasks on the Hub stand-in (olah), each request to it counted:"
    )
    for name, r in results.items():
        b = r["buckets"]
        print(
            f"  {name:24} {r['processes']:5d} processes: Hub {r['upstream']:5d} requests "
            f"({b['resolvers']} resolve, {b['api']} api, {b['pages']} other), "
            f"{r['bytes']:>11,} bytes; first task p50 {r['p50_s']:5.2f} s p99 {r['p99_s']:5.2f} s"
        )
    alone = results["direct"]
    per = {k: v / alone["processes"] for k, v in alone["buckets"].items()}
    many = fn * fm
    print(
        f"  reading the Hub directly costs {per['resolvers']:.1f} resolve and {per['api']:.1f} api"
        f" requests a process: {many} processes would send {per['resolvers'] * many:.0f} and"
        f" {per['api'] * many:.0f}"
    )
    for who, limit in LIMITS.items():
        print(
            f"  the Hub's limits per 5 minutes, {who}: {limit['resolvers']} resolve, "
            f"{limit['api']} api requests"
        )
    return results


if __name__ == "__main__":
    main()
