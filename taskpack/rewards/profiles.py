"""Math as the field grades it: named profiles, each reproducing one reference grader's rule, so a
team can score completions the way its trainer will (`taskpack grade --profile NAME`) and see
where the rules part (`taskpack grade --compare`).

The graders disagree, and a reward's meaning moves with them: verl's `math_dapo` compares the
last `Answer:` line after Minerva's normalisation but a `\\boxed{}` answer verbatim; its
`math_reward` (the Hendrycks MATH rule) normalises a box's content by string edits; Math-Verify
parses both sides into sympy. Each profile here is written from its reference's rule and proven
equal to the reference's own code on the same completions (tests/test_math_profiles.py runs
them in verl 0.9.1's venv), quirks included: a profile that named a reference but scored
otherwise would mislead exactly where it matters. A profile says pass or fail; verl's
`math_dapo` pays -1 for a fail, which taskpack reports as 0.

`taskpack` is the task's own verifier (`grader.answer_reply_score`), the default everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as PoolTimeout
from dataclasses import dataclass
from functools import cache

from taskpack.rewards import grader


@dataclass(frozen=True)
class Profile:
    name: str
    reference: str  # whose code it reproduces, where
    same: Callable[[str, str], bool]  # (reply, gold answer) -> full reward


class Unavailable(RuntimeError):
    """A profile whose package is not installed (the message says how to get it)."""


# ---- taskpack's own rule ----------------------------------------------------------------------


def _taskpack(reply: str, answer: str) -> bool:
    return grader.answer_reply_score({"kind": "math_match", "answer": answer}, reply) >= 1.0


# ---- verl's math_dapo (verl/utils/reward_score/math_dapo.py, 0.9.1) -----------------------------

# Minerva's normalisation (Lewkowycz et al. 2022, appendix D), as verl and lm-eval apply it:
# literal edits, then these words and marks dropped, then the regular-expression steps below.
_MINERVA_EDITS = (
    ("an ", ""), ("a ", ""), (".$", "$"), ("\\$", ""), ("\\ ", ""), (" ", ""),
    ("mbox", "text"), (",\\text{and}", ","), ("\\text{and}", ","), ("\\text{m}", "\\text{}"),
)  # fmt: skip
_MINERVA_DROPPED = (
    "square", "ways", "integers", "dollars", "mph", "inches", "hours", "km", "units", "\\ldots",
    "sue", "points", "feet", "minutes", "digits", "cents", "degrees", "cm", "gm", "pounds",
    "meters", "meals", "edges", "students", "childrentickets", "multiples",
    "\\text{s}", "\\text{.}", "\\text{\ns}", "\\text{}^2", "\\text{}^3", "\\text{\n}",
    "\\text{}", "\\mathrm{th}", "^\\circ", "^{\\circ}", "\\;", ",\\!", "{,}", '"', "\\dots",
)  # fmt: skip
_MINERVA_STEPS = (
    (re.compile(r"(.*?)(\$)(.*?)(\$)(.*)"), "$\\3$"),  # the first $...$ of the answer
    (re.compile(r"(\\text\{)(.*?)(\})"), "\\2"),
    (re.compile(r"(\\textbf\{)(.*?)(\})"), "\\2"),
    (re.compile(r"(\\overline\{)(.*?)(\})"), "\\2"),
    (re.compile(r"(\\boxed\{)(.*)(\})"), "\\2"),
    (re.compile(r"(frac)([^{])(.)"), "frac{\\2}{\\3}"),  # \frac12 -> \frac{1}{2}
    (re.compile(r"(sqrt)([^{])"), "sqrt{\\2}"),  # \sqrt2 -> \sqrt{2}
)
_MINERVA_ANSWER = re.compile(r"(?i)Answer\s*:\s*([^\n]+)")
_NO_LINE = "[INVALID]"  # the reference's mark for "no Answer: line" (then it reads the box)


def minerva_form(answer: str) -> str:
    """An answer as Minerva's normalisation writes it (what `math_dapo` compares)."""
    text = answer.split("=")[-1]
    for old, new in _MINERVA_EDITS:
        text = text.replace(old, new)
    for dropped in _MINERVA_DROPPED:
        text = text.replace(dropped, "")
    for pattern, repl in _MINERVA_STEPS:
        text = pattern.sub(repl, text)
    text = text.replace("$", "")
    if text.replace(",", "").isdigit():
        text = text.replace(",", "")
    return text.strip()


