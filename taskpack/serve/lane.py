"""The lane for work whose cost grows with the data: ORS `tasks` and `task_range`, the
viewer's search, filter, sort and pass-rate bands, and diffs between versions.

Why processes and not threads: a search of 100,000 tasks or a diff of two 50k-task versions is
seconds of Python, and a thread doing it holds the GIL every task request needs (8 of them held
a plain task request for 50 to 60 s). Here such work runs in `AT_ONCE` worker processes per
server worker, at the lowest CPU priority, and the server only awaits its answer.

Each answer is written to a file, a batch at a time, and sent from disk: its size costs the
server no memory (ORS `tasks` of 100,000 tasks is 123 MiB). A question is computed once:
requests asking what is being computed wait for that computation, and answers are kept, up to
`KEPT_BYTES`, for the next request. Beyond `WAITING` distinct questions in flight a request is
refused with 503, not queued. A question no request waits for any more (its clients left, or
its deadline passed) is stopped: the job checks between batches (`Work.check`), and one not
started is never run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from multiprocessing.util import Finalize
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskpack.errors import TaskpackError
from taskpack.registry.refs import Ref, is_digest, is_version

if TYPE_CHECKING:
    from taskpack.serve.viewer import About
    from taskpack.storage.taskset import TaskSet

AT_ONCE = 1  # questions computed at once (each in a process of its own)
WAITING = 16  # distinct questions in flight before a new one is refused
KEPT_BYTES = 1 << 30  # bytes of answers kept on disk
DEADLINE = 120.0  # seconds a question may take, waiting included, before it is stopped
NICE = 19  # a lane worker's scheduling priority, the lowest: task requests come first


class Busy(TaskpackError):
    """Too many questions are being computed; the client should retry later."""


class Stopped(TaskpackError):
    """Nobody waits for this answer any more, or its deadline passed."""


@dataclass(frozen=True)
class ServedVersion:
    """What a lane worker needs to open a served version and its siblings: `target` (a
    task-set folder, or the exact `NAME@VERSION`), its registry and cache, and the digest it
    must have."""

    target: str
    registry: str | None
    name: str
    digest: str
    about: About | None = None  # what a page's head names (`viewer.About`)
    cache: str | None = None  # a mirror's own cache (None: the default one)

    def open(self) -> TaskSet:
        """The served version, opened once per worker process."""
        key = (self.target, self.registry, self.cache)
        ts = _OPENED.get(key)
        if ts is None:
            ts = _OPENED[key] = self._opened(self.target)
        if ts.manifest.digest != self.digest:
            raise TaskpackError(f"{self.target} changed since the server started")
        return ts

    def version(self, ref: str) -> TaskSet:
        """`this`, or another version of the served set (by version or digest)."""
        return self.open() if ref == "this" else self._opened(Ref(self.name, ref))

    def _opened(self, target: str | Ref) -> TaskSet:
        from taskpack.registry.cache import Cache
        from taskpack.registry.client import open as open_target
        from taskpack.registry.client import resolve

        if self.cache is None and isinstance(target, str):
            return open_target(target, registry=self.registry)  # a folder, or NAME@VERSION
        cache = Cache(Path(self.cache)) if self.cache is not None else None
        return resolve(target, registry=self.registry, cache=cache)


_OPENED: dict[tuple[str, str | None, str | None], TaskSet] = {}


def checked_ref(text: str) -> str:
    """`text` if it names a version of the served set (`this`, a version, a digest)."""
    if text == "this" or is_version(text) or is_digest(text):
        return text
    raise TaskpackError(
        f"{text!r}: expected a version of this task set (1.2.0), its digest (sha256:...) or 'this'"
    )


@dataclass(frozen=True)
class Work:
    """What a job is handed: the stem its answers are named after (`stem.html`, ...) and how it
    knows it should stop."""

    stem: Path
    until: float  # time.time() past which the answer is not wanted
    deadline: float = DEADLINE  # the seconds `until` was set from, for the line that says it

    @property
    def stop(self) -> Path:
        return self.stem.with_suffix(".stop")

    def check(self) -> None:
        """Raise Stopped when the answer is no longer wanted: called between batches. Past its
        deadline the job says what the waiting side says (whichever of the two notices first,
        the client reads the same line); told to stop, that nobody waits any more."""
        if time.time() > self.until:
            raise Stopped(f"no answer within {self.deadline:.0f} s; stopped")
        if self.stop.exists():
            raise Stopped("stopped: nobody waits for this answer any more")


Job = Callable[..., tuple[Path, ...]]  # job(work, *args): the answer's files


@dataclass
class _Pending:
    future: Future[tuple[Path, ...]]
    work: Work
    waiters: int = 0


@dataclass
class Lane:
    """The lane of one server worker: its processes (spawned on first need), its folder of
    answers and what it keeps."""

    deadline: float = DEADLINE
    computed: int = 0  # questions handed to a worker, for tests and logs
    _pool: ProcessPoolExecutor | None = None
    _folder: Path | None = None
    _kept: OrderedDict[Hashable, tuple[Path, ...]] = field(default_factory=OrderedDict)
    _kept_bytes: int = 0
    _pending: dict[Hashable, _Pending] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _workers(self) -> tuple[ProcessPoolExecutor, Path]:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                AT_ONCE, mp_context=get_context("spawn"), initializer=_below_tasks
            )
            # A server worker is a multiprocessing child: on exit it joins its own children
            # before anything else of ours runs, so the pool is stopped by multiprocessing's
            # own finalizer, ahead of that join.
            Finalize(None, _stop, (self._pool,), exitpriority=10)
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="taskpack-answers-"))
            Finalize(None, shutil.rmtree, (self._folder, True), exitpriority=10)
        return self._pool, self._folder

    async def get(self, key: Hashable, job: Job, *args: Any) -> tuple[Path, ...]:
        """The answer to `key`: kept, being computed, or computed now by `job(work, *args)`
        in a lane worker. Raises Busy when too many are in flight, Stopped past the
        deadline; a request cancelled while waiting (its client left) stops the job when
        no other waits for it."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and all(p.exists() for p in kept):
                self._kept.move_to_end(key)
                return kept
            pending = self._pending.get(key)
            if pending is None:
                if len(self._pending) >= WAITING:
                    raise Busy(f"{WAITING} answers are being computed; try again later")
                pool, folder = self._workers()
                name = hashlib.sha256(json.dumps(key, default=str).encode()).hexdigest()[:32]
                work = Work(folder / name, time.time() + self.deadline, self.deadline)
                work.stop.unlink(missing_ok=True)
                pending = _Pending(pool.submit(job, work, *args), work)
                self._pending[key] = pending
                self.computed += 1
                pending.future.add_done_callback(lambda f: self._done(key, f))
            elif pending.waiters == 0:  # told to stop when its last client left: wanted again
                pending.work.stop.unlink(missing_ok=True)
            pending.waiters += 1
        try:
            left = max(0.0, pending.work.until - time.time())
            wrapped = asyncio.wrap_future(pending.future)
            return await asyncio.wait_for(asyncio.shield(wrapped), left)
        except asyncio.TimeoutError:
            raise Stopped(f"no answer within {self.deadline:.0f} s; stopped") from None
        finally:
            with self._lock:
                pending.waiters -= 1
                idle = pending.waiters == 0 and not pending.future.done()
            # Outside the lock: a cancel runs `_done`, which takes it. Only this thread adds
            # waiters, so none joins in between.
            if idle and not pending.future.cancel():  # started already: told to stop
                pending.work.stop.touch()

    def _done(self, key: Hashable, future: Future[tuple[Path, ...]]) -> None:
        with self._lock:
            self._pending.pop(key, None)
            error = None if future.cancelled() else future.exception()
            if isinstance(error, BrokenProcessPool):
                self._pool = None  # a worker died (out of memory?): the next job starts anew
            if future.cancelled() or error is not None:
                return  # an error is not kept: the version may be published later
            done = future.result()
            self._kept[key] = done
            self._kept_bytes += _size(done)
            while self._kept_bytes > KEPT_BYTES and len(self._kept) > 1:
                _, old = self._kept.popitem(last=False)
                self._kept_bytes -= _size(old)
                for path in old:
                    path.unlink(missing_ok=True)

    def close(self) -> None:
        if self._pool is not None:
            _stop(self._pool)
            self._pool = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def _size(paths: tuple[Path, ...]) -> int:
    return sum(p.stat().st_size for p in paths if p.exists())


def _below_tasks() -> None:
    """A lane worker yields the CPU to the server's workers whenever both want it: on a busy
    machine an answer of the lane takes longer, a task request does not."""
    os.nice(NICE)


def _stop(pool: ProcessPoolExecutor) -> None:
    """No more jobs; one being computed is abandoned (its worker killed), not waited for."""
    # Python 3.14 has terminate_workers(); before it, the pool's own table of its processes
    workers = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers:
        process.kill()
