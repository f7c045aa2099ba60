"""Rewards: what a task's verifier says of a reply, everywhere taskpack or a trainer asks.

One package holds every part of the answer, so `check`, `serve`, `grade` and the graders the
exports ship cannot drift apart: the stand-alone graders by kind (`grader`: answers and Python
unit tests, with the field's rule for reading a reply; `swe`, `multi_swe`: the SWE-bench
harnesses' reports), the math profiles (`profiles`), the trainers' hooks (`verl_hook`,
`trl_hook`), the sandbox (`sandbox`), a task's verifier run there with the forgers that test it
(`trials`), and the job that grades a completions file (`grading`).

The stand-alone modules import nothing of taskpack: exports copy them beside their data as they
are (`shipped`), and a trainer's process runs them with the standard library alone.
"""

from __future__ import annotations

import functools
from pathlib import Path

from taskpack.base.lazy import lazy

__all__ = ["extract_answer", "extract_code", "grade", "reply_score", "shipped"]
_LAZY = {
    "extract_answer": "grader",
    "extract_code": "grader",
    "reply_score": "grader",
    "grade": "grading",
}
__getattr__, __dir__ = lazy(__name__, _LAZY, __all__)


@functools.cache
def shipped(module: str) -> bytes:
    """The source of one of this package's stand-alone modules (`grader`, `swe`, ...), as an
    export writes it beside its data."""
    return Path(__file__).with_name(f"{module}.py").read_bytes()