def _box_from(text: str, start: int) -> str | None:
    """`text[start:]` up to the brace closing the first one opened (None: never closed)."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


def _math_dapo(reply: str, answer: str) -> bool:
    tail = reply[-300:]  # the reference's own cut
    lines = _MINERVA_ANSWER.findall(tail)
    said = minerva_form(lines[-1]) if lines else _NO_LINE
    if said != _NO_LINE:
        return said == minerva_form(answer)
    box = tail[-100:]
    start = box.rfind("\\boxed{")
    found = _box_from(box, start) if start >= 0 else None
    # verbatim: the box's content against the gold answer, neither normalised
    return found is not None and found[len("\\boxed{") : -1] == answer


# ---- verl's math_reward: the Hendrycks MATH rule (lm-eval's hendrycks_math) ---------------------


class _Unreadable(Exception):
    """Where the reference's string edits fail (it then compares the raw strings)."""


def _fix_fracs(text: str) -> str:
    head, *rest = text.split("\\frac")
    out = [head]
    for part in rest:
        if not part:
            raise _Unreadable  # a \frac with nothing after it
        if part[0] == "{" or len(part) < 2:
            if part[0] != "{":
                return text  # \frac and one character: left as it was
            out.append("\\frac" + part)
        elif part[1] == "{":
            out.append("\\frac{" + part[0] + "}" + part[1:])
        else:
            out.append("\\frac{" + part[0] + "}{" + part[1] + "}" + part[2:])
    return "".join(out)


def _fix_slash(text: str) -> str:
    parts = text.split("/")
    if len(parts) != 2:
        return text
    try:
        a, b = int(parts[0]), int(parts[1])
    except ValueError:
        return text
    return f"\\frac{{{a}}}{{{b}}}" if text == f"{a}/{b}" else text


def _fix_sqrt(text: str) -> str:
    head, *rest = text.split("\\sqrt")
    for part in rest:
        if not part:
            raise _Unreadable  # a \sqrt with nothing after it
        head += "\\sqrt" + (part if part[0] == "{" else "{" + part[0] + "}" + part[1:])
    return head


def hendrycks_form(text: str) -> str:
    """An answer as the Hendrycks MATH rule writes it (`strip_string`); raises `_Unreadable`
    where the reference's edits fail."""
    for old, new in (
        ("\n", ""), ("\\!", ""), ("\\\\", "\\"), ("tfrac", "frac"), ("dfrac", "frac"),
        ("\\left", ""), ("\\right", ""), ("^{\\circ}", ""), ("^\\circ", ""), ("\\$", ""),
    ):  # fmt: skip
        text = text.replace(old, new)
    if "\\text{ " in text:  # units, on the right
        parts = text.split("\\text{ ")
        if len(parts) != 2:
            raise _Unreadable
        text = parts[0]
    text = text.replace("\\\\%", "").replace("\\%", "").replace(" .", " 0.").replace("{.", "{0.")
    if not text:
        return text
    if text[0] == ".":
        text = "0" + text
    sides = text.split("=")
    if len(sides) == 2 and len(sides[0]) <= 2:  # "k = 5" answers 5
        text = sides[1]
    text = _fix_fracs(_fix_sqrt(text).replace(" ", ""))
    if text == "0.5":
        text = "\\frac{1}{2}"
    return _fix_slash(text)


def _hendrycks_box(reply: str) -> str | None:
    """The reference's last box: `\\boxed ` to the next `$`, else the last `\\boxed` (or
    `\\fbox`) to its closing brace; None where there is none or it is not `\\boxed{...}`."""
    if "\\boxed " in reply:
        return reply.split("\\boxed ")[-1].split("$")[0]
    start = reply.rfind("\\boxed")
    if start < 0:
        start = reply.rfind("\\fbox")
        if start < 0:
            return None
    found = _box_from(reply, start)
    if found is None or not found.startswith("\\boxed{"):
        return None  # an \fbox, or \boxed without its brace: the reference scores 0
    return found[len("\\boxed{") : -1]


