"""An import too large for one process, run as parts on a Ray cluster: the engine the RL
trainers (verl, SkyRL, OpenRLHF) already run on, so the cluster that trains can convert.

    import taskpack                  # on a cluster: RAY_ADDRESS, or ray.init(address=...) first
    taskpack.import_sharded("gsm8k.taskset", {"train": ["train.jsonl"]}, "gsm8k", name="gsm8k")

Each JSON Lines source is cut into spans of lines (`import_sources(..., lines=)`: rows keep
the numbers, and so the ids, they have in the whole source; only the span's lines are parsed),
one Ray task each; any other source is one task. Each task writes its part and returns the
part's digest; `taskpack.merge` then joins the parts in source order, each part checked by
that digest, into the task set a single import writes, digest for digest
(tests/test_sharded.py). Parts are written under `scratch`, which every node must see (by
default a folder beside `target`), and removed at the end.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskpack.converters import base_suffix, line_count
from taskpack.errors import TaskpackError, require
from taskpack.importer import import_sources
from taskpack.merging import merge

if TYPE_CHECKING:
    from taskpack.model import Manifest

Shard = tuple[str, str, "tuple[int, int] | None"]  # split, source, lines (None: all)


def import_sharded(
    target: str | os.PathLike[str],
    sources: Mapping[str, Sequence[str]],
    fmt: str,
    *,
    parts: int | None = None,
    options: Mapping[str, Any] | None = None,
    scratch: str | os.PathLike[str] | None = None,
    progress: bool = False,
    **meta: Any,
) -> Manifest:
    """`import_sources(target, sources, fmt, options=options, **meta)`, its parts run as Ray
    tasks: on the cluster this process is connected to, else the one `RAY_ADDRESS` names,
    else a Ray instance of this machine on 127.0.0.1. `parts` spans per JSON Lines source
    (default: the cluster's CPUs). Returns the merged version's manifest."""
    require("ray", "ray")
    import ray

    if not ray.is_initialized():
        if os.environ.get("RAY_ADDRESS"):  # a running cluster
            ray.init(log_to_driver=False)
        else:  # this machine alone, for the import's duration, reachable on loopback only
            ray.init(
                address="local",
                _node_ip_address="127.0.0.1",
                include_dashboard=False,
                log_to_driver=False,
            )
    cpus = ray.cluster_resources().get("CPU", 1)  # type: ignore[no-untyped-call]
    count = parts or max(1, int(cpus))
    shards = plan(sources, count)
    out = Path(target)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.parts-", dir=scratch or out.parent))
    try:
        run = ray.remote(_part)
        paths = [str(work / f"part-{k:05d}") for k in range(len(shards))]
        pending = [
            run.remote(path, fmt, shard, dict(options or {}))
            for path, shard in zip(paths, shards, strict=True)
        ]
        digests = _gathered(pending, progress)
        return merge(paths, target, digests=digests, **meta)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def plan(sources: Mapping[str, Sequence[str]], parts: int) -> list[Shard]:
    """The shards of an import, in the order their rows go: per split, per source, its spans
    of lines (a local JSON Lines file of at least `parts` lines), else the source whole."""
    shards: list[Shard] = []
    for split, uris in sources.items():
        for uri in uris:
            jsonl = base_suffix(uri) == ".jsonl"
            lines = line_count(uri) if parts > 1 and jsonl else None
            if lines is None or lines < parts:
                shards.append((split, uri, None))
                continue
            bounds = [lines * k // parts for k in range(parts + 1)]
            shards += [(split, uri, (a + 1, b)) for a, b in pairwise(bounds) if b > a]
    if not shards:
        raise TaskpackError("no sources given")
    return shards


def _part(path: str, fmt: str, shard: Shard, options: dict[str, Any]) -> str:
    """One Ray task: a shard written as a task set at `path`; its version digest."""
    split, uri, lines = shard
    spans = {split: lines} if lines is not None else None
    done = import_sources(path, {split: [uri]}, fmt, options=options, lines=spans, name="part")
    return done.manifest.digest


def _gathered(pending: list[Any], progress: bool) -> list[str]:
    """The tasks' results in submission order, with a bar of parts done when asked."""
    import ray
    from ray.exceptions import RayTaskError

    from taskpack.base.progress import progress as bar_of

    bar = bar_of("import", total=len(pending), unit="parts", quiet=not progress)
    try:
        waiting = list(pending)
        while bar and waiting:
            done, waiting = ray.wait(waiting, num_returns=1)
            ray.get(done)  # a failed part raises here
            bar(len(done))
        return list(ray.get(pending))
    except RayTaskError as e:  # a part's own error (a bad row: file and line), not Ray's
        if isinstance(e.cause, TaskpackError):
            raise e.cause from None
        raise
    finally:
        if bar:
            bar.close()
