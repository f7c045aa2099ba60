"""Grades one exported task inside its sandbox: `python3 /tests/grade.py`, standard library
only, so it runs in any image with a Python 3.

taskpack copies this file into the `tests/` folder of every task it exports to a folder
format whose reward it can check itself (answers, unit tests), next to `expected.json`: the
reward kind, the reference, and the name each check reports under. It reads the agent's work
from /app (`answer.txt`, `solution.py`) and writes /logs/verifier/reward.txt (the weighted score,
0 to 1) and reward.json (the score and each check's result), last of all.

Nothing here trusts the agent's files or the code under test:
- the agent's files are read as regular files only (a symlink to the reference scores 0), and
  at most `MAX_READ` bytes of them;
- the tests run in this process; the code under test runs in a child process that only answers
  their calls, its results sent back as tagged JSON and decoded here to plain built-in data. So
  its exit status (`sys.exit(0)`, `os._exit(0)`, an atexit hook) decides nothing, an object
  whose `__eq__` says yes to everything never reaches a test, and pass markers it prints go to a
  log nobody reads for the score;
- run as root (as verifiers are), the child runs as the unprivileged `CANDIDATE_UID`: it cannot
  write /logs, edit /tests or signal this grader, and every process it left is killed after;
  and /tests is closed to other uids before it starts, so it cannot read the tests (the
  asserts and their expected values) either.
What the tests pass to the code under test goes pickled, so arguments may be objects of classes
the test file defines; what comes back is data, or an `Opaque` stand-in for any other object
(not None, truthy, equal to nothing else: what a test checking `re.search(...)`'s result for
None needs). A test that needs the code under test to change its arguments in place, or to
compare an object of its own, scores 0 here.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys
from fractions import Fraction
from typing import Any

APP = os.environ.get("TASKPACK_APP", "/app")
TESTS = os.path.dirname(os.path.abspath(__file__))
LOGS = os.environ.get("TASKPACK_LOGS", "/logs/verifier")
MAX_READ = 1 << 20  # bytes of an agent's file read at most
CANDIDATE_UID = 64999  # the code under test runs as this uid when the grader is root

# A number as people write answers: sign, thousands commas, decimals, exponent; a fraction
# a/b; LaTeX's \frac{a}{b} (and \dfrac, \tfrac).
_DECIMAL = r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:[eE][-+]?\d+)?"
_FRACTION = re.compile(
    r"^([-+]?)\\[dt]?frac\{\s*(" + _DECIMAL + r")\s*\}\{\s*(" + _DECIMAL + r")\s*\}$"
)
_NUMBER = re.compile(
    r"\\[dt]?frac\{[^{}]*\}\{[^{}]*\}|[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?"
    r"(?:[eE][-+]?\d+)?|[-+]?\.\d+"
)
_WRAPPERS = re.compile(r"^(?:\\boxed\{(.*)\}|\$(.*)\$|\\\((.*)\\\))$", re.S)


def read_agent_file(name: str) -> bytes:
    """A file the agent wrote in /app: a regular file, not a link, at most MAX_READ bytes."""
    import stat

    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    with os.fdopen(os.open(os.path.join(APP, name), flags), "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(f"{name} is not a regular file")
        return f.read(MAX_READ)


def read_answer() -> str:
    return read_agent_file("answer.txt").decode("utf-8")


# A reply is any text a policy chose: what is read of it is bounded so that every reply is
# graded in bounded time and memory, and no number literal is ever built past these bounds.
MAX_DIGITS = 1000  # significant digits and exponent of a number compared exactly
MAX_FORM = 1 << 14  # characters of an answer read as one number or formula
TAIL = 1 << 16  # a reply's last characters, where its answer (a box, a line) is looked for
NUMBER_TAIL = 1 << 12  # of an answer's text, where its last number is looked for
_UNWRAP = 8  # \boxed{$...$} layers taken off an answer
_PARTS = re.compile(r"([-+]?)(\d*)(?:\.(\d*))?(?:[eE]([-+]?)(\d+))?")


def _decimal(s: str) -> Fraction | str | None:
    """A decimal literal's value, computed only within MAX_DIGITS digits and exponent; past
    them its spelling (sign, significant digits, exponent, normalized), so equal values
    compare equal without 10**exponent ever being built."""
    m = _PARTS.fullmatch(s)
    if m is None:
        return None
    sign, whole, frac, esign, exp = m.groups()
    frac = frac or ""
    digits = (whole + frac).lstrip("0")
    if not digits:
        return Fraction(0)
    kept = digits.rstrip("0")
    shift = len(digits) - len(kept) - len(frac)
    neg = "-" if sign == "-" else ""
    exp = (exp or "0").lstrip("0") or "0"
    if len(exp) > 18:  # far past the bound: not even the exponent is made a number
        return f"{neg}{kept}e{esign}{exp}{shift:+d}"
    power = (-1 if esign == "-" else 1) * int(exp) + shift
    if len(kept) > MAX_DIGITS or abs(power) > MAX_DIGITS:
        return f"{neg}{kept}e{power}"
    value = Fraction(int(kept)) * Fraction(10) ** power
    return -value if sign == "-" else value


def exact_number(text: str) -> Fraction | str | None:
    """`text` as an exact number if the whole of it is one, else None (see `_decimal`)."""
    if len(text) > 4 * MAX_FORM:  # not one number, whatever spaces pad it
        return None
    s = text.strip()
    if len(s) > MAX_FORM:
        return None
    s = s.rstrip(".").strip()
    for _ in range(_UNWRAP):
        wrapped = _WRAPPERS.match(s)
        if not wrapped:
            break
        s = next(g for g in wrapped.groups() if g is not None).strip()
    s = s.replace("$", "").replace("\\!", "").replace("\\,", "").replace(" ", "")
    s = s.removesuffix("\\%").removesuffix("%")
    sign, frac = "", _FRACTION.match(s)
    if frac:
        sign, top, bottom = frac.groups()
        s = f"{top}/{bottom}"  # \frac{a}{b} is a/b
    value: Fraction | str | None = None
    if re.fullmatch(_DECIMAL + r"/" + _DECIMAL, s):
        top, bottom = (_decimal(part.replace(",", "")) for part in s.split("/"))
        if top is None or bottom is None or bottom == 0:
            return None
        if isinstance(top, str) or isinstance(bottom, str):
            value = f"{top}/{bottom}"  # past the bounds: compared as spelled
        else:
            value = top / bottom
    elif re.fullmatch(_DECIMAL, s) and any(c.isdigit() for c in s):
        value = _decimal(s.replace(",", ""))
    if sign == "-" and value is not None:
        return f"-{value}" if isinstance(value, str) else -value
    return value


def as_number(text: str) -> Fraction | str | None:
    """The number an answer gives: the whole text if it is one, else the last number in it
    (a worked answer ends with its result, as GSM8K's grader reads it), looked for in its
    last NUMBER_TAIL characters, cut where no number is."""
    whole = exact_number(text)
    if whole is not None:
        return whole
    if len(text) > NUMBER_TAIL:
        text = text[-NUMBER_TAIL:]
        text = text[next((i for i, c in enumerate(text) if c.isspace()), len(text)) :]
    found = _NUMBER.findall(text)
    return exact_number(found[-1]) if found else None


def same_number(got: str, expected: Any, tolerance: float) -> bool:
    a, b = as_number(got), as_number(str(expected))
    if a is None or b is None:
        return False
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    try:
        allowed = Fraction(tolerance) if math.isfinite(tolerance) else Fraction(0)
    except (TypeError, ValueError):
        allowed = Fraction(0)
    scale = max(Fraction(1), abs(b))
    return a == b or abs(a - b) <= max(allowed, Fraction(1, 10**9) * scale)


def same_text(got: str, expected: Any, spec: dict[str, Any]) -> bool:
    want = expected if isinstance(expected, str) else json.dumps(expected)
    if len(got) > 4 * len(want) + 4 * MAX_FORM:  # not the answer, whatever spaces pad it
        return False
    if spec.get("strip", True):
        got, want = got.strip(), want.strip()
    if len(got) > 4 * len(want) + 16:  # lower-casing changes a length by less than that
        return False
    if not spec.get("case_sensitive", True):
        got, want = got.lower(), want.lower()
    return got == want


def same_choice(got: str, expected: Any, labels: list[str]) -> bool:
    match = re.match(r"\s*\(?([A-Za-z0-9]+)\)?(?:[.):]|\s|$)", got[:MAX_FORM].lstrip())
    return match is not None and match.group(1) == expected and expected in labels


def last_boxed(text: str) -> str | None:
    """What the last `\\boxed{...}` (or `\\fbox{...}`) of `text` holds, braces balanced;
    None where it holds more than MAX_FORM characters or begins before the last TAIL."""
    text = text[-TAIL:]
    start = max(text.rfind("\\boxed{"), text.rfind("\\fbox{"))
    if start < 0:
        return None
    begin = text.index("{", start) + 1
    depth = 1
    for i in range(begin, min(len(text), begin + MAX_FORM + 1)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[begin:i]
    return None


# LaTeX that changes how an answer looks, never what it is.
_COSMETIC = re.compile(
    r"\\(?:left|right|displaystyle|!|,|;|:| )|\\(?=\{)|~|\$|\^\{?\\circ\}?|\\%|%"
)
_TEXT = re.compile(r"\\(?:text|textbf|mathrm|mbox|textit)\{([^{}]*)\}")
_SHORT_FRAC = re.compile(r"\\frac(\d)(\d)")  # \frac12 is \frac{1}{2}
_SHORT_ARG = re.compile(r"\\(frac\{[^{}]*\}|sqrt)(\w)")  # \sqrt2, \frac{1}2
_ASSIGNED = re.compile(r"^[A-Za-z]\w?=(?!=)")  # "x=5" answers 5


def math_form(text: str) -> str:
    """`text` in one spelling of what it means: unit words and cosmetic LaTeX dropped,
    \\dfrac and \\tfrac as \\frac, short arguments braced, spaces removed, a lone variable's
    assignment cut to its value, integer ratios a/b as \\frac{a}{b}."""
    s = text.strip().replace("\n", "")
    s = re.sub(r"\\[dt]frac", r"\\frac", s)
    whole = _TEXT.fullmatch(s)  # an answer in words is its words; words after a value, units
    s = (
        whole.group(1)
        if whole
        else _TEXT.sub(lambda m: "" if m.group(1).strip().isalpha() else m.group(1), s)
    )
    s = _COSMETIC.sub("", s).replace(" ", "").rstrip(".")
    s = _SHORT_FRAC.sub(r"\\frac{\1}{\2}", s)
    s = _SHORT_ARG.sub(lambda m: "\\" + m.group(1) + "{" + m.group(2) + "}", s)
    s = _ASSIGNED.sub("", s) if len(s.split("=")) == 2 else s
    ratio = re.fullmatch(r"(-?\d+)/(\d+)", s)
    if ratio:
        s = "\\frac{" + ratio.group(1) + "}{" + ratio.group(2) + "}"
    if s.startswith("."):
        s = "0" + s
    return s


def same_math(got: str, expected: Any) -> bool:
    """`got` (a reply: its last \\boxed{} if it has one) equals `expected` as mathematics."""
    answer = last_boxed(got)
    if answer is None:
        answer = got
    if len(answer) > MAX_FORM:  # no box, and too long to be one formula
        return False
    want = str(expected)
    want = last_boxed(want) or want
    a, b = math_form(answer), math_form(want)
    if not a or not b:
        return False
    if a == b:
        return True
    x, y = exact_number(a), exact_number(b)
    return x is not None and x == y


def answer_score(spec: dict[str, Any], got: str) -> float:
    """`got` (the agent's answer) against the reference in `spec`: 1.0 or 0.0. Any reply is
    answered in bounded time (see MAX_FORM) and nothing it holds raises out of here."""
    try:
        return _answer_score(spec, got if isinstance(got, str) else str(got))
    except (ArithmeticError, ValueError, TypeError, RecursionError, MemoryError):
        return 0.0


def _answer_score(spec: dict[str, Any], got: str) -> float:
    kind, expected = spec["kind"], spec["answer"]
    if kind == "numeric_match":
        ok = same_number(got, expected, spec.get("tolerance", 0.0))
    elif kind == "math_match":
        ok = same_math(got, expected)
    elif kind == "multiple_choice":
        ok = same_choice(got, expected, spec.get("labels", []))
    else:
        ok = same_text(got, expected, spec)
    return 1.0 if ok else 0.0


# The code under test, in a child process of its own: it defines the solution, then answers
# calls. Arguments come pickled, a line each (from the grader: the candidate may trust them);
# results go back length-prefixed, pickled as built-in data, or in a tagged form for what is
# not (a subclass, an iterator), which the grader unpickles allowing no other class.
_CANDIDATE = r"""
import base64, collections, decimal, fractions, io, json, os, pickle, sys, types
_job = json.loads(sys.stdin.buffer.read())
sys.stdin.close()
_requests, _replies = os.fdopen(int(sys.argv[1]), "rb"), os.fdopen(int(sys.argv[2]), "wb")
_tests = types.ModuleType(_job["module"])
sys.modules[_job["module"]] = _tests
exec(compile(_job["classes"], _job["test_name"], "exec"), _tests.__dict__)
_solution = {"__name__": "solution"}
exec(compile(_job["solution"], "solution.py", "exec"), _solution)
def _enc(v, depth=0):
    if depth > 100:
        raise ValueError("nested too deep")
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, str):
        return str.__str__(v)  # an exact str, whatever subclass it was
    if isinstance(v, int):
        return int.__index__(v)
    if isinstance(v, float):
        return {"f": repr(float(v))}
    if isinstance(v, complex):
        return {"complex": [repr(v.real), repr(v.imag)]}
    if isinstance(v, (bytes, bytearray)):
        return {"bytes": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, fractions.Fraction):
        return {"fraction": str(v)}
    if isinstance(v, decimal.Decimal):
        return {"decimal": str(v)}
    if isinstance(v, dict):
        return {"dict": [[_enc(k, depth + 1), _enc(x, depth + 1)] for k, x in v.items()]}
    for kind in (tuple, list, set, frozenset):
        if isinstance(v, kind):
            return {kind.__name__: [_enc(x, depth + 1) for x in v]}
    if isinstance(v, (range, collections.deque, types.GeneratorType, map, filter, zip,
                      enumerate, reversed, type({}.keys()), type({}.values()),
                      type({}.items()), type(iter([])), type(iter(())), type(iter("")))):
        return {"iter": [_enc(x, depth + 1) for x in v]}
    return {"opaque": type(v).__name__[:100]}  # an object that is not data: only its kind
class _Plain(pickle.Pickler):
    # Pickles built-in data only (the pickler itself handles exact None, bool, int, float,
    # str, bytes, list, tuple, dict, set and frozenset): fast, in C, for results of millions
    # of items. Anything else (a subclass, an iterator, an object) goes the tagged way.
    def reducer_override(self, obj):
        if type(obj) in (complex, bytearray, decimal.Decimal, fractions.Fraction):
            return NotImplemented
        raise TypeError("not plain data")
def _pickled(reply):
    out = io.BytesIO()
    try:
        _Plain(out, protocol=4).dump(reply)
    except Exception:
        out = io.BytesIO()
        pickle.dump({"tagged": _enc(reply["value"])}, out, protocol=4)
    return out.getvalue()
for _line in _requests:
    _name, _args, _kwargs = pickle.loads(base64.b64decode(_line))
    try:
        _data = _pickled({"value": _solution[_name](*_args, **_kwargs)})
    except BaseException as e:
        _data = _pickled({"raised": type(e).__name__, "message": str(e)[:500]})
    _replies.write(len(_data).to_bytes(8, "big") + _data)
    _replies.flush()
"""
_MAX_REPLY = 256 << 20  # bytes of one result
# What a result may hold beside built-in containers and scalars: the only globals a reply's
# pickle may name (`_PlainUnpickler`), each a type whose every value is plain data.
_PLAIN_GLOBALS = {
    ("builtins", "complex"),
    ("builtins", "bytearray"),
    ("decimal", "Decimal"),
    ("fractions", "Fraction"),
}


def _unpickled(data: bytes) -> Any:
    """A reply of the code under test: a pickle that may name no class or function beyond
    `_PLAIN_GLOBALS`, so what it builds is plain data (no object of the candidate's, no call
    of anything else); the tagged form is decoded as such."""
    import io
    import pickle

    class _PlainUnpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if (module, name) not in _PLAIN_GLOBALS:
                raise pickle.UnpicklingError(f"a result naming {module}.{name}")
            return super().find_class(module, name)

    answer = _PlainUnpickler(io.BytesIO(data)).load()
    if not isinstance(answer, dict):
        raise ValueError("a reply that is not a reply")
    if "tagged" in answer:
        return {"value": _decode(answer["tagged"])}
    return answer


def _decode(value: Any) -> Any:
    """A result of the code under test as plain data; anything else is refused."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if not isinstance(value, dict) or len(value) != 1:
        raise ValueError("a result that is not tagged data")
    ((tag, x),) = value.items()
    if tag == "f":
        return float(str(x))
    if tag == "complex":
        return complex(float(str(x[0])), float(str(x[1])))
    if tag == "bytes":
        import base64

        return base64.b64decode(str(x), validate=True)
    if tag == "fraction":
        return Fraction(str(x))
    if tag == "decimal":
        from decimal import Decimal

        return Decimal(str(x))
    if tag == "dict":
        return {_decode(k): _decode(v) for k, v in x}
    kinds: dict[str, Any] = {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}
    if tag in kinds or tag == "iter":
        items = [_decode(v) for v in x]
        return iter(items) if tag == "iter" else kinds[tag](items)
    if tag == "opaque":
        return Opaque(str(x))
    raise ValueError(f"a result tagged {tag!r}")


class Opaque:
    """A result of the code under test that is not plain data (a `re.Match`, an object of its
    own): it is not None and is truthy, as the object was, and it equals nothing but itself,
    whatever that object's `__eq__` said there."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"<{self.kind} object of the code under test>"


class Unscorable(Exception):
    """No reward can be stood behind: the grader's own part failed, not the reply (a test's
    reference overran the limit it sets the code under test, so this machine is too slow to
    judge). Never a 0: `grade` writes `error`, TRL's hook gives None, the sandbox's grader
    writes no reward and says why in one line starting with NO_REWARD."""


NO_REWARD = "taskpack: no reward: "
UNSCORED = 3  # the exit status of the in-sandbox grader that wrote no reward, and why


class _Candidate:
    """The code under test, across a process boundary: `name(*args)` there, its result here as
    plain data, its exceptions as exceptions of the same built-in type."""

    def __init__(self, child: Any, deadline: float) -> None:
        self.child, self.deadline = child, deadline
        self.late = False  # a call ran past its limit: its reply would answer the next call

    def call(
        self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], limit: float | None = None
    ) -> Any:
        import base64
        import pickle
        import select
        import time

        if self.late:
            raise TimeoutError("the code under test is still answering an earlier call")
        deadline = self.deadline if limit is None else min(self.deadline, time.monotonic() + limit)
        request = base64.b64encode(pickle.dumps((name, args, kwargs))) + b"\n"
        self.child.requests.write(request)
        self.child.requests.flush()

        def read(size: int) -> bytes:
            got = bytearray()
            while len(got) < size:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.child.replies], [], [], left)[0]:
                    self.late = True
                    raise TimeoutError("the code under test took too long")
                more = os.read(self.child.replies.fileno(), min(1 << 20, size - len(got)))
                if not more:
                    raise RuntimeError("the code under test ended")
                got += more
            return bytes(got)

        size = int.from_bytes(read(8), "big")
        if size > _MAX_REPLY:
            raise RuntimeError(f"the code under test answered {size} bytes")
        answer = _unpickled(read(size))
        if "value" in answer:
            return answer["value"]
        import builtins

        found = getattr(builtins, str(answer.get("raised")), None)
        # StopIteration out of a call would end a test's loop over the results early, as if
        # every one had been checked: any exception but a plain Exception is a RuntimeError.
        kind: type[Exception] = RuntimeError
        early = (StopIteration, StopAsyncIteration)
        if (
            isinstance(found, type)
            and issubclass(found, Exception)
            and not issubclass(found, early)
        ):
            kind = found
        raise kind(str(answer.get("message", "")))

    def function(self, name: str) -> Any:
        """The function `name` of the code under test, as the tests call it; `f.within(s)`
        is the same function with a limit of `s` seconds a call (EvalPlus's tests give each
        input a limit from the reference's own time)."""

        def call(*args: Any, **kwargs: Any) -> Any:
            return self.call(name, args, kwargs)

        def within(seconds: float) -> Any:
            return lambda *args, **kwargs: self.call(name, args, kwargs, seconds)

        call.__name__ = name
        call.within = within  # type: ignore[attr-defined]
        return call


def _declared_budget(tests: str) -> float | None:
    """The seconds a test file gives its whole run (`TASKPACK_TIMEOUT_SEC = 600` at its top
    level), where its calls have limits of their own: an EvalPlus test times its reference
    too, which on a loaded machine is slow, and the reference's slowness is not the
    candidate's failure."""
    found = re.search(r"^TASKPACK_TIMEOUT_SEC = (\d+(?:\.\d+)?)$", tests, re.M)
    return float(found.group(1)) if found else None


def _names(solution: str, tests: str) -> tuple[list[str], str, str]:
    """From the sources: the solution's functions (each called across the boundary), its
    imports of standard modules (which tests written beside it may lean on), and the class
    definitions and imports of the tests (the candidate needs them to read arguments)."""
    import ast

    if len(solution) > MAX_READ:  # what no agent file could hold: none of its functions
        return [], "", ""
    try:
        tree = ast.parse(solution)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # NUL bytes, deep nesting
        return [], "", ""
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef)
    functions = [n.name for n in tree.body if isinstance(n, kinds)]
    standard = getattr(sys, "stdlib_module_names", ())

    def standard_import(n: ast.stmt) -> bool:
        if isinstance(n, ast.Import):
            return all(a.name.split(".")[0] in standard for a in n.names)
        return (
            isinstance(n, ast.ImportFrom)
            and n.level == 0
            and (n.module or "").split(".")[0] in standard
            and all(a.name != "*" for a in n.names)
        )

    imports = [n for n in tree.body if standard_import(n)]
    test_tree = ast.parse(tests)
    kept = (ast.ClassDef, ast.Import, ast.ImportFrom)
    classes = ast.Module(body=[n for n in test_tree.body if isinstance(n, kept)], type_ignores=[])
    return functions, ast.unparse(ast.Module(body=imports, type_ignores=[])), ast.unparse(classes)


