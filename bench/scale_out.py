"""Scale past one machine: one GSM8K-shaped JSONL source imported as independent parts
(`lines=` ranges) by Dask workers on a local cluster, then merged (`taskpack.merge`), against
one single-process import of the same file. The merged task set must have the single import's
digest; times are printed as context (2 cores hold little room for speed-up).

    python bench/scale_out.py                       # 200000 rows, 4 parts, 2 workers
    python bench/scale_out.py --rows 20000 --parts 4 --workers 2
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from common import machine, write_jsonl


def import_part(source: str, target: str, span: tuple[int, int]) -> str:
    """One worker's share: what `taskpack convert SOURCE --lines FIRST:LAST` does."""
    from taskpack.importer import import_sources

    import_sources(target, {"train": [source]}, "gsm8k", name="bench", lines={"train": span})
    return target


def main() -> None:
    import dask
    from distributed import Client, LocalCluster

    import taskpack
    from taskpack.importer import import_sources

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--parts", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="taskpack-bench-scale-"))
    try:
        source = str(write_jsonl(work / "train.jsonl", args.rows))
        start = time.perf_counter()
        whole = import_sources(work / "whole", {"train": [source]}, "gsm8k", name="bench")
        single = time.perf_counter() - start

        step = -(-args.rows // args.parts)
        spans = [(1 + k * step, min(args.rows, (k + 1) * step)) for k in range(args.parts)]
        with (
            LocalCluster(
                n_workers=args.workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
            ) as cluster,
            Client(cluster),
        ):
            start = time.perf_counter()
            jobs = [
                dask.delayed(import_part)(source, str(work / f"part{k}"), span)
                for k, span in enumerate(spans)
            ]
            parts = dask.compute(*jobs)
            merged = taskpack.merge(list(parts), work / "merged", name="bench")
            spread = time.perf_counter() - start
        same = merged.digest == whole.manifest.digest
        print(f"{machine()}; {args.rows} rows, {args.parts} parts, {args.workers} Dask workers")
        print(f"single import {single:.1f} s; parts on Dask + merge {spread:.1f} s")
        print(
            f"digests: single {whole.manifest.digest}, merged {merged.digest}: "
            f"{'same' if same else 'DIFFERENT'}"
        )
        if not same:
            raise SystemExit(1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
