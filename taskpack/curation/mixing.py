"""The `mix` step: a new version made of parts of published sets, each drawn by weight
(the draws themselves, and a trainer's sampler over a mixture, are `curation.mixture`)."""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from taskpack.curation.steps import made_from, open_target
from taskpack.errors import TaskpackError
from taskpack.storage.writer import TaskSetWriter

if TYPE_CHECKING:
    from taskpack.model import Manifest
    from taskpack.registry.client import RegistryArg
    from taskpack.storage.taskset import TaskSet


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
    from taskpack.curation.mixture import draws

    opened = _opened(parts, registry)
    labels = _labels(parts, opened)
    mixed = [i for i, part in enumerate(parts) if not part.evaluation_only]
    if not mixed or not sum(parts[i].weight for i in mixed):
        raise TaskpackError("mix: no source to train on with a weight above 0")
    sizes = [len(opened[i].split(parts[i].split)) for i in mixed]
    order = draws(sizes, [parts[i].weight for i in mixed], seed, size)
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
    with TaskSetWriter(
        target, name=name, version=version, description=description, overwrite=overwrite
    ) as writer:
        writer.record(
            "mix",
            inputs=[made_from(ts) for ts in opened],
            options={"seed": seed, "size": size},
            mixture=entries,
        )
        sources = [_Source(labels[i], opened[i], parts[i].split) for i in range(len(parts))]
        with writer.split("train") as out:
            notes: list[dict[str, Any]] = []
            for source, position, repeat in order:
                notes += sources[mixed[source]].add(out, position, repeat)
        writer.annotate("train", notes)
        evaluation = [sources[i] for i, part in enumerate(parts) if part.evaluation_only]
        if evaluation:
            with writer.split("eval") as out:
                notes = []
                for held in evaluation:
                    for position in range(len(held.tasks)):
                        notes += held.add(out, position)
            writer.annotate("eval", notes)
    assert writer.manifest is not None
    return writer.manifest


def _opened(parts: Sequence[Part], registry: RegistryArg) -> list[TaskSet]:
    """Each part's set, opened and checked: weights finite and 0 or more, no version's split
    named twice, each split there and holding a task."""
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
    for part, ts in zip(parts, opened, strict=True):
        if part.split not in ts.splits:
            raise TaskpackError(f"{ts.manifest.ref} has no split {part.split!r} ({ts.splits})")
        if not len(ts.split(part.split)):
            raise TaskpackError(f"mix: {ts.manifest.ref} split {part.split!r} has no task")
    return opened


def _labels(parts: Sequence[Part], opened: Sequence[TaskSet]) -> list[str]:
    """Each source's label, which prefixes its tasks' ids: its set's name, `-split` where a
    set gives two sources, and a `+` for each further repeat."""
    labels: list[str] = []
    for part, ts in zip(parts, opened, strict=True):
        name = ts.manifest.name
        label = name if name not in labels else f"{name}-{part.split}"
        while label in labels:
            label += "+"
        labels.append(label)
    return labels


class _Source:
    """One source's split as the mixture writes it: its tasks renamed by its label, each with
    its pass rates (a curriculum orders a mixture by them, `export -W order=...`)."""

    def __init__(self, label: str, ts: TaskSet, split: str) -> None:
        self.label, self.tasks = label, ts.split(split)
        self.ids = self.tasks.ids()
        self.rates: dict[str, list[dict[str, Any]]] = {}
        for row in ts.annotations(split):
            self.rates.setdefault(row["id"], []).append(row)

    def add(self, out: Any, position: int, repeat: int = 0) -> list[dict[str, Any]]:
        """Task `position` written to `out` under its new id (`~2` marks its second time);
        its pass rates, under that id."""
        row: dict[str, Any] = self.tasks[position].model_dump()
        row["id"] = f"{self.label}/{row['id']}" + (f"~{repeat + 1}" if repeat else "")
        out.add(row)
        return [{**rate, "id": row["id"]} for rate in self.rates.get(self.ids[position], [])]
