"""Run every benchmark, each against its alternative in the same run, and write RESULTS.md.

    python bench/run.py            # full sizes (20 to 45 minutes on 2 cores)
    python bench/run.py --quick    # small sizes, a smoke run (about 3 minutes)

Each benchmark alternates taskpack and the alternative over several rounds and reports medians
as ratios; see the module of each for what exactly is compared.
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import ROOT, machine  # noqa: E402

# Conversions of 10,000 rows take under a second: more rounds for those (see convert.py).
SHORT = ["--short-rounds", "15"]
FULL = [
    ("cli.py", ["--rounds", "15"]),
    ("episode.py", ["--tasks", "100000", "--rounds", "7"]),
    ("episode.py", ["--tasks", "1000000", "--rounds", "3"]),
    ("transfer.py", ["--megabytes", "120", "--rounds", "15", "--parts"]),
    ("fanout.py", ["--processes", "64", "--tasks", "100000", "--nodes", "4", "--per-node", "16"]),
    ("hub_mirror.py", ["--tasks", "20000", "--nodes", "4", "--per-node", "16"]),
    ("loaders.py", ["--tasks", "20000", "--nodes", "4", "--per-node", "64"]),
    ("catalog.py", ["--sets", "1000", "--rounds", "15"]),
    ("convert.py", ["--rows", "10000,1000000", "--rounds", "5", *SHORT]),
    ("convert.py", ["--rows", "1000000", "--rounds", "5", "--odd", "100"]),
    ("convert.py", ["--shape", "nemo", "--rows", "10000,200000", "--rounds", "5", *SHORT]),
    ("convert.py", ["--shape", "nemo-tools", "--rows", "10000,200000", "--rounds", "5", *SHORT]),
    ("serve.py", ["--tasks", "10000", "--flood-tasks", "100000"]),
    ("export.py", ["--tasks", "20000", "--rounds", "5", "--memory", "10000,100000,1000000"]),
    ("scale_out.py", ["--rows", "1000000", "--rounds", "3"]),
    ("scale_out.py", ["--nodes", "2", "--rows", "25000,100000,400000,1600000", "--rounds", "2"]),
    ("decontaminate.py", ["--copies", "4", "--rounds", "5"]),
    ("grade.py", ["--tasks", "60"]),
]
SERVE_QUICK = ["--flood-tasks", "10000", "--flood-seconds", "5", "--diff-tasks", "5000"]
QUICK = [
    ("cli.py", ["--rounds", "3"]),
    ("episode.py", ["--tasks", "20000", "--rounds", "3"]),
    ("transfer.py", ["--megabytes", "20", "--rounds", "2"]),
    ("fanout.py", ["--processes", "8", "--tasks", "10000", "--rounds", "1", "--per-node", "4"]),
    (
        "hub_mirror.py",
        [
            "--tasks",
            "2000",
            "--nodes",
            "2",
            "--per-node",
            "2",
            "--fetch-nodes",
            "2",
            "--fetch-per-node",
            "5",
            "--direct",
            "2",
        ],
    ),
    ("loaders.py", ["--tasks", "2000", "--nodes", "2", "--per-node", "4"]),
    ("catalog.py", ["--sets", "50", "--rounds", "3"]),
    ("convert.py", ["--rows", "2000,20000", "--rounds", "2"]),
    ("convert.py", ["--rows", "20000", "--rounds", "1", "--odd", "10"]),
    ("convert.py", ["--shape", "nemo", "--rows", "2000,20000", "--rounds", "1"]),
    ("convert.py", ["--shape", "nemo-tools", "--rows", "2000,20000", "--rounds", "1"]),
    ("serve.py", ["--tasks", "2000", "--seconds", "2", "--rounds", "1", *SERVE_QUICK]),
    ("export.py", ["--tasks", "2000", "--rounds", "1", "--memory", "2000,20000"]),
    ("scale_out.py", ["--rows", "20000", "--rounds", "1"]),
    ("scale_out.py", ["--nodes", "2", "--rows", "10000,40000", "--rounds", "1"]),
    ("decontaminate.py", ["--copies", "1", "--rounds", "1"]),
    ("grade.py", ["--tasks", "10", "--no-math"]),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--output", type=Path, default=HERE / "RESULTS.md")
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    sections, failed = [], []
    for script, script_args in QUICK if args.quick else FULL:
        cmd = [sys.executable, str(HERE / script), *script_args]
        print(f"$ python bench/{script} {' '.join(script_args)}", flush=True)
        run = subprocess.run(cmd, capture_output=True, text=True)
        report = "\n".join(line for line in run.stdout.splitlines() if "examples/s" not in line)
        if run.returncode != 0:  # one failed benchmark is reported, the others still run
            report += f"\nFAILED (exit {run.returncode}):\n" + run.stderr[-2000:]
            failed.append(script)
        print(report, flush=True)
        sections.append(f"```\n$ python bench/{script} {' '.join(script_args)}\n{report}\n```")
    header = (
        f"# Benchmark results\n\nMachine: {machine()}. Date: {datetime.date.today()}. "
        f"Commit: {commit}. Command: `python bench/run.py{' --quick' if args.quick else ''}`.\n"
    )
    args.output.write_text(header + "\n" + "\n\n".join(sections) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
