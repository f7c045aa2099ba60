"""Scale past one process: one GSM8K-shaped JSONL source imported as parts on Ray
(`taskpack.import_sharded`: spans of lines as Ray tasks, merged by digest) against one
single-process import of the same file, on one machine. The merged task set must have the
single import's digest; the ratio of times is the figure (goal <= 3x: on 2 cores the parts
cannot gain much, so this measures what splitting and merging cost).

The Ray cluster (a head on 127.0.0.1, as many CPUs as the machine has) is started and warmed
before timing, as a trainer's cluster would be running already.

    python bench/scale_out.py                       # 1,000,000 rows, parts = CPUs
    python bench/scale_out.py --rows 200000 --parts 4 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, write_jsonl


def main() -> dict[str, Any]:
    import ray

    import taskpack
    from taskpack.importer import import_sources

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--parts", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    os.environ.update(RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")
    ray.init(
        _node_ip_address="127.0.0.1",
        include_dashboard=False,
        log_to_driver=False,
        num_cpus=os.cpu_count(),
    )
    ray.get(ray.remote(lambda: None).remote())  # a worker started: the cluster is up
    work = Path(tempfile.mkdtemp(prefix="taskpack-bench-scale-"))
    try:
        source = {"train": [str(write_jsonl(work / "train.jsonl", args.rows))]}
        single, sharded, digests = [], [], set()
        for r in range(args.rounds):
            start = time.perf_counter()
            whole = import_sources(work / f"whole{r}", source, "gsm8k", name="bench")
            single.append(time.perf_counter() - start)
            start = time.perf_counter()
            merged = taskpack.import_sharded(
                work / f"merged{r}", source, "gsm8k", parts=args.parts, name="bench"
            )
            sharded.append(time.perf_counter() - start)
            digests |= {whole.manifest.digest, merged.digest}
            shutil.rmtree(work / f"whole{r}")
            shutil.rmtree(work / f"merged{r}")
        parts = args.parts or os.cpu_count()
        result = {"single_s": statistics.median(single), "ray_s": statistics.median(sharded)}
        print(f"{machine()}; {args.rows} GSM8K rows; median of {args.rounds} alternating rounds:")
        print(f"  single import               {result['single_s']:6.1f} s")
        print(
            f"  {parts} parts on Ray + merge    {result['ray_s']:6.1f} s"
            f"   / single = {result['ray_s'] / result['single_s']:.2f}"
        )
        print(f"  digests: {'the same' if len(digests) == 1 else 'DIFFERENT: ' + str(digests)}")
        if len(digests) != 1:
            raise SystemExit(1)
        return result
    finally:
        ray.shutdown()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
