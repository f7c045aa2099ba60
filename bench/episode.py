"""Episode start and random access over a 100k-task split.

Episode start: a fresh process opens a pinned, already-cached version and reads task i, against
`datasets.load_dataset(...)[i]` on the same Parquet with a hot cache, and raw pyarrow reading
that one row (the row group holding it); and a fresh process getting task i from `taskpack serve`
with `taskpack.fetch` (standard library only, checked against the pinned version), against a
bare `python -c` that prints a line. Random access: `split[i]` and `split.get(id)` in one
process, against `datasets` `ds[i]` and a pyarrow slice of an in-memory table.

The alternatives read the split as one Parquet file with taskpack's row groups, as a user
without taskpack would store it; taskpack stores a split of more than `PART_GROUPS` row groups
(1M tasks: 1100) as several files and opens only the one holding task i.

    python bench/episode.py [--tasks 100000] [--rounds 5]
    python bench/episode.py --tasks 1000000 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import alternate, alternate_times, build_taskset, fresh_process, per_call, served

TASKPACK = """
import sys, taskpack
print(taskpack.load("bench@1.0.0", split="train")[int(sys.argv[1])].id)
"""
DATASETS = """
import sys, datasets
ds = datasets.load_dataset("parquet", data_files={"train": sys.argv[2]}, split="train")
print(ds[int(sys.argv[1])]["id"])
"""
PYARROW = """
import bisect, sys
import pyarrow.parquet as pq
i, pf = int(sys.argv[1]), pq.ParquetFile(sys.argv[2])
starts, n = [], 0
for g in range(pf.metadata.num_row_groups):
    starts.append(n)
    n += pf.metadata.row_group(g).num_rows
