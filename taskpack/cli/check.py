"""`taskpack check`: an export's tasks run in the sandbox, the reference scored against the
known reward hacks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from taskpack.errors import TaskpackError

if TYPE_CHECKING:  # each command imports what it uses: `taskpack --help` loads neither
    # pydantic nor pyarrow
    from taskpack.model import Task
from taskpack.cli._common import (
    _open_any,
    _options,
    _user_errors,
    quiet_option,
    registry_option,
    split_option,
)


@click.command()
@click.argument("export_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--against",
    "source",
    help="The source the export was made from (a task set, NAME@VERSION, or with --from a "
    "file or folder of that format): its verifier must give every candidate the same reward.",
)
@click.option("--from", "source_format", help="Format of the --against source (e.g. harbor).")
@click.option("-O", "--option", "pairs", multiple=True, help="Reader option KEY=VALUE.")
@split_option
@registry_option
@click.option(
    "--adversarial/--no-adversarial",
    default=True,
    show_default=True,
    help="Also run the battery of forgers (reward hacks); any that scores above 0 fails.",
)
@click.option("--limit", type=click.IntRange(1), help="Check only the first N tasks.")
@click.option("--ids", "ids", multiple=True, help="Check only these task ids (ID[,ID...]).")
@click.option(
    "--sample",
    default=1,
    show_default=True,
    help="Run the forgers on every N-th task only (a quicker pass over a large export).",
)
@click.option("--timeout", default=120.0, show_default=True, help="Seconds per script run.")
@click.option(
    "--memory",
    default=4096,
    show_default=True,
    help="MiB of memory an attempt's processes hold together (per process without a cgroup).",
)
@click.option("--disk", default=1024, show_default=True, help="MiB an attempt writes in all.")
@click.option("--jobs", "-j", type=int, help="Tasks checked at once (default: one per CPU).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per task.")
@quiet_option
@_user_errors
def check(
    export_dir: Path,
    source: str | None,
    source_format: str | None,
    pairs: tuple[str, ...],
    split_name: str | None,
    registry: str | None,
    adversarial: bool,
    limit: int | None,
    ids: tuple[str, ...],
    sample: int,
    timeout: float,
    memory: int,
    disk: int,
    jobs: int | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Run each exported task in a bubblewrap sandbox: its reference solution must score 1,
    no solution 0, and each forger of the battery 0; with --against, the source task's own
    verifier must score the same candidates the same. Exit 1 if any task fails."""
    import os

    from taskpack.base.progress import counted
    from taskpack.rewards.trials import (
        SECONDS_PER_RUN,
        Bounds,
        TaskCheck,
        check_export,
        planned,
        runs,
        summary,
    )

    def count(results: Iterator[TaskCheck], total: int) -> Iterator[TaskCheck]:
        return counted(results, "checked", total=total, quiet=quiet)

    sources = None
    if source is not None:
        sources = list(_source_tasks(source, source_format, pairs, split_name, registry))
    limits = Bounds(timeout=timeout, disk=disk << 20, memory=memory << 20)
    chosen = [i for text in ids for i in text.split(",") if i] or None
    try:
        tasks = len(planned(export_dir, limit, chosen))
    except TaskpackError:
        tasks = 0  # check_export says what is wrong, after whether the sandbox starts at all
    workers = jobs or os.cpu_count() or 1
    seconds = runs(tasks, adversarial, sample, sources is not None) * SECONDS_PER_RUN / workers
    if seconds > 120 and not quiet:
        click.echo(
            f"{tasks} tasks: about {runs(tasks, adversarial, sample, sources is not None)} "
            f"sandbox runs, roughly {seconds / 60:.0f} min on {workers} jobs; --sample K runs "
            "the forgers on every K-th task only, --limit N or --ids checks fewer",
            err=True,
        )
    results = check_export(
        export_dir,
        limits,
        jobs,
        count,
        adversarial=adversarial,
        sample=sample,
        sources=sources,
        limit=limit,
        ids=chosen,
    )
    for r in results:
        if as_json:
            task = str(r.folder.relative_to(export_dir))
            entry: dict[str, Any] = {"task": task, "id": r.task_id, "status": r.status}
            entry["oracle"] = r.oracle
            entry |= {"null": r.null, "forged": r.forged, "parity": r.parity}
            entry["source_null"] = r.source_null
            click.echo(json.dumps({**entry, "reason": r.reason}))
        elif r.status == "failed":
            where = r.folder.relative_to(export_dir)
            named = "" if r.task_id == where.name else f" ({r.task_id})"
            click.echo(f"failed: {where}{named}: {r.reason}", err=True)
    if not as_json:
        from taskpack.rewards.sandbox import memory_scope

        click.echo("\n".join(summary(results)))
        click.echo(f"bounds: {memory} MiB of memory {memory_scope()}, {disk} MiB of disk")
    if any(r.status == "failed" for r in results):
        raise click.ClickException(f"{export_dir}: some tasks do not work (see above)")


