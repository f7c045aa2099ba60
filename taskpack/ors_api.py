"""The Open Reward Standard's task verbs, answered by `taskpack serve`: an ORS environment's
client (`ors-sdk`'s `ORS(base_url=...).environment(NAME)`) lists the splits, counts and gets the
tasks of a served task set with no taskpack code on its side.

Each served task set is an environment named after the set (case-insensitive, as ORS names
are); a mirror serves every set of its upstream, at its latest version. The verbs and their
answers are those of ORS's own server (`ors/server.py` in ors-sdk 0.1.0):

    GET  /health  /list_environments  /{env}/splits  /{env}/tools
    POST /create_session (server-sent events: `task_id`, then `end`)  /delete_session
    POST /{env}/tasks {"split"}  /{env}/num_tasks {"split"}  /{env}/task {"split", "index"}
         /{env}/task_range {"split", "start"?, "stop"?}

An index is a Python list index (negatives count from the end); a range is a slice, clamped as
ORS clamps it. An unknown environment is a 404, a bad split, index or body a 400 or 422, each
`{"detail": ...}` as ORS words it. A task's `task_spec` is the task's JSON (as the JSON API
gives it) with its digest. OpenReward's client (openreward 0.1.x, `OPENREWARD_SESSION_URL`
pointed here) sends the same verbs without the environment in the path, naming it in an
`X-Deployment` header, and reads `env_name` beside a task: both are answered too. Sessions
carry no state here: tasks are data, and a session id is only what the client expects to send.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Protocol

from taskpack.errors import TaskpackError
from taskpack.http1 import MAX_BODY
from taskpack.routes import named

if TYPE_CHECKING:
    from taskpack.model import Task
    from taskpack.taskset import Split, TaskSet

_TYPES = ("train", "validation", "test")  # ORS's split types; other names are "validation"
_PYTHON: dict[str, type] = {"string": str, "integer": int}  # a body field's JSON type


class Served(Protocol):
    """A served task set: its version, and its splits opened for this thread."""

    ts: TaskSet

    def split(self, name: str) -> Split: ...


class OrsError(TaskpackError):
    """An answer of ORS's error shape: `status` and `{"detail": detail}`."""

    def __init__(self, status: int, detail: Any) -> None:
        super().__init__(str(detail))
        self.status, self.detail = status, detail


def _body(data: bytes, fields: Mapping[str, tuple[type, bool]]) -> dict[str, Any]:
    """The JSON body, checked as ORS's pydantic models check it (extra fields forbidden):
    `fields` maps a name to (its type, whether it is required)."""
    if len(data) > MAX_BODY:
        raise OrsError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"a body over {MAX_BODY} bytes")
    try:
        body = json.loads(data or b"null")
    except ValueError:
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
            problems.append(_problem("int_type" if kind is int else "string_type", [name]))
    if problems:
        raise OrsError(HTTPStatus.UNPROCESSABLE_ENTITY, problems)
    return body


def _problem(kind: str, where: list[str]) -> dict[str, Any]:
    return {"type": kind, "loc": ["body", *where], "msg": kind.replace("_", " ")}


class Ors:
    """The verbs over `environments()`: lower-cased name -> the served set (looked up on
    each request: a mirror's upstream may gain sets)."""

    def __init__(
        self,
        environments: Callable[[], Mapping[str, Callable[[], Served]]],
        as_json: Callable[[Task], dict[str, Any]],
    ) -> None:
        self.environments = environments
        self.as_json = as_json

    def answer(
        self, verb: str, params: Mapping[str, str], body: bytes, headers: Mapping[str, str]
    ) -> tuple[int, str, bytes]:
        """(status, content type, bytes) of ORS verb `verb` (a route name without `ors_`)."""
        if verb == "health":
            return _json({"status": "ok"})
        if verb == "environments":
            return _json(sorted(self.environments()))
        if verb == "create_session":
            sid = str(uuid.uuid4())
            events = f"event: task_id\r\ndata: {sid}\r\n\r\nevent: end\r\ndata: \r\n\r\n"
            return HTTPStatus.OK, "text/event-stream", events.encode()
        if verb == "delete_session":
            sid = headers.get("x-session-id", "").strip()
            if not sid:
                raise OrsError(HTTPStatus.BAD_REQUEST, "X-Session-ID header is required")
            return _json({"sid": sid})
        env = params.get("env") or headers.get("x-deployment", "")  # OpenReward's header
        served = self._served(env)
        if verb == "tools":
            return _json({"tools": []})
        if verb == "splits":
            names = served.ts.splits
            return _json([{"name": n, "type": n if n in _TYPES else "validation"} for n in names])
        fields = named("ors_" + verb).body  # as the OpenAPI document gives them
        request = _body(body, {k: (_PYTHON[kind], need) for k, (kind, need) in fields.items()})
        if request["split"] not in served.ts.splits:
            raise OrsError(HTTPStatus.BAD_REQUEST, "Invalid split")
        split = served.split(request["split"])
        if verb == "num_tasks":
            return _json({"num_tasks": len(split)})
        if verb == "tasks":
            return _json({"tasks": [self._spec(t) for t in split], "env_name": env})
        if verb == "task":
            index = request["index"]
            if not -len(split) <= index < len(split):
                raise OrsError(HTTPStatus.BAD_REQUEST, "Invalid index")
            return _json({"task": self._spec(split[index % len(split)]), "env_name": env})
        start, stop, _ = slice(request.get("start"), request.get("stop")).indices(len(split))
        tasks = [self._spec(split[i]) for i in range(start, max(start, stop))]
        return _json({"tasks": tasks, "env_name": env})

    def _served(self, env: str) -> Served:
        opener = self.environments().get(env.lower())
        if opener is None:
            raise OrsError(HTTPStatus.NOT_FOUND, f"unknown environment {env!r}")
        return opener()

    def _spec(self, task: Task) -> dict[str, Any]:
        return {**self.as_json(task), "digest": task.digest}


def _json(value: Any) -> tuple[int, str, bytes]:
    return HTTPStatus.OK, "application/json", json.dumps(value, ensure_ascii=False).encode()
