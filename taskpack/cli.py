"""The `taskpack` command: thin click commands over the library.

Exit codes: 0 success, 1 invalid input or failed operation (one-line message, no traceback),
2 usage error (click's own).
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from taskpack.errors import TaskpackError
from taskpack.nesting import parse_json, without_nulls

if TYPE_CHECKING:  # each command imports what it uses: `taskpack --help` loads neither
    # pydantic nor pyarrow
    from taskpack.model import Task
    from taskpack.taskset import TaskSet

F = TypeVar("F", bound=Callable[..., Any])


def _user_errors(fn: F) -> F:
    """Turn taskpack's errors into click's one-line, exit-code-1 failures."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TaskpackError as e:
            raise click.ClickException(str(e)) from None

    return wrapper  # type: ignore[return-value]


split_option = click.option(
    "--split", "-s", "split_name", help="Split to read (default: the only split, else 'train')."
)


def _pick_split(ts: TaskSet, name: str | None) -> str:
    if name is not None:
        return name
    if len(ts.splits) == 1:
        return ts.splits[0]
    if "train" in ts.splits:
        return "train"
    raise click.UsageError(f"choose a split with --split: {', '.join(ts.splits)}")


def _keep_nulls(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        ctx.meta["taskpack.nulls"] = True


nulls_option = click.option(
    "--nulls",
    is_flag=True,
    expose_value=False,
    callback=_keep_nulls,
    help="In JSON, keep the fields that are null (left out by default).",
)


def _nulls() -> bool:
    return bool(click.get_current_context().meta.get("taskpack.nulls"))


def json_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """--json, and --nulls to keep null fields in it."""
    flag = click.option("--json", "as_json", is_flag=True, help="Print JSON, for scripts.")
    return flag(nulls_option(command))


quiet_option = click.option("-q", "--quiet", is_flag=True, help="No progress output.")


def _formats(mode: str) -> Callable[[click.Context, click.Parameter, str], list[str]]:
    """Shell completion of the names of formats that can `mode` ("read" or "write")."""

    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
        from taskpack.converters import get, names

        return [n for n in names() if n.startswith(incomplete) and getattr(get(n), mode)]

    return complete


def _complete_recipes(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    from taskpack.recipes import recipes

    return [n for n in recipes() if n.startswith(incomplete)]


def _echo_json(value: Any) -> None:
    """JSON for a script to read: null fields left out unless --nulls (the server's
    `?nulls=1`), as most fields of most tasks are null and a reader treats absent as null."""
    if not _nulls():
        value = without_nulls(value)
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="taskpack")
def main() -> None:
    """Package, convert and serve task datasets for RL of language models."""


registry_option = click.option(
    "--registry",
    help="Registry: a folder, file:///folder, s3://bucket/prefix or hf://owner "
    "(default: $TASKPACK_REGISTRY, else a folder in your data directory).",
)


def _open_any(target: str, registry: str | None) -> TaskSet:
    from taskpack.registry.client import open as open_any

    return open_any(target, registry=registry)


@main.command()
@click.argument("target")
@registry_option
@quiet_option
@_user_errors
def validate(target: str, registry: str | None, quiet: bool) -> None:
    """Check every task, digest and stored object of a task-set folder or NAME@VERSION (whose
    objects are fetched and hashed again, whatever the cache says)."""
    from taskpack.integrity import verify

    ts = _open_any(target, registry)
    problems = verify(ts, quiet=quiet)
    if problems:
        for p in problems:
            click.echo(f"{target}: {p}", err=True)
        raise click.ClickException(f"{target}: invalid ({len(problems)} problem(s) shown)")
    m = ts.manifest
    total = sum(s.rows for s in m.splits.values())
    where = m.ref if target == m.ref else f"{target} ({m.ref})"  # the ref once, not twice
    click.echo(f"{where} is valid: {total} tasks in {len(m.splits)} split(s), digest {m.digest}")


@main.command()
@click.argument("target")
@registry_option
@json_option
@_user_errors
def info(target: str, registry: str | None, as_json: bool) -> None:
    """Show name, version, splits, counts, digests and sizes of a task-set folder or NAME@VER
    (with --json: the manifest)."""
    ts = _open_any(target, registry)
    m = ts.manifest
    if as_json:
        _echo_json(m.model_dump(mode="json"))
        return
    click.echo(f"{m.name}@{m.version}  {m.digest}")
    if m.description:
        click.echo(m.description)
    click.echo(f"license: {m.license or 'unknown'}   created: {m.created.isoformat()}")
    click.echo(f"{'split':<16}{'tasks':>10}{'bytes':>14}  digest")
    for name, s in m.splits.items():
        click.echo(f"{name:<16}{s.rows:>10}{s.bytes:>14}  {s.digest}")
    blobs = {sha for s in m.splits.values() for sha in s.blobs}
    click.echo(f"large files: {len(blobs)} (stored once each, fetched when materialized)")
    root = getattr(ts.objects, "root", None)
    if root is not None:  # a folder: each file with a listed size is there, at that size
        paths = m.objects(blobs=False)
        damaged = [
            paths[sha]
            for sha, size in m.sizes().items()
            if not (Path(root) / paths[sha]).is_file()
            or (Path(root) / paths[sha]).stat().st_size != size
        ]
        if damaged:
            raise click.ClickException(
                f"{target} is damaged: {', '.join(damaged[:3])} missing or not the size listed; "
                "`taskpack validate` is the health check (every byte, every row)"
            )
    for name in m.annotations:
        from taskpack.passrates import rates

        measured = ", ".join(
            f"{model} {json.dumps(json.loads(key), sort_keys=True)}"
            for model, key in rates(ts.annotations(name))
        )
        click.echo(f"pass rates of {name}: {m.annotations[name].rows} rows, {measured}")


def _pairs(pairs: tuple[str, ...], hint: str) -> dict[str, Any]:
    """KEY=VALUE pairs of option `hint` (--where, -S); a VALUE that parses as JSON (3, true,
    null) is taken as such."""
    where: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint=hint)
        try:
            where[key] = parse_json(value)
        except ValueError:
            where[key] = value
    return where


