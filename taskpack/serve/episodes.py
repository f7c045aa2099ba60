"""Episodes of the Open Reward Standard on a served task set: a session holds one task, shows
its prompt, offers one tool, `answer`, and scores the answer with the task's own verifier.

An answer of an answer kind (exact, numeric, math, multiple choice) is text compared with the
reference as the exported grader compares it, in process: nothing of it runs. The code given for
a Python unit-test task runs in the sandbox `taskpack check` uses (`trials.attempt`, under its
bounds): the tests in /tests, closed to the code under test, and the reward read from what the
grader wrote after the code ran. A task whose verifier needs what this machine does not stand in
for (an image, a judge, a repository's test runner) is served as data; its spec says why in one
line (`ungraded`), and a session on it says the same.

Sessions live on disk (one small file each, named by a hash of the id the client chose), so any
worker process answers any request of a session, and a session costs no memory between
requests. They are bounded: `MOST` at once, each dropped after `IDLE` seconds untouched (ORS's
own server drops them after 900), and at most `GRADING` sandboxed runs at once per worker (a
request past them is told to come back, 503, which ORS's clients retry).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskpack import records
from taskpack.base.fs import file_lock, write_atomic
from taskpack.base.settings import number
from taskpack.errors import TaskpackError

if TYPE_CHECKING:
    from taskpack.model import Task

IDLE = 900.0  # seconds a session may go untouched
MOST = 4096  # sessions at once, per server
QUOTA_SETTING = "TASKPACK_SESSIONS_PER_CLIENT"  # sessions one client holds at once
DEADLINE_SETTING = "TASKPACK_GRADE_DEADLINE"  # seconds an answer's grading may take
GRADING = 2  # sandboxed runs at once, per worker process
TOOL = "answer"


class OrsError(TaskpackError):
    """An answer of ORS's error shape: `status` and `{"detail": detail}` (every ORS verb's
    refusal, a session's included)."""

    def __init__(self, status: int, detail: Any) -> None:
        super().__init__(str(detail))
        self.status, self.detail = status, detail


# --- what a task offers ------------------------------------------------------------------


def ungraded(task: Task) -> str | None:
    """Why a session cannot score `task` here, in one line; None when it can (`trials`)."""
    from taskpack.rewards.trials import unscorable

    return unscorable(task)


def tool(task: Task | None = None, name: str = TOOL) -> dict[str, Any]:
    """The one tool, as ORS lists it (named `name`: ORS leaves tool names to the environment);
    its description says what a good answer to `task` looks like, as the grader reads it."""
    reward = task.reward if task is not None else None
    what = "your final answer"
    if isinstance(reward, records.UnitTests):
        what = (
            f"your code: a Python module that defines `{reward.entry_point}` (a fenced block "
            "in your reply is read; a body continuing the given stub is joined to it)"
        )
    elif isinstance(reward, records.IoTests):
        does = f"defines `{reward.call}`" if reward.call else "reads standard input"
        what = f"your program: Python that {does} (a fenced block in your reply is read)"
    elif isinstance(reward, records.MultipleChoice):
        labels = ", ".join(c.label for c in reward.choices)
        what = f"the label of your choice ({labels})"
    elif isinstance(reward, records.NumericMatch):
        what = "your final answer: a number (the last \\boxed{}, else the last number, is read)"
    elif isinstance(reward, records.MathMatch):
        what = "your final answer, in \\boxed{} (else the whole answer is read as one formula)"
    elif isinstance(reward, records.ExactMatch):
        what = "your final answer, exactly (the last \\boxed{}, if any, is read)"
    return {
        "name": name,
        "description": f"Submit {what}. It is scored once, and the episode ends.",
        "input_schema": {
            "type": "object",
            "properties": {"answer": {"type": "string", "description": what}},
            "required": ["answer"],
            "additionalProperties": False,
        },
    }


def prompt(task: Task) -> list[dict[str, Any]]:
    """The task's messages as ORS text blocks, in order, each naming its role."""
    return [
        {"text": m.text, "detail": {"role": m.role}, "type": "text"}
        for m in task.prompt
        if isinstance(m, records.Message)
    ]


def grade(task: Task, answer: str, slots: threading.BoundedSemaphore, graders: Graders) -> float:
    """The reward the task's own verifier gives `answer`: 0 to 1. A grading that overruns its
    deadline is an error (GradingError), never a reward."""
    from taskpack.converters import answer_spec

    why = ungraded(task)
    if why is not None:
        raise OrsError(HTTPStatus.BAD_REQUEST, f"task {task.id!r} is not scored here: {why}")
    if not isinstance(task.reward, records.CODE_KINDS):
        return graders.score(answer_spec(task), answer)
    if not slots.acquire(timeout=1.0):
        raise OrsError(HTTPStatus.SERVICE_UNAVAILABLE, "every grader is busy; try again")
    try:
        return _sandboxed(task, answer)
    finally:
        slots.release()


