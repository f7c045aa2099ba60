"""Commands that look at a task set: validate, info, ls, show, diff."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # each command imports what it uses: `taskpack --help` loads neither
    # pydantic nor pyarrow
    from taskpack.model import Task
from taskpack.cli._common import (
    _echo_json,
    _nulls,
    _open_any,
    _pairs,
    _pick_split,
    _table,
    _user_errors,
    json_option,
    nulls_option,
    quiet_option,
    registry_option,
    split_option,
)


@click.command()
@click.argument("target")
@registry_option
@quiet_option
@_user_errors
def validate(target: str, registry: str | None, quiet: bool) -> None:
    """Check every task, digest and stored object of a task-set folder or NAME@VERSION (whose
    objects are fetched and hashed again, whatever the cache says)."""
    from taskpack.storage.integrity import verify

    ts = _open_any(target, registry)
    problems = verify(ts, quiet=quiet)
    if not Path(target).exists():  # NAME@V: this machine's warm copies of it, checked too
        from taskpack.storage.warm import verify_warm

        splits = {n: s.digest for n, s in ts.manifest.splits.items()}
        problems += verify_warm(ts.manifest.ref, registry, splits)
    if problems:
        for p in problems:
            click.echo(f"{target}: {p}", err=True)
        raise click.ClickException(f"{target}: invalid ({len(problems)} problem(s) shown)")
    m = ts.manifest
    total = sum(s.rows for s in m.splits.values())
    where = m.ref if target == m.ref else f"{target} ({m.ref})"  # the ref once, not twice
    click.echo(f"{where} is valid: {total} tasks in {len(m.splits)} split(s), digest {m.digest}")
    if m.unpinned():
        click.echo(m.unpinned())


@click.command()
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
    if m.unpinned():
        click.echo(m.unpinned())
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
        from taskpack.storage.ratings import rates

        measured = ", ".join(
            f"{model} {json.dumps(json.loads(key), sort_keys=True)}"
            for model, key in rates(ts.annotations(name))
        )
        click.echo(f"pass rates of {name}: {m.annotations[name].rows} rows, {measured}")


@click.command("ls")
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
    from taskpack.storage.rows import INLINE_MAX

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


@click.command()
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


_TRAILING = re.compile(r"[ \t]+(?=\n)")


def _yaml(value: Any) -> str:
    """YAML with multi-line strings as literal blocks, so code and patches read as written.
    A block cannot hold a carriage return or a line's trailing blanks (PyYAML would fall back
    to one quoted line of `\\r\\n` escapes, as SWE-bench's problem statements came out): for
    reading, line ends are shown as plain breaks and trailing blanks dropped (`--format json`
    gives the text exactly)."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, s: str) -> yaml.Node:
        if "\n" in s or "\r" in s:
            s = _TRAILING.sub("", s.replace("\r\n", "\n").replace("\r", "\n"))
        style = "|" if "\n" in s else None  # PyYAML falls back where a block cannot hold s
        return dumper.represent_scalar("tag:yaml.org,2002:str", s, style=style)

    Dumper.add_representer(str, text)
    return yaml.dump(value, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=100)


@click.command()
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