def _as_candidate() -> dict[str, Any]:
    """How to start the child: as CANDIDATE_UID when this grader is root and may switch."""
    if not hasattr(os, "getuid") or os.getuid() != 0:
        return {}
    return {"user": CANDIDATE_UID, "group": CANDIDATE_UID, "extra_groups": []}


def close_tests() -> None:
    """The tests' folder closed to every other uid before any code under test runs: the code
    under test, run as CANDIDATE_UID, can then open no test file and read no expected value."""
    if not _as_candidate():
        return  # no other uid to run it as: said in SECURITY.md
    with contextlib.suppress(OSError):
        os.chmod(TESTS, 0o700)
    if os.stat(TESTS).st_mode & 0o007:  # a read-only /tests: the grade stands, the log says why
        with contextlib.suppress(OSError), open(os.path.join(LOGS, "unit_tests.log"), "ab") as f:
            f.write(b"taskpack: /tests could not be closed to the code under test\n")


def _kill_leftovers(session: int, dropped: bool) -> None:
    """Whatever the child started: its session, and (as another uid) every process of it."""
    import signal

    with contextlib.suppress(OSError):
        os.killpg(session, signal.SIGKILL)
    if dropped:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the forked killer
            try:
                os.setgroups([])
                os.setgid(CANDIDATE_UID)
                os.setuid(CANDIDATE_UID)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


