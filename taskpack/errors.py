"""The errors taskpack raises for bad input, and how a pydantic error becomes one readable line.

Every error a user can cause is a `TaskpackError`; the CLI turns it into a one-line message and
exit code 1, so nothing a user typed or fed in ends in a traceback.
"""

from __future__ import annotations

import sys


class TaskpackError(Exception):
    """Bad input or a failed operation the user can act on; never a bug in taskpack."""


class InvalidTask(TaskpackError):
    """A task (or a source row meant to become one) broke the model's rules.

    `where` names the place (file and line, or split and row, and the task id when known) so the
    message alone leads the user to the bad data.
    """

    def __init__(self, where: str, reason: str) -> None:
        self.where = where
        self.reason = reason
        super().__init__(f"{where}: {reason}" if where else reason)

    def __reduce__(self) -> tuple[type[InvalidTask], tuple[str, str]]:
        # Rebuilt from both parts when it crosses processes (a Ray task's error reaches the
        # driver pickled), not from the message alone.
        return (type(self), (self.where, self.reason))


def require(module: str, extra: str) -> None:
    """Fail with the install line when an optional dependency is missing: the core install
    carries only what local task sets need."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module hidden or half-installed
        found = False
    if not found:
        raise TaskpackError(f"this needs {module}, which is not installed: {install_line(extra)}")


def install_line(extra: str) -> str:
    """The pip line that installs `extra` where this taskpack came from: a checkout installed
    in place (`pip install -e`) gets its own folder, named whole so the line works from any
    folder; an installed package, its name. `all` installs every job's extras at once."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file() and (root / "taskpack").is_dir():
        return f"pip install -e '{root}[{extra}]' (or [all], every job's)"
    return f"pip install 'taskpack[{extra}]' (or taskpack[all], every job's)"


def unknown(
    what: str, name: str, known: list[str], where: str = "", limit: int = 20
) -> TaskpackError:
    """`WHERE: no <what> 'nmae'; did you mean 'name'? (known: ...)`: the closest of `known`,
    then the list itself (cut at `limit`), so a typo is fixed without a second command."""
    close = nearest(name, known)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    more = f", ... ({len(known)} in all)" if len(known) > limit else ""
    shown = ", ".join(known[:limit]) + more
    prefix = f"{where}: " if where else ""
    return TaskpackError(f"{prefix}no {what} {name!r}{hint} (known: {shown or 'none'})")


def nearest(name: str, known: list[str], n: int = 3) -> list[str]:
    """Up to `n` of `known` closest to `name`: the same name but for zero-padding of its number
    first (`test-1` -> `test-00001`), then by edit distance (at most 1, or a third of the
    name)."""
    import re

    def split(text: str) -> tuple[str, int] | None:
        found = re.fullmatch(r"(.*?)(\d+)", text)
        return (found.group(1), int(found.group(2))) if found else None

    mine = split(name)
    padded = [k for k in known if mine is not None and split(k) == mine and k != name]
    most = max(1, len(name) // 3)
    scored = []
    for k in known:
        if abs(len(k) - len(name)) <= most and k not in padded:
            d = _distance(name, k, most)
            if d <= most:
                scored.append((d, k))
    return (padded + [k for _, k in sorted(scored)])[:n]


def _distance(a: str, b: str, most: int) -> int:
    """Edit distance of `a` and `b` (a swap of two neighbours counts one), or `most + 1` once
    it must exceed `most`."""
    two_back: list[int] = []
    before = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            row[j] = min(before[j] + 1, row[j - 1] + 1, before[j - 1] + (ca != cb))
            if two_back and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], two_back[j - 2] + 1)
        if min(row) > most:
            return most + 1
        two_back, before = before, row
    return before[-1]


def describe_error(err: Exception, limit: int = 3) -> str:
    """A pydantic error as one `field.path: message` part per error, capped so a row with 40 bad
    fields still prints a readable message; any other error as its type and message."""
    core = sys.modules.get("pydantic_core")  # not loaded: `err` cannot be one of its errors
    if core is None or not isinstance(err, core.ValidationError):
        return f"{type(err).__name__}: {err}"
    parts = []
    for e in err.errors()[:limit]:
        loc = ".".join(str(p) for p in e["loc"]) or "task"
        parts.append(f"{loc}: {e['msg']}")
    extra = len(err.errors()) - limit
    if extra > 0:
        parts.append(f"(+{extra} more)")
    return "; ".join(parts)
