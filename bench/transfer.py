"""Cold pull and publish of a >=100 MB split on a real S3 server (SeaweedFS on 127.0.0.1),
against plain boto3 moving the same bytes (`download_file`, `upload_file`), and against boto3
with the SHA-256 a content address needs (the file hashed before its upload, after its
download): what a user who wants to know the bytes are the pinned ones would otherwise run.

Each transfer starts with the disk's pending writes flushed (untimed): the last round's 126 MB
would otherwise be written back during this one, at a moment chosen by the kernel. Each pull's
cache is deleted once it is timed, as each download's file is: memory the guest has not used
before costs a page fault from the host the first time, and a pull whose 126 MB stayed cached
while boto3's file was freed (and its pages reused) paid that cost alone, 0.2-0.3 s a round.
Each also starts with no garbage left by the rounds before (untimed `gc.collect()`): a fresh
boto3 client leaves 33k objects in reference cycles, and the full collection they trigger
(0.09-0.18 s in this process) landed in whichever round came next, taskpack's or boto3's.
Each contender runs once untimed before the rounds: a process's first transfer pays for
memory and code paths no later one does (0.8 s against 0.3 s for a pull).
The spread of the rounds is printed beside the medians: on a shared 2-core machine it is wide.

    python bench/transfer.py [--megabytes 120] [--rounds 3] [--parts]
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import alternate_times, big_taskset, s3_client, s3_server


def main() -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=120)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--parts", action="store_true", help="also time the parts of a pull, each apart"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        server = s3_server(tmp / "s3")
        try:
            import taskpack
            from taskpack.registry.cache import Cache

            ts = big_taskset(tmp / "big.taskset", args.megabytes)
            parquet = ts / "splits" / "train.parquet"
            size = parquet.stat().st_size
            client = s3_client()
            client.create_bucket(Bucket="bench")
            counter = iter(range(10**6))

            cpu: dict[str, list[tuple[float, float]]] = {}

            def timed(name: str, fn: Callable[[], object]) -> float:
                """Seconds of `fn()`, and the CPU seconds it took here and in the server."""
                os.sync()
                gc.collect()
                here, there = time.process_time(), _cpu_of(server.proc.pid)
                start = time.perf_counter()
                fn()
                seconds = time.perf_counter() - start
                took = (time.process_time() - here, _cpu_of(server.proc.pid) - there)
                cpu.setdefault(name, []).append(took)
                return seconds

            def publish() -> float:
                url = f"s3://bench/publish-{next(counter)}"
                return timed("taskpack publish", lambda: taskpack.publish(ts, registry=url))

            def upload() -> float:
                # A fresh client each time, as taskpack makes one per publish.
                key = f"raw-{next(counter)}/train.parquet"
                return timed(
                    "boto3 upload_file", lambda: s3_client().upload_file(str(parquet), "bench", key)
                )

            def upload_hashed() -> float:
                def run() -> None:
                    key = f"sha256/{_sha256(parquet)}-{next(counter)}"
                    s3_client().upload_file(str(parquet), "bench", key)

                return timed(HASHED_UP, run)

            published = _warmed(
                {
                    "taskpack publish": publish,
                    "boto3 upload_file": upload,
                    HASHED_UP: upload_hashed,
                },
                args.rounds,
                cpu,
            )
            taskpack.publish(ts, registry="s3://bench/pull")
            client.upload_file(str(parquet), "bench", "raw/train.parquet")

            def pull() -> float:
                where = tmp / f"cache-{next(counter)}"
                seconds = timed(
                    "taskpack pull (cold)",
                    lambda: taskpack.pull(
                        "big@1.0.0", ("train",), registry="s3://bench/pull", cache=Cache(where)
                    ),
                )
                shutil.rmtree(where)  # as the download's file is deleted: see the docstring
                return seconds

            def download(hashed: bool = False) -> float:
                dest = tmp / f"raw-{next(counter)}.parquet"

                def run() -> None:
                    s3_client().download_file("bench", "raw/train.parquet", str(dest))
                    if hashed:
                        _sha256(dest)

                seconds = timed(HASHED_DOWN if hashed else "boto3 download_file", run)
                dest.unlink()
                return seconds

            pulled = _warmed(
                {
                    "taskpack pull (cold)": pull,
                    "boto3 download_file": download,
                    HASHED_DOWN: lambda: download(hashed=True),
                },
                args.rounds,
                cpu,
            )
            parts = _pull_parts(tmp, parquet, timed, args.rounds, cpu) if args.parts else {}
        finally:
            server.stop()
    where = "SeaweedFS on 127.0.0.1"
    print(f"transfer of a {size / 1e6:.0f} MB split, {where} (median of {args.rounds}):")
    medians: dict[str, dict[str, float]] = {}
    for kind, times, ours in (
        ("publish", published, "taskpack publish"),
        ("pull", pulled, "taskpack pull (cold)"),
    ):
        results = medians[kind] = {name: statistics.median(v) for name, v in times.items()}
        print(f"  {ours:<31}{results[ours]:6.2f} s")
        for name in results:
            if name != ours:
                ratio = results[ours] / results[name]
                print(f"  {name:<31}{results[name]:6.2f} s   taskpack / this {ratio:5.2f}")
        print("    CPU seconds here + in the server (median; 2 cores give 2 a second), each round:")
        for name in results:
            rounds = " ".join(f"{t:.2f}" for t in times[name])
            print(f"    {name:<31}{_median_cpu(cpu[name])}   {rounds}")
    if parts:
        print(f"parts of a pull, each apart (median of {args.rounds}; CPU here + in the server):")
        for name, times in parts.items():
            print(f"  {name:<46}{statistics.median(times):6.3f} s   {_median_cpu(cpu[name])}")
    return medians


def _pull_parts(
    tmp: Path,
    parquet: Path,
    timed: Callable[[str, Callable[[], object]], float],
    rounds: int,
    cpu: dict[str, list[tuple[float, float]]],
) -> dict[str, list[float]]:
    """What a cold pull does, one part at a time: the split's one streamed GET into a file
    hashed as it is written, a SHA-256 of the same bytes on their own, and the row check of
    the finished split (inline files hashed, rows decoded, digests chained)."""
    from taskpack.base.objects import HashedFile
    from taskpack.registry.cache import Cache
    from taskpack.registry.client import RegistryObjects, resolve
    from taskpack.storage.rows import check_split

    # a cache of its own: the default one may hold another run's `big@1.0.0` for this URL
    ts = resolve("big@1.0.0", registry="s3://bench/pull", cache=Cache(tmp / "parts-cache"))
    m, info = ts.manifest, ts.info("train")
    sha = info.files()[0].sha256
    assert isinstance(ts.objects, RegistryObjects)
    registry = ts.objects.registry
    dest = tmp / "part.parquet"

    def download() -> None:
        with dest.open("wb") as f:
            registry.download(m, sha, HashedFile(f, info.bytes), None)

    runs: dict[str, Callable[[], object]] = {
        "GET into a file, hashed as written": download,
        "SHA-256 of the file": lambda: _sha256(parquet),
        "row check of the finished split": lambda: check_split(
            [parquet], "train", info, m.format_version
        ),
    }
    return _warmed({name: partial(timed, name, run) for name, run in runs.items()}, rounds, cpu)


HASHED_UP = "sha256, then upload_file"
HASHED_DOWN = "download_file, then sha256"


def _sha256(path: Path) -> str:
    """The file's SHA-256 as a script computes it: hashlib over 1 MiB reads."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _warmed(
    contenders: dict[str, Callable[[], float]],
    rounds: int,
    cpu: dict[str, list[tuple[float, float]]],
) -> dict[str, list[float]]:
    """`alternate_times` after one untimed run of each contender (see the docstring)."""
    for name, run in contenders.items():
        run()
        cpu.pop(name)
    return alternate_times(contenders, rounds)


def _cpu_of(pid: int) -> float:
    """CPU seconds the process `pid` has used, all its threads (Linux's /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _median_cpu(rounds: list[tuple[float, float]]) -> str:
    here = statistics.median(h for h, _ in rounds)
    there = statistics.median(t for _, t in rounds)
    return f"{here:.2f} + {there:.2f}"


if __name__ == "__main__":
    main()