def _start_candidate(
    code: str, fds: tuple[int, ...], cwd: str, out: Any, err: Any
) -> tuple[Any, bool]:
    """`python -I -c code FD...` for the code under test, in a session of its own, as
    CANDIDATE_UID where this grader may switch; the fds it is handed are closed here once it
    holds them. Returns the process and whether it runs as that other uid."""
    import subprocess

    drop = _as_candidate()
    if drop and not os.stat(cwd).st_mode & 0o001:
        cwd = "/"  # a folder the candidate's uid may enter
    args = [sys.executable, "-I", "-c", code, *map(str, fds)]
    common = {"stdin": subprocess.PIPE, "stdout": out, "stderr": err, "cwd": cwd}
    common |= {"pass_fds": fds, "start_new_session": True}
    try:
        try:
            return subprocess.Popen(args, **common, **drop), bool(drop)
        except PermissionError:  # this Python is out of the unprivileged uid's reach
            return subprocess.Popen(args, **common), False
    finally:
        for fd in fds:
            os.close(fd)


class _Child:
    def __init__(self, solution: str, classes: str, test_name: str, cwd: str, module: str):
        to_child, self_requests = os.pipe()
        self_replies, from_child = os.pipe()
        log = _log_file()
        job = {"solution": solution, "classes": classes, "test_name": test_name}
        job["module"] = module
        self.process, self.dropped = _start_candidate(
            _CANDIDATE, (to_child, from_child), cwd, log, log
        )
        self.requests = os.fdopen(self_requests, "wb")
        self.replies = os.fdopen(self_replies, "rb", buffering=0)
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(job).encode())
            self.process.stdin.close()
        except OSError:
            pass  # it has already ended: every call fails

    def close(self) -> None:
        for f in (self.requests, self.replies):
            with contextlib.suppress(OSError):
                f.close()
        self.process.kill()
        self.process.wait()
        _kill_leftovers(self.process.pid, self.dropped)


