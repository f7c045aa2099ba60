"""Curation steps that make a new version of a task set from published ones, and the lineage
each version records of what it was made from.

A step writes a version whose manifest `source` says: the operation, its inputs (each a ref and
its version digest), its options, what it found and dropped, and taskpack's version. Tasks are
copied as stored, so a kept task keeps its digest; only the version digest changes. `lineage`
follows the inputs back to where they were made from files.

    report = decontaminate("gsm8k@1", ["humaneval@1"], ngram=8)
    keep(report.taskset, report.kept(), "gsm8k-clean", version="1.1.0", source=report.record)
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskpack.errors import TaskpackError
from taskpack.overlap import Hit, contamination, exact_duplicates, near_duplicates, task_text
from taskpack.provenance import asked_path, entries, located
from taskpack.registry.client import open as open_taskset
from taskpack.taskset import TaskSet, TaskSetWriter

if TYPE_CHECKING:
    from taskpack.model import Manifest
    from taskpack.registry.client import RegistryArg

Key = tuple[str, str]  # (split, task id)


def made_from(ts: TaskSet) -> dict[str, Any]:
    """How a step's record names an input: its ref and digest, and, when it is a folder and
    `TASKPACK_LINEAGE_PATHS` asks, the folder's path relative to the working folder (a folder's
    name@version need not be published; `lineage` finds it there). Never an absolute path."""
    m = ts.manifest
    entry: dict[str, Any] = {"ref": m.ref, "digest": m.digest}
    folder = getattr(ts.objects, "root", None)  # as `serve` and `info` tell a folder
    path = asked_path(folder) if folder is not None else None
    if path is not None:
        entry["path"] = path
    return entry


def step_record(
    operation: str, inputs: Sequence[TaskSet], options: Mapping[str, Any], **found: Any
) -> dict[str, Any]:
    """The manifest `source` of a version a step made (the writer stamps its version)."""
    return {
        "operation": operation,
        "inputs": [made_from(ts) for ts in inputs],
        "options": dict(options),
        **found,
    }


def _texts(ts: TaskSet, splits: Sequence[str] | None = None) -> dict[Key, str]:
    return {
        (name, task.id): task_text(task)
        for name in (splits or ts.splits)
        for task in ts.split(name)
    }


@dataclass
class Report:
    """What a step found in `taskset`: `dropped` (split -> ids it would drop) and its
    `record`, ready to be the new version's source."""

    taskset: TaskSet
    dropped: dict[str, list[str]]
    record: dict[str, Any] = field(default_factory=dict)

    def annotations(self) -> dict[str, list[dict[str, Any]]] | None:
        """The pass rates the new version holds per split (None: those the set has)."""
        return None

    def kept(self) -> dict[str, list[int]]:
        """Per split, the positions of the tasks kept, ascending."""
        out = {}
        for name in self.taskset.splits:
            gone = set(self.dropped.get(name, ()))
            out[name] = [i for i, t in enumerate(self.taskset.split(name).ids()) if t not in gone]
        return out


@dataclass
class Contamination(Report):
    hits: list[Hit] = field(default_factory=list)


def decontaminate(
    target: str | os.PathLike[str] | TaskSet,
    against: Sequence[str | os.PathLike[str] | TaskSet],
    *,
    ngram: int = 8,
    splits: Sequence[str] | None = None,
    registry: RegistryArg = None,
) -> Contamination:
    """Every task of `target` (its `splits`, default all) sharing a word `ngram`-gram with a
    task of any reference set (every split of each), open-r1's rule: one shared n-gram is a
    hit. A reference may name its splits (`gsm8k@1:test`, `humaneval:test,extra`). Keys in the
    hits are (split, id) for the target and (ref, split, id) for a reference."""
    ts = _open(target, registry)
    refs = [_with_splits(r, registry) for r in against]
    if not refs:
        raise TaskpackError("decontaminate: no reference set given (--against)")
    ref_texts = {
        (ref.manifest.ref, *key): text
        for ref, ref_splits in refs
        for key, text in _texts(ref, ref_splits).items()
    }
    hits = contamination(_texts(ts, splits), ref_texts, ngram)
    dropped: dict[str, list[str]] = {}
    for hit in hits:
        ids = dropped.setdefault(hit.key[0], [])
        if not ids or ids[-1] != hit.key[1]:
            ids.append(hit.key[1])
    record = step_record(
        "decontaminate",
        [ts],
        {"ngram": ngram, "splits": list(splits or ts.splits), "text": "instruction"},
        checked_against=[{**made_from(r), "splits": list(rs or r.splits)} for r, rs in refs],
        dropped=dropped,
        hits=[
            {"split": h.key[0], "id": h.key[1], "ref": "/".join(h.ref), "ngram": h.ngram}
            for h in hits
        ],
    )
    return Contamination(ts, dropped, record, hits)


