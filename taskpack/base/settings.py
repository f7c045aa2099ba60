"""What the environment sets (`TASKPACK_*` limits and timeouts, on/off switches, the cache's
place, the default registry), read by one rule each: a number that is not one is an error
naming the variable, never a silent default, and a switch is on for `1`, `true` or `yes` in any
case. Imports nothing but `os` (and taskpack's errors): `taskpack.fetch` and a warm `load` read
the cache's place at a worker's start."""

from __future__ import annotations

import os

from taskpack.errors import TaskpackError

TYPE_CHECKING = False  # as in taskpack/__init__.py: typing stays unimported
if TYPE_CHECKING:
    from typing import TypeVar

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


def default_registry() -> str:
    """`TASKPACK_REGISTRY`, else a folder in the user's data directory (`XDG_DATA_HOME`, else
    `~/.local/share`)."""
    env = os.environ.get("TASKPACK_REGISTRY")
    if env:
        return env
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return os.path.join(base, "taskpack", "registry")


def cache_root() -> str:
    """This machine's cache: `TASKPACK_CACHE`, else `taskpack` in the user's cache folder
    (`XDG_CACHE_HOME`, else `~/.cache`)."""
    root = os.environ.get("TASKPACK_CACHE")
    if root:
        return root
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(home, "taskpack")
