"""What the commands share: option definitions, error handling, output helpers."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from taskpack.base.nesting import parse_json, without_nulls
from taskpack.errors import TaskpackError

if TYPE_CHECKING:  # each command imports what it uses: `taskpack --help` loads neither
    # pydantic nor pyarrow
    from taskpack.storage.taskset import TaskSet

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


registry_option = click.option(
    "--registry",
    help="Registry: a folder, file:///folder, s3://bucket/prefix or hf://owner "
    "(default: $TASKPACK_REGISTRY, else a folder in your data directory).",
)


def _open_any(target: str, registry: str | None) -> TaskSet:
    from taskpack.registry.client import open as open_any

    return open_any(target, registry=registry)


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


def _span(text: str) -> tuple[int, int]:
    first, sep, last = text.partition(":")
    if not (sep and first.isdigit() and last.isdigit() and 1 <= int(first) <= int(last)):
        raise click.BadParameter(
            f"{text!r} is not FIRST:LAST (1 <= FIRST <= LAST)", param_hint="--lines"
        )
    return int(first), int(last)


def _progress(
    quiet: bool,
    sources: dict[str, list[str]] | None = None,
    known: dict[str, int] | None = None,
) -> Callable[[Iterator[Any], str], Iterator[Any]]:
    """A live task count on stderr while rows stream in (see taskpack.base.progress), with its
    total, rate and ETA when the split sizes are `known` or the sources' rows can be counted
    up front (local files)."""
    from taskpack.base.progress import counted
    from taskpack.converters import rows_hint

    totals: dict[str, int | None] = dict(known or {})
    if not quiet:
        for split, uris in (sources or {}).items():
            hints = [rows_hint(uri) for uri in uris]
            totals[split] = None if None in hints else sum(h or 0 for h in hints)
    return lambda tasks, split: counted(tasks, split, total=totals.get(split), quiet=quiet)


def _options(pairs: tuple[str, ...], mapping: Path | None, preset: str | None) -> dict[str, Any]:
    from taskpack.converters import options_file

    options: dict[str, Any] = {}
    if mapping is not None:
        options.update(options_file(mapping))
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


def _table(header: list[str], rows: list[list[str]]) -> None:
    """Columns padded to their widest cell, two spaces apart, under a header."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        cells = [str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)]
        click.echo("  ".join(cells).rstrip())


def _quiet_libraries(quiet: bool) -> None:
    """`datasets` draws bars of its own when saving (Verifiers exports): off with -q or off a
    terminal, like taskpack's."""
    import os
    import sys

    if quiet or not sys.stderr.isatty():
        os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
        if "datasets" in sys.modules:
            sys.modules["datasets"].disable_progress_bars()