def unit_test_score(spec: dict[str, Any], solution: str, tests: str, cwd: str) -> float:
    """The code `solution` against the test code `tests`: 1.0 if every test passed. The tests
    run here; the code under test in a child process that only answers their calls, so
    nothing it does (exiting 0, killing or hooking a process, printing) decides the score."""
    import signal
    import time
    import types

    timeout = float(spec.get("timeout_sec") or _declared_budget(tests) or 60)
    functions, imports, classes = _names(solution, tests)
    if spec["entry_point"] not in functions:
        return 0.0
    import secrets

    # The tests' own module, by a name of its own: pickled arguments name their classes by it.
    module = types.ModuleType(f"taskpack_tests_{secrets.token_hex(8)}")
    sys.modules[module.__name__] = module
    child = _Child(solution, classes, spec["test_file"], cwd, module.__name__)
    candidate = _Candidate(child, time.monotonic() + timeout)

    def timed_out(*_: Any) -> None:
        raise TimeoutError("the tests took too long")

    namespace = module.__dict__
    import threading

    alarm = threading.current_thread() is threading.main_thread()  # signals work there only
    previous = signal.signal(signal.SIGALRM, timed_out) if alarm else None
    if alarm:  # the calls have their deadline; this bounds the tests' own loops too
        signal.setitimer(signal.ITIMER_REAL, timeout + 1)
    try:
        exec(compile(imports, "solution.py", "exec"), namespace)
        namespace["Unscorable"] = Unscorable  # a test that can tell the machine was too slow
        namespace.update({name: candidate.function(name) for name in functions})
        entry = namespace[spec["entry_point"]]  # before the tests' own `check` may shadow it
        exec(compile(tests, spec["test_file"], "exec"), namespace)
        if callable(namespace.get("check")) and "def check" in tests:
            namespace["check"](entry)
    except Unscorable:
        raise
    except BaseException:  # noqa: BLE001 - any failure of a test, whatever made it fail
        return 0.0
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        child.close()
        sys.modules.pop(module.__name__, None)
    return 1.0


