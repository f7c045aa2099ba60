"""What every curation step shares: a version written from kept tasks (`keep`), the record a
step leaves in the manifest's `source` (its operation, inputs with their digests, options and
findings), and `lineage`, which follows the inputs back to where they were made from files.
Tasks are copied as stored, so a kept task keeps its digest; only the version digest changes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from taskpack.base.provenance import asked_path, entries
from taskpack.curation.overlap import task_text
from taskpack.errors import TaskpackError
from taskpack.registry.client import open as open_taskset
from taskpack.storage.taskset import TaskSet
from taskpack.storage.writer import TaskSetWriter

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


def texts(ts: TaskSet, splits: Sequence[str] | None = None) -> dict[Key, str]:
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
    ts = open_target(target, registry)
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


def with_splits(
    ref: str | os.PathLike[str] | TaskSet, registry: RegistryArg
) -> tuple[TaskSet, list[str] | None]:
    """A reference set and the splits it names after a colon (None: all of them)."""
    if isinstance(ref, TaskSet):
        return ref, None
    head, colon, tail = os.fspath(ref).rpartition(":")
    if not colon or head.endswith("sha256"):  # no splits named; or a digest's own colon
        return open_target(ref, registry), None
    ts = open_target(head, registry)
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
            ts = open_target(candidate, registry)
        except TaskpackError:
            continue
        if ts.manifest.digest == entry.get("digest"):
            return ts
    return None


def open_target(target: str | os.PathLike[str] | TaskSet, registry: RegistryArg) -> TaskSet:
    return target if isinstance(target, TaskSet) else open_taskset(target, registry=registry)