@dataclass
class Duplicates(Report):
    clusters: list[list[Key]] = field(default_factory=list)


def dedup(
    target: str | os.PathLike[str] | TaskSet,
    *,
    near: bool = True,
    threshold: float = 0.8,
    registry: RegistryArg = None,
) -> Duplicates:
    """Clusters of duplicate tasks within each split: the same normalised text and answer,
    and with `near`, texts whose word 3-grams overlap `threshold` or more (MinHash LSH). The
    first task of a cluster is kept, the others dropped."""
    ts = _open(target, registry)
    clusters: list[list[Key]] = []
    for name in ts.splits:
        tasks = list(ts.split(name))
        exact = exact_duplicates(((name, t.id), task_text(t), t.answer) for t in tasks)
        found = exact
        if near:
            texts = {(name, t.id): task_text(t) for t in tasks}
            found = _joined(exact + near_duplicates(texts, threshold), list(texts))
        clusters.extend(found)
    dropped: dict[str, list[str]] = {}
    for cluster in clusters:
        dropped.setdefault(cluster[0][0], []).extend(task_id for _, task_id in cluster[1:])
    record = step_record(
        "dedup",
        [ts],
        {"near": near, "threshold": threshold, "text": "instruction", "shingle_words": 3},
        clusters=[[task_id for _, task_id in c] for c in clusters],
        dropped=dropped,
    )
    return Duplicates(ts, dropped, record, clusters)


def _joined(groups: list[list[Key]], order: list[Key]) -> list[list[Key]]:
    """Overlapping groups merged, each in `order`, ordered by their first member."""
    position = {key: i for i, key in enumerate(order)}
    merged: list[set[Key]] = []
    for group in groups:
        members = set(group)
        for other in [m for m in merged if m & members]:
            members |= other
            merged.remove(other)
        merged.append(members)
    ordered = [sorted(m, key=position.__getitem__) for m in merged]
    return sorted(ordered, key=lambda g: position[g[0]])


def keep(
    ts: TaskSet,
    positions: Mapping[str, Sequence[int]],
    target: str | os.PathLike[str],
    *,
    version: str,
    source: Mapping[str, Any],
    name: str | None = None,
    overwrite: bool = False,
    annotations: Mapping[str, list[dict[str, Any]]] | None = None,
) -> Manifest:
    """Write at `target` the tasks of `ts` at `positions` (per split, ascending) as stored,
    with their pass rates (`annotations`, default those `ts` has), as version `version` whose
    source is `source` (a step's record). A split left empty is an error: a set that silently
    lost a split trains on something else."""
    empty = [s for s in ts.splits if not positions.get(s)]
    if empty:
        raise TaskpackError(f"split(s) {', '.join(empty)} would be left empty; nothing was written")
    m = ts.manifest
    with TaskSetWriter(
        target,
        name=name or m.name,
        version=version,
        description=m.description,
        license=m.license,
        overwrite=overwrite,
    ) as writer:
        writer.record(**source)
        for split in ts.splits:
            with writer.split(split) as out:
                out.add_stored(ts, split, keep=positions[split])
            ids = ts.split(split).ids()
            kept = {ids[i] for i in positions[split]}
            rows = annotations[split] if annotations is not None else ts.annotations(split)
            writer.annotate(split, [row for row in rows if row["id"] in kept])
    assert writer.manifest is not None
    return writer.manifest


