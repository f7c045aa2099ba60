"""Formats by name: each module of this package that declares `FORMAT` is one format.

Like pandoc's reader and writer tables, this is the one place the CLI and the API look formats
up; adding a format is one new module (`terminal-bench` lives in `terminal_bench.py`) and
nothing else. Modules are imported on first use, so nothing here slows down `import taskpack`
or the episode-start path.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskpack.base.lazy import lazy
from taskpack.converters import formats
from taskpack.converters._format import (
    Curriculum,
    Format,
    Losses,
    Target,
    WriteOptions,
    options,
)
from taskpack.converters._sources.opening import base_suffix, line_count, rows_hint
from taskpack.converters._sources.records import Record, RowError
from taskpack.converters._sources.tables import iter_table_rows
from taskpack.errors import TaskpackError, unknown

if TYPE_CHECKING:  # the face's heavier parts, imported on first use (`__getattr__` below)
    from taskpack.converters._columnar.template import Batch
    from taskpack.converters._folders import folder_name, task_folders
    from taskpack.converters._sources.chunk import NotColumnar
    from taskpack.converters._verifier import (
        answer_reward,
        answer_spec,
        graded,
        reply_fields,
        run_image,
        tests_files,
    )

# What the jobs (importer, exporter, check, the CLI...) use of this package: its face. The
# modules behind it are the formats' own; an import-linter contract keeps the jobs off them.
__all__ = [
    "Batch",
    "Curriculum",
    "Format",
    "Losses",
    "NotColumnar",
    "Record",
    "RowError",
    "Target",
    "WriteOptions",
    "answer_reward",
    "answer_spec",
    "base_suffix",
    "export_splits",
    "folder_name",
    "get",
    "graded",
    "iter_table_rows",
    "line_count",
    "names",
    "options",
    "options_file",
    "read_records",
    "reader",
    "reply_fields",
    "rows_hint",
    "run_image",
    "task_folders",
    "tests_files",
    "writer",
]
_LAZY = {
    "Batch": "_columnar.template",
    "NotColumnar": "_sources.chunk",
    "folder_name": "_folders",
    "task_folders": "_folders",
    "answer_reward": "_verifier",
    "reply_fields": "_verifier",
    "answer_spec": "_verifier",
    "graded": "_verifier",
    "run_image": "_verifier",
    "tests_files": "_verifier",
}

__getattr__, __dir__ = lazy(__name__, _LAZY, __all__)


def names() -> list[str]:
    """Every format's name, sorted."""
    return sorted(m.name.replace("_", "-") for m in pkgutil.iter_modules(formats.__path__))


def get(name: str) -> Format:
    if name not in names():
        raise unknown("format", name, names())
    fmt: Format = importlib.import_module(f"{formats.__name__}.{name.replace('-', '_')}").FORMAT
    return fmt


def _able(name: str, mode: str) -> Format:
    fmt = get(name)
    if getattr(fmt, mode) is None:
        able = ", ".join(n for n in names() if getattr(get(n), mode))
        role = {"read": "reader", "write": "writer"}[mode]
        raise TaskpackError(f"format {name!r} has no {role}; formats with one: {able}")
    return fmt


def reader(name: str) -> Format:
    return _able(name, "read")


def writer(name: str) -> Format:
    return _able(name, "write")


def export_splits(uri: str, fmt: str) -> dict[str, list[str]] | None:
    """The splits of an output folder of `fmt`'s writer at `uri`, each under the name the
    writer gave it, with what to read it from; None where `uri` is no such folder."""
    root = Path(uri)
    if not root.is_dir() or root.is_symlink():
        return None
    found: dict[str, list[str]] = {}
    for pattern, what in reader(fmt).split_globs:
        for match in sorted(root.glob(pattern)):
            if match.is_symlink() or not match.is_file():
                continue
            split = match.parent.name if what == "folder" else match.name.split(".", 1)[0]
            given = {"file": match, "folder": match.parent, "root": root}[what]
            found.setdefault(split, [str(given)])
    return found or None


def options_file(path: Path) -> dict[str, Any]:
    """Reader options from a YAML mapping file (`convert --mapping`)."""
    from taskpack.converters._yaml import load_yaml

    try:
        loaded = load_yaml(path.read_text(encoding="utf-8"), str(path))
    except RowError as e:
        raise TaskpackError(str(e)) from None
    if not isinstance(loaded, dict):
        raise TaskpackError(f"{path}: expected a mapping of options")
    return loaded


def read_records(uri: str, fmt: str, split: str, values: dict[str, Any]) -> Iterator[Record]:
    """The records of one source, each a task or an error with its place."""
    f = reader(fmt)
    assert f.read is not None
    return iter(f.read(uri, split, options(f, values)))
