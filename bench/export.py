"""Folder exports: 20k GSM8K-shaped tasks to Harbor and OpenReward task folders, against a
plain script that creates the same number of folders and files of the same sizes (the file
system's own cost, with no task read and nothing computed). Fresh processes, alternating rounds,
medians; on the disk holding the temporary folder and, where there is one, on tmpfs.

On disk, every round writes a new folder and nothing is deleted until all rounds ran: ext4 without a
journal (this machine's root) will not reuse an inode freed in the last 60 s (360 s while its
table block is unsynced) and scans past each one, so creating a tree right after deleting one
took several times longer (a 5000-task tree: 2 s, and 14-23 s right after deleting one; perf
shows `recently_deleted` under `__ext4_new_inode`), for every contender alike.
For the same reason the disk rounds start after a sync and that window.

Then the row exports' peak memory (RSS of the whole process) at several sizes: SkyRL Parquet
and NeMo Gym JSONL are read a row group and written a batch at a time, so it should not grow
with the tasks written; nor should writing the Hub viewer's copy of a split, whose JSON
columns are typed over the whole split before it is written a row group at a time. A Parquet
footer holds an entry per column of each row group (30 MiB in memory for one file of a million
tasks); a split of more than `PART_GROUPS` row groups is stored as several files, read one at a
time, so the largest footer an export holds is bounded too. It is shown apart: the largest file
of the source split, opened with nothing read.

    python bench/export.py                 # 20000 tasks, 3 rounds; memory at 10k, 100k, 200k
    python bench/export.py --tasks 2000 --rounds 2 --memory 2000,20000
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import alternate, build_taskset, fresh_process, machine, peak_process

# Harbor's layout for a graded task: 4 folders and 7 files, sizes as taskpack writes them.
PLAIN = """
import os, sys
root, count = sys.argv[1], int(sys.argv[2])
files = (("instruction.md", 110), ("environment/Dockerfile", 35), ("solution/solve.sh", 103),
         ("tests/grade.py", 4671), ("tests/expected.json", 91), ("tests/test.sh", 153),
         ("task.toml", 135))
os.makedirs(root)
for i in range(count):
    d = os.path.join(root, f"train-{i:05d}")
    os.mkdir(d)
    for sub in ("environment", "tests", "solution"):
        os.mkdir(os.path.join(d, sub))
    for rel, size in files:
        with open(os.path.join(d, rel), "wb") as f:
            f.write(b"x" * size)
"""

EXPORT = "import sys; from taskpack.cli import main; main(sys.argv[1:])"


def _contenders(source: Path, tasks: int) -> dict[str, list[str]]:
    """Name -> (code, arguments before the output folder)."""
    export = [EXPORT, "export", str(source), "-q", "-o"]
    return {
        "plain": [PLAIN, str(tasks)],
        "harbor": [*export[:3], "--to", "harbor", *export[3:]],
        "openreward": [*export[:3], "--to", "openreward", *export[3:]],
    }


# ext4's window for recently freed inodes once their blocks are synced (fs/ext4/ialloc.c).
RECENTLY_DELETED_S = 60


def _runner(base: Path, name: str, argv: list[str], keep: bool) -> Callable[[], float]:
    """A contender's timed run, each into a new folder; kept until the end (`keep`: on disk,
    see above), else deleted once timed: tmpfs has no window for freed inodes, and trees left
    in memory slowed the next ones (a plain tree: 1.4 s on an empty tmpfs, 2.1-3.7 s beside
    six), the more for a contender run later in a round."""
    rounds = itertools.count()

    def run() -> float:
        out = base / f"{name}-{next(rounds)}"
        subprocess.run(["sync"], check=False)  # the last round's writes do not land on this one
        code, *rest = argv
        if code == PLAIN:
            seconds = fresh_process(code, str(out), *rest)
        else:
            seconds = fresh_process(code, *rest, str(out), quiet=True)  # not its loss report
        if not keep:
            shutil.rmtree(out)
        return seconds

    return run


def _peak_mib(source: Path, fmt: str, out: Path) -> float:
    """Peak RSS in MiB of one `taskpack export` process."""
    argv = ["export", str(source), "--to", fmt, "-o", str(out), "-q"]
    _, peak = peak_process(EXPORT, *argv, quiet=True)
    shutil.rmtree(out, ignore_errors=True)
    return peak


VIEWER = """
import sys, taskpack
from pathlib import Path
from taskpack.registry.hub import viewer_parquet
viewer_parquet(taskpack.open(sys.argv[1]), "train", Path(sys.argv[2]))
"""


def _viewer_mib(source: Path, out: Path) -> float:
    """Peak RSS in MiB of writing the Hub viewer's copy of the split (its JSON columns typed)."""
    _, peak = peak_process(VIEWER, str(source), str(out))
    out.unlink()
    return peak


def _footer_mib(source: Path) -> float:
    """What opening the split's largest Parquet file adds to a process (its footer: an entry
    per column of each 1024-task row group)."""
    import taskpack

    files = taskpack.open(source).manifest.splits["train"].files()
    parquet = source / max(files, key=lambda part: part.rows).path
    _, bare = peak_process("import pyarrow.parquet")
    _, opened = peak_process(
        "import sys, pyarrow.parquet as pq; pq.ParquetFile(sys.argv[1])", str(parquet)
    )
    return opened - bare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--memory", default="10000,100000,200000", help="task counts for row exports"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="taskpack-bench-export-"))
    places = {"disk": work}
    if Path("/dev/shm").is_dir():
        places["tmpfs"] = Path(tempfile.mkdtemp(prefix="taskpack-bench-", dir="/dev/shm"))
    try:
        source = build_taskset(work / "set", args.tasks)
        print(f"{machine()}; {args.tasks} tasks")
        for where, base in places.items():
            if where == "disk":
                subprocess.run(["sync"], check=False)
                time.sleep(RECENTLY_DELETED_S)
            medians = alternate(
                {
                    name: _runner(base / "out", name, argv, keep=where == "disk")
                    for name, argv in _contenders(source, args.tasks).items()
                },
                args.rounds,
            )
            shutil.rmtree(base / "out", ignore_errors=True)
            plain = medians.pop("plain")
            print(f"{where}: plain script creating the same tree {plain:.1f} s")
            for name, t in medians.items():
                print(f"{where}: taskpack export --to {name} {t:.1f} s ({t / plain:.2f}x plain)")
        sizes = [int(n) for n in args.memory.split(",")]
        peaks: dict[str, list[float]] = {
            "skyrl": [],
            "nemo": [],
            "hub viewer copy": [],
            "source footer": [],
        }
        for count in sizes:
            source = build_taskset(work / f"mem{count}", count)
            for fmt in ("skyrl", "nemo"):
                peaks[fmt].append(_peak_mib(source, fmt, work / f"{fmt}{count}"))
            peaks["hub viewer copy"].append(_viewer_mib(source, work / "viewer.parquet"))
            peaks["source footer"].append(_footer_mib(source))
            shutil.rmtree(source)
        for what, found in peaks.items():
            each = ", ".join(f"{peak:.0f} MiB at {n}" for n, peak in zip(sizes, found, strict=True))
            if what == "source footer":
                print(f"of which the largest Parquet footer of the source (open): {each}")
                continue
            steps = " then ".join(f"{b / a:.2f}x" for a, b in itertools.pairwise(found))
            writes = "writing the" if what == "hub viewer copy" else "row export --to"
            print(f"{writes} {what}: peak {each} ({steps})")
    finally:
        for base in places.values():
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("TQDM_DISABLE", "1")
    sys.exit(main())
