"""The lane of `taskpack serve` (taskpack/serve/lane.py): a question computed once in a worker
process, stopped at its deadline or when nobody waits for it any more, and, through the
server, stopped when its client leaves."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import taskpack
from taskpack.serve.app import Api, App, Catalog, background
from taskpack.serve.lane import Lane, Stopped, Work

from .conftest import make_task


def slow(work: Work, seconds: float, log: str) -> tuple[Path]:
    """A job of `seconds`, checking every 50 ms that it is still wanted; `log` says how it
    ended."""
    Path(log).write_text("started")
    end = time.time() + seconds
    while time.time() < end:
        try:
            work.check()
        except Stopped:
            Path(log).write_text("stopped")
            raise
        time.sleep(0.05)
    out = work.stem.with_suffix(".txt")
    out.write_text("done")
    Path(log).write_text("done")
    return (out,)


def checked_late(work: Work, seconds: float, log: str) -> tuple[Path]:
    """A job that asks whether it is still wanted once, after `seconds`."""
    time.sleep(seconds)
    try:
        work.check()
    except Stopped:
        Path(log).write_text("stopped")
        raise
    out = work.stem.with_suffix(".txt")
    out.write_text("done")
    return (out,)


@pytest.fixture
def lane() -> Iterator[Lane]:
    found = Lane(deadline=60)
    yield found
    found.close()


def _says(log: Path, wanted: str, within: float = 60) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if log.exists() and log.read_text() == wanted:
            return True
        time.sleep(0.05)
    return False


def test_a_question_past_its_deadline_is_stopped(lane: Lane, tmp_path: Path) -> None:
    lane.deadline = 3  # the worker's start (a second or two) is inside it
    log = tmp_path / "log"
    with pytest.raises(Stopped, match="no answer within 3 s"):
        asyncio.run(lane.get("k", slow, 60, str(log)))
    assert _says(log, "stopped", 10) and not lane._kept


def test_a_question_nobody_waits_for_is_stopped(lane: Lane, tmp_path: Path) -> None:
    log = tmp_path / "log"

    async def leave() -> None:
        asking = asyncio.ensure_future(lane.get("k", slow, 60, str(log)))
        while not log.exists():
            await asyncio.sleep(0.05)
        asking.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asking

    asyncio.run(leave())
    assert _says(log, "stopped", 10) and not lane._kept and not lane._pending


def test_a_question_one_of_two_left_is_answered_to_the_other(lane: Lane, tmp_path: Path) -> None:
    log = tmp_path / "log"

    async def one_leaves() -> tuple[Path, ...]:
        first = asyncio.ensure_future(lane.get("k", slow, 2, str(log)))
        second = asyncio.ensure_future(lane.get("k", slow, 2, str(log)))
        while not log.exists():
            await asyncio.sleep(0.05)
        first.cancel()
        return await second

    (out,) = asyncio.run(one_leaves())
    assert out.read_text() == "done" and log.read_text() == "done" and lane.computed == 1
    assert asyncio.run(lane.get("k", slow, 2, str(log))) == (out,)  # kept
    assert lane.computed == 1


def test_a_client_that_leaves_stops_its_task_list(tmp_path: Path) -> None:
    """ORS `tasks` of 30,000 tasks, its client gone at once: the lane's job stops (nothing is
    kept, nothing is in flight) long before it could have written them all."""
    path = tmp_path / "ts"
    taskpack.write(path, {"train": [make_task(i) for i in range(30_000)]}, name="many")
    app = App(api=Api(Catalog(taskpack.open(path))))
    with background(app) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        body = b'{"split": "train"}'
        request = (
            b"POST /ors/many/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(request)
            deadline = time.monotonic() + 30
            while not app.lane._pending:
                assert time.monotonic() < deadline
                time.sleep(0.01)
        deadline = time.monotonic() + 30
        while app.lane._pending:
            assert time.monotonic() < deadline, "the job went on"
            time.sleep(0.05)
        assert app.lane.computed == 1 and not app.lane._kept


def test_questions_left_before_they_started_are_dropped_and_the_lane_goes_on(
    lane: Lane, tmp_path: Path
) -> None:
    """One question computing, three queued behind it (one worker) whose clients leave: none
    of them is computed (one the pool had taken already stops at once), and the lane answers
    the first and a fifth. (A cancel ran the lane's own callback under its lock once, and
    stopped the server's worker for good: run in a thread, so that a hang fails.)"""
    logs = [tmp_path / str(n) for n in range(5)]
    got: list[tuple[Path, ...]] = []

    async def queued_then_left() -> None:
        running = asyncio.ensure_future(lane.get(0, slow, 2, str(logs[0])))
        while not logs[0].exists():
            await asyncio.sleep(0.05)
        waiting = [asyncio.ensure_future(lane.get(n, slow, 30, str(logs[n]))) for n in (1, 2, 3)]
        await asyncio.sleep(0.2)
        for w in waiting:
            w.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
        await running
        got.append(await lane.get(4, slow, 0.1, str(logs[4])))

    thread = threading.Thread(target=asyncio.run, args=(queued_then_left(),), daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the lane hung"
    assert got and got[0][0].read_text() == "done"
    assert all(not log.exists() or _says(log, "stopped", 10) for log in logs[1:4])


def test_a_question_asked_again_after_its_client_left_is_not_stopped(
    lane: Lane, tmp_path: Path
) -> None:
    """Its one client leaves (the job is told to stop), another asks the same before the job
    next checks: the job goes on, and the second client gets the answer, not a 503."""
    log = tmp_path / "log"

    async def leave_then_ask() -> tuple[Path, ...]:
        first = asyncio.ensure_future(lane.get("k", checked_late, 3, str(log)))
        while "k" not in lane._pending or not lane._pending["k"].future.running():
            await asyncio.sleep(0.05)
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        return await lane.get("k", checked_late, 3, str(log))

    (out,) = asyncio.run(leave_then_ask())
    assert out.read_text() == "done" and not log.exists() and lane.computed == 1


def test_a_job_past_its_deadline_says_what_the_waiting_side_says(tmp_path: Path) -> None:
    """Under load the job may notice its deadline before the request's own timer does: the
    client then reads the job's line, which is the deadline's, not 'nobody waits' (the race
    that failed the test above on a loaded machine)."""
    late = Work(tmp_path / "a", time.time() - 1, 3)
    with pytest.raises(Stopped, match="no answer within 3 s"):
        late.check()
    left = Work(tmp_path / "b", time.time() + 60, 3)
    left.stop.touch()
    with pytest.raises(Stopped, match="nobody waits"):
        left.check()