@main.command("ls")
@click.argument("target", required=False)
@split_option
@registry_option
@click.option(
    "--where",
    "where_pairs",
    multiple=True,
    help="Only tasks where KEY=VALUE: a field path (environment.repo, reward.kind) or a "
    "metadata key (difficulty). Repeat to combine.",
)
@json_option
@_user_errors
def ls(
    target: str | None,
    split_name: str | None,
    registry: str | None,
    where_pairs: tuple[str, ...],
    as_json: bool,
) -> None:
    """List task sets in the registry, versions and tags of NAME, or task ids of a task set.

    \b
    taskpack ls                      names in the registry, with their latest version
    taskpack ls NAME                 versions and tags of NAME
    taskpack ls NAME@VER | FOLDER    task ids of one split (--where to filter them)
    """
    from taskpack.registry.client import listing, versions

    where = _pairs(where_pairs, "--where")
    if target is None:
        names = listing(registry)
        if as_json:
            _echo_json(names)
        else:
            _table(["NAME", "LATEST"], [[n, v or "-"] for n, v in names.items()])
        return
    if "@" not in target and not Path(target).is_dir():
        found = versions(target, registry)
        if as_json:
            _echo_json(found)
        else:
            _table(["VERSION", "TAGS"], [[f"{target}@{v}", ", ".join(t)] for v, t in found.items()])
        return
    ts = _open_any(target, registry)
    split = ts.split(_pick_split(ts, split_name))
    ids = split.filter(**where).ids() if where else split.ids()
    if as_json:
        _echo_json(ids)
    else:
        click.echo("\n".join(ids))


def _pruned(value: Any) -> Any:
    """Without empty lists and mappings, at any depth."""
    if isinstance(value, dict):
        pruned = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v not in ({}, [])}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _readable(task: Task, every: bool = False) -> dict[str, Any]:
    """The task as shown to a person: only what is set (`every`: each field); files as text
    when they are short UTF-8, else by hash."""
    from taskpack.rows import INLINE_MAX

    fields = task.model_dump(mode="json", exclude_none=not every, exclude={"files"})
    shown: dict[str, Any] = fields if every else _pruned(fields)
    files = []
    for f in task.files:
        entry: dict[str, Any] = {"path": f.path, "role": f.role}
        if f.step is not None:
            entry["step"] = f.step
        entry.update(mode=f"{f.mode:04o}", size=f.size)
        entry["sha256"] = f.sha256
        if f.data is not None and (f.size or 0) <= INLINE_MAX:
            try:
                entry["text"] = f.data.decode("utf-8")
            except UnicodeDecodeError:
                entry["text"] = None
        files.append(entry)
    if files or every:
        shown["files"] = files
    return shown


@main.command()
@click.argument("target")
@click.argument("task_id")
@split_option
@registry_option
@click.option(
    "--format", "fmt", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True
)
@nulls_option
@_user_errors
def show(target: str, task_id: str, split_name: str | None, registry: str | None, fmt: str) -> None:
    """Print one task, by id, of a task-set folder or NAME@VERSION: the fields that are set
    (--nulls: every field)."""
    from taskpack.errors import unknown

    ts = _open_any(target, registry)
    names = [split_name] if split_name is not None else ts.splits  # any split holding the id
    task = next((t for n in names if (t := ts.split(n).get(task_id)) is not None), None)
    if task is None:
        elsewhere = [n for n in ts.splits if n not in names and ts.split(n).get(task_id)]
        if elsewhere:
            raise click.ClickException(
                f"split {', '.join(names)}: no task {task_id!r}; it is in split "
                f"{elsewhere[0]} (--split {elsewhere[0]})"
            )
        ids = [i for n in names for i in ts.split(n).ids()]
        raise unknown("task", task_id, ids, f"split {', '.join(names)}")
    shown = _readable(task, every=_nulls())
    if fmt == "json":
        _echo_json(shown)
    else:
        click.echo(_yaml(shown), nl=False)


