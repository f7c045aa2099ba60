"""The `mix` step: a new version made of parts of published sets, each drawn by weight
(the draws themselves, and a trainer's sampler over a mixture, are `curation.mixture`)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from taskpack.curation.steps import made_from, open_target
from taskpack.errors import TaskpackError
from taskpack.storage.writer import TaskSetWriter

if TYPE_CHECKING:
    from taskpack.model import Manifest
    from taskpack.registry.client import RegistryArg


@dataclass(frozen=True)
class Part:
    """One source of a mixture: a set's split, its weight, the environment its tasks run in
    (a trainer's name for it), and whether it is for evaluation only (not mixed in)."""

    ref: str
    weight: float
    split: str = "train"
    env: str | None = None
    evaluation_only: bool = False

    @classmethod
    def parse(cls, text: str) -> Part:
        """`REF:WEIGHT` or `REF:SPLIT:WEIGHT` (`gsm8k@1:0.7`, `math@2:test:0.3`)."""
        head, colon, weight = text.rpartition(":")
        try:
            value = float(weight)
        except ValueError:
            value = -1.0
        if not colon or not head or not 0 <= value < math.inf:
            raise TaskpackError(
                f"mixture source {text!r}: expected REF[:SPLIT]:WEIGHT (a finite weight, 0 or more)"
            )
        ref, colon, split = head.rpartition(":")
        if colon and ref and not ref.endswith("sha256"):
            return cls(ref, value, split)
        return cls(head, value)


def mix(
    name: str,
    parts: Sequence[Part],
    target: str | os.PathLike[str],
    *,
    version: str = "1.0.0",
    seed: int = 0,
    size: int | None = None,
    description: str = "",
    overwrite: bool = False,
    registry: RegistryArg = None,
) -> Manifest:
    """Write at `target` a mixture version of the `parts`: split `train` a seeded draw from
    the sources mixed in, by weight, until one runs out (or `size` tasks, repeating; see
    `taskpack.curation.mixture.draws`), split `eval` the evaluation-only ones whole; each task id is
    prefixed by its source's label, and keeps its pass rates. Each source is pinned by digest
    in the manifest. A source with no task is an error, never silently left out or
    repeated."""
    if not parts:
        raise TaskpackError("mix: no sources given")
    bad = [p.ref for p in parts if not 0 <= p.weight < math.inf]
    if bad:
        raise TaskpackError(f"mix: {bad[0]}: a weight must be finite and 0 or more")
    opened = [open_target(part.ref, registry) for part in parts]
    named: dict[tuple[str, str, str], int] = {}  # one version's split, however it is named
    for k, (part, ts) in enumerate(zip(parts, opened, strict=True)):
        first = named.setdefault((ts.manifest.name, ts.manifest.digest, part.split), k)
        if first != k:
            raise TaskpackError(
                f"mix: {part.ref} split {part.split!r} is named twice (also as "
                f"{parts[first].ref}): give each source once, with the weight it should have"
            )
    labels: list[str] = []
    for part, ts in zip(parts, opened, strict=True):
        label = (
            ts.manifest.name
            if ts.manifest.name not in labels
            else f"{ts.manifest.name}-{part.split}"
        )
        while label in labels:
            label += "+"
        labels.append(label)
    for part, ts in zip(parts, opened, strict=True):
        if part.split not in ts.splits:
            raise TaskpackError(f"{ts.manifest.ref} has no split {part.split!r} ({ts.splits})")
        if not len(ts.split(part.split)):
            raise TaskpackError(f"mix: {ts.manifest.ref} split {part.split!r} has no task")
    mixed = [i for i, part in enumerate(parts) if not part.evaluation_only]
    if not mixed or not sum(parts[i].weight for i in mixed):
        raise TaskpackError("mix: no source to train on with a weight above 0")
    from taskpack.curation.mixture import draws

    sizes = [len(opened[i].split(parts[i].split)) for i in mixed]
    order = draws(sizes, [parts[i].weight for i in mixed], seed, size)
    from collections import Counter

    drawn = Counter(mixed[source] for source, _, _ in order)  # what each source gave
    entries = [
        {
            "label": label,
            **made_from(ts),
            "split": part.split,
            "weight": part.weight,
            "env": part.env,
            "evaluation_only": part.evaluation_only,
            "tasks": len(ts.split(part.split)),
            **({} if part.evaluation_only else {"drawn": drawn[i]}),
        }
        for i, (label, part, ts) in enumerate(zip(labels, parts, opened, strict=True))
    ]

    def renamed(i: int, task: Any, repeat: int = 0) -> dict[str, Any]:
        row: dict[str, Any] = task.model_dump()
        row["id"] = f"{labels[i]}/{task.id}" + (f"~{repeat + 1}" if repeat else "")
        return row

    def by_id(i: int) -> dict[str, list[dict[str, Any]]]:
        """Source `i`'s pass rates, per task id: they come with its tasks (a curriculum orders
        a mixture by them, `export -W order=...`)."""
        rows: dict[str, list[dict[str, Any]]] = {}
        for row in opened[i].annotations(parts[i].split):
            rows.setdefault(row["id"], []).append(row)
        return rows

    def carried(rates: dict[str, list[dict[str, Any]]], was: str, now: str) -> list[dict[str, Any]]:
        return [{**row, "id": now} for row in rates.get(was, [])]

    with TaskSetWriter(
        target, name=name, version=version, description=description, overwrite=overwrite
    ) as writer:
        writer.record(
            "mix",
            inputs=[made_from(ts) for ts in opened],
            options={"seed": seed, "size": size},
            mixture=entries,
        )
        splits = [opened[i].split(parts[i].split) for i in mixed]
        measured = [by_id(i) for i in mixed]
        ids = [split.ids() for split in splits]
        notes: list[dict[str, Any]] = []
        with writer.split("train") as out:
            for source, position, repeat in order:
                row = renamed(mixed[source], splits[source][position], repeat)
                out.add(row)
                notes += carried(measured[source], ids[source][position], row["id"])
        writer.annotate("train", notes)
        evaluation = [i for i, part in enumerate(parts) if part.evaluation_only]
        if evaluation:
            notes = []
            with writer.split("eval") as out:
                for i in evaluation:
                    rates = by_id(i)
                    for task in opened[i].split(parts[i].split):
                        row = renamed(i, task)
                        out.add(row)
                        notes += carried(rates, task.id, row["id"])
            writer.annotate("eval", notes)
    assert writer.manifest is not None
    return writer.manifest
