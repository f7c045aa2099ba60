"""How deep a JSON, TOML or YAML document may nest, checked on its text before a parser sees it.

pyarrow's JSON reader crashes the process on a line nested about 20000 deep (and takes a
minute at 8000), Python's parsers raise RecursionError near 1000, and a deep value that parses
still reaches recursive code after (validation, canonical JSON). Task data nests a few levels
(a tool's JSON schema perhaps 15), so anything past TASKPACK_MAX_DEPTH (100) is refused.

The count is of `[` and `{` outside double-quoted strings: exact for JSON, an upper bound for
TOML and YAML flow collections (whose single-quoted strings it does not skip). YAML's block
nesting has no brackets; its loader's RecursionError is caught where it loads.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from taskpack.base.settings import number

_OPENERS = (b"[", b"{")
_OTHERS = bytes(c for c in range(256) if c not in b'[]{}"\n')  # all but what the count reads
_NOT_OPENERS = bytes(c for c in range(256) if c not in b"[{\n")


def max_depth() -> int:
    return number("TASKPACK_MAX_DEPTH", 100, "a number of levels")


def too_deep(text: bytes | str, *, lines: bool = False) -> int | None:
    """The first line (0-based) of `text` nesting deeper than `max_depth()`, else None.
    `lines`: each line is a document of its own (JSON Lines), else the whole text is one."""
    import numpy as np

    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    most = max_depth()
    if lines:  # no line opens more than `most`: none nests deeper (most rows, at C speed)
        openers = data.translate(None, _NOT_OPENERS)
        if max(map(len, openers.split(b"\n"))) <= most:
            return None
    elif sum(data.count(o) for o in _OPENERS) <= most:
        return None
    if b"\\" in data:  # escapes first: `\\` pairs go, then a `\"` left is no string end
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    code = np.frombuffer(data.translate(None, _OTHERS), np.uint8)
    newline = code == ord("\n")
    starts = np.concatenate(([0], np.flatnonzero(newline) + 1))  # of each line
    starts = starts[starts < len(code)]
    sizes = np.diff(np.append(starts, len(code)))

    def per_line(counts: np.ndarray) -> np.ndarray:
        """`counts` (running totals) counted from each line's start."""
        before = np.where(starts > 0, counts[np.maximum(starts - 1, 0)], 0)
        counted: np.ndarray = counts - np.repeat(before, sizes)
        return counted

    # Quotes pair up within a line (a JSON string holds no raw newline): a bracket after an odd
    # number of them on its line is inside a string.
    outside = (per_line(np.cumsum(code == ord('"'), dtype=np.int32)) & 1) == 0
    step = np.zeros(256, np.int8)
    step[[ord("["), ord("{")]], step[[ord("]"), ord("}")]] = 1, -1
    depth = np.cumsum(step[code] * outside, dtype=np.int32)
    if lines:
        depth = per_line(depth)
    over = np.flatnonzero(depth > most)
    if not len(over):
        return None
    return int(np.count_nonzero(newline[: over[0]]))


def check_depth(text: bytes | str, *, lines: bool = False) -> None:
    """A ValueError saying where, if `text` nests deeper than `max_depth()`."""
    line = too_deep(text, lines=lines)
    if line is not None:
        where = f"line {line + 1}: " if lines or line else ""
        raise ValueError(
            f"{where}nested deeper than {max_depth()} levels (raise TASKPACK_MAX_DEPTH to allow it)"
        )


def parse_json(raw: bytes | str) -> Any:
    """JSON text, with every way it can fail (nesting first) as one ValueError that says why."""
    check_depth(raw)
    try:
        return json.loads(raw)
    except UnicodeDecodeError:
        raise ValueError("not valid UTF-8") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"not valid JSON ({e.msg} at column {e.colno})") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    except ValueError as e:  # e.g. an integer of more digits than Python converts
        raise ValueError(f"not valid JSON ({e})") from None


def parse_toml(text: str) -> dict[str, Any]:
    """TOML text, with every way it can fail (nesting first) as one ValueError that says why."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    check_depth(text)
    try:
        parsed: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"not valid TOML ({e})") from None
    except RecursionError:
        raise ValueError("TOML nested too deeply") from None
    return parsed


def without_nulls(value: Any) -> Any:
    """`value` without the null fields of its objects, at any depth (JSON for people and
    clients that read only what is set; lists keep their nulls, their positions matter)."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value
