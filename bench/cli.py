"""The CLI's start: `taskpack --help` and one tab-completion request (what a shell runs on
each press), each a fresh process, against `python -c "import click"` (the least any click
CLI costs). Rounds alternate; medians and ratios (goal <= 1.6x).

    python bench/cli.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import alternate_times, machine

COMPLETION = {
    "_TASKPACK_COMPLETE": "bash_complete",
    "COMP_WORDS": "taskpack con",
    "COMP_CWORD": "1",
}


def timed(args: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True, env={**os.environ, **(env or {})})
    return time.perf_counter() - start


def main() -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    entry = [sys.executable, "-m", "taskpack"]
    done = subprocess.run(
        [*entry], capture_output=True, text=True, env={**os.environ, **COMPLETION}
    )
    assert "convert" in done.stdout, done.stdout  # the completion answers
    times = alternate_times(
        {
            'python -c "import click"': lambda: timed([sys.executable, "-c", "import click"]),
            "taskpack --help": lambda: timed([*entry, "--help"]),
            "completion of 'taskpack con'": lambda: timed(entry, COMPLETION),
        },
        args.rounds,
    )
    medians = {name: statistics.median(v) for name, v in times.items()}
    base = medians['python -c "import click"']
    print(f"CLI start, fresh process, {machine()} (median of {args.rounds}):")
    for name, seconds in medians.items():
        print(f"  {name:<30}{seconds * 1000:7.0f} ms   / import click = {seconds / base:.2f}")
    return medians


if __name__ == "__main__":
    main()
