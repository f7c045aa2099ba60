"""The table of formats: name -> the module that reads (and later writes) it.

Like pandoc's reader table, this is the one place the CLI and the API look formats up; adding a
format is one module plus one line here. Modules are imported on first use, so nothing here
slows down `import taskpack` or the episode-start path.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from taskpack.converters._source import Record
from taskpack.errors import TaskpackError

READERS: dict[str, str] = {
    "gsm8k": "taskpack.converters.gsm8k",
    "humaneval": "taskpack.converters.humaneval",
    "swebench": "taskpack.converters.swebench",
    "kaggle": "taskpack.converters.kaggle",
    "terminal-bench": "taskpack.converters.terminal_bench",
    "harbor": "taskpack.converters.harbor",
    "mbpp": "taskpack.converters.mbpp",
    "verifiers": "taskpack.converters.verifiers",
    "skyrl": "taskpack.converters.skyrl",
    "nemo": "taskpack.converters.nemo",
    "gem": "taskpack.converters.gem",
    "openreward": "taskpack.converters.openreward",
}
# Formats taskpack writes: each module's `write(tasks, out_dir, split, losses)`.
WRITERS: dict[str, str] = {
    name: READERS[name] for name in ("verifiers", "skyrl", "nemo", "gem", "openreward", "harbor")
}


def reader(name: str) -> ModuleType:
    if name not in READERS:
        raise TaskpackError(f"unknown source format {name!r}; known: {', '.join(sorted(READERS))}")
    return importlib.import_module(READERS[name])


def writer(name: str) -> ModuleType:
    if name not in WRITERS:
        raise TaskpackError(f"unknown target format {name!r}; known: {', '.join(sorted(WRITERS))}")
    return importlib.import_module(WRITERS[name])


def read_records(uri: str, fmt: str, split: str, options: dict[str, Any]) -> Iterator[Record]:
    """The records of one source, each a task mapping or an error with its place."""
    module = reader(fmt)
    try:
        return iter(module.read(uri, split, **options))
    except TypeError as e:
        if "unexpected keyword" in str(e):
            raise TaskpackError(f"{fmt}: does not take option(s) {sorted(options)}") from None
        raise