def _sandboxed(task: Task, reply: str) -> float:
    from taskpack.rewards.trials import Bounds, Refused, code_reward, score

    try:
        reward = code_reward(task, reply, Bounds())
    except Refused:  # the verifier timed out, or wrote no reward it can stand behind
        return 0.0
    return 0.0 if reward is None else score(reward)


class GradingError(TaskpackError):
    """An answer the grader could not score in its time: an error, not a wrong answer."""


class Graders:
    """Answers of the answer kinds scored in processes of their own (`SIZE`, started on first
    use), each call within `deadline` seconds. The graders bound their own work (a reply is
    read only where its answer can be, no number past its bounds is built), so a call
    overrunning is not expected; should one, its process is killed and replaced, the answer is
    an error, and no other request waits on it: the server's threads are never held."""

    SIZE = 2

    def __init__(self, deadline: float | None = None) -> None:
        self.deadline = (
            deadline if deadline is not None else number(DEADLINE_SETTING, 2.0, "seconds")
        )
        self._free: list[Any] = []
        self._lock = threading.Lock()
        self._room = threading.BoundedSemaphore(self.SIZE)

    def score(self, spec: dict[str, Any], answer: str) -> float:
        if not self._room.acquire(timeout=self.deadline):
            raise GradingError("every grader is busy; try again")
        try:
            with self._lock:
                grader = self._free.pop() if self._free else _start_grader()
            process, conn = grader
            conn.send((spec, answer))
            if conn.poll(self.deadline):
                reward = float(conn.recv())
                with self._lock:
                    self._free.append(grader)
                return reward
            process.kill()  # overran: this one goes, the next call starts another
            process.join()
            conn.close()
            raise GradingError(
                f"the grader took over {self.deadline:g} s ({DEADLINE_SETTING}); not scored"
            )
        finally:
            self._room.release()

    def close(self) -> None:
        with self._lock:
            for process, conn in self._free:
                process.kill()
                conn.close()
            self._free.clear()


def _start_grader() -> tuple[Any, Any]:
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    mine, theirs = ctx.Pipe()
    process = ctx.Process(target=_grader, args=(theirs,), daemon=True)
    process.start()
    theirs.close()
    return process, mine


def _grader(conn: Any) -> None:
    """A grader process: (spec, answer) in, the reward out, until its pipe closes."""
    from taskpack.rewards.grader import answer_reply_score

    while True:
        try:
            spec, answer = conn.recv()
        except EOFError:
            return
        conn.send(answer_reply_score(spec, answer))


# --- sessions ------------------------------------------------------------------------------


@dataclass
class Session:
    """What a session holds: the environment and task it was made for (pinned by the
    version's digest and the task's), and, once answered, the answer's result."""

    env: str
    version: str  # the version digest
    split: str
    id: str
    digest: str  # the task's
    result: dict[str, Any] | None = None
    call: str | None = None  # the call id the result answered (a client's retry sends it)


