"""Scale past one process: one GSM8K-shaped JSONL source imported as parts on Ray
(`taskpack.import_sharded`: spans of lines as Ray tasks, merged by digest) against one
single-process import of the same file. The merged task set must have the single import's
digest.

Two setups:

- one Ray instance of this machine (`ray.init` on 127.0.0.1, as many CPUs as the machine has):
  what splitting and merging cost where there is no second machine;
- `--nodes N`: Ray's own multi-node setup on one machine, a head (`ray start --head`) and N-1
  more raylets (`ray start --address`), all on 127.0.0.1 with one CPU each, so the N parts run
  on N nodes at once. `--rows` takes several sizes; the report gives, per size, the work per
  part, both times, the merge's share, and the break-even: the smallest work per part at which
  the N parts beat one import, measured here, and as N machines of this one's speed would see
  it (each part timed as a single import of its rows, plus the dispatch and merge measured).

The cluster is started and warmed before timing, as a trainer's cluster would be running already.

    python bench/scale_out.py                       # 1,000,000 rows, parts = CPUs
    python bench/scale_out.py --rows 200000 --parts 4 --rounds 3
    python bench/scale_out.py --nodes 2 --rows 25000,100000,400000,1600000 --rounds 2
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, write_jsonl

QUIET = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


@contextlib.contextmanager
def local_ray() -> Iterator[int]:
    """One Ray instance of this machine; its CPU count."""
    import ray

    ray.init(
        _node_ip_address="127.0.0.1",
        include_dashboard=False,
        log_to_driver=False,
        num_cpus=os.cpu_count(),
    )
    try:
        yield os.cpu_count() or 1
    finally:
        ray.shutdown()


@contextlib.contextmanager
def raylets(nodes: int) -> Iterator[int]:
    """A head and `nodes - 1` more raylets on 127.0.0.1, one CPU each, this process a driver."""
    import ray

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray_cli = str(Path(sys.executable).with_name("ray"))
    env = {**os.environ, **QUIET}
    common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--disable-usage-stats"]
    start = [ray_cli, "start", *common]
    subprocess.run(
        [*start, "--head", f"--port={port}", "--include-dashboard=false"],
        check=True,
        env=env,
        capture_output=True,
        timeout=300,
    )
    try:
        for _ in range(nodes - 1):
            address = f"--address=127.0.0.1:{port}"
            subprocess.run([*start, address], check=True, env=env, capture_output=True, timeout=300)
        ray.init(address=f"127.0.0.1:{port}", _node_ip_address="127.0.0.1", log_to_driver=False)
        for _ in range(600):  # every raylet registered
            if len([n for n in ray.nodes() if n["Alive"]]) == nodes:
                break
            time.sleep(0.1)
        else:
            raise SystemExit(f"only {len(ray.nodes())} of {nodes} raylets came up")
        yield nodes
    finally:
        ray.shutdown()
        subprocess.run([ray_cli, "stop", "--force"], env=env, capture_output=True, timeout=300)


def warm(parts: int) -> None:
    """A worker on every CPU has imported taskpack: the cluster is running, as a trainer's is."""
    import ray

    def ready() -> int:
        import taskpack.importer  # noqa: F401

        return os.getpid()

    run = ray.remote(num_cpus=1)(ready)
    ray.get([run.remote() for _ in range(parts)])


def timed_merge() -> list[float]:
    """The driver's merge times, one per sharded import from here on."""
    import taskpack.sharded

    seconds: list[float] = []
    merge = taskpack.sharded.merge

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return merge(*args, **kwargs)
        finally:
            seconds.append(time.perf_counter() - start)

    taskpack.sharded.merge = timed  # type: ignore[assignment]
    return seconds