@dataclass
class PassRates(Report):
    """What `annotate` measured: per split, the annotation rows of the new version, and the
    names in the rollouts that matched no task."""

    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    unmatched: list[str] = field(default_factory=list)

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
    from taskpack import passrates
    from taskpack.objects import file_sha256
    from taskpack.overlap import words
    from taskpack.rollouts import rewards

    if not 0 < success <= 1:  # also NaN
        raise TaskpackError(f"--success {success}: a reward above 0 and at most 1")
    ts = _open(target, registry)
    by_id: dict[str, list[Key]] = {}
    for name in ts.splits:
        for task_id in ts.split(name).ids():
            by_id.setdefault(task_id, []).append((name, task_id))
    by_text: dict[str, list[Key]] | None = None  # built only if a record names a task by text
    found: dict[Key, list[float]] = {}
    unmatched: list[str] = []
    count = 0
    for kind, label, values in rewards(rollouts, key):
        count += len(values)
        if kind == "text" and by_text is None:
            by_text = {}
            for (name, task_id), text in _texts(ts).items():
                by_text.setdefault(" ".join(words(text)), []).append((name, task_id))
        keys = by_id.get(label) if kind == "id" else (by_text or {}).get(" ".join(words(label)))
        if not keys:
            unmatched.append(label if kind == "id" else label[:60])
        for k in keys or ():
            found.setdefault(k, []).extend(values)
    if not found:
        shown = ", ".join(repr(u) for u in unmatched[:3])
        raise TaskpackError(f"no rollout names a task of {ts.manifest.ref} (first: {shown})")
    setup = passrates.settings_key(settings or {})
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
        rows[name] = passrates.sorted_rows(mine)
    record = step_record(
        "annotate",
        [ts],
        {"model": model, "settings": dict(settings or {}), "success": success, "key": key},
        rollouts=[
            located(u, file_sha256(Path(u)) if Path(u).is_file() else None) for u in rollouts
        ],
        counted={"rollouts": count, "tasks": len(found), "unmatched": len(unmatched)},
    )
    return PassRates(ts, {}, record, rows, unmatched)


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
    from taskpack import passrates

    if unmeasured not in ("keep", "drop"):
        raise TaskpackError(f"unmeasured tasks: 'keep' or 'drop', not {unmeasured!r}")
    ts = _open(target, registry)
    edges = passrates.band(within)
    measured = {name: passrates.rates(ts.annotations(name)) for name in ts.splits}
    setups = {key for n in measured for m, key in measured[n] if m == model}
    if settings is not None:
        setup = passrates.settings_key(settings)
    elif len(setups) == 1:
        setup = next(iter(setups))
    elif not setups:
        known = sorted({m for n in measured for m, _ in measured[n]})
        raise TaskpackError(
            f"{ts.manifest.ref} has no pass rates of {model!r} (it has: {known or 'none'})"
        )
    else:
        raise TaskpackError(
            f"{model!r} was measured with several settings; name one with -S: {sorted(setups)}"
        )
    keep_unmeasured = unmeasured == "keep"
    rates: dict[str, dict[str, float]] = {}
    dropped: dict[str, list[str]] = {}
    counted: dict[str, int] = {}
    for name in ts.splits:
        rates[name] = measured[name].get((model, setup), {})
        ids = ts.split(name).ids()
        counted[name] = sum(i not in rates[name] for i in ids)
        dropped[name] = [
            i
            for i in ids
            if (
                not passrates.inside(rates[name][i], edges)
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
    `taskpack.mixture.draws`), split `eval` the evaluation-only ones whole; each task id is
    prefixed by its source's label. Each source is pinned by digest in the manifest. A source
    with no task is an error, never silently left out or repeated."""
    if not parts:
        raise TaskpackError("mix: no sources given")
    bad = [p.ref for p in parts if not 0 <= p.weight < math.inf]
    if bad:
        raise TaskpackError(f"mix: {bad[0]}: a weight must be finite and 0 or more")
    opened = [_open(part.ref, registry) for part in parts]
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
    from taskpack.mixture import draws

    sizes = [len(opened[i].split(parts[i].split)) for i in mixed]
    order = draws(sizes, [parts[i].weight for i in mixed], seed, size)
    entries = [
        {
            "label": label,
            **made_from(ts),
            "split": part.split,
            "weight": part.weight,
            "env": part.env,
            "evaluation_only": part.evaluation_only,
            "tasks": len(ts.split(part.split)),
        }
        for label, part, ts in zip(labels, parts, opened, strict=True)
    ]

    def renamed(i: int, task: Any, repeat: int = 0) -> dict[str, Any]:
        row: dict[str, Any] = task.model_dump()
        row["id"] = f"{labels[i]}/{task.id}" + (f"~{repeat + 1}" if repeat else "")
        return row

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
        with writer.split("train") as out:
            for source, position, repeat in order:
                out.add(renamed(mixed[source], splits[source][position], repeat))
        evaluation = [i for i, part in enumerate(parts) if part.evaluation_only]
        if evaluation:
            with writer.split("eval") as out:
                for i in evaluation:
                    for task in opened[i].split(parts[i].split):
                        out.add(renamed(i, task))
    assert writer.manifest is not None
    return writer.manifest


def next_version(version: str) -> str:
    """The version a step's output takes by default: the next minor one."""
    major, minor, _ = version.split("+")[0].split("-")[0].split(".")
    return f"{major}.{int(minor) + 1}.0"


@dataclass(frozen=True)
class Link:
    """One version in a chain of lineage: its manifest (None: not found here), the entry that
    named it, and how deep in the chain it is."""

    entry: Mapping[str, Any]
    manifest: Manifest | None
    depth: int


def lineage(
    target: str | os.PathLike[str] | TaskSet,
    *,
    registry: RegistryArg = None,
) -> Iterator[Link]:
    """The version at `target`, then what it was made from, depth first, each input found by
    its digest in the registry or else at the folder its record names. Walked with a stack of
    its own, so a chain of any depth ends, and each input is looked for once however many
    records name it; a version's own inputs are followed once."""
    ts = _open(target, registry)
    yield Link(made_from(ts), ts.manifest, 0)
    found: dict[tuple[str, str, str], Manifest | None] = {}
    followed = {ts.manifest.digest}
    stack = [(entry, 1) for entry in reversed(entries(ts.manifest.source, "inputs"))]
    while stack:
        entry, depth = stack.pop()
        key = (str(entry.get("ref")), str(entry.get("digest")), str(entry.get("path")))
        if key not in found:
            hit = _find(entry, registry)
            found[key] = hit.manifest if hit is not None else None
        m = found[key]
        yield Link(entry, m, depth)
        if m is not None and m.digest not in followed:
            followed.add(m.digest)
            stack.extend((e, depth + 1) for e in reversed(entries(m.source, "inputs")))


def _with_splits(
    ref: str | os.PathLike[str] | TaskSet, registry: RegistryArg
) -> tuple[TaskSet, list[str] | None]:
    """A reference set and the splits it names after a colon (None: all of them)."""
    if isinstance(ref, TaskSet):
        return ref, None
    head, colon, tail = os.fspath(ref).rpartition(":")
    if not colon or head.endswith("sha256"):  # no splits named; or a digest's own colon
        return _open(ref, registry), None
    ts = _open(head, registry)
    names = tail.split(",")
    missing = [n for n in names if n not in ts.splits]
    if missing:
        raise TaskpackError(f"{head} has no split {', '.join(missing)} ({', '.join(ts.splits)})")
    return ts, names


def _find(entry: Mapping[str, Any], registry: RegistryArg) -> TaskSet | None:
    name = str(entry.get("ref", "")).split("@")[0]
    candidates = [f"{name}@{entry.get('digest')}"]
    if entry.get("path"):
        candidates.append(str(entry["path"]))
    for candidate in candidates:
        try:
            ts = _open(candidate, registry)
        except TaskpackError:
            continue
        if ts.manifest.digest == entry.get("digest"):
            return ts
    return None


def _open(target: str | os.PathLike[str] | TaskSet, registry: RegistryArg) -> TaskSet:
    return target if isinstance(target, TaskSet) else open_taskset(target, registry=registry)