# --- programs judged on input/output tests (contest problems) ------------------------------
# A program's run: its source through a memory file (any size, no disk), the test's input on
# its standard input, its output read up to a bound, within the test's time limit, as the
# candidate's uid where this grader is root; a test passes only if the program exited 0.
_PROGRAM = r"""
import os, sys
_source = os.fdopen(int(sys.argv[1]), "rb").read()
sys.argv = ["solution.py"]
_globals = {"__name__": "__main__", "__builtins__": __builtins__}
exec(compile(_source, "solution.py", "exec"), _globals)
"""
_CALL = "__taskpack_call__"  # the function a call-based test calls: the named one, or Solution's
# LiveCodeBench runs every program under these imports (its testing_util's prelude), so a
# program using `sqrt` or `defaultdict` without importing them passes there: under `lcb`, here
# too.
_LCB_MODULES = (
    *("string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random"),
    *("statistics", "itertools", "functools", "operator", "io", "sys", "json"),
)
_LCB_PRELUDE = (
    "".join(f"from {m} import *\n" for m in (*_LCB_MODULES, "builtins", "typing"))
    + "".join(f"import {m}\n" for m in _LCB_MODULES)
    + "sys.setrecursionlimit(50000)\n"
)


def lcb_same(got: str, want: str) -> bool:
    """LiveCodeBench's rule for a program's output: the whole output and each line stripped,
    the same number of lines, each line equal as text or, split on blanks, as decimals."""
    from decimal import Decimal, InvalidOperation

    ours, theirs = got.strip().split("\n"), want.strip().split("\n")
    if len(ours) != len(theirs):
        return False
    for a, b in zip(ours, theirs):  # noqa: B905 - the same length, checked; Python 3.8 runs it
        a, b = a.strip(), b.strip()
        if a == b:
            continue
        try:
            if [Decimal(x) for x in a.split()] != [Decimal(x) for x in b.split()]:
                return False
        except (InvalidOperation, ValueError):
            return False
    return True


