"""Write tasks in a framework's format: from a task set (`export`) or straight from any source
format (`convert_format`, through the task model: N formats, never N x N converters).

Output goes to a temporary folder moved into place on success. Anything the target cannot carry
is counted in a loss report; `strict` makes the first loss an error.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from taskpack.converters import reader, writer
from taskpack.converters._payload import Losses
from taskpack.importer import split_tasks
from taskpack.model import Task
from taskpack.taskset import Split, staged_output


class SplitSource(Protocol):
    @property
    def splits(self) -> list[str]: ...

    def split(self, name: str) -> Split: ...


@dataclass
class ExportResult:
    out: Path
    files: list[Path] = field(default_factory=list)
    losses: list[str] = field(default_factory=list)


def _write_all(
    splits: Mapping[str, Iterable[Task]], fmt: str, out: Path, strict: bool, overwrite: bool
) -> ExportResult:
    module = writer(fmt)
    losses = Losses(fmt, strict)
    written: list[Path] = []
    with staged_output(out, overwrite) as tmp:
        for name, tasks in splits.items():
            written += [out / p.relative_to(tmp) for p in module.write(tasks, tmp, name, losses)]
    return ExportResult(out, written, losses.report())


def export(
    ts: SplitSource,
    fmt: str,
    out: str | os.PathLike[str],
    *,
    splits: Sequence[str] = (),
    strict: bool = False,
    overwrite: bool = False,
) -> ExportResult:
    """Write the splits of a task set (all by default) in format `fmt` under `out`."""
    names = list(splits) or ts.splits
    return _write_all({n: ts.split(n) for n in names}, fmt, Path(out), strict, overwrite)


def convert_format(
    sources: Mapping[str, Sequence[str]],
    from_fmt: str,
    to_fmt: str,
    out: str | os.PathLike[str],
    *,
    options: Mapping[str, Any] | None = None,
    strict: bool = False,
    overwrite: bool = False,
) -> ExportResult:
    """Read `{split: [source...]}` as `from_fmt` and write it as `to_fmt`, task by task."""
    reader(from_fmt)
    writer(to_fmt)
    tasks = {
        split: split_tasks(uris, from_fmt, split, dict(options or {}), None)
        for split, uris in sources.items()
    }
    return _write_all(tasks, to_fmt, Path(out), strict, overwrite)
