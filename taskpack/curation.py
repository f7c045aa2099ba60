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

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from taskpack.errors import TaskpackError
from taskpack.overlap import Hit, contamination, exact_duplicates, near_duplicates, task_text
from taskpack.provenance import entries
from taskpack.registry.client import open as open_taskset
from taskpack.taskset import TaskSet, TaskSetWriter

if TYPE_CHECKING:
    from taskpack.model import Manifest
    from taskpack.registry.client import RegistryArg

Key = tuple[str, str]  # (split, task id)


def made_from(ts: TaskSet) -> dict[str, Any]:
    """How a step's record names an input: its ref and digest, and the folder it was read
    from when it is one (a folder's name@version need not be published)."""
    m = ts.manifest
    entry: dict[str, Any] = {"ref": m.ref, "digest": m.digest}
    if not ts.where.startswith(m.ref):
        entry["path"] = os.path.abspath(ts.where)
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
) -> Manifest:
    """Write at `target` the tasks of `ts` at `positions` (per split, ascending) as stored,
    as version `version` whose source is `source` (a step's record). A split left empty is
    an error: a set that silently lost a split trains on something else."""
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
    its digest in the registry or else at the folder it was read from."""
    ts = _open(target, registry)
    yield Link(made_from(ts), ts.manifest, 0)
    yield from _inputs(ts.manifest, 1, registry, {ts.manifest.digest})


def _inputs(
    m: Manifest,
    depth: int,
    registry: RegistryArg,
    seen: set[str],
) -> Iterator[Link]:
    for entry in entries(m.source, "inputs"):
        found = _find(entry, registry)
        yield Link(entry, found.manifest if found else None, depth)
        if found is not None and found.manifest.digest not in seen:
            seen.add(found.manifest.digest)
            yield from _inputs(found.manifest, depth + 1, registry, seen)


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