def _run_program(solution: str, stdin: str, cwd: str, limit: float, bound: int) -> str | None:
    """The program's standard output on `stdin`; None when it overran `limit` seconds or
    `bound` bytes, or did not exit 0."""
    import subprocess
    import threading
    import time

    source = os.memfd_create("solution.py")
    os.write(source, solution.encode("utf-8", "surrogatepass"))
    os.lseek(source, 0, os.SEEK_SET)
    process, dropped = _start_candidate(_PROGRAM, (source,), cwd, subprocess.PIPE, _log_file())
    assert process.stdin is not None and process.stdout is not None

    def feed() -> None:
        with contextlib.suppress(OSError):
            process.stdin.write(stdin.encode("utf-8", "surrogatepass"))
            process.stdin.close()

    threading.Thread(target=feed, daemon=True).start()
    import select

    out, deadline, whole = bytearray(), time.monotonic() + limit, False
    while len(out) <= bound:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([process.stdout], [], [], left)[0]:
            break
        more = os.read(process.stdout.fileno(), 1 << 16)
        if not more:
            whole = True
            break
        out += more
    try:
        status = process.wait(timeout=max(0.0, deadline - time.monotonic())) if whole else None
    except subprocess.TimeoutExpired:
        status = None
    process.kill()
    process.wait()
    process.stdout.close()
    _kill_leftovers(process.pid, dropped)
    if status != 0:
        return None
    return out.decode("utf-8", "replace")