def measure(
    work: Path, rows: int, parts: int, rounds: int, merges: list[float]
) -> dict[str, float]:
    """Median single import and sharded import (and its merge) of `rows` rows."""
    import taskpack
    from taskpack.importer import import_sources

    source = {"train": [str(write_jsonl(work / f"train-{rows}.jsonl", rows))]}
    single, sharded, merged_s, digests = [], [], [], set()
    for r in range(rounds):
        start = time.perf_counter()
        whole = import_sources(work / f"whole{r}", source, "gsm8k", name="bench")
        single.append(time.perf_counter() - start)
        start = time.perf_counter()
        merged = taskpack.import_sharded(
            work / f"merged{r}", source, "gsm8k", parts=parts, name="bench"
        )
        sharded.append(time.perf_counter() - start)
        merged_s.append(merges[-1])
        digests |= {whole.manifest.digest, merged.digest}
        shutil.rmtree(work / f"whole{r}")
        shutil.rmtree(work / f"merged{r}")
    if len(digests) != 1:
        raise SystemExit(f"{rows} rows: digests DIFFER: {digests}")
    return {
        "single_s": statistics.median(single),
        "ray_s": statistics.median(sharded),
        "merge_s": statistics.median(merged_s),
    }


def main() -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1000000", help="row counts, comma-separated")
    parser.add_argument("--parts", type=int, default=None)
    parser.add_argument("--nodes", type=int, default=0, help="raylets on 127.0.0.1 (0: ray.init)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(r) for r in args.rows.split(",")]
    os.environ.update(QUIET)
    work = Path(tempfile.mkdtemp(prefix="taskpack-bench-scale-"))
    setup = raylets(args.nodes) if args.nodes else local_ray()
    try:
        with setup as cpus:
            parts = args.parts or cpus
            warm(cpus)
            merges = timed_merge()
            results = {rows: measure(work, rows, parts, args.rounds, merges) for rows in sizes}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    where = f"{args.nodes} raylets on 127.0.0.1, 1 CPU each" if args.nodes else "one Ray instance"
    print(f"{machine()}; {where}; {parts} parts; median of {args.rounds} alternating rounds:")
    print("      rows  rows/part   single   parts+merge  (merge)   ratio")
    for rows, r in results.items():
        print(
            f"  {rows:8d}   {rows // parts:8d}   {r['single_s']:5.2f} s   {r['ray_s']:7.2f} s"
            f"   ({r['merge_s']:4.2f} s)   {r['ray_s'] / r['single_s']:5.2f}"
        )
    print("  digests: the same")
    if args.nodes:
        print(break_even(results, parts))
    return {str(rows): r for rows, r in results.items()}


def break_even(results: dict[int, dict[str, float]], parts: int) -> str:
    """Where N parts beat one import: here (the measured ratio under 1), and on N machines of
    this one's speed, where a part takes what a single import of its rows takes (interpolated
    between the sizes measured) plus the dispatch, and the merge takes what it took here."""
    sizes = sorted(results)
    here = next((s for s in sizes if results[s]["ray_s"] < results[s]["single_s"]), None)

    def single_at(rows: float) -> float:
        xs = [(s, results[s]["single_s"]) for s in sizes]
        lo = max((p for p in xs if p[0] <= rows), default=xs[0])
        hi = min((p for p in xs if p[0] >= rows), default=xs[-1])
        if hi[0] == lo[0]:
            return lo[1] * rows / lo[0]
        return lo[1] + (hi[1] - lo[1]) * (rows - lo[0]) / (hi[0] - lo[0])

    # dispatch: what the sharded import took beyond its slowest part and its merge, at the
    # smallest size (parts there are short, so it is mostly Ray's own cost)
    small = results[sizes[0]]
    dispatch = max(small["ray_s"] - small["merge_s"] - single_at(sizes[0] / parts), 0.0)
    modeled = next(
        (
            s
            for s in sizes
            if single_at(s / parts) + dispatch + results[s]["merge_s"] < results[s]["single_s"]
        ),
        None,
    )
    lines = [f"  dispatch beyond the parts and the merge: about {dispatch:.2f} s"]
    lines.append(
        f"  break-even here: {parts} parts beat one import from {here // parts} rows a part"
        if here
        else f"  break-even here: none up to {sizes[-1] // parts} rows a part"
        " (the raylets share this machine's cores)"
    )
    lines.append(
        f"  on {parts} machines of this speed: from about {modeled // parts} rows a part"
        if modeled
        else f"  on {parts} machines of this speed: none up to {sizes[-1] // parts} rows a part"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