def _source_tasks(
    source: str,
    fmt: str | None,
    pairs: tuple[str, ...],
    split: str | None,
    registry: str | None,
) -> Iterator[Task]:
    """The tasks of a --against source: read as `fmt`, or a task set's (one split or all)."""
    if fmt is not None:
        from taskpack.importer import read_source

        yield from read_source(source, fmt, split=split or "train", **_options(pairs, None, None))
        return
    ts = _open_any(source, registry)
    for name in [split] if split else ts.splits:
        yield from ts.split(name)


@click.command()
@click.argument("target")
@click.argument("completions", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSON Lines out: each input line with `reward`, `status` (pass, fail, error) and "
    "`reason`. One that exists is continued where it stopped. Required but with --compare.",
)
@click.option(
    "--profile",
    default="taskpack",
    show_default=True,
    help="The rule math tasks (math_match, numeric_match) are scored by: taskpack (the task's "
    "own verifier), math-dapo, math-reward (verl 0.9.1's), math-verify (the math-verify "
    "package, `pip install 'taskpack[math]'`).",
)
@click.option(
    "--compare", is_flag=True,
    help="Score the math completions by every profile and print where they part, by the "
    "class of the gold answer, with examples (no output file).",
)  # fmt: skip
@click.option(
    "--split", "-s", "split_name", help="The split of lines that name none (else found by id)."
)
@click.option("--jobs", "-j", type=int, help="Completions graded at once (default: one per CPU).")
@click.option(
    "--timeout", default=120.0, show_default=True, help="Seconds a unit-test verifier may run."
)
@registry_option
@quiet_option
@_user_errors
def grade(
    target: str,
    completions: Path,
    out: Path | None,
    profile: str,
    compare: bool,
    split_name: str | None,
    jobs: int | None,
    timeout: float,
    registry: str | None,
    quiet: bool,
) -> None:
    """Score COMPLETIONS (JSON Lines of {"id", "completion"}) with the verifiers of TARGET's
    tasks (a folder or NAME@VERSION), as models write answers: reasoning dropped, the fenced
    block that defines the entry point, the last \\boxed{} or Answer: line. Answers are scored
    in process, Python unit tests in the sandbox; `error` (nothing could score it) is never a
    0, and `annotate` leaves it out of pass rates."""
    from taskpack.rewards import grading

    if compare:
        found = grading.compare(
            target, completions, split=split_name, jobs=jobs, registry=registry, quiet=quiet
        )
        click.echo(found.table())
        return
    if out is None:
        raise click.UsageError("give -o/--output (or --compare)")
    report = grading.grade(
        target, completions, out, split=split_name, jobs=jobs, timeout=timeout,
        registry=registry, quiet=quiet, profile=profile,
    )  # fmt: skip
    click.echo(report.summary())
