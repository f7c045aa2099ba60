"""Steps that find what a set should not hold: tasks that overlap a reference set
(`decontaminate`), and tasks that repeat within it (`dedup`). Each returns a report whose kept
tasks `keep` writes as a new version."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from taskpack.curation.overlap import (
    Hit,
    contamination,
    exact_duplicates,
    near_duplicates,
    task_text,
)
from taskpack.errors import TaskpackError
from taskpack.storage.taskset import TaskSet

if TYPE_CHECKING:
    from taskpack.registry.client import RegistryArg

from taskpack.curation.steps import (
    Key,
    Report,
    made_from,
    open_target,
    step_record,
    texts,
    with_splits,
)


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
    ts = open_target(target, registry)
    refs = [with_splits(r, registry) for r in against]
    if not refs:
        raise TaskpackError("decontaminate: no reference set given (--against)")
    ref_texts = {
        (ref.manifest.ref, *key): text
        for ref, ref_splits in refs
        for key, text in texts(ref, ref_splits).items()
    }
    hits = contamination(texts(ts, splits), ref_texts, ngram)
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
    ts = open_target(target, registry)
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