class Sessions:
    """The sessions of one server, in folder `root` (shared by its worker processes): a folder
    per client (`owner`), a file per session in it. A session answers only the client that
    made it; one client holds at most `QUOTA` at once, so it cannot take every slot; opening
    one reads its client's folder and a count kept beside them, never the others' sessions."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.slots = threading.BoundedSemaphore(GRADING)
        self.graders = Graders()
        self.quota = number(QUOTA_SETTING, MOST // 8, "a number of sessions")

    def _path(self, sid: str, owner: str) -> Path:
        mine = hashlib.sha256(owner.encode()).hexdigest()[:24]
        return self.root / mine / f"{hashlib.sha256(sid.encode()).hexdigest()[:40]}.json"

    def _count(self, change: int) -> int:
        """The sessions open, moved by `change` (held under the open lock)."""
        path = self.root / ".count"
        try:
            now = int(path.read_text() or 0)
        except (OSError, ValueError):
            now = 0
        now = max(0, now + change)
        if change:
            write_atomic(path, str(now).encode())
        return now

    def open(self, sid: str, owner: str, session: Session) -> None:
        """A new session `sid` of client `owner`, if none is open under that id and the
        bounds allow it: the client's quota, then the server's."""
        path = self._path(sid, owner)
        with file_lock(self.root / ".open.lock"):
            if self._alive(path):
                raise OrsError(HTTPStatus.BAD_REQUEST, "Session already exists")
            path.parent.mkdir(exist_ok=True)
            mine = [p for p in path.parent.glob("*.json") if self._alive(p)]
            if len(mine) >= self.quota:
                raise OrsError(
                    HTTPStatus.TOO_MANY_REQUESTS,
                    f"this client holds {len(mine)} sessions, its most "
                    f"({QUOTA_SETTING}): close one (delete_session) or let one go idle",
                )
            if self._count(0) >= MOST:  # a sweep of the idle, only when the bound is reached
                held = sum(1 for p in self.root.glob("*/*.json") if self._alive(p))
                self._count(held - self._count(0))
                if held >= MOST:
                    raise OrsError(
                        HTTPStatus.SERVICE_UNAVAILABLE, f"{MOST} sessions are open; try again"
                    )
            write_atomic(path, json.dumps(session.__dict__).encode())
            self._count(+1)

    def get(self, sid: str, owner: str) -> Session:
        """Session `sid`, touched (its idle time starts again); another client's is not found."""
        path = self._path(sid, owner)
        if not self._alive(path):
            raise OrsError(HTTPStatus.NOT_FOUND, "Active environment not found")
        try:
            data = json.loads(path.read_bytes())
            os.utime(path)
        except (OSError, ValueError):
            raise OrsError(HTTPStatus.NOT_FOUND, "Active environment not found") from None
        return Session(**data)

    def put(self, sid: str, owner: str, session: Session) -> None:
        write_atomic(self._path(sid, owner), json.dumps(session.__dict__).encode())

    def close(self, sid: str, owner: str) -> None:
        path = self._path(sid, owner)
        with file_lock(self.root / ".open.lock"):
            if path.exists():
                self._count(-1)
            path.unlink(missing_ok=True)
            path.with_suffix(".lock").unlink(missing_ok=True)

    def answering(self, sid: str, owner: str) -> Any:
        """A lock held while session `sid` is answered: one answer is scored, once."""
        return file_lock(self._path(sid, owner).with_suffix(".lock"))

    @staticmethod
    def _alive(path: Path) -> bool:
        """Whether the session at `path` is open; one idle past `IDLE` is dropped (the count
        catches up at the next sweep)."""
        try:
            idle = time.time() - path.stat().st_mtime
        except FileNotFoundError:
            return False
        if idle > IDLE:
            path.unlink(missing_ok=True)
            path.with_suffix(".lock").unlink(missing_ok=True)
            return False
        return True


# A client as sessions know it: its bearer token where it sends one (many trainers behind one
# address stay apart), else its address. `CLIENT` is set by the app, never from a header: an
# HTTP header name cannot begin with a colon.
CLIENT = ":client"
_PRINTABLE = re.compile(r"[\x21-\x7e]{1,200}")


def owner(headers: Mapping[str, str]) -> str:
    auth = headers.get("authorization", "")
    return f"token {auth}" if auth else f"address {headers.get(CLIENT, '')}"


def event_id(text: object) -> str | None:
    """A client's call id as it may stand on an event stream's line: printable ASCII, no
    space, at most 200 characters; None for anything else (a fresh id is used)."""
    return text if isinstance(text, str) and _PRINTABLE.fullmatch(text) else None


def session_id(headers: Mapping[str, str]) -> str:
    sid = headers.get("x-session-id", "").strip()
    if not sid:
        raise OrsError(HTTPStatus.BAD_REQUEST, "X-Session-ID header is required")
    if not _PRINTABLE.fullmatch(sid):
        raise OrsError(
            HTTPStatus.BAD_REQUEST, "X-Session-ID: printable ASCII, no space, 200 at most"
        )
    return sid


def result(reward: float) -> dict[str, Any]:
    """ORS's RunToolOutput of a scored answer: the episode ends."""
    text = "Correct!" if reward == 1.0 else "Incorrect." if reward == 0.0 else f"Scored {reward:g}."
    return {
        "ok": True,
        "output": {
            "blocks": [{"text": text, "detail": None, "type": "text"}],
            "metadata": {"reward": reward},
            "reward": reward,
            "finished": True,
        },
    }


def events(call: str, outcome: Mapping[str, Any]) -> bytes:
    """A tool call's answer as ORS's server streams it: its call id, then the result."""
    data = json.dumps(outcome, ensure_ascii=False)
    return f"event: task_id\r\ndata: {call}\r\n\r\nevent: end\r\ndata: {data}\r\n\r\n".encode()