def _plain(value: Any) -> Any:
    """A call's result as JSON would hold it: tuples as lists (the tests' outputs are JSON)."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def io_test_score(spec: dict[str, Any], solution: str, tests: str, cwd: str) -> float:
    """The program `solution` against input/output `tests` (JSON Lines, see taskpack's
    IoTests): 1.0 if every test's output is right, by LiveCodeBench's rule (`lcb_same`) for
    standard output, by equality for a call's value. Raises Unscorable for a task that needs
    a special judge: no comparison can say its right outputs are right."""
    if spec.get("special_judge"):
        raise Unscorable("the task needs a special judge (more than one output is right)")
    cases = [json.loads(line) for line in tests.splitlines() if line.strip()]
    limit = float(spec.get("time_limit_sec") or 6)
    call = spec.get("call")
    if not cases:
        return 0.0
    if spec.get("compare", "lcb") == "lcb":
        solution = _LCB_PRELUDE + solution
    if call is None:
        for case in cases:
            want = str(case["output"])
            got = _run_program(solution, str(case["input"]), cwd, limit, 2 * len(want) + (1 << 20))
            if got is None or not lcb_same(got, want):
                return 0.0
        return 1.0
    import secrets
    import time

    shim = (
        f"\n\ndef {_CALL}(*args):\n    f = globals().get({call!r})\n"
        f"    return f(*args) if callable(f) else Solution().{call}(*args)\n"
    )
    if not call.isidentifier():
        return 0.0
    child = _Child(solution + shim, "", "tests.jsonl", cwd, f"taskpack_io_{secrets.token_hex(8)}")
    try:
        candidate = _Candidate(child, time.monotonic() + limit * len(cases) + 5)
        for case in cases:
            if _plain(candidate.call(_CALL, tuple(case["args"]), {}, limit)) != case["output"]:
                return 0.0
    except Exception:  # noqa: BLE001 - the program failed the call, however it failed
        return 0.0
    finally:
        child.close()
    return 1.0


# --- what a model wrote, read as the field reads it -------------------------------------------
# One rule per kind, used by every grader taskpack ships, `taskpack grade` and ORS sessions:
# reasoning (`<think>...</think>`) is dropped; code is the last fenced block that defines the
# entry point, else the last fenced block, else the text, joined to the prompt when it only
# continues it (HumanEval's harness runs prompt + completion); an answer is the last `\boxed{}`,
# else a final `Answer:` line (Minerva's "Final Answer: The final answer is $X$. I hope it is
# correct." gives X), else the text (a number is then its last number).
ANSWER_KINDS = ("exact_match", "numeric_match", "math_match", "multiple_choice")
# Each pattern is linear in the reply: no two adjacent repeats can take the same character (a
# fence's info string is one class; an answer line's end is stripped after, not matched).
_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.S)
_ANSWER_LINE = re.compile(
    r"^[ \t*#>_]*(?:the\s+)?(?:final\s+)?answer(?:\s*is)?\s*[:\uff1a][\s*]*(.+)$",
    re.I | re.M,
)
_LINE_END = " \t\r\f\v*"
_MINERVA_HEAD = re.compile(r"the\s+final\s+answer\s+is\s+", re.I)
_MINERVA_END = re.compile(r"\.?\s*I\s+hope\s+it\s+is\s+correct\.?\s*$", re.I)  # in 64 chars


def visible(reply: str, window: int = TAIL) -> str:
    """What a reply says once its reasoning is dropped, of its last `window` characters: what
    follows the last `</think>`; nothing when it opened a `<think>` it never closed (it ran
    out of tokens thinking). Only such a reply is read whole."""
    tail = reply[-window:]
    end = tail.rfind("</think>")
    if end >= 0:
        return tail[end + len("</think>") :]
    if reply[:256].lstrip().startswith("<think>") and reply.rfind("</think>") < 0:
        return ""
    return tail


def _defines(code: str, name: str) -> bool:
    return (
        re.search(r"^[ \t]*(?:async[ \t]+)?def[ \t]+" + re.escape(name) + r"[ \t]*\(", code, re.M)
        is not None
    )


def extract_code(reply: str, entry_point: str | None = None, prompt: str = "") -> str:
    """The code a reply gives (see the rule above); at most MAX_READ characters are read."""
    text = visible(reply, MAX_READ)
    blocks = _FENCE.findall(text)
    named = [b for b in blocks if entry_point and _defines(b, entry_point)]
    code = named[-1] if named else blocks[-1] if blocks else text
    if entry_point and prompt and not _defines(code, entry_point) and _defines(prompt, entry_point):
        code = prompt + code  # a body continuing the prompt's stub
    return code


def extract_answer(reply: str) -> str:
    """The answer a reply gives (see the rule above), read in its last TAIL characters."""
    text = visible(reply)
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed
    lines = _ANSWER_LINE.findall(text)
    if not lines:
        return text
    said: str = lines[-1].rstrip(_LINE_END)
    head = _MINERVA_HEAD.match(said)
    if head is None:
        return said
    said = said[head.end() :]
    end = _MINERVA_END.search(said[-64:])
    return said[: len(said) - len(said[-64:]) + end.start()] if end else said


def answer_reply_score(spec: dict[str, Any], reply: str) -> float:
    """A reply to an answer kind, its answer extracted by the rule, against `spec`."""
    if not isinstance(reply, str):
        reply = "" if reply is None else str(reply)
    return answer_score(spec, extract_answer(reply))


def reply_score(
    reward: dict[str, Any], answer: Any, reply: str, tests: str = "", prompt: str = ""
) -> float:
    """`reply_outcome` for a trainer with no "no reward" (verl, Verifiers, SkyRL): where
    nothing could score the reply, 0.0, said in one line on stderr. Nothing raises out of it."""
    found = reply_outcome(reward, answer, reply, tests, prompt)
    return 0.0 if found is None else found


def reply_outcome(
    reward: dict[str, Any], answer: Any, reply: str, tests: str = "", prompt: str = ""
) -> float | None:
    """A chat reply (not files in /app) against its task's reward, as the Verifiers modules
    taskpack exports score it, read by the rule above (`prompt`: the task's, which a code
    reply may continue); code runs against `tests` as `unit_test_score` runs it. Kinds no
    reply can show: 0.0. None where nothing could score it (`Unscorable`, said in one line on
    stderr). A reward function calls this on whatever a policy wrote: nothing raises."""
    try:
        return _reply_score(reward, answer, reply, tests, prompt)
    except Unscorable as e:
        print(f"{NO_REWARD}{e}", file=sys.stderr)
        return None


def _reply_score(reward: dict[str, Any], answer: Any, reply: str, tests: str, prompt: str) -> float:
    if not isinstance(reply, str):
        reply = "" if reply is None else str(reply)
    kind = reward.get("kind")
    if kind in ("unit_tests", "io_tests"):
        import tempfile

        code = extract_code(reply, reward.get("entry_point") or reward.get("call"), prompt)
        with tempfile.TemporaryDirectory() as tmp:
            if kind == "io_tests":
                return io_test_score(reward, code, tests, tmp)
            return unit_test_score(reward, code, tests, tmp)
    if kind not in ANSWER_KINDS:
        return 0.0
    labels = [c["label"] for c in reward.get("choices", [])]
    return answer_reply_score({**reward, "answer": answer, "labels": labels}, reply)


def _log_file() -> Any:
    """Where the code under test prints: the verifier's log, else nowhere."""
    import subprocess

    try:
        return open(os.path.join(LOGS, "unit_tests.log"), "ab")
    except OSError:
        return subprocess.DEVNULL


