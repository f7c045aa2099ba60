"""Commands that move versions between a folder, a registry and the cache: publish, pull,
lock."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

if TYPE_CHECKING:  # each command imports what it uses: `taskpack --help` loads neither
    # pydantic nor pyarrow
    from taskpack.storage.taskset import TaskSet
from taskpack.cli._common import (
    _echo_json,
    _user_errors,
    json_option,
    quiet_option,
    registry_option,
)


@click.command()
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
@click.option(
    "--check",
    "sandbox",
    is_flag=True,
    help="Run the tasks in the sandbox first (as `taskpack check` on a Harbor export): publish "
    "only if each reference scores 1, no solution 0 and no forger above 0, and record the "
    "check in the version (under its digest).",
)
@click.option(
    "--sample",
    type=click.IntRange(1),
    help="With --check: check this many tasks, spread evenly over the splits (default: all).",
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
    sandbox: bool,
    sample: int | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Publish the task set at SOURCE (a folder, or NAME@VERSION published elsewhere: mirrored
    with the same digest) as an immutable version, its bytes and rows checked first. With
    --check, a folder's manifest gets the check's record too, so folder and registry agree."""
    from taskpack.registry import Location
    from taskpack.registry.client import publish as publish_taskset

    if sample is not None and not sandbox:
        raise click.UsageError("--sample chooses the tasks --check runs: give --check too")
    where = Location.parse(registry)
    chosen: str | TaskSet = source
    if sandbox:
        chosen = _gated(source, source_registry, sample, quiet)
    m, created = publish_taskset(
        chosen,
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


def _gated(source: str, source_registry: str | None, sample: int | None, quiet: bool) -> TaskSet:
    """SOURCE with its passing sandbox check recorded (`taskpack.gate`); a folder's manifest
    rewritten to match."""
    from taskpack.base.fs import write_atomic
    from taskpack.base.objects import MANIFEST
    from taskpack.base.progress import counted
    from taskpack.base.provenance import SANDBOX_CHECK
    from taskpack.gate import checked
    from taskpack.registry.client import open as open_any

    ts = open_any(source, registry=source_registry)
    passed = checked(
        ts, sample, progress=lambda got, n: counted(got, "checked", total=n, quiet=quiet)
    )
    folder = Path(source)
    if (folder / MANIFEST).is_file():
        text = passed.manifest.model_dump_json(indent=2) + "\n"
        write_atomic(folder / MANIFEST, text.encode())
    if not quiet:
        record = cast("dict[str, int]", passed.manifest.source[SANDBOX_CHECK])
        click.echo(f"checked {record['checked']} of {record['of']} tasks in the sandbox", err=True)
    return passed


@click.command()
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
    from taskpack.base.objects import default_cache_dir
    from taskpack.registry.client import pull as pull_version

    ts = pull_version(ref, splits, registry=registry, files=files, lockfile=lockfile, quiet=quiet)
    m = ts.manifest
    fetched = list(splits or tuple(m.splits))
    if as_json:
        fields = {"name": m.name, "version": m.version, "digest": m.digest, "splits": fetched}
        _echo_json({**fields, "cache": str(default_cache_dir())})
        return
    click.echo(f"{m.ref} ({m.digest}): {', '.join(fetched)} in {default_cache_dir()}")


@click.command()
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
