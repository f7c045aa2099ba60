"""Completions for MATH-500 as models write them, right and wrong, for the math profiles'
tests and bench: each problem's own worked solution (its answer boxed), its answer on a
closing `Answer:` line, in Minerva's closing sentence, boxed in the forms models vary
(`\\dfrac`, `$...$`, `\\boxed ` without braces, a decimal, units, `\\left(`, spaces), and
another problem's answer, boxed and on an `Answer:` line."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from .conftest import DATA

MATH500 = DATA / "math_rl" / "math500" / "test.jsonl"
_FRAC = re.compile(r"^\\frac\{(\d+)\}\{(\d+)\}$")


def problems() -> list[dict[str, str]]:
    with MATH500.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def variants(answer: str, solution: str, other: str) -> Iterator[tuple[str, str]]:
    """(how, reply) for one problem: `other` is a different problem's answer."""
    lead = "Let me work through this.\n\n"
    dfrac = answer.replace("\\frac", "\\dfrac")
    spaced = answer.replace(",", ", ").replace("(", "( ")
    sized = answer.replace("(", "\\left(").replace(")", "\\right)")
    yield "solution", solution
    yield "answer line", f"{lead}Answer: {answer}"
    yield "minerva", f"{lead}Final Answer: The final answer is ${answer}$. I hope it is correct."
    yield "boxed", f"{lead}So the answer is $\\boxed{{{answer}}}$."
    yield "dfrac", f"{lead}\\boxed{{{dfrac}}}"
    yield "boxed space", f"{lead}The answer is $\\boxed {answer}$"
    yield "units", f"{lead}\\boxed{{{answer}\\text{{ units}}}}"
    yield "spaced", f"{lead}\\boxed{{{spaced}}}"
    yield "left right", f"{lead}\\boxed{{{sized}}}"
    yield "think", f"<think>maybe \\boxed{{{other}}}</think>\n\\boxed{{{answer}}}"
    frac = _FRAC.match(answer)
    if frac:
        yield "decimal", f"{lead}\\boxed{{{int(frac[1]) / int(frac[2]):.6g}}}"
    yield "wrong boxed", f"{lead}\\boxed{{{other}}}"
    yield "wrong line", f"{lead}Answer: {other}"


def completions() -> list[dict[str, str]]:
    """Every variant of every problem: `{id, completion, how, answer}`."""
    rows = problems()
    out = []
    for n, row in enumerate(rows):
        other = rows[(n + 1) % len(rows)]["answer"]
        for how, reply in variants(row["answer"], row["solution"], other):
            out.append(
                {"id": row["unique_id"], "completion": reply, "how": how, "answer": row["answer"]}
            )
    return out
