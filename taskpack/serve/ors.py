"""The Open Reward Standard's task verbs, answered by `taskpack serve`: an ORS environment's
client (`ors-sdk`'s `ORS(base_url=...).environment(NAME)`) lists the splits, counts and gets the
tasks of a served task set with no taskpack code on its side.

Each served task set is an environment named after the set; a mirror serves every set of its
upstream, at its latest version. A name is matched exactly, else ignoring case as ORS matches
it, when that names one set only: a mirror's `Foo` and `foo` are two environments, and `FOO`
names neither (404, saying which two it could mean). The verbs and their
answers are those of ORS's own server (`ors/server.py` in ors-sdk 0.1.0):

    GET  /health  /list_environments  /{env}/splits  /{env}/tools
    POST /create_session (server-sent events: `task_id`, then `end`)  /delete_session
    POST /{env}/tasks {"split"}  /{env}/num_tasks {"split"}  /{env}/task {"split", "index"}
         /{env}/task_range {"split", "start"?, "stop"?}

An index is a Python list index (negatives count from the end); a range is a slice, clamped as
ORS clamps it. An unknown environment is a 404, a bad split, index or body a 400 or 422, each
`{"detail": ...}` as ORS words it (413 for a body over 64 KiB, 422 for one nested too deep
to read). `tasks` and `task_range` grow with the split: they are answered as a `Listing`, which
the server computes on its lane (`serve/lane.py`) and sends from disk. A task's `task_spec` is
the task's JSON (as the JSON API gives it) with its digest, split and question. OpenReward's
client (openreward 0.1.x, `OPENREWARD_SESSION_URL` pointed here) sends the same verbs without
the environment in the path, naming it in an `X-Deployment` header, and reads `env_name` beside
a task: both are answered too.

An episode is a session on one task (`serve/episodes.py`): `/create` (X-Session-ID, with a
`task_spec` or a split and index), `/{env}/prompt`, `/{env}/task_tools` (one tool, `answer`),
`/{env}/call` (the answer scored by the task's own verifier, streamed as ORS streams it),
`/ping`, `/delete`. A task spec names a stored task by its `id` (in its `split`, else the first
split holding the id) and, where it carries one, its `digest`: the server runs its own copy of
the task, never one a client writes, so no client can choose the reference it is scored
against.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Protocol

from taskpack.base.routes import named
from taskpack.errors import nearest
from taskpack.serve import episodes
from taskpack.serve.episodes import OrsError, Session, Sessions, event_id, owner, session_id
from taskpack.serve.jobs import ors_spec
from taskpack.serve.server import BODY_TOO_LARGE, MAX_BODY

if TYPE_CHECKING:
    from taskpack.model import Task
    from taskpack.serve.lane import ServedVersion
    from taskpack.storage.taskset import Split, TaskSet

FIXED = ("splits", "tools", "num_tasks", "task")  # of a pinned version, the same every time
_TYPES = ("train", "validation", "test")  # ORS's split types; other names are "validation"
_PYTHON: dict[str, type] = {"string": str, "integer": int, "object": dict}  # a field's type


class OpenSet(Protocol):
    """A served task set: its version, its splits opened for this thread, and what a lane
    worker opens to read it."""

    ts: TaskSet

    def split(self, name: str) -> Split: ...

    @property
    def opened(self) -> ServedVersion: ...


@dataclass(frozen=True)
class Listing:
    """ORS `tasks` or `task_range`, checked, for the lane to write: tasks `start` to `stop`
    of `split` of the set `served` opens, as environment `env`."""

    served: ServedVersion
    split: str
    start: int
    stop: int
    env: str


def _body(data: bytes, fields: Mapping[str, tuple[type, bool]]) -> dict[str, Any]:
    """The JSON body, checked as ORS's pydantic models check it (extra fields forbidden):
    `fields` maps a name to (its type, whether it is required)."""
    if len(data) > MAX_BODY:
        raise OrsError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, BODY_TOO_LARGE)
    try:
        body = json.loads(data or b"null")
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python reads
        raise OrsError(HTTPStatus.UNPROCESSABLE_ENTITY, [_problem("json_invalid", [])]) from None
    if not isinstance(body, dict):
        raise OrsError(HTTPStatus.UNPROCESSABLE_ENTITY, [_problem("model_type", [])])
    problems = [_problem("extra_forbidden", [k]) for k in body if k not in fields]
    for name, (kind, required) in fields.items():
        value = body.get(name)
        if value is None:
            if required:
                problems.append(_problem("missing", [name]))
        elif not isinstance(value, kind) or isinstance(value, bool):
            problems.append(_problem(_TYPE_ERRORS[kind], [name]))
    if problems:
        raise OrsError(HTTPStatus.UNPROCESSABLE_ENTITY, problems)
    return body


_TYPE_ERRORS = {int: "int_type", str: "string_type", dict: "dict_type"}


def _problem(kind: str, where: list[str]) -> dict[str, Any]:
    return {"type": kind, "loc": ["body", *where], "msg": kind.replace("_", " ")}


class Ors:
    """The verbs over `environments()`: name -> the served set (looked up on each request: a
    mirror's upstream may gain sets)."""

    def __init__(
        self,
        environments: Callable[[], Mapping[str, Callable[[], OpenSet]]],
        sessions: Sessions,
        tool_name: str = episodes.TOOL,
    ) -> None:
        self.environments = environments
        self.sessions = sessions
        self.tool_name = tool_name

    # Each verb, as the route table names it (`routes.ORS`: handler): (status, content type,
    # bytes), or the `Listing` the server's lane computes.

    def r_health(self, params: Params, body: bytes, headers: Params) -> Answer:
        return _json({"status": "ok"})

    def r_environments(self, params: Params, body: bytes, headers: Params) -> Answer:
        return _json(sorted(self.environments()))

    def r_create_session(self, params: Params, body: bytes, headers: Params) -> Answer:
        sid = str(uuid.uuid4())
        events = f"event: task_id\r\ndata: {sid}\r\n\r\nevent: end\r\ndata: \r\n\r\n"
        return HTTPStatus.OK, "text/event-stream", events.encode()

    def r_delete_session(self, params: Params, body: bytes, headers: Params) -> Answer:
        """Ends the session, and its episode if one is open (a client that skips `/delete`
        leaves no session holding its place)."""
        sid = session_id(headers)
        self.sessions.close(sid, owner(headers))
        return _json({"sid": sid})

    def r_tools(self, params: Params, body: bytes, headers: Params) -> Answer:
        self._served(_env(params, headers))
        return _json({"tools": [episodes.tool(name=self.tool_name)]})

    def r_splits(self, params: Params, body: bytes, headers: Params) -> Answer:
        names = self._served(_env(params, headers)).ts.splits
        return _json([{"name": n, "type": n if n in _TYPES else "validation"} for n in names])

    def r_num_tasks(self, params: Params, body: bytes, headers: Params) -> Answer:
        _, _, split, _ = self._asked("num_tasks", params, body, headers)
        return _json({"num_tasks": len(split)})

    def r_task(self, params: Params, body: bytes, headers: Params) -> Answer:
        env, _, split, request = self._asked("task", params, body, headers)
        spec = ors_spec(_indexed(split, request["index"]), request["split"])
        return _json({"task": spec, "env_name": env})

    def r_tasks(self, params: Params, body: bytes, headers: Params) -> Answer:
        env, served, split, request = self._asked("tasks", params, body, headers)
        return Listing(served.opened, request["split"], 0, len(split), env)

    def r_task_range(self, params: Params, body: bytes, headers: Params) -> Answer:
        env, served, split, request = self._asked("task_range", params, body, headers)
        start, stop, _ = slice(request.get("start"), request.get("stop")).indices(len(split))
        return Listing(served.opened, request["split"], start, max(start, stop), env)

    # --- episodes ---------------------------------------------------------------------------

    def r_create(self, params: Params, body: bytes, headers: Params) -> Answer:
        sid = session_id(headers)
        request = self._checked("create", body)
        has_split, has_index = request.get("split") is not None, request.get("index") is not None
        if (request.get("task_spec") is not None) == (has_split and has_index) or (
            has_split != has_index
        ):
            asked = "Provide either task_spec or both split and index, not both/neither"
            raise OrsError(
                HTTPStatus.UNPROCESSABLE_ENTITY, [_problem("value_error", []) | {"msg": asked}]
            )
        found = self.environments()
        env = request.get("env_name") or _env(params, headers) or next(iter(found), "")
        served = self._served(env)
        task, split = self._chosen(served, request)
        why = episodes.ungraded(task)
        if why is not None:
            raise OrsError(HTTPStatus.BAD_REQUEST, f"task {task.id!r} is not scored here: {why}")
        record = Session(env, served.ts.manifest.digest, split, task.id, task.digest)
        self.sessions.open(sid, owner(headers), record)
        return _json({"sid": sid})

    def r_ping(self, params: Params, body: bytes, headers: Params) -> Answer:
        self.sessions.get(session_id(headers), owner(headers))
        return _json({"status": "ok"})

    def r_delete(self, params: Params, body: bytes, headers: Params) -> Answer:
        sid = session_id(headers)
        self.sessions.close(sid, owner(headers))
        return _json({"sid": sid})

    def r_task_tools(self, params: Params, body: bytes, headers: Params) -> Answer:
        session = self.sessions.get(session_id(headers), owner(headers))
        task = self._task(params, headers, session)
        return _json({"tools": [episodes.tool(task, self.tool_name)]})

    def r_prompt(self, params: Params, body: bytes, headers: Params) -> Answer:
        session = self.sessions.get(session_id(headers), owner(headers))
        return _json(episodes.prompt(self._task(params, headers, session)))

    def r_call(self, params: Params, body: bytes, headers: Params) -> Answer:
        sid, who = session_id(headers), owner(headers)
        request = self._checked("call", body)
        given = request["input"].get("answer")
        call_id = event_id(request.get("task_id"))
        with self.sessions.answering(sid, who):
            session = self.sessions.get(sid, who)
            task = self._task(params, headers, session)
            if session.result is not None:
                if session.call and call_id == session.call:  # a retry of it
                    return _events(session.call, session.result)
                outcome: dict[str, Any] = {"ok": False, "error": "the episode is over"}
            elif request["name"] != self.tool_name:
                outcome = {"ok": False, "error": f"unknown tool {request['name']!r}"}
            elif not isinstance(given, str) or set(request["input"]) != {"answer"}:
                outcome = {"ok": False, "error": "the input is {'answer': text}"}
            else:
                try:
                    reward = episodes.grade(task, given, self.sessions.slots, self.sessions.graders)
                except episodes.GradingError as e:  # an error, not a reward: may be sent again
                    return _events(call_id or uuid.uuid4().hex, {"ok": False, "error": str(e)})
                outcome = episodes.result(reward)
                session.result, session.call = outcome, uuid.uuid4().hex
                self.sessions.put(sid, who, session)
                return _events(session.call, outcome)
        return _events(call_id or uuid.uuid4().hex, outcome)

    def _task(self, params: Params, headers: Params, session: Session) -> Task:
        """The task of `session`, as it was when the session began."""
        served = self._served(_env(params, headers) or session.env)
        if served.ts.manifest.digest != session.version:
            raise OrsError(HTTPStatus.GONE, "the set has a new version since the session began")
        split = served.split(session.split)
        position = split.position(session.id)
        task = split[position] if position is not None else None
        if task is None or task.digest != session.digest:
            raise OrsError(HTTPStatus.GONE, "the session's task is no longer served")
        return task

    def _chosen(self, served: OpenSet, request: Mapping[str, Any]) -> tuple[Task, str]:
        """The task a `create` names: a split and index, or a spec. A spec names a stored
        task by its id in its split (as every spec this server hands out does), its digest
        where it gives one; an id held by several splits, with no split named, is taken only
        where the spec's question is one holder's own, else refused: never guessed."""
        names = served.ts.splits
        spec = request.get("task_spec")
        if spec is None:
            split = request["split"]
            return _indexed(_split_of(served, split), request["index"]), split
        task_id, digest, asked = str(spec.get("id")), spec.get("digest"), spec.get("split")
        if asked is not None:
            _split_of(served, asked)
        holding = []
        for name in [asked] if asked is not None else names:
            position = served.split(name).position(task_id)
            if position is not None:
                holding.append((served.split(name)[position], name))
        if not holding:
            raise OrsError(HTTPStatus.BAD_REQUEST, f"task_spec: no task {task_id!r} is served")
        fitting = [(t, n) for t, n in holding if digest in (None, t.digest)]
        if not fitting:
            raise OrsError(
                HTTPStatus.BAD_REQUEST, f"task_spec: task {task_id!r} is served with another digest"
            )
        if len(fitting) > 1:
            question = spec.get("question")
            fitting = [(t, n) for t, n in fitting if question == t.instruction]
        if len(fitting) != 1:
            held = ", ".join(n for _, n in holding)
            raise OrsError(
                HTTPStatus.BAD_REQUEST,
                f"task_spec names no split, and task {task_id!r} is in splits {held}: give its "
                "split, as the specs this server hands out do",
            )
        return fitting[0]

    def _checked(self, verb: str, body: bytes) -> dict[str, Any]:
        fields = named("ors_" + verb).body  # as the OpenAPI document gives them
        return _body(body, {k: (_PYTHON[kind], need) for k, (kind, need) in fields.items()})

    def _asked(
        self, verb: str, params: Params, body: bytes, headers: Params
    ) -> tuple[str, OpenSet, Split, dict[str, Any]]:
        """A split verb's environment, set, split and body, each checked as ORS checks it."""
        env = _env(params, headers)
        served = self._served(env)
        request = self._checked(verb, body)
        return env, served, _split_of(served, request["split"]), request

    def _served(self, env: str) -> OpenSet:
        found = self.environments()
        opener = found.get(env)
        if opener is None:
            alike = sorted(name for name in found if name.casefold() == env.casefold())
            if len(alike) != 1:
                also = f" (ask by its exact name: {', '.join(alike)})" if alike else ""
                raise OrsError(HTTPStatus.NOT_FOUND, f"unknown environment {env!r}{also}")
            opener = found[alike[0]]
        return opener()


Params = Mapping[str, str]
Answer = tuple[int, str, bytes] | Listing


def _env(params: Params, headers: Params) -> str:
    """The environment a verb names: in its path, or in OpenReward's `X-Deployment` header."""
    return params.get("env") or headers.get("x-deployment", "")


def _split_of(served: OpenSet, name: str) -> Split:
    names = served.ts.splits
    if name not in names:
        close = nearest(str(name), names)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise OrsError(
            HTTPStatus.BAD_REQUEST, f"Invalid split {name!r}{hint} (splits: {', '.join(names)})"
        )
    return served.split(name)


def _indexed(split: Split, index: int) -> Task:
    """Task `index` of `split`, a Python list index (negatives count from the end)."""
    n = len(split)
    if not -n <= index < n:
        raise OrsError(
            HTTPStatus.BAD_REQUEST,
            f"Invalid index {index}: split {split.name!r} has {n} tasks "
            f"(0 to {n - 1}, or -{n} to -1 from the end)",
        )
    return split[index % n]


def _events(call: str, outcome: Mapping[str, Any]) -> tuple[int, str, bytes]:
    return HTTPStatus.OK, "text/event-stream", episodes.events(call, outcome)


def _json(value: Any) -> tuple[int, str, bytes]:
    return HTTPStatus.OK, "application/json", json.dumps(value, ensure_ascii=False).encode()