g = bisect.bisect_right(starts, i) - 1
print(pf.read_row_group(g).slice(i - starts[g], 1).to_pylist()[0]["id"])
"""
# A worker with neither pyarrow nor pydantic: the task from `taskpack serve`, checked against
# the pinned version (its split's task digests fetched and checked once per machine).
FETCH = """
import sys
from taskpack.fetch import task
print(task(sys.argv[2], "train", int(sys.argv[1]), digest=sys.argv[3])["id"])
"""
BARE = "print('task')"
# Import cost alone: taskpack with its read path loaded (its names load on first use) against
# the pyarrow module a hand-written reader imports.
TASKPACK_IMPORT, PYARROW_IMPORT = "import taskpack (+ load)", "import pyarrow.parquet"
IMPORTS = {
    TASKPACK_IMPORT: "import taskpack; taskpack.load",
    "import taskpack (alone)": "import taskpack",
    PYARROW_IMPORT: "import pyarrow.parquet",
}


def one_file(ts_path: Path, tmp: Path) -> Path:
    """The split as one Parquet file with the same row groups."""
    import pyarrow.parquet as pq

    import taskpack

    files = [ts_path / f.path for f in taskpack.open(ts_path).manifest.splits["train"].files()]
    if len(files) == 1:
        return files[0]
    target = tmp / "train.parquet"
    with pq.ParquetWriter(target, pq.read_schema(files[0]), compression="zstd") as writer:
        for path in files:
            pf = pq.ParquetFile(path)
            for g in range(pf.num_row_groups):
                writer.write_table(pf.read_row_group(g))
    return target


def episode_start(parquet: Path, rounds: int, index: int, server: str) -> dict[str, float]:
    args = (str(index), str(parquet))
    import taskpack

    fetch = (str(index), server, taskpack.open("bench@1.0.0").manifest.digest)
    fresh_process(FETCH, *fetch)  # the split's task digests, fetched and checked once
    return alternate(
        {
            "taskpack": lambda: fresh_process(TASKPACK, *args),
            "taskpack.fetch (serve)": lambda: fresh_process(FETCH, *fetch),
            "datasets (hot cache)": lambda: fresh_process(DATASETS, *args),
            "raw pyarrow": lambda: fresh_process(PYARROW, *args),
            "bare python": lambda: fresh_process(BARE),
        },
        rounds,
    )


def imports(rounds: int) -> tuple[dict[str, float], dict[str, float]]:
    """Each import's median, and the median of its difference from pyarrow's round by round:
    this machine drifts by tens of milliseconds within a run, which moves both sides of a round
    alike, so a difference of medians taken apart can miss by as much."""
    times = alternate_times(
        {name: (lambda code=code: fresh_process(code)) for name, code in IMPORTS.items()},
        rounds * 5,
    )
    base = times[PYARROW_IMPORT]
    medians = {name: statistics.median(values) for name, values in times.items()}
    extra = {
        name: statistics.median(a - b for a, b in zip(values, base, strict=True))
        for name, values in times.items()
    }
    return medians, extra


def modules_added() -> list[str]:
    """The modules the taskpack read path loads that `import pyarrow.parquet` does not."""

    def loaded(code: str) -> set[str]:
        listing = f"{code}; import sys; print(chr(10).join(sys.modules))"
        run = subprocess.run(
            [sys.executable, "-c", listing], capture_output=True, text=True, check=True
        )
        return set(run.stdout.split())

    return sorted(loaded(IMPORTS[TASKPACK_IMPORT]) - loaded(IMPORTS[PYARROW_IMPORT]))


def random_access(parquet: Path, rounds: int, count: int) -> dict[str, float]:
    import datasets
    import pyarrow.parquet as pq

    import taskpack

    split = taskpack.load("bench@1.0.0", split="train")
    ds = datasets.load_dataset("parquet", data_files={"train": str(parquet)}, split="train")
    table = pq.read_table(parquet)
    rng = random.Random(1)
    indices = [rng.randrange(len(split)) for _ in range(count)]
    ids = [f"train-{i:05d}" for i in indices]
    split.get(ids[0])  # the id index is built once per process; measure steady state
    return alternate(
        {
            "split[i]": lambda: per_call(lambda i: split[i], indices),
            "split.get(id)": lambda: per_call(lambda k: split.get(ids[k]), list(range(count))),
            "datasets ds[i]": lambda: per_call(lambda i: ds[i], indices),
            "pyarrow slice": lambda: per_call(lambda i: table.slice(i, 1).to_pylist()[0], indices),
        },
        rounds,
    )


def main() -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TASKPACK_REGISTRY"] = str(Path(tmp) / "registry")
        os.environ["TASKPACK_CACHE"] = str(Path(tmp) / "cache")
        os.environ["HF_DATASETS_CACHE"] = str(Path(tmp) / "hf")
        os.environ["HF_HUB_OFFLINE"] = "1"
        import taskpack

        ts_path = build_taskset(Path(tmp) / "bench.taskset", args.tasks)
        taskpack.publish(ts_path)
        parquet = one_file(ts_path, Path(tmp))
        index = args.tasks * 3 // 4 + 17
        fresh_process(DATASETS, str(index), str(parquet))  # build the datasets cache: hot
        fresh_process(TASKPACK, str(index))  # resolve once: the version is now pinned in cache
        with served("bench@1.0.0") as (_, server):
            start = episode_start(parquet, args.rounds, index, server)
        imported, extra = imports(args.rounds)
        added = modules_added()
        access = random_access(parquet, args.rounds, 2000)
    ours = start["taskpack"]
    print(f"episode start, fresh process, task {index} of {args.tasks} (median of {args.rounds}):")
    for name, seconds in start.items():
        print(f"  {name:<22}{seconds * 1000:8.0f} ms   taskpack / this = {ours / seconds:5.2f}")
    print(f"import, fresh process (median of {args.rounds * 5}; over pyarrow: of the rounds):")
    for name, seconds in imported.items():
        over = extra[name] * 1000
        print(f"  {name:<26}{seconds * 1000:8.0f} ms   over pyarrow {over:+5.0f} ms")
    print(f"  modules '{TASKPACK_IMPORT}' adds to pyarrow.parquet's: {', '.join(added)}")
    print("random access in one process (median per call):")
    base = access["pyarrow slice"]
    for name, seconds in access.items():
        print(f"  {name:<22}{seconds * 1e6:8.1f} us   this / pyarrow slice = {seconds / base:5.2f}")
    return {"episode_start": start, "imports": imported, "random_access": access}


if __name__ == "__main__":
    main()