def score_app(spec: dict[str, Any]) -> float:
    """The agent's work in /app against `spec`."""
    try:
        if spec["kind"] in ("unit_tests", "io_tests"):
            with open(os.path.join(TESTS, spec["test_file"]), encoding="utf-8") as f:
                tests = f.read()  # read before any code under test runs
            close_tests()
            solution = read_agent_file("solution.py").decode("utf-8")
            if spec["kind"] == "io_tests":
                return io_test_score(spec, solution, tests, APP)
            return unit_test_score(spec, solution, tests, APP)
        return answer_reply_score(spec, read_answer())
    except (OSError, UnicodeDecodeError):
        return 0.0


def main() -> int:
    with open(os.path.join(TESTS, "expected.json"), encoding="utf-8") as f:
        spec = json.load(f)
    os.makedirs(LOGS, exist_ok=True)
    for name in ("reward.txt", "reward.json"):  # nothing written before grading is read
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(LOGS, name))
    try:
        score = score_app(spec)
    except Unscorable as e:  # no reward file: the verifier's run says why, in one line
        print(f"{NO_REWARD}{e}", flush=True)
        return UNSCORED
    if not math.isfinite(score):
        score = 0.0
    with open(os.path.join(LOGS, "reward.json"), "w") as f:
        json.dump({"reward": score} | {spec["test"]: score}, f)  # Harbor: numbers only
    with open(os.path.join(LOGS, "reward.txt"), "w") as f:
        f.write(f"{score:g}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
