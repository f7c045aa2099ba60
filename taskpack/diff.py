"""What changed between two versions of a task set, by task digest: cheap (two columns per
split, no task is built) and exact (a task whose content changed has another digest)."""

from __future__ import annotations

from dataclasses import dataclass, field

from taskpack.taskset import TaskSet


@dataclass(frozen=True)
class SplitDiff:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)


def diff(old: TaskSet, new: TaskSet) -> dict[str, SplitDiff]:
    """Per split of either version: ids added, removed, and changed (same id, other digest)."""
    out = {}
    for name in sorted(set(old.splits) | set(new.splits)):
        before = old.split(name).digests() if name in old.splits else {}
        after = new.split(name).digests() if name in new.splits else {}
        out[name] = SplitDiff(
            added=sorted(after.keys() - before.keys()),
            removed=sorted(before.keys() - after.keys()),
            changed=sorted(k for k in before.keys() & after.keys() if before[k] != after[k]),
        )
    return out
