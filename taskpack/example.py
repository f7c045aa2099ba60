"""A small generated task set, so the quickstart runs on a fresh machine with no data at hand.

Arithmetic word problems (numeric match), multiple choice and a unit-tested coding task with a
large data file, so one demo exercises inline files, blob-stored files and several reward kinds.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from typing import Any

from taskpack.model import Manifest
from taskpack.storage.rows import INLINE_MAX
from taskpack.storage.writer import write


def _arithmetic(rng: random.Random, count: int, prefix: str) -> Iterator[dict[str, Any]]:
    for i in range(count):
        a, b = rng.randint(2, 999), rng.randint(2, 99)
        yield {
            "id": f"{prefix}-{i:04d}",
            "prompt": f"A crate holds {b} apples. How many apples are in {a} crates?",
            "answer": str(a * b),
            "reward": {"kind": "numeric_match"},
            "source": {"format": "example", "split": prefix, "row": i},
        }


def _choice() -> dict[str, Any]:
    return dict(
        id="choice-0000",
        prompt=[
            {"role": "system", "content": "Answer with one letter."},
            {"role": "user", "content": "Which planet is largest? A) Mars B) Jupiter C) Venus"},
        ],
        answer="B",
        reward={
            "kind": "multiple_choice",
            "choices": [
                {"label": "A", "text": "Mars"},
                {"label": "B", "text": "Jupiter"},
                {"label": "C", "text": "Venus"},
            ],
        },
    )


def _code() -> dict[str, Any]:
    table = "".join(f"{n},{n * n}\n" for n in range(INLINE_MAX // 8)).encode()
    return dict(
        id="code-0000",
        prompt="Write `square(n)` that returns n*n; data/squares.csv lists expected values.",
        solution="def square(n):\n    return n * n\n",
        reward={"kind": "unit_tests", "entry_point": "square", "test_file": "test_square.py"},
        files=[
            {
                "path": "test_square.py",
                "role": "tests",
                "data": b"def check(candidate):\n    assert candidate(3) == 9\n",
            },
            {"path": "data/squares.csv", "data": table},
            {"path": "run.sh", "data": b"#!/bin/sh\npython -m pytest\n", "mode": 0o755},
        ],
        environment={"image": "python:3.12-slim", "test_timeout_sec": 60},
    )


def build_example(target: str | os.PathLike[str], overwrite: bool = False) -> Manifest:
    rng = random.Random(0)
    return write(
        target,
        {
            "train": [*_arithmetic(rng, 20, "train"), _code()],
            "test": [*_arithmetic(rng, 5, "test"), _choice()],
        },
        name="example",
        version="1.0.0",
        description="Generated demo tasks: arithmetic, multiple choice, one coding task.",
        license="CC0-1.0",
        overwrite=overwrite,
    )