def _math_reward(reply: str, answer: str) -> bool:
    got = _hendrycks_box(reply)
    if got is None:
        return False
    try:
        return hendrycks_form(got) == hendrycks_form(answer)
    except _Unreadable:
        return got == answer


# ---- Math-Verify (the math-verify package, as verl's math_verify.compute_score calls it) --------

MATH_VERIFY_SECONDS = 30.0  # verl's own timeout; past it a reply scores 0, as there


def _math_verify_in_child(reply: str, answer: str) -> bool:
    """Math-Verify's own call, in a process of the pool: its timeouts are SIGALRM's, which
    only a main thread can take."""
    from math_verify.grader import verify
    from math_verify.parser import ExprExtractionConfig, LatexExtractionConfig, parse

    gold = parse("\\boxed{" + answer + "}", (LatexExtractionConfig(),))
    got = parse(reply, (ExprExtractionConfig(), LatexExtractionConfig()))
    return bool(gold and got and any(verify(g, p) for g in gold for p in got))


@cache
def _pool() -> ProcessPoolExecutor:
    """Math-Verify's processes, forked at once on first use (a fork pool starts every worker
    at its first task): `start()` calls it before a job starts threads, and no process of it
    imports the caller's `__main__` again, as spawned ones would."""
    import multiprocessing

    try:
        import math_verify  # noqa: F401
    except ImportError:
        raise Unavailable(
            "profile 'math-verify' needs the math-verify package: "
            "pip install 'taskpack[math]' (or 'math-verify[antlr4_13_2]==0.9.0')"
        ) from None
    pool = ProcessPoolExecutor(mp_context=multiprocessing.get_context("fork"))
    pool.submit(int).result()
    return pool


def start(name: str) -> Profile:
    """The profile called `name`, its processes started (call it before starting threads);
    raises KeyError naming the known ones, `Unavailable` saying what to install."""
    if name not in PROFILES:
        raise KeyError(f"no math profile {name!r}; profiles: {', '.join(PROFILES)}")
    if name == "math-verify":
        _pool()
    return PROFILES[name]


def _math_verify(reply: str, answer: str) -> bool:
    future = _pool().submit(_math_verify_in_child, reply, answer)
    try:
        return future.result(timeout=MATH_VERIFY_SECONDS)
    except PoolTimeout:
        future.cancel()
        return False


PROFILES = {
    p.name: p
    for p in (
        Profile("taskpack", "taskpack's own math_match (rewards/grader.py)", _taskpack),
        Profile("math-dapo", "verl 0.9.1 verl/utils/reward_score/math_dapo.py", _math_dapo),
        Profile("math-reward", "verl 0.9.1 verl/utils/reward_score/math_reward.py", _math_reward),
        Profile("math-verify", "math-verify 0.9.0, as verl 0.9.1's math_verify.py", _math_verify),
    )
}
MATH_KINDS = ("math_match", "numeric_match")  # the reward kinds a profile scores


# ---- where profiles part: the classes --compare counts by ---------------------------------------

_CLASSES = (
    ("interval", re.compile(r"^\s*(?:\\left)?\s*[\[(].*,.*(?:\\right)?\s*[\])]\s*$|\\cup|\\infty")),
    ("percent", re.compile(r"%")),
    ("units", re.compile(r"\\text\{|\\mbox|\^\s*\{?\\circ|\\mathrm")),
    ("set", re.compile(r",|\\\{")),
    ("fraction", re.compile(r"\\[dt]?frac|/")),
    ("radical", re.compile(r"\\sqrt")),
    ("decimal", re.compile(r"\d\.\d")),
)


def answer_class(answer: str) -> str:
    """The class of a gold answer the profiles' disagreement is counted by: the first of
    interval, percent, units, set (a list or tuple), fraction, radical, decimal that it looks
    like, else `other`."""
    for name, pattern in _CLASSES:
        if pattern.search(answer):
            return name
    return "other"
