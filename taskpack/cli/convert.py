"""Commands that make task sets and read or write other formats: convert, export, merge,
example, formats, catalog."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # each command imports what it uses: `taskpack --help` loads neither
    # pydantic nor pyarrow
    pass
from taskpack.cli._common import (
    _complete_recipes,
    _default_name,
    _echo_json,
    _formats,
    _open_any,
    _options,
    _progress,
    _quiet_libraries,
    _span,
    _table,
    _user_errors,
    _write_options,
    embed_option,
    json_option,
    quiet_option,
    registry_option,
    write_options,
)


@click.command()
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
    from taskpack.storage.taskset import open_folder

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


@click.command()
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Replace TARGET if it exists.")
@_user_errors
def example(target: Path, force: bool) -> None:
    """Write a small generated demo task set to TARGET."""
    from taskpack.example import build_example

    m = build_example(target, overwrite=force)
    counts = ", ".join(f"{n}: {s.rows}" for n, s in m.splits.items())
    click.echo(f"wrote {m.name}@{m.version} to {target} ({counts})")


@click.command()
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


@click.command()
@click.argument("name", required=False)
@json_option
@_user_errors
def formats(name: str | None, as_json: bool) -> None:
    """List the formats taskpack reads (--from) and writes (--to), each option with what it
    does; with NAME, that format and each of its options in full."""
    from taskpack.converters import get, names

    chosen = [get(name).name] if name is not None else names()  # an unknown name: did you mean
    if as_json:
        _echo_json(
            [
                {
                    "name": n,
                    "modes": get(n).modes,
                    "summary": get(n).summary,
                    **{
                        f"{kind}_options": {o: text for o, text, _ in _options_of(get(n), kind)}
                        for kind in ("read", "write")
                    },
                }
                for n in chosen
            ]
        )
        return
    for n in chosen:
        fmt = get(n)
        click.echo(f"{n:<16}{fmt.modes:<12}{fmt.summary}")
        for kind, flag in (("read", "-O"), ("write", "-W")):
            for option, text, default in _options_of(fmt, kind):
                said = text if name is not None else text.split(". ")[0].rstrip(".") + "."
                click.echo(f"{'':<16}{flag} {option}{default}: {said}")


def _options_of(fmt: Any, kind: str) -> list[tuple[str, str, str]]:
    """(option, what it does, its default shown) of a format's read or write options."""
    model = (fmt.read_options if fmt.read else None) if kind == "read" else None
    if kind == "write":
        model = fmt.write_options if fmt.write else None
    found = []
    for option, info in model.model_fields.items() if model else ():
        default = (
            ""
            if info.is_required()
            else f" (default: {info.get_default(call_default_factory=True)!r})"
        )
        found.append((option, info.description or "", default))
    return found


@click.group()
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


def _report_export(result: Any) -> None:
    for line in result.losses:
        click.echo(f"loss: {line}", err=True)
    names = ", ".join(str(p.relative_to(result.out)) for p in result.files)
    per_split = ", ".join(f"{split}: {n}" for split, n in result.tasks.items())
    total = sum(result.tasks.values())
    click.echo(f"wrote {total} tasks ({per_split}) to {result.out}: {names}")


@click.command("export")
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
            say=lambda text: click.echo(f"{fmt}: {text}", err=True),
        )
    )