def _yaml(value: Any) -> str:
    """YAML with multi-line strings as literal blocks, so code and patches read as written."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, s: str) -> yaml.Node:
        style = "|" if "\n" in s else None  # PyYAML falls back where a block cannot hold s
        return dumper.represent_scalar("tag:yaml.org,2002:str", s, style=style)

    Dumper.add_representer(str, text)
    return yaml.dump(value, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=100)


def _span(text: str) -> tuple[int, int]:
    first, sep, last = text.partition(":")
    if not (sep and first.isdigit() and last.isdigit() and 1 <= int(first) <= int(last)):
        raise click.BadParameter(
            f"{text!r} is not FIRST:LAST (1 <= FIRST <= LAST)", param_hint="--lines"
        )
    return int(first), int(last)


@main.command()
@click.argument("parts", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--output", "target", required=True, type=click.Path(path_type=Path))
@click.option("--name", help="Task-set name (default: the first part's).")
@click.option("--version", "version", help="Version (default: the first part's).")
@click.option("--force", is_flag=True, help="Replace OUTPUT if it exists.")
@_user_errors
def merge(
    parts: tuple[str, ...], target: Path, name: str | None, version: str | None, force: bool
) -> None:
    """Merge task sets converted part by part (`convert --lines`, on any number of machines)
    into one at OUTPUT: each split is the parts' rows in the order given, with the digests a
    single import of those rows gives."""
    from taskpack.merging import merge as merge_parts
    from taskpack.taskset import open_folder

    first = open_folder(parts[0]).manifest
    m = merge_parts(
        list(parts),
        target,
        name=name or first.name,
        version=version or first.version,
        description=first.description,
        license=first.license,
        overwrite=force,
    )
    counts = ", ".join(f"{n}: {s.rows}" for n, s in m.splits.items())
    click.echo(f"wrote {m.name}@{m.version} to {target} ({counts}), digest {m.digest}")


@main.command()
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Replace TARGET if it exists.")
@_user_errors
def example(target: Path, force: bool) -> None:
    """Write a small generated demo task set to TARGET."""
    from taskpack.example import build_example

    m = build_example(target, overwrite=force)
    counts = ", ".join(f"{n}: {s.rows}" for n, s in m.splits.items())
    click.echo(f"wrote {m.name}@{m.version} to {target} ({counts})")


def _progress(
    quiet: bool,
    sources: dict[str, list[str]] | None = None,
    known: dict[str, int] | None = None,
) -> Callable[[Iterator[Task], str], Iterator[Task]]:
    """A live task count on stderr while rows stream in (see taskpack.progress), with its
    total, rate and ETA when the split sizes are `known` or the sources' rows can be counted
    up front (local files)."""
    from taskpack.converters._source import rows_hint
    from taskpack.progress import counted

    totals: dict[str, int | None] = dict(known or {})
    if not quiet:
        for split, uris in (sources or {}).items():
            hints = [rows_hint(uri) for uri in uris]
            totals[split] = None if None in hints else sum(h or 0 for h in hints)
    return lambda tasks, split: counted(tasks, split, total=totals.get(split), quiet=quiet)


def _options(pairs: tuple[str, ...], mapping: Path | None, preset: str | None) -> dict[str, Any]:
    from taskpack.converters._source import RowError
    from taskpack.converters._yaml import load_yaml

    options: dict[str, Any] = {}
    if mapping is not None:
        try:
            loaded = load_yaml(mapping.read_text(encoding="utf-8"), str(mapping))
        except RowError as e:
            raise TaskpackError(str(e)) from None
        if not isinstance(loaded, dict):
            raise TaskpackError(f"{mapping}: expected a mapping of options")
        options.update(loaded)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--option")
        options[key.strip().replace("-", "_")] = value
    if preset is not None:
        options["preset"] = preset
    return options


def _write_options(pairs: tuple[str, ...], embed: bool) -> dict[str, Any]:
    """-W KEY=VALUE pairs; a VALUE that parses as JSON (true, 3, {"a": 1}) is taken as such."""
    options: dict[str, Any] = {"embed": True} if embed else {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--write-option")
        try:
            options[key.strip().replace("-", "_")] = parse_json(value)
        except ValueError:
            options[key.strip().replace("-", "_")] = value
    return options


write_options = click.option(
    "-W", "--write-option", "write_pairs", multiple=True, help="Writer option KEY=VALUE."
)
embed_option = click.option(
    "--embed", is_flag=True, help="Also carry the whole task in the format's free field."
)


def _default_name(target: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]", "-", target.name.split(".")[0]).strip("-._")
    return name or "taskset"


@main.command()
@click.argument("sources", nargs=-1, required=True)
@click.option(
    "--from",
    "fmt",
    required=True,
    shell_complete=_formats("read"),
    help="Source format (see `taskpack formats`).",
)
@click.option(
    "--to",
    "to_fmt",
    shell_complete=_formats("write"),
    help="Write this framework format instead of a task set.",
)
@click.option("--strict", is_flag=True, help="With --to: fail if the target loses any field.")
@click.option("-o", "--output", "target", required=True, type=click.Path(path_type=Path))
@click.option("--name", help="Task-set name (default: the output folder's name).")
@click.option("--version", "version", default="0.1.0", show_default=True)
@click.option("--split", "split_name", help="Split for sources given without SPLIT=.")
@click.option("--description", default="")
@click.option("--license", "license_", help="License of the data, e.g. MIT.")
@click.option("-O", "--option", "pairs", multiple=True, help="Reader option KEY=VALUE.")
@click.option(
    "--mapping",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="YAML file of reader options (a column mapping).",
)
@click.option("--preset", help="Named option set, e.g. multiple-choice (kaggle).")
@write_options
@embed_option
@click.option("--skip-invalid", is_flag=True, help="Skip bad rows and report them.")
@click.option(
    "--report",
    type=click.Path(path_type=Path),
    help="Where --skip-invalid writes skipped rows (default: OUTPUT.skipped.jsonl).",
)
@click.option(
    "--lines",
    metavar="FIRST:LAST",
    help="Only these lines (rows) of each source, 1-based and inclusive: one part of an "
    "import split between machines (see `taskpack merge`).",
)
@click.option(
    "--on-ray",
    "ray_parts",
    type=click.IntRange(min=1),
    metavar="PARTS",
    help="Import as PARTS parts (per JSON Lines source) run as Ray tasks on the cluster "
    "RAY_ADDRESS names (else a local one), then merged.",
)
@click.option("--force", is_flag=True, help="Replace OUTPUT if it exists.")
@quiet_option
@_user_errors
def convert(
    sources: tuple[str, ...],
    fmt: str,
    to_fmt: str | None,
    strict: bool,
    target: Path,
    name: str | None,
    version: str,
    split_name: str | None,
    description: str,
    license_: str | None,
    pairs: tuple[str, ...],
    mapping: Path | None,
    preset: str | None,
    write_pairs: tuple[str, ...],
    embed: bool,
    skip_invalid: bool,
    report: Path | None,
    lines: str | None,
    ray_parts: int | None,
    force: bool,
    quiet: bool,
) -> None:
    """Import SOURCES ([SPLIT=]PATH-OR-URL, plain or .gz/.zst) into a task set at OUTPUT,
    or with --to, straight into another format."""
    from taskpack.importer import import_sources, sources_by_split

    if to_fmt is not None:
        from taskpack.exporter import convert_format

        _quiet_libraries(quiet)
        _report_export(
            convert_format(
                sources_by_split(sources, split_name, fmt),
                fmt,
                to_fmt,
                target,
                options=_options(pairs, mapping, preset),
                write_options=_write_options(write_pairs, embed),
                strict=strict,
                overwrite=force,
                progress=_progress(quiet),
            )
        )
        return

    by_split = sources_by_split(sources, split_name, fmt)
    if ray_parts is not None:
        if skip_invalid or lines:
            raise click.UsageError("--on-ray takes neither --skip-invalid nor --lines")
        from taskpack.sharded import import_sharded

        m = import_sharded(
            target,
            by_split,
            fmt,
            parts=ray_parts,
            options=_options(pairs, mapping, preset),
            progress=not quiet,
            name=name or _default_name(target),
            version=version,
            description=description,
            license=license_,
            overwrite=force,
        )
        counts = ", ".join(f"{n}: {s.rows}" for n, s in m.splits.items())
        click.echo(f"wrote {m.name}@{m.version} to {target} ({counts}), digest {m.digest}")
        return
    if report is None:
        report = target.with_name(target.name + ".skipped.jsonl")
    span = _span(lines) if lines is not None else None
    result = import_sources(
        target,
        by_split,
        fmt,
        lines={split: span for split in by_split} if span else None,
        options=_options(pairs, mapping, preset),
        skip_invalid=skip_invalid,
        report=report,
        progress=_progress(quiet, None if span else dict(by_split)),
        name=name or _default_name(target),
        version=version,
        description=description,
        license=license_,
        overwrite=force,
    )
    m = result.manifest
    counts = ", ".join(f"{n}: {s.rows}" for n, s in m.splits.items())
    click.echo(f"wrote {m.name}@{m.version} to {target} ({counts})")
    if skip_invalid:
        click.echo(f"skipped {len(result.skipped)} row(s); report: {report}", err=True)


@main.command()
@json_option
@_user_errors
def formats(as_json: bool) -> None:
    """List the formats taskpack reads (--from) and writes (--to), with their options."""
    from taskpack.converters import get, names

    if as_json:
        _echo_json(
            [
                {
                    "name": n,
                    "modes": get(n).modes,
                    "summary": get(n).summary,
                    "read_options": list(get(n).read_options.model_fields) if get(n).read else [],
                    "write_options": list(get(n).write_options.model_fields)
                    if get(n).write
                    else [],
                }
                for n in names()
            ]
        )
        return
    for name in names():
        fmt = get(name)
        click.echo(f"{name:<16}{fmt.modes:<12}{fmt.summary}")
        for kind, model in (
            ("-O", fmt.read_options if fmt.read else None),
            ("-W", fmt.write_options if fmt.write else None),
        ):
            for option, info in model.model_fields.items() if model else ():
                default = (
                    ""
                    if info.is_required()
                    else f" (default: {info.get_default(call_default_factory=True)!r})"
                )
                click.echo(f"{'':<16}{kind} {option}{default}")


@main.command()
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

    from taskpack.check import (
        SECONDS_PER_RUN,
        Limits,
        TaskCheck,
        check_export,
        planned,
        runs,
        summary,
    )
    from taskpack.progress import counted

    def count(results: Iterator[TaskCheck], total: int) -> Iterator[TaskCheck]:
        return counted(results, "checked", total=total, quiet=quiet)

    sources = None
    if source is not None:
        sources = list(_source_tasks(source, source_format, pairs, split_name, registry))
    limits = Limits(timeout=timeout, disk=disk << 20, memory=memory << 20)
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
            entry: dict[str, Any] = {"task": task, "status": r.status, "oracle": r.oracle}
            entry |= {"null": r.null, "forged": r.forged, "parity": r.parity}
            entry["source_null"] = r.source_null
            click.echo(json.dumps({**entry, "reason": r.reason}))
        elif r.status == "failed":
            click.echo(f"failed: {r.folder.relative_to(export_dir)}: {r.reason}", err=True)
    if not as_json:
        from taskpack.sandbox import memory_scope

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


@main.group()
def catalog() -> None:
    """Recipes for well-known public task sets."""


@catalog.command("list")
@json_option
@_user_errors
def catalog_list(as_json: bool) -> None:
    """Show every recipe: name, importer, splits, license and upstream."""
    from taskpack.recipes import recipes

    if as_json:
        _echo_json([r.model_dump(mode="json") for r in recipes().values()])
        return
    rows = [
        [r.name, r.format, ",".join(r.splits), r.license, r.upstream.url]
        for r in recipes().values()
    ]
    _table(["NAME", "FORMAT", "SPLITS", "LICENSE", "UPSTREAM"], rows)


def _table(header: list[str], rows: list[list[str]]) -> None:
    """Columns padded to their widest cell, two spaces apart, under a header."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        cells = [str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)]
        click.echo("  ".join(cells).rstrip())


