"""Shared pieces of the benchmarks: synthetic data, fresh-process timing, medians of
alternating rounds. Every benchmark runs taskpack and its alternative in the same run and
reports ratios; absolute times are printed only as context."""

from __future__ import annotations

import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _compiled() -> None:
    """taskpack's bytecode written, as `pip install` writes it for every package it installs:
    an editable install under PYTHONDONTWRITEBYTECODE (this machine's default) would otherwise
    compile taskpack's sources in every fresh process the benchmarks time (about 35 ms),
    while pyarrow, boto3 and datasets load compiled."""
    import compileall

    compileall.compile_dir(ROOT / "taskpack", quiet=1)


_compiled()


def gsm8k_rows(count: int, seed: int = 0) -> Iterator[dict[str, str]]:
    rng = random.Random(seed)
    for i in range(count):
        a, b = rng.randint(1, 10**4), rng.randint(1, 10**4)
        yield {
            "question": f"Tom has {a} apples and buys {b} more. How many apples now? (#{i})",
            "answer": f"He has {a} + {b} = <<{a}+{b}={a + b}>>{a + b} apples.\n#### {a + b:,}",
        }


def write_jsonl(path: Path, count: int) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for row in gsm8k_rows(count):
            f.write(json.dumps(row) + "\n")
    return path


def build_taskset(path: Path, count: int) -> Path:
    """A GSM8K-shaped task set of `count` tasks (built once per benchmark run)."""
    from taskpack.importer import import_sources

    source = write_jsonl(path.with_suffix(".jsonl"), count)
    import_sources(path, {"train": [str(source)]}, "gsm8k", name="bench", version="1.0.0")
    source.unlink()
    return path


def fresh_process(
    code: str, *args: str, env: dict[str, str] | None = None, quiet: bool = False
) -> float:
    """Wall seconds of `python -c code args` in a new interpreter, as a user would run it
    (`quiet`: its stderr, such as an export's loss report, not shown)."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", code, *args],
        check=True,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL if quiet else None,
    )
    return time.perf_counter() - start


@contextlib.contextmanager
def served(
    *args: str, env: dict[str, str] | None = None
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`taskpack serve ARGS` on a free port until the block ends: its process and its URL,
    once it answers /healthz."""
    import urllib.request

    command = [sys.executable, "-m", "taskpack", "serve", *args, "--port", "0"]
    environ = {**os.environ, **(env or {})}
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, env=environ, text=True)
    try:
        assert proc.stderr is not None
        url = proc.stderr.readline().rsplit(" on ", 1)[1].strip().rstrip("/")
        for _ in range(600):
            with contextlib.suppress(OSError), urllib.request.urlopen(url + "/healthz", timeout=2):
                break
            time.sleep(0.05)
        else:
            raise SystemExit(f"taskpack serve {' '.join(args)} did not answer on {url}")
        yield proc, url
    finally:
        proc.terminate()
        proc.wait()


# Appended to a measured process: its own high-water RSS, written where the parent reads it.
_REPORT_PEAK = """
import atexit as _atexit
_atexit.register(lambda: open({path!r}, "w").write(open("/proc/self/status").read()))
"""


def peak_process(code: str, *args: str, quiet: bool = False) -> tuple[float, float]:
    """Wall seconds and peak RSS in MiB of `python -c code args` in a new interpreter.

    The peak is the process's own VmHWM, read as it exits: `ru_maxrss` from `wait4` also holds
    the parent's RSS at fork (Linux keeps the memory before exec in it), so a benchmark that
    had built a big task set reported its own size for every child."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "status"
        seconds = fresh_process(_REPORT_PEAK.format(path=str(report)) + code, *args, quiet=quiet)
        hwm = next(line for line in report.read_text().splitlines() if line.startswith("VmHWM"))
    return seconds, int(hwm.split()[1]) / 1024


def alternate(contenders: dict[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    """Median of each contender's timings, run in turn round after round (same conditions)."""
    times = alternate_times(contenders, rounds)
    return {name: statistics.median(values) for name, values in times.items()}


def alternate_times(
    contenders: dict[str, Callable[[], float]], rounds: int
) -> dict[str, list[float]]:
    """Each contender's timings, round by round: the i-th of each were taken side by side,
    each round starting one contender later than the last, so that none always runs after the
    others (what a round leaves behind, written files or a warm cache, falls on each alike)."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    order = list(contenders.items())
    for r in range(rounds):
        k = r % len(order)
        for name, run in order[k:] + order[:k]:
            times[name].append(run())
    return times


def per_call(fn: Callable[[int], Any], indices: list[int]) -> float:
    """Seconds per call of fn(i) over `indices`."""
    start = time.perf_counter()
    for i in indices:
        fn(i)
    return (time.perf_counter() - start) / len(indices)


def machine() -> str:
    import platform

    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def s3_server(workdir: Path) -> Any:
    """A SeaweedFS S3 server on 127.0.0.1 (the tests' own starter), with boto3 pointed at it."""
    sys.path.insert(0, str(ROOT))
    from tests.services import ACCESS_KEY, SECRET_KEY, start_seaweedfs

    server = start_seaweedfs(workdir)
    os.environ.update(
        AWS_ENDPOINT_URL_S3=server.endpoint,
        AWS_ACCESS_KEY_ID=ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=SECRET_KEY,
        AWS_DEFAULT_REGION="us-east-1",
    )
    return server


def s3_client() -> Any:
    """A fresh boto3 client from boto3's default session, as a script makes one: the service
    model and endpoint data are parsed once per process, as taskpack's own clients have them
    (a fresh `Session` per client parsed them again, 70 ms a round charged to boto3 alone)."""
    import boto3
    from botocore.config import Config

    return boto3.client("s3", config=Config(s3={"addressing_style": "path"}))


def big_taskset(path: Path, megabytes: int) -> Path:
    """A task set whose train split is about `megabytes` MB of incompressible inline files."""
    import taskpack
    from taskpack.storage.rows import INLINE_MAX

    rng = random.Random(7)
    per_task = INLINE_MAX - 1024
    count = megabytes * 1024 * 1024 // per_task
    tasks = (
        {
            "id": f"t{i:05d}",
            "prompt": f"task {i}",
            "files": [{"path": "data.bin", "data": rng.randbytes(per_task)}],
        }
        for i in range(count)
    )
    taskpack.write(path, {"train": tasks}, name="big", version="1.0.0")
    return path
