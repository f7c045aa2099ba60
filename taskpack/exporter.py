"""Write tasks in a framework's format: from a task set (`export`) or straight from any source
format (`convert_format`, through the task model: N formats, never N x N converters).

Output goes to a temporary folder moved into place on success. Anything the target cannot carry
is counted in a loss report; `strict` makes the first loss an error.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from taskpack.converters import Curriculum, Losses, Target, reader, writer
from taskpack.converters import options as format_options
from taskpack.errors import TaskpackError
from taskpack.importer import split_tasks
from taskpack.model import Task
from taskpack.storage import ratings
from taskpack.storage.taskset import Split, TaskSet
from taskpack.storage.writer import staged_output


@dataclass
class ExportResult:
    out: Path
    files: list[Path] = field(default_factory=list)
    losses: list[str] = field(default_factory=list)
    tasks: dict[str, int] = field(default_factory=dict)  # tasks written, per split


T = TypeVar("T")
# wraps a split's tasks (built, or `Later`) to count them
Counter = Callable[[Iterator[Any], str], Iterator[Any]]


def _write_all(
    splits: Mapping[str, Iterable[Task]],
    fmt: str,
    out: Path,
    strict: bool,
    overwrite: bool,
    write_options: Mapping[str, Any] | None,
    progress: Counter | None = None,
    about: tuple[str, str, str] | None = None,
    annotations: Mapping[str, list[dict[str, Any]]] | None = None,
    mixture: list[dict[str, Any]] | None = None,
    say: Callable[[str], None] | None = None,
) -> ExportResult:
    """`about`: the task set's name, version and description, for a format that names
    them (a registry entry); else the output folder's name. `annotations`: per split, the
    stored pass-rate rows, which the formats whose rows have a free field carry and `order`
    sorts by. `mixture`: a mixture's sources, for a format that writes its trainers' data
    configs for one."""
    target_format = writer(fmt)
    assert target_format.write is not None
    folder = out.resolve().name
    set_name, version, description = about or (folder, "0.1.0", "")
    chosen = format_options(target_format, dict(write_options or {}), write=True)
    curriculum = None
    if (chosen.order is None) != (chosen.model is None):  # checked here: a validator on the
        # options would make every format's option model build its schema (`_defaults_only`)
        raise TaskpackError("order and model go together: order=easy-first|hard-first model=M")
    if chosen.order is not None:
        ref = f"{set_name}@{version}" if about else folder
        curriculum, splits = _in_order(splits, chosen, annotations or {}, ref)
    pass_rates = {n: _by_task(rows) for n, rows in (annotations or {}).items()}
    target = Target(
        chosen,
        Losses(fmt, strict, embedded=bool(getattr(chosen, "embed", False))),
        folder,
        set_name,
        version,
        description,
        mixture=mixture or [],
        curriculum=curriculum,
    )
    written: list[Path] = []
    counts: dict[str, int] = {}

    def counted(tasks: Iterable[T], name: str, bar: Counter | None = progress) -> Iterator[T]:
        counts[name] = 0
        for task in bar(iter(tasks), name) if bar else tasks:
            counts[name] += 1
            yield task

    def ticks(total: int, name: str) -> Callable[[int], None] | None:
        """The split's bar, moved by `n` as the writer says n more tasks are written: the
        folder formats' writers build and write tasks in processes of their own, well after
        the tasks are read."""
        if progress is None:
            return None
        bar = progress(iter(range(total)), name)  # one step per item taken from it

        def tick(n: int) -> None:
            for _ in itertools.islice(bar, n):
                pass

        return tick

    if say is not None and target_format.task_files is not None:
        _say_when_large(splits, target_format.task_files, Target(chosen, Losses(fmt)), say)
    by_split: dict[str, list[Path]] = {}
    with staged_output(out, overwrite) as tmp:
        for name, tasks in splits.items():
            # the split's own target: its pass rates and progress, the loss report shared
            mine = replace(target, pass_rates=pass_rates.get(name, {}))
            if target_format.write_later is not None and isinstance(tasks, Split):
                mine = replace(mine, written=ticks(len(tasks), name))
                later = counted(tasks.later(), name, None)  # built by the processes writing them
                files = target_format.write_later(later, tmp, name, mine)
                if mine.written is not None:
                    mine.written(len(tasks))  # whatever is left: the bar ends, and closes
            else:
                files = target_format.write(counted(tasks, name), tmp, name, mine)
            by_split[name] = [out.absolute() / p.relative_to(tmp) for p in files]
            written += [out / p.relative_to(tmp) for p in files]
        configs = target_format.trainer_configs
        if configs is not None:  # a format writes them only where it has something to say
            for file_name, text in configs(by_split, mixture or [], target).items():
                (tmp / file_name).write_text(text, encoding="utf-8")
                written.append(out / file_name)
    # A file every split writes (a package's pyproject.toml) is listed once.
    return ExportResult(out, list(dict.fromkeys(written)), target.losses.report(), counts)


def _in_order(
    splits: Mapping[str, Iterable[Task]],
    chosen: Any,
    annotations: Mapping[str, list[dict[str, Any]]],
    ref: str,
) -> tuple[Curriculum, dict[str, Iterable[Task]]]:
    """Each split as a view of its rows in curriculum order (`storage.ratings.by_difficulty`),
    and what the trainers' configs say of it."""
    if not all(isinstance(tasks, Split) for tasks in splits.values()):
        raise TaskpackError("order: rows are ordered by a task set's pass rates (annotate it)")
    measured = {name: list(annotations.get(name, [])) for name in splits}
    _, rows = ratings.of_model(measured, chosen.model, None, ref)
    ordered: dict[str, Iterable[Task]] = {}
    for name, tasks in splits.items():
        assert isinstance(tasks, Split)
        rates = {i: ratings.rate(row) for i, row in rows[name].items()}
        ordered[name] = tasks.select(
            ratings.by_difficulty(tasks.ids(), rates, chosen.order, chosen.unmeasured)
        )
    means = {name: {i: float(r["mean"]) for i, r in found.items()} for name, found in rows.items()}
    return Curriculum(chosen.order, chosen.model, chosen.unmeasured, means), ordered


