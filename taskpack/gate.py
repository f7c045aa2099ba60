"""The publish gate (`taskpack publish --check`): a version lands only once its tasks work.

The tasks (all, or `sample` of them spread evenly over the splits) are exported as Harbor task
folders and run in the sandbox as `taskpack check` runs them: each reference solution must
score 1, no solution 0, and no forger of the battery above 0. A task that cannot run here (no
reference solution, an image this machine cannot build) fails the gate too: a version said to
be checked must have been. The passing check is recorded in the version's lineage (`source`,
which the version digest covers from format 3 on), so the record cannot be added or altered
without changing the digest a trainer pins.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from taskpack import __version__
from taskpack.base.digests import PINS_SOURCE, version_digest
from taskpack.base.provenance import CHECK_KEY, SANDBOX_CHECK, check_signature
from taskpack.errors import TaskpackError
from taskpack.exporter import export
from taskpack.rewards.trials import FORGERS, Bounds, TaskCheck, check_export, planned
from taskpack.storage.taskset import TaskSet


def checked(
    ts: TaskSet,
    sample: int | None = None,
    limits: Bounds | None = None,
    jobs: int | None = None,
    progress: Callable[[Iterator[TaskCheck], int], Iterator[TaskCheck]] | None = None,
) -> TaskSet:
    """`ts` with its passing check recorded (a new manifest and digest, the same objects), or
    a TaskpackError naming each task that failed or did not run, one line each."""
    m = ts.manifest
    if m.format_version < PINS_SOURCE:
        raise TaskpackError(
            f"{m.ref} is of format version {m.format_version}, whose digest would not cover the "
            f"check's record: rewrite it first (`taskpack upgrade`)"
        )
    with tempfile.TemporaryDirectory(prefix="taskpack-gate-") as tmp:
        root = Path(tmp) / "harbor"
        export(ts, "harbor", root)
        everything = planned(root)
        chosen = _spread(everything, sample)
        results = check_export(root, limits, jobs, progress, ids={i for i, _ in chosen})
        bad = [f"{r.named}: {r.status}: {r.reason}" for r in results if r.status != "ok"]
    if bad:
        raise TaskpackError(
            f"{m.ref}: not published: {len(bad)} of {len(results)} tasks checked do not work\n"
            + "\n".join(bad)
        )
    record: dict[str, Any] = {
        "checked": len(results),
        "of": len(everything),
        "forgers": sorted(FORGERS),
        "by": f"taskpack {__version__}",
    }
    key = os.environ.get(CHECK_KEY)
    if key:  # a hub given the same key shows the check as verified, not only claimed
        record["signature"] = check_signature(m, record, key.encode())
    unsealed = m.model_copy(update={"source": {**m.source, SANDBOX_CHECK: record}})
    return TaskSet(unsealed.model_copy(update={"digest": version_digest(unsealed)}), ts.objects)


def _spread(tasks: list[tuple[str, Path]], sample: int | None) -> list[tuple[str, Path]]:
    """`sample` of the tasks, evenly spaced from the first (all of them without a sample)."""
    if sample is None or sample >= len(tasks):
        return tasks
    if sample < 1:
        raise TaskpackError("--sample takes a number of tasks, at least 1")
    return [tasks[k * len(tasks) // sample] for k in range(sample)]