@catalog.command("build")
@click.argument("name", shell_complete=_complete_recipes)
@click.option(
    "--source",
    required=True,
    type=click.Path(exists=True, path_type=Path),
    help="Local copy of the upstream files: their folder, or the file of a one-split set.",
)
@click.option(
    "-o",
    "--output",
    "target",
    type=click.Path(path_type=Path),
    help="Where to write the task set (default: NAME.taskset).",
)
@click.option(
    "--no-check", is_flag=True, help="Build even if a file's sha256 differs from the pin."
)
@click.option("--force", is_flag=True, help="Replace OUTPUT if it exists.")
@quiet_option
@_user_errors
def catalog_build(
    name: str, source: Path, target: Path | None, no_check: bool, force: bool, quiet: bool
) -> None:
    """Build the catalog task set NAME from a local copy of its upstream files."""
    from taskpack.recipes import build

    target = target or Path(f"{name}.taskset")
    result = build(
        name, source, target, check=not no_check, overwrite=force, progress=_progress(quiet)
    )
    m = result.manifest
    counts = ", ".join(f"{n}: {s.rows}" for n, s in m.splits.items())
    click.echo(f"wrote {m.name}@{m.version} to {target} ({counts})")


@main.command()
@click.argument("source")
@registry_option
@click.option(
    "--from-registry",
    "source_registry",
    help="Where SOURCE=NAME@VERSION is published (default: the default registry).",
)
@click.option("--tag", "tags", multiple=True, help="Also point this movable tag at the version.")
@click.option(
    "--full-check",
    is_flag=True,
    help="Re-validate every task and digest first (as `taskpack validate`).",
)
@quiet_option
@json_option
@_user_errors
def publish(
    source: str,
    registry: str | None,
    source_registry: str | None,
    tags: tuple[str, ...],
    full_check: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """Publish the task set at SOURCE (a folder, or NAME@VERSION published elsewhere: mirrored
    with the same digest) as an immutable version, its bytes and rows checked first."""
    from taskpack.registry import Location
    from taskpack.registry.client import publish as publish_taskset

    where = Location.parse(registry)
    m, created = publish_taskset(
        source,
        registry=where,
        source_registry=source_registry,
        tags=tags,
        quiet=quiet,
        full_check=full_check,
    )
    if as_json:
        fields = {"name": m.name, "version": m.version, "digest": m.digest}
        _echo_json({**fields, "registry": where.url, "created": created})
        return
    state = "published" if created else "already published, same content:"
    click.echo(f"{state} {m.ref} ({m.digest}) to {where.url}")


@main.command()
@click.argument("ref")
@click.option("--split", "-s", "splits", multiple=True, help="Split to fetch (default: all).")
@registry_option
@click.option("--files", is_flag=True, help="Also fetch the large task files.")
@click.option("--lockfile", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@quiet_option
@json_option
@_user_errors
def pull(
    ref: str,
    splits: tuple[str, ...],
    registry: str | None,
    files: bool,
    lockfile: Path | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Fetch a version (NAME, NAME@1, NAME@1.2.3, NAME@sha256:...) into the local cache."""
    from taskpack.objects import default_cache_dir
    from taskpack.registry.client import pull as pull_version

    ts = pull_version(ref, splits, registry=registry, files=files, lockfile=lockfile, quiet=quiet)
    m = ts.manifest
    fetched = list(splits or tuple(m.splits))
    if as_json:
        fields = {"name": m.name, "version": m.version, "digest": m.digest, "splits": fetched}
        _echo_json({**fields, "cache": str(default_cache_dir())})
        return
    click.echo(f"{m.ref} ({m.digest}): {', '.join(fetched)} in {default_cache_dir()}")


@main.command()
@click.argument("refs", nargs=-1, required=True)
@registry_option
@click.option(
    "-o",
    "--output",
    default="taskpack.lock",
    show_default=True,
    type=click.Path(dir_okay=False, path_type=Path),
)
@_user_errors
def lock(refs: tuple[str, ...], registry: str | None, output: Path) -> None:
    """Resolve REFS now and write their exact versions and digests to a lockfile."""
    from taskpack.registry.client import write_lockfile

    for key, entry in write_lockfile(list(refs), output, registry=registry).items():
        click.echo(f"{key} -> {entry['version']} {entry['digest']}")


@main.command()
@click.argument("target", required=False)
@registry_option
@click.option(
    "--mirror",
    metavar="REGISTRY",
    help="Serve a pull-through mirror of REGISTRY (instead of a TARGET): clients use "
    "--registry http://HOST:PORT, and each object is fetched from REGISTRY once.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    default=8000,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port (0: any free port).",
)
@click.option("--workers", default=1, show_default=True, help="Processes serving (2 on 2 cores).")
@click.option(
    "--allow-host", multiple=True, help="Another name clients reach this server by (Host)."
)
@click.option(
    "--ttl",
    default=10.0,
    show_default=True,
    help="Mirror: seconds a listing or tag is reused before upstream is asked again.",
)
@_user_errors
def serve(
    target: str | None,
    registry: str | None,
    mirror: str | None,
    host: str,
    port: int,
    workers: int,
    allow_host: tuple[str, ...],
    ttl: float,
) -> None:
    """Serve one version (a folder or NAME@VERSION) over HTTP: a JSON API with an OpenAPI
    document at /openapi.json, and a read-only HTML view at /. With --mirror, serve a
    registry's versions instead, for a cluster's nodes to share one fetch."""
    from taskpack.errors import require
    from taskpack.serve import Config, address, allowed_hosts, run

    if (target is None) == (mirror is None):
        raise click.UsageError("give a TARGET to serve, or --mirror REGISTRY")
    if workers < 1:
        raise click.BadParameter("at least 1", param_hint="--workers")
    require("granian", "serve")
    ip, port = address(host, port)
    hosts = allowed_hosts(host, port, allow_host)
    config = Config(
        target=target,
        registry=registry,
        mirror=mirror,
        ttl=ttl,
        hosts=tuple(sorted(hosts)) if hosts is not None else None,
    )
    app = config.app()  # opens the version (or the upstream) here: errors are one line
    shown = f"[{host}]" if ":" in host else host
    if app.api is not None:
        m = app.api.catalog.ts.manifest
        click.echo(f"serving {m.ref} ({m.digest}) on http://{shown}:{port}/", err=True)
    else:
        click.echo(f"mirroring {mirror} on http://{shown}:{port}/", err=True)
    with contextlib.suppress(KeyboardInterrupt):
        run(config, ip, port, workers)


@main.command()
@click.argument("old")
@click.argument("new")
@registry_option
@json_option
@_user_errors
def diff(old: str, new: str, registry: str | None, as_json: bool) -> None:
    """Per split: tasks added, removed and changed (by digest) from OLD to NEW."""
    import dataclasses

    from taskpack.changes import diff as diff_versions

    changes = diff_versions(_open_any(old, registry), _open_any(new, registry))
    if as_json:
        _echo_json({name: dataclasses.asdict(d) for name, d in changes.items()})
        return
    for name, d in changes.items():
        click.echo(f"{name}: +{len(d.added)} -{len(d.removed)} ~{len(d.changed)}")
        for mark, ids in (("+", d.added), ("-", d.removed), ("~", d.changed)):
            for tid in ids:
                click.echo(f"  {mark} {tid}")
                for change in d.fields.get(tid, []):
                    old, new = _around_change(change.old, change.new)
                    click.echo(f"      {change.path}: {old} → {new}")


def _around_change(old: Any, new: Any, width: int = 60) -> tuple[str, str]:
    """Both sides of a change as `repr`s of at most `width` characters each, cut around the
    first character where they differ (a long text changed at its end shows its end)."""
    a, b = repr(old), repr(new)
    if len(a) <= width and len(b) <= width:
        return a, b
    pairs = enumerate(zip(a, b, strict=False))
    first = next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))
    start = max(0, first - width // 3)

    def cut(text: str) -> str:
        piece = text[start : start + width - 6]
        return ("..." if start else "") + piece + ("..." if start + len(piece) < len(text) else "")

    return cut(a), cut(b)


def _report_export(result: Any) -> None:
    for line in result.losses:
        click.echo(f"loss: {line}", err=True)
    names = ", ".join(str(p.relative_to(result.out)) for p in result.files)
    per_split = ", ".join(f"{split}: {n}" for split, n in result.tasks.items())
    total = sum(result.tasks.values())
    click.echo(f"wrote {total} tasks ({per_split}) to {result.out}: {names}")


@main.command("export")
@click.argument("target")
@click.option(
    "--to",
    "fmt",
    required=True,
    shell_complete=_formats("write"),
    help="Framework format (see `taskpack formats`).",
)
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path))
@click.option("--split", "-s", "splits", multiple=True, help="Split to export (default: all).")
@click.option("--strict", is_flag=True, help="Fail if the format cannot carry a field.")
@click.option("--force", is_flag=True, help="Replace OUTPUT if it exists.")
@write_options
@embed_option
@registry_option
@quiet_option
@_user_errors
def export_cmd(
    target: str,
    fmt: str,
    out: Path,
    splits: tuple[str, ...],
    strict: bool,
    force: bool,
    write_pairs: tuple[str, ...],
    embed: bool,
    registry: str | None,
    quiet: bool,
) -> None:
    """Write a task set (folder or NAME@VERSION) in a framework's format."""
    from taskpack.exporter import export

    ts = _open_any(target, registry)
    options = _write_options(write_pairs, embed)
    _quiet_libraries(quiet)
    _report_export(
        export(
            ts,
            fmt,
            out,
            splits=splits,
            strict=strict,
            overwrite=force,
            options=options,
            progress=_progress(quiet, known={n: s.rows for n, s in ts.manifest.splits.items()}),
        )
    )


def _quiet_libraries(quiet: bool) -> None:
    """`datasets` draws bars of its own when saving (Verifiers exports): off with -q or off a
    terminal, like taskpack's."""
    import os
    import sys

    if quiet or not sys.stderr.isatty():
        os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
        if "datasets" in sys.modules:
            sys.modules["datasets"].disable_progress_bars()


# --- curation: each step reports, and with --drop writes a version recording its lineage ------


def _step_output(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options every curation step shares: what to do with what it found."""
    options: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
        click.option(
            "--drop",
            is_flag=True,
            help="Write the set without what was found, as a new version (needs -o).",
        ),
        click.option(
            "-o", "--output", type=click.Path(path_type=Path), help="Write the new version here."
        ),
        click.option("--name", "name", help="Its name (default: the set's own)."),
        click.option("--version", "version", help="Its version (default: the next minor)."),
        click.option("--publish", is_flag=True, help="Also publish it to --registry."),
        click.option("--force", is_flag=True, help="Replace OUTPUT if it exists."),
        registry_option,
        json_option,
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _dropped_lines(report: Any, found: str) -> list[str]:
    """Per split: its tasks, how many the step found (dropped with -o), how many it keeps."""
    m = report.taskset.manifest
    checked = report.record["options"].get("splits") or list(m.splits)
    lines = []
    for split, info in m.splits.items():
        gone = len(report.dropped.get(split, []))
        if split not in checked:
            lines.append(f"{split}: {info.rows} tasks, not checked, all kept")
        else:
            lines.append(f"{split}: {info.rows} tasks, {gone} {found}, {info.rows - gone} kept")
    return lines


def _finish_step(
    report: Any,
    lines: list[str],
    *,
    drop: bool,
    output: Path | None,
    name: str | None,
    version: str | None,
    publish: bool,
    force: bool,
    registry: str | None,
    as_json: bool,
) -> None:
    """Print a step's summary `lines` (or its record, with --json) and, with -o, write the
    new version it makes (and with --publish, publish it)."""
    from taskpack.curation import keep, next_version

    m = report.taskset.manifest
    if drop and output is None:
        raise click.UsageError("--drop writes a new version: give its folder with -o")
    if not as_json:
        for line in lines:
            click.echo(line)
    written = None
    if output is not None:
        written = keep(
            report.taskset,
            report.kept(),
            output,
            name=name,
            version=version or next_version(m.version),
            source=report.record,
            overwrite=force,
            annotations=report.annotations(),
        )
        if publish:
            from taskpack.registry.client import publish as publish_taskset

            publish_taskset(output, registry=registry)
    if as_json:
        out = {**report.record, "tasks": {s: i.rows for s, i in m.splits.items()}}
        if written is not None:
            out["written"] = {"ref": written.ref, "digest": written.digest, "path": str(output)}
        _echo_json(out)
        return
    if written is not None:
        where = f"{output}" + (" and the registry" if publish else "")
        click.echo(f"wrote {written.ref} ({written.digest}) to {where}")


@main.command()
@click.argument("target")
@click.option(
    "--against",
    "refs",
    multiple=True,
    required=True,
    help="A reference set (folder or NAME@VERSION), e.g. a benchmark; repeatable.",
)
@click.option("--ngram", default=8, show_default=True, help="Words per n-gram (13: GPT-3's).")
@click.option("--split", "-s", "splits", multiple=True, help="Split to check (default: all).")
@_step_output
@_user_errors
def decontaminate(
    target: str, refs: tuple[str, ...], ngram: int, splits: tuple[str, ...], **step: Any
) -> None:
    """Find the tasks of TARGET sharing a word n-gram of their normalised instruction (lower
    case, whitespace collapsed) with any task of a reference set: one shared n-gram is a hit,
    as in open-r1's decontaminate.py. Prints every hit with the n-gram and both ids."""
    from taskpack.curation import decontaminate as find

    report = find(target, refs, ngram=ngram, splits=splits or None, registry=step["registry"])
    if not step["as_json"]:
        for hit in report.hits:
            split, task_id = hit.key
            click.echo(f"{split}/{task_id} ~ {'/'.join(hit.ref)}: {hit.ngram!r}")
    _finish_step(report, _dropped_lines(report, "contaminated"), **step)


@main.command()
@click.argument("target")
@click.option("--exact", is_flag=True, help="Exact duplicates only (no MinHash).")
@click.option(
    "--threshold",
    default=0.8,
    show_default=True,
    help="Near duplicates: estimated Jaccard similarity of word 3-grams.",
)
@_step_output
@_user_errors
def dedup(target: str, exact: bool, threshold: float, **step: Any) -> None:
    """Find duplicate tasks within each split of TARGET: the same normalised instruction and
    answer, and (unless --exact) near duplicates by MinHash LSH. Prints each cluster; --drop
    keeps the first task of each."""
    from taskpack.curation import dedup as find

    report = find(target, near=not exact, threshold=threshold, registry=step["registry"])
    if not step["as_json"]:
        for cluster in report.clusters:
            click.echo(f"{cluster[0][0]}: " + ", ".join(task_id for _, task_id in cluster))
    _finish_step(report, _dropped_lines(report, "duplicates"), **step)


def _settings(pairs: tuple[str, ...]) -> dict[str, Any] | None:
    """-S KEY=VALUE pairs (n=16, temperature=0.7); None when none is given."""
    return _pairs(pairs, "-S") or None


settings_option = click.option(
    "-S",
    "--settings",
    "settings",
    multiple=True,
    help="A sampling setting, KEY=VALUE (n=16, temperature=0.7, max_tokens=4096); repeatable.",
)


@main.command()
@click.argument("target")
@click.argument("rollouts", nargs=-1, required=True)
@click.option("--model", required=True, help="The model the rollouts sampled.")
@settings_option
@click.option(
    "--success",
    default=1.0,
    show_default=True,
    help="A rollout with this reward or more counts as solved.",
)
@click.option("--key", help="The field naming the task (default: id, task_id, ... or the text).")
@_step_output
@_user_errors
def annotate(
    target: str,
    rollouts: tuple[str, ...],
    model: str,
    settings: tuple[str, ...],
    success: float,
    key: str | None,
    **step: Any,
) -> None:
    """Pass rates of TARGET's tasks from ROLLOUTS files (JSONL, JSON or Parquet): one record
    per rollout with an id and a `reward`, open-r1's `pass_rate_rewards` lists, or NeMo Gym's
    reward profile. With -o, writes them into a new version: per task, model and settings, the
    rollouts, the solved ones and the mean reward (the tasks and their digests unchanged)."""
    from taskpack.curation import annotate as measure
    from taskpack.passrates import histogram, rates, settings_key

    report = measure(
        target,
        rollouts,
        model=model,
        settings=_settings(settings),
        success=success,
        key=key,
        registry=step["registry"],
    )
    counted = report.record["counted"]
    lines = [
        f"{counted['rollouts']} rollouts of {model} for {counted['tasks']} tasks"
        + (f"; {len(report.unmatched)} names matched no task" if report.unmatched else "")
    ]
    setup = (model, settings_key(report.record["options"]["settings"]))
    for split, rows in report.rows.items():
        mine = rates(rows).get(setup)
        if mine:
            total = report.taskset.manifest.splits[split].rows
            lines.append(f"{split}: {len(mine)} of {total} tasks measured; pass rates:")
            lines += histogram(mine.values())
    _finish_step(report, lines, **step)


@main.command(name="filter")
@click.argument("target")
@click.option(
    "--pass-rate",
    "within",
    required=True,
    help="LOW..HIGH (0.1..0.9: what the model solves 10-90%% of the time), or a band: "
    "unsolved, hard, medium, easy, solved.",
)
@click.option("--model", required=True, help="Whose pass rates.")
@settings_option
@click.option("--keep-unmeasured", is_flag=True, help="Keep tasks the model has no rollouts of.")
@_step_output
@_user_errors
def filter_command(
    target: str,
    within: str,
    model: str,
    settings: tuple[str, ...],
    keep_unmeasured: bool,
    **step: Any,
) -> None:
    """Keep TARGET's tasks whose pass rate for MODEL lies in a band, as recorded by `taskpack
    annotate`: prints each split's histogram and how many survive; -o writes them."""
    from taskpack.curation import filter_pass_rate
    from taskpack.passrates import band, histogram

    report = filter_pass_rate(
        target,
        within,
        model=model,
        settings=_settings(settings),
        keep_unmeasured=keep_unmeasured,
        registry=step["registry"],
    )
    lines = []
    for split, info in report.taskset.manifest.splits.items():
        if split not in report.dropped:
            lines.append(f"{split}: {info.rows} tasks, no pass rates of {model}, all kept")
            continue
        kept = info.rows - len(report.dropped[split])
        unmeasured = report.unmeasured[split]
        note = f", {unmeasured} not measured" if unmeasured else ""
        lines.append(f"{split}: {info.rows} tasks{note}, {kept} kept ({within})")
        lines += histogram(list(report.rates[split].values()), band(within))
        if not kept:
            lines.append(f"{split}: no task is left (a new version would be refused)")
    _finish_step(report, lines, **step)


@main.command()
@click.argument("name")
@click.argument("sources", nargs=-1, required=True)
@click.option("--seed", default=0, show_default=True, help="Seed of the mixed order.")
@click.option(
    "--size",
    type=int,
    help="Tasks to draw (default: until a source runs out; more repeats sources, ids ~2, ~3).",
)
@click.option(
    "--env", "envs", multiple=True, help="SOURCE_REF=ENV: the environment a source's tasks run in."
)
@click.option(
    "--eval-only",
    "evals",
    multiple=True,
    help="REF[:SPLIT]: a source for evaluation only (split `eval`).",
)
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True)
@click.option("--version", "version", default="1.0.0", show_default=True)
@click.option("--description", default="")
@click.option("--publish", is_flag=True, help="Also publish it to --registry.")
@click.option("--force", is_flag=True, help="Replace OUTPUT if it exists.")
@registry_option
@_user_errors
def mix(
    name: str,
    sources: tuple[str, ...],
    seed: int,
    size: int | None,
    envs: tuple[str, ...],
    evals: tuple[str, ...],
    output: Path,
    version: str,
    description: str,
    publish: bool,
    force: bool,
    registry: str | None,
) -> None:
    """Mix task sets by weight into one versioned set NAME: SOURCES are REF[:SPLIT]:WEIGHT
    (`gsm8k@1:0.7 math@2:0.3`). Split `train` is a seeded draw by weight until a source runs
    out (or --size tasks), ids prefixed by their source; each source is pinned by digest. Its
    verl export also writes verl's data config; `taskpack.mixture.sampler` keeps drawing."""
    from dataclasses import replace

    from taskpack.curation import Part
    from taskpack.curation import mix as make

    parts = [Part.parse(text) for text in sources]
    parts += [replace(Part.parse(f"{text}:0"), evaluation_only=True) for text in evals]
    env_of: dict[str, str] = {}
    for pair in envs:  # an environment name is text, never JSON
        ref, sep, env = pair.partition("=")
        if not sep or ref not in {p.ref for p in parts}:
            raise click.BadParameter(
                f"{pair!r}: expected REF=ENV for a source's REF", param_hint="--env"
            )
        env_of[ref] = env
    parts = [replace(p, env=env_of.get(p.ref)) for p in parts]
    m = make(
        name,
        parts,
        output,
        version=version,
        seed=seed,
        size=size,
        description=description,
        overwrite=force,
        registry=registry,
    )
    if publish:
        from taskpack.registry.client import publish as publish_taskset

        publish_taskset(output, registry=registry)
    from taskpack.provenance import entries

    for entry in entries(m.source, "mixture"):
        use = "evaluation only" if entry["evaluation_only"] else f"weight {entry['weight']:g}"
        click.echo(
            f"{entry['label']}: {entry['ref']} {entry['split']}, {entry['tasks']} tasks, {use}"
        )
    counts = ", ".join(f"{n}: {s.rows}" for n, s in m.splits.items())
    click.echo(f"wrote {m.ref} ({counts}), digest {m.digest}, to {output}")


@main.command()
@click.argument("target")
@registry_option
@json_option
@_user_errors
def lineage(target: str, registry: str | None, as_json: bool) -> None:
    """What TARGET (a folder or NAME@VERSION) was made from, back to its source files: each
    version's operation, options and inputs, found by digest in the registry or at the
    folder they were read from."""
    from taskpack.curation import lineage as chain
    from taskpack.provenance import step_lines

    links = list(chain(target, registry=registry))
    if as_json:
        _echo_json(
            [
                {
                    "depth": link.depth,
                    **link.entry,
                    "source": link.manifest.source if link.manifest else None,
                }
                for link in links
            ]
        )
        return
    for link in links:
        pad = "  " * link.depth
        if link.manifest is None:
            click.echo(f"{pad}{link.entry.get('ref')} {link.entry.get('digest')} (not found here)")
            continue
        head, *rest = step_lines(link.manifest.source)
        click.echo(f"{pad}{link.manifest.ref} {link.manifest.digest}: {head}")
        for line in rest:
            if not line.startswith("made from "):  # shown as the next links of the chain
                click.echo(f"{pad}  {line}")
