"""What the environment sets (`TASKPACK_*` limits and timeouts, on/off switches), read by one
rule: a number that is not one is an error naming the variable, never a silent default, and a
switch is on for `1`, `true` or `yes` in any case."""

from __future__ import annotations

import os
from typing import TypeVar

from taskpack.errors import TaskpackError

N = TypeVar("N", int, float)


def number(name: str, default: N, unit: str) -> N:
    """`name`'s value, of `default`'s type (an int setting takes no fraction), or `default`
    when unset or empty; `unit` says what was expected when the value is not a number."""
    value = os.environ.get(name)
    try:
        return type(default)(value) if value else default
    except ValueError:
        raise TaskpackError(f"{name}={value!r}: expected {unit}") from None


def switch(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")
