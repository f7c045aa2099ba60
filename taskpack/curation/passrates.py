"""Steps over pass rates: `annotate` measures them from rollout files into a new version's
annotations; `filter_pass_rate` keeps the tasks whose rate falls in a band. How a version
stores them is `taskpack.storage.ratings`."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskpack.base.provenance import located
from taskpack.errors import TaskpackError
from taskpack.storage.taskset import TaskSet

if TYPE_CHECKING:
    from taskpack.registry.client import RegistryArg

from taskpack.curation.steps import Key, Report, open_target, step_record, texts


@dataclass
class PassRates(Report):
    """What `annotate` measured: per split, the annotation rows of the new version, and the
    names in the rollouts that matched no task."""

    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    unmatched: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # rollouts graded `error`: left out

    def annotations(self) -> dict[str, list[dict[str, Any]]] | None:
        return self.rows


def annotate(
    target: str | os.PathLike[str] | TaskSet,
    rollouts: Sequence[str],
    *,
    model: str,
    settings: Mapping[str, Any] | None = None,
    success: float = 1.0,
    key: str | None = None,
    registry: RegistryArg = None,
) -> PassRates:
    """Pass rates of `model` (sampled with `settings`) from rollout files: per task, how many
    rollouts, how many scored `success` or more, and their mean reward. They replace what the
    set held for the same model and settings; other models' stay."""
    from taskpack.base.objects import file_sha256
    from taskpack.curation.overlap import words
    from taskpack.curation.rollouts import rewards
    from taskpack.storage import ratings

    if not 0 < success <= 1:  # also NaN
        raise TaskpackError(f"--success {success}: a reward above 0 and at most 1")
    ts = open_target(target, registry)
    by_id: dict[str, list[Key]] = {}
    for name in ts.splits:
        for task_id in ts.split(name).ids():
            by_id.setdefault(task_id, []).append((name, task_id))
    by_text: dict[str, list[Key]] | None = None  # built only if a record names a task by text
    found: dict[Key, list[float]] = {}
    unmatched: list[str] = []
    errors: list[str] = []
    count = 0
    for kind, label, values in rewards(rollouts, key, errors):
        count += len(values)
        if kind == "text" and by_text is None:
            by_text = {}
            for (name, task_id), text in texts(ts).items():
                by_text.setdefault(" ".join(words(text)), []).append((name, task_id))
        keys = by_id.get(label) if kind == "id" else (by_text or {}).get(" ".join(words(label)))
        if not keys:
            unmatched.append(label if kind == "id" else label[:60])
        for k in keys or ():
            found.setdefault(k, []).extend(values)
    if not found:
        shown = ", ".join(repr(u) for u in unmatched[:3])
        raise TaskpackError(f"no rollout names a task of {ts.manifest.ref} (first: {shown})")
    setup = ratings.settings_key(settings or {})
    rows: dict[str, list[dict[str, Any]]] = {}
    for name in ts.splits:
        mine = [r for r in ts.annotations(name) if (r["model"], r["settings"]) != (model, setup)]
        for (split, task_id), values in found.items():
            if split == name:
                mine.append(
                    {
                        "id": task_id,
                        "model": model,
                        "settings": setup,
                        "count": len(values),
                        "correct": sum(v >= success for v in values),
                        "mean": sum(values) / len(values),
                    }
                )
        rows[name] = ratings.sorted_rows(mine)
    record = step_record(
        "annotate",
        [ts],
        {"model": model, "settings": dict(settings or {}), "success": success, "key": key},
        rollouts=[
            located(u, file_sha256(Path(u)) if Path(u).is_file() else None) for u in rollouts
        ],
        counted={"rollouts": count, "tasks": len(found), "unmatched": len(unmatched)}
        | ({"errors": len(errors)} if errors else {}),
    )
    return PassRates(ts, {}, record, rows, unmatched, errors)


@dataclass
class Band(Report):
    """What `filter_pass_rate` kept: per split, every measured task's pass rate, and how many
    tasks had none (kept or dropped as `unmeasured` said)."""

    rates: dict[str, dict[str, float]] = field(default_factory=dict)
    unmeasured: dict[str, int] = field(default_factory=dict)
    unmeasured_kept: bool = True


def filter_pass_rate(
    target: str | os.PathLike[str] | TaskSet,
    within: str,
    *,
    model: str,
    settings: Mapping[str, Any] | None = None,
    unmeasured: str = "keep",
    registry: RegistryArg = None,
) -> Band:
    """The tasks whose pass rate for `model` lies `within` a band (`0.1..0.9`, `hard`). A
    task the model has no rollouts of is kept, or dropped with `unmeasured="drop"`: one rule
    in every split, measured wholly, partly or not at all. Without `settings`, the model's
    one setup is used (several: name it)."""
    from taskpack.storage import ratings

    if unmeasured not in ("keep", "drop"):
        raise TaskpackError(f"unmeasured tasks: 'keep' or 'drop', not {unmeasured!r}")
    ts = open_target(target, registry)
    edges = ratings.band(within)
    measured = {name: ts.annotations(name) for name in ts.splits}
    setup, rows = ratings.of_model(measured, model, settings, ts.manifest.ref)
    keep_unmeasured = unmeasured == "keep"
    rates: dict[str, dict[str, float]] = {}
    dropped: dict[str, list[str]] = {}
    counted: dict[str, int] = {}
    for name in ts.splits:
        rates[name] = {i: ratings.rate(row) for i, row in rows[name].items()}
        ids = ts.split(name).ids()
        counted[name] = sum(i not in rates[name] for i in ids)
        dropped[name] = [
            i
            for i in ids
            if (
                not ratings.inside(rates[name][i], edges)
                if i in rates[name]
                else not keep_unmeasured
            )
        ]
    record = step_record(
        "filter",
        [ts],
        {
            "pass_rate": within,
            "model": model,
            "settings": json.loads(setup),
            "unmeasured": unmeasured,
        },
        dropped=dropped,
    )
    return Band(ts, dropped, record, rates, counted, keep_unmeasured)
