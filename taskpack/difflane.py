"""The diffs `taskpack serve` shows (`/diff/OLD/NEW`, `/api/v1/diff/OLD/NEW`), on a lane of
their own.

Why a process and not a thread: a diff of two 50k-task versions is seconds of pure Python, and a
thread doing it holds the GIL that every task request of the server needs (8 of them made a task
request take 58 s). Here diffs run in `AT_ONCE` worker processes per server worker, at the
lowest CPU priority; the server only awaits their answer, so task requests keep their latency
whatever diffs are asked for (bench/serve.py --only diffs). Each pair is computed
once (requests for a pair being computed wait for that computation) and its answers are kept
in files, up to `KEPT_BYTES`, sent from disk; beyond `WAITING` pairs in flight a request is
refused with 503, not queued.

OLD and NEW are versions of the served set only: `this`, an exact version (`1.2.0`) or a
content digest (`sha256:...`), checked by the publish grammar before anything is opened, and
resolved in the server's registry under the served set's name. Nothing a client sends names a
folder or another set.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import tempfile
import threading
from collections import OrderedDict
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context
from multiprocessing.util import Finalize
from pathlib import Path
from typing import TYPE_CHECKING

from taskpack.errors import TaskpackError
from taskpack.registry.refs import Ref, is_digest, is_version

if TYPE_CHECKING:
    from taskpack.taskset import TaskSet
    from taskpack.viewer import About

AT_ONCE = 1  # diffs computed at once (each in a process of its own)
WAITING = 16  # distinct pairs in flight before a new one is refused
KEPT_BYTES = 256 << 20  # bytes of rendered diffs kept on disk
NICE = 19  # a diff worker's scheduling priority, the lowest: task requests come first


class Busy(TaskpackError):
    """Too many diffs are being computed; the client should retry later."""


@dataclass(frozen=True)
class Served:
    """What a diff worker needs to open the served version and its siblings: `target` (a
    task-set folder, or the exact `NAME@VERSION`), the registry, and the digest `this` must
    have."""

    target: str
    registry: str | None
    name: str
    digest: str
    about: About | None = None  # what the page's head names (`viewer.About`)


def checked_ref(text: str) -> str:
    """`text` if it names a version of the served set (`this`, a version, a digest)."""
    if text == "this" or is_version(text) or is_digest(text):
        return text
    raise TaskpackError(
        f"{text!r}: expected a version of this task set (1.2.0), its digest (sha256:...) or 'this'"
    )


@dataclass(frozen=True)
class Rendered:
    """A pair's two answers, whole, in files the server sends from disk (the server streams a
    file itself: megabytes of diff cost the server's Python nothing)."""

    page: Path  # the HTML page
    api: Path  # the JSON of /api/v1/diff/OLD/NEW

    @property
    def size(self) -> int:
        return self.page.stat().st_size + self.api.stat().st_size

    def remove(self) -> None:
        self.page.unlink(missing_ok=True)
        self.api.unlink(missing_ok=True)


def render(served: Served, old: str, new: str, folder: Path) -> Rendered:
    """The diff of `old` -> `new`, computed in a worker, its page and JSON written whole
    into `folder` (each written aside, then renamed into place)."""
    from taskpack import viewer
    from taskpack._fs import write_atomic
    from taskpack.changes import diff
    from taskpack.registry.client import open as open_target
    from taskpack.registry.client import resolve

    def version(ref: str) -> TaskSet:
        if ref == "this":
            ts = open_target(served.target, registry=served.registry)
            if ts.manifest.digest != served.digest:
                raise TaskpackError(f"{served.target} changed since the server started")
            return ts
        return resolve(Ref(served.name, ref), registry=served.registry)

    before, after = version(old), version(new)
    changes = diff(before, after)
    # each side's task pages: the served version's own, or the same pages `?at=` that version
    at = tuple(
        "" if ts.manifest.digest == served.digest else ref
        for ts, ref in ((before, old), (after, new))
    )
    title = f"changes {old} → {new}"
    key = hashlib.sha256(f"{old} {new}".encode()).hexdigest()[:32]
    done = Rendered(folder / f"{key}.html", folder / f"{key}.json")
    body = viewer.diff_page(old, new, changes, (at[0], at[1]))
    write_atomic(done.page, viewer.page(title, body, served.digest, served.about))
    head = {"old": old, "new": new, "digest": served.digest, "splits": viewer.diff_json(changes)}
    write_atomic(done.api, json.dumps(head, ensure_ascii=False).encode())
    return done


class DiffLane:
    def __init__(self, served: Served) -> None:
        self.served = served
        self._pool: ProcessPoolExecutor | None = None
        self._folder: Path | None = None
        self._kept: OrderedDict[tuple[str, str], Rendered] = OrderedDict()
        self._kept_bytes = 0
        self._pending: dict[tuple[str, str], Future[Rendered]] = {}
        self._lock = threading.Lock()
        self.computed = 0  # pairs handed to a worker, for tests and logs

    def _workers(self) -> tuple[ProcessPoolExecutor, Path]:
        if self._pool is None:  # spawned on first need: a server nobody asks for diffs has none
            self._pool = ProcessPoolExecutor(
                AT_ONCE, mp_context=get_context("spawn"), initializer=_below_tasks
            )
            # A server worker is a multiprocessing child: on exit it joins its own children
            # before anything else of ours runs, so the pool is stopped by multiprocessing's
            # own finalizer, ahead of that join.
            Finalize(None, _stop, (self._pool,), exitpriority=10)
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="taskpack-diffs-"))
            Finalize(None, shutil.rmtree, (self._folder, True), exitpriority=10)
        return self._pool, self._folder

    async def get(self, old: str, new: str) -> Rendered:
        """The rendered diff of `old` -> `new` (refs already checked)."""
        key = (old, new)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
                return kept
            future = self._pending.get(key)
            if future is None:
                if len(self._pending) >= WAITING:
                    raise Busy(f"{WAITING} diffs are being computed; try again later")
                pool, folder = self._workers()
                future = pool.submit(render, self.served, old, new, folder)
                self._pending[key] = future
                self.computed += 1
                future.add_done_callback(lambda f: self._done(key, f))
        return await asyncio.wrap_future(future)

    def _done(self, key: tuple[str, str], future: Future[Rendered]) -> None:
        with self._lock:
            self._pending.pop(key, None)
            error = None if future.cancelled() else future.exception()
            if isinstance(error, BrokenProcessPool):
                self._pool = None  # a worker died (out of memory?): the next diff starts anew
            if future.cancelled() or error is not None:
                return  # an error is not kept: the version may be published later
            done = future.result()
            self._kept[key] = done
            self._kept_bytes += done.size
            while self._kept_bytes > KEPT_BYTES and len(self._kept) > 1:
                _, old = self._kept.popitem(last=False)
                self._kept_bytes -= old.size
                old.remove()

    def close(self) -> None:
        if self._pool is not None:
            _stop(self._pool)
            self._pool = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def _below_tasks() -> None:
    """A diff worker yields the CPU to the server's workers whenever both want it: on a busy
    machine a diff takes longer, a task request does not."""
    import os

    os.nice(NICE)


def _stop(pool: ProcessPoolExecutor) -> None:
    """No more diffs; one being computed is abandoned (its worker killed), not waited for."""
    # Python 3.14 has terminate_workers(); before it, the pool's own table of its processes
    workers = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        process.kill()
