"""The lane's jobs (`serve/lane.py`), each run in a lane worker and written to files the server
sends from disk: ORS task lists, the viewer's split pages, diffs. And the task's JSON shapes the
jobs and the server's own routes share."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskpack.base.fs import fill_atomic, write_atomic
from taskpack.base.nesting import parse_json, without_nulls
from taskpack.serve.episodes import ungraded
from taskpack.serve.lane import ServedVersion, Work

if TYPE_CHECKING:
    from taskpack.model import Task
    from taskpack.serve.browsing import Stats
    from taskpack.serve.viewer import Problem
    from taskpack.storage.taskset import Split

BATCH = 256  # tasks written between two checks that the answer is still wanted


def task_json(task: Task, nulls: bool = False) -> dict[str, Any]:
    """The task as JSON, files by hash with the link that serves their bytes; null fields
    left out unless `nulls`."""
    body = task.model_dump(mode="json", exclude={"files"})
    body["files"] = [
        {**f.model_dump(mode="json", exclude={"data"}), "href": f"/api/v1/files/{f.sha256}"}
        for f in task.files
    ]
    return body if nulls else without_nulls(body)


def ors_spec(task: Task, split: str) -> dict[str, Any]:
    """A task as ORS hands it: its JSON, with its digest and split (which a session's
    `task_spec` names it by), its question (the last user message: the field ORS's own
    examples and clients read) and, where a session cannot score it here, why (`unscored`)."""
    spec = {**task_json(task), "digest": task.digest, "split": split, "question": task.instruction}
    why = ungraded(task)
    return spec if why is None else {**spec, "unscored": why}


def ors_tasks(
    work: Work, served: ServedVersion, split: str, start: int, stop: int, env: str
) -> tuple[Path]:
    """ORS `tasks` (the whole split) or `task_range` (`start` to `stop`, clamped already):
    `{"tasks": [...], "env_name": env}`, written a task at a time."""
    found = served.open().split(split)
    whole = (start, stop) == (0, len(found))  # read a row group at a time
    tasks = iter(found) if whole else map(found.__getitem__, range(start, stop))

    def fill(tmp: Path) -> None:
        with tmp.open("w", encoding="utf-8") as out:
            out.write('{"tasks": [')
            for n, task in enumerate(tasks):
                if n % BATCH == 0:
                    work.check()
                out.write(
                    (", " if n else "") + json.dumps(ors_spec(task, split), ensure_ascii=False)
                )
            out.write(f'], "env_name": {json.dumps(env, ensure_ascii=False)}}}')

    out = work.stem.with_suffix(".json")
    fill_atomic(out, fill)
    return (out,)


_VIEWS: dict[tuple[str, str], tuple[Stats, dict[str, dict[str, float]]]] = {}
_CHOSEN: OrderedDict[tuple[Any, ...], tuple[list[str], list[Problem]]] = OrderedDict()
CHOICES = 32  # searches, filters and orders kept per worker: their pages are read from them


def split_page(
    work: Work, served: ServedVersion, split: str, query: Mapping[str, str]
) -> tuple[Path]:
    """The viewer's page of a split: a page of its tasks, searched, filtered, banded by pass
    rate and sorted as `query` asks, with what the split holds (read once per worker). The
    tasks a query chooses are kept for its other pages."""
    from taskpack.serve import viewer
    from taskpack.serve.browsing import Stats
    from taskpack.storage.ratings import rates

    ts = served.open()
    found = ts.split(split)
    held = _VIEWS.get((served.digest, split))
    if held is None:
        measured = rates(ts.annotations(split)).items()
        held = Stats.of(found), {f"{m} {key}": got for (m, key), got in measured}
        _VIEWS[(served.digest, split)] = held
    work.check()
    asked = tuple(sorted((k, v) for k, v in query.items() if k not in ("page", "cols")))
    key = (served.digest, split, asked)
    choice = _CHOSEN.get(key)
    if choice is None:
        choice = viewer.chosen(found, held[0], query, partial(_filtered, found), held[1])
        _CHOSEN[key] = choice
        while len(_CHOSEN) > CHOICES:
            _CHOSEN.popitem(last=False)
    work.check()
    body = viewer.split_page(split, found, held[0], query, choice, held[1])
    out = work.stem.with_suffix(".html")
    write_atomic(out, viewer.page(split, body, served.digest, served.about))
    return (out,)


def _filtered(split: Split, where: str) -> list[str]:
    """The ids a `KEY=VALUE` filter keeps (VALUE read as JSON when it is JSON)."""
    key, sep, value = where.partition("=")
    if not sep or not key:
        raise ValueError("expected KEY=VALUE, e.g. reward.kind=numeric_match")
    try:
        wanted = parse_json(value)
    except ValueError:
        wanted = value
    return split.filter(**{key: wanted}).ids()


def diff(work: Work, served: ServedVersion, old: str, new: str) -> tuple[Path, Path]:
    """The diff of `old` -> `new` (refs checked already): its page and its JSON."""
    from taskpack.changes import diff as changes_of
    from taskpack.serve import viewer

    before, after = served.version(old), served.version(new)
    changes = changes_of(before, after)
    work.check()
    # each side's task pages: the served version's own, or the same pages `?at=` that version
    at = tuple(
        "" if ts.manifest.digest == served.digest else ref
        for ts, ref in ((before, old), (after, new))
    )
    page, api = work.stem.with_suffix(".html"), work.stem.with_suffix(".json")
    body = viewer.diff_page(old, new, changes, (at[0], at[1]))
    write_atomic(page, viewer.page(f"changes {old} → {new}", body, served.digest, served.about))
    head = {"old": old, "new": new, "digest": served.digest, "splits": viewer.diff_json(changes)}
    write_atomic(api, json.dumps(head, ensure_ascii=False).encode())
    return page, api
