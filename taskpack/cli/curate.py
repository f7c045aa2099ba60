"""Curation steps, each a report and, with -o, a new version recording its lineage: annotate,
filter, decontaminate, dedup, mix, lineage."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # each command imports what it uses: `taskpack --help` loads neither
    # pydantic nor pyarrow
    pass
from taskpack.cli._common import (
    _echo_json,
    _pairs,
    _user_errors,
    json_option,
    registry_option,
)

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


@click.command()
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


@click.command()
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


@click.command()
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
    from taskpack.storage.ratings import histogram, rates, settings_key

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
    strangers = list(dict.fromkeys(report.unmatched))  # each name once, first seen first
    shown = ", ".join(repr(name) for name in strangers[:3])
    lines = [
        f"{counted['rollouts']} rollouts of {model} for {counted['tasks']} tasks"
        + (
            f"; {len(report.unmatched)} records name no task of the set, {len(strangers)} "
            f"names (first: {shown})"
            if strangers
            else ""
        )
        + (
            f"; {len(report.errors)} graded `error` left out (no reward, never a 0)"
            if report.errors
            else ""
        )
    ]
    setup = (model, settings_key(report.record["options"]["settings"]))
    for split, rows in report.rows.items():
        mine = rates(rows).get(setup)
        if mine:
            total = report.taskset.manifest.splits[split].rows
            lines.append(f"{split}: {len(mine)} of {total} tasks measured; pass rates:")
            lines += histogram(mine.values())
    _finish_step(report, lines, **step)


@click.command(name="filter")
@click.argument("target")
@click.option(
    "--pass-rate",
    "within",
    required=True,
    help="LOW..HIGH (0.1..0.9: what the model solves 10-90% of the time), or a band: "
    "unsolved, hard, medium, easy, solved.",
)
@click.option("--model", required=True, help="Whose pass rates.")
@settings_option
@click.option(
    "--unmeasured",
    type=click.Choice(["keep", "drop"]),
    default="keep",
    show_default=True,
    help="What becomes of a task the model has no rollouts of, in every split.",
)
@_step_output
@_user_errors
def filter_command(
    target: str,
    within: str,
    model: str,
    settings: tuple[str, ...],
    unmeasured: str,
    **step: Any,
) -> None:
    """Keep TARGET's tasks whose pass rate for MODEL lies in a band, as recorded by `taskpack
    annotate`: prints each split's histogram and how many survive; -o writes them."""
    from taskpack.curation import filter_pass_rate
    from taskpack.storage.ratings import band, histogram

    report = filter_pass_rate(
        target,
        within,
        model=model,
        settings=_settings(settings),
        unmeasured=unmeasured,
        registry=step["registry"],
    )
    fate = "kept" if report.unmeasured_kept else "dropped"
    other = "drop" if report.unmeasured_kept else "keep"
    lines = []
    for split, info in report.taskset.manifest.splits.items():
        kept = info.rows - len(report.dropped[split])
        missing = report.unmeasured[split]
        if missing == info.rows:
            lines.append(
                f"{split}: {info.rows} tasks, none measured by {model}: all {fate} "
                f"(--unmeasured {other} to {other} them)"
            )
        else:
            note = f"; {missing} not measured, {fate}" if missing else ""
            lines.append(f"{split}: {info.rows} tasks, {kept} kept ({within}){note}")
            lines += histogram(list(report.rates[split].values()), band(within))
        if not kept:
            lines.append(f"{split}: no task is left (a new version would be refused)")
    _finish_step(report, lines, **step)


@click.command()
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
    verl export also writes verl's data config; `curation.mixture.sampler` keeps drawing."""
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
    mixed = [e for e in m.mixture() if not e["evaluation_only"]]
    total = sum(int(e.get("drawn") or 0) for e in mixed) or 1
    for entry in m.mixture():
        use = "evaluation only" if entry["evaluation_only"] else f"weight {entry['weight']:g}"
        if "drawn" in entry:  # what the draw holds: a source that runs out ends it
            use += f", drawn {entry['drawn']} ({entry['drawn'] / total:.0%})"
        click.echo(
            f"{entry['label']}: {entry['ref']} {entry['split']}, {entry['tasks']} tasks, {use}"
        )
    counts = ", ".join(f"{n}: {s.rows}" for n, s in m.splits.items())
    click.echo(f"wrote {m.ref} ({counts}), digest {m.digest}, to {output}")


@click.command()
@click.argument("target")
@registry_option
@json_option
@_user_errors
def lineage(target: str, registry: str | None, as_json: bool) -> None:
    """What TARGET (a folder or NAME@VERSION) was made from, back to its source files: each
    version's operation, options and inputs, found by digest in the registry or at the
    folder they were read from."""
    from taskpack.base.provenance import step_lines
    from taskpack.curation import lineage as chain

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