LARGE_BYTES, LARGE_FILES = 1 << 30, 100_000  # an export past either is said before it starts


def _say_when_large(
    splits: Mapping[str, Iterable[Task]],
    task_files: Callable[[Task, Target], dict[str, tuple[bytes, int]]],
    probe: Target,
    say: Callable[[str], None],
) -> None:
    """Each split's first task's files, times its tasks: past 1 GiB or 100,000 files, what
    the export is about to write is said first (GSM8K as Harbor folders: 587 MB)."""
    files = size = folders = 0
    for tasks in splits.values():
        if isinstance(tasks, Split) and len(tasks):
            first = task_files(tasks[0], probe)
            files += len(first) * len(tasks)
            size += sum(len(data) for data, _ in first.values()) * len(tasks)
            folders += len(tasks)
    if size > LARGE_BYTES or files > LARGE_FILES:
        shown = f"{size / 1e9:.1f} GB" if size >= 1e9 else f"{size / 1e6:.0f} MB"
        say(f"about {shown} in {files:,} files ({folders:,} task folders) will be written")


def export(
    ts: TaskSet,
    fmt: str,
    out: str | os.PathLike[str],
    *,
    splits: Sequence[str] = (),
    strict: bool = False,
    overwrite: bool = False,
    options: Mapping[str, Any] | None = None,
    progress: Counter | None = None,
    say: Callable[[str], None] | None = None,
) -> ExportResult:
    """Write the splits of a task set (all by default) in format `fmt` under `out`.

    `options` are the format's write options (`embed`, and each format's own; see
    `taskpack formats`); `progress` wraps each split's tasks (the CLI counts them on stderr);
    `say` is told, before anything is written, when the export will be large."""
    names = list(splits) or ts.splits
    tasks = {n: ts.split(n) for n in names}
    m = ts.manifest
    about = (m.name, m.version, m.description)
    notes = {n: ts.annotations(n) for n in names if n in m.annotations}
    sources = m.mixture() or None
    return _write_all(
        tasks, fmt, Path(out), strict, overwrite, options, progress, about, notes, sources, say
    )


def _by_task(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Annotation rows as an export carries them: per task, one entry per model and settings,
    with its pass rate."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(row["id"], []).append(
            {
                "model": row["model"],
                "settings": json.loads(row["settings"]),
                "rollouts": row["count"],
                "solved": row["correct"],
                "mean_reward": row["mean"],
                "pass_rate": ratings.rate(row),
            }
        )
    return out


def convert_format(
    sources: Mapping[str, Sequence[str]],
    from_fmt: str,
    to_fmt: str,
    out: str | os.PathLike[str],
    *,
    options: Mapping[str, Any] | None = None,
    write_options: Mapping[str, Any] | None = None,
    strict: bool = False,
    overwrite: bool = False,
    progress: Counter | None = None,
) -> ExportResult:
    """Read `{split: [source...]}` as `from_fmt` and write it as `to_fmt`, task by task."""
    reader(from_fmt)
    writer(to_fmt)
    tasks = {
        split: split_tasks(uris, from_fmt, split, dict(options or {}), None)
        for split, uris in sources.items()
    }
    return _write_all(tasks, to_fmt, Path(out), strict, overwrite, write_options, progress)
