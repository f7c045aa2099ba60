"""The routes of `taskpack serve`, as one table: the server dispatches by it, `openapi()`
describes it, and `taskpack.fetch` builds its URLs from it, so a route is written once.

A pattern's `{name}` takes one path segment; `{name*}` (last only) takes the rest of the path,
slashes included, so a task id holding `/` is one value. Paths are matched as the HTTP server
decoded them, once: nothing here decodes again (`%252F` stays `%2F`, never `/`).

Standard library only: `taskpack.fetch` imports it at episode start.
"""

from __future__ import annotations

from urllib.parse import quote


class Route:
    """One route: `name` (what `url()` calls it), `pattern`, `summary` (OpenAPI's), `query`
    (the query parameters it reads), `kind` (the answer's content type), `method` (GET, or POST
    for a verb that takes a JSON body), `body` (that body's fields: name -> (JSON type,
    required)); and who answers it: `side` (the server's part: `api` for the served version,
    `ors` for ORS's verbs, `registry` for a mirror's protocol, `app` for the server's own),
    `handler` (that part's handler: `r_<handler>`, or the ORS verb), and `lane` (`thread`, or
    `process` for work that grows with the data, computed on the server's lane of processes)."""

    __slots__ = (
        "body", "handler", "kind", "lane", "method", "name", "params", "pattern", "query",
        "segments", "side", "summary",
    )  # fmt: skip

    def __init__(
        self,
        name: str,
        pattern: str,
        summary: str,
        query: tuple[str, ...] = (),
        kind: str = "application/json",
        method: str = "GET",
        body: Fields = (),
        side: str = "api",
        handler: str = "",
        lane: str = "thread",
    ) -> None:
        self.name, self.pattern, self.summary, self.query = name, pattern, summary, query
        self.kind, self.method, self.body = kind, method, dict(body)
        self.side, self.handler, self.lane = side, handler or name, lane
        self.segments = pattern.strip("/").split("/") if pattern != "/" else []
        self.params = [s.strip("{}*") for s in self.segments if s.startswith("{")]


Fields = tuple[tuple[str, tuple[str, bool]], ...]  # a JSON body's: (name, (type, required))
_BYTES = "application/octet-stream"
_HTML = "text/html; charset=utf-8"
_TASK = ("canonical", "nulls")

SERVED = (
    Route("version", "/api/v1", "the manifest: name, version, digest, splits, source"),
    Route("split", "/api/v1/splits/{split}", "count and split digest"),
    Route("ids", "/api/v1/splits/{split}/ids", "a page of task ids", ("offset", "limit")),
    Route("digests", "/api/v1/splits/{split}/digests", "every task digest (32 bytes)", (), _BYTES),
    Route("task", "/api/v1/splits/{split}/tasks/{index}", "a task by position", _TASK),
    Route("task_by_id", "/api/v1/splits/{split}/by-id/{id*}", "a task by id", _TASK),
    Route("file", "/api/v1/files/{sha256}", "a task file's bytes, hash-checked", ("name",), _BYTES),
    Route(
        "diff_json", "/api/v1/diff/{old}/{new}", "tasks added, removed, changed",
        lane="process",
    ),
    Route("openapi", "/openapi.json", "this API, as OpenAPI 3.1"),
    Route("home", "/", "the splits (`at`: of another version)", ("at",), _HTML),
    Route(
        "view_split", "/view/{split}", "a page of tasks",
        ("page", "q", "where", "col", "rated", "band"), _HTML, lane="process",
    ),
    Route("view_task", "/view/{split}/{id*}", "every field of one task", (), _HTML),
    Route(
        "diff_page", "/diff/{old}/{new}", "the changes between two versions", (), _HTML,
        lane="process",
    ),
    Route("harbor_registry", "/harbor/registry.json", "the splits as a Harbor registry"),
)  # fmt: skip
# The registry protocol a mirror answers (`taskpack.registry.http` reads it).
REGISTRY_PREFIX = "/registry/v1"
_SET = "/sets/{name}"
_JSON = "application/json"
REGISTRY = tuple(
    Route(name, REGISTRY_PREFIX + pattern, summary, (), kind, side="registry", handler=handler)
    for name, handler, pattern, summary, kind in (
        ("registry_names", "names", "/names", "the task sets' names", _JSON),
        ("registry_versions", "versions", _SET + "/versions", "a set's versions", _JSON),
        ("registry_tags", "tags", _SET + "/tags", "a set's tags and the versions they name",
         _JSON),
        ("registry_manifest", "manifest", _SET + "/versions/{version}", "a version's manifest",
         _JSON),
        ("registry_object", "object", _SET + "/versions/{version}/objects/{sha256}", "object",
         _BYTES),
    )
)  # fmt: skip
# The Open Reward Standard's task verbs (`taskpack.serve.ors`): below /ors, and at the root too,
# where ors-sdk's client sends them (aiohttp joins its absolute paths to the origin, dropping
# the path of the base URL it was given).
_SPLIT: Fields = (("split", ("string", True)),)
_ORS_VERBS: tuple[tuple[str, str, str, str, str, Fields], ...] = (
    ("ors_health", "/health", "ok", "GET", "application/json", ()),
    ("ors_environments", "/list_environments", "the environments (task sets)", "GET", "", ()),
    ("ors_create_session", "/create_session", "a session id, as server-sent events", "POST",
     "text/event-stream", ()),
    ("ors_delete_session", "/delete_session", "ends a session (X-Session-ID)", "POST", "", ()),
    ("ors_splits", "/{env}/splits", "the splits", "GET", "", ()),
    ("ors_tools", "/{env}/tools", "the tools (one: answer)", "GET", "", ()),
    ("ors_tasks", "/{env}/tasks", "every task of a split", "POST", "", _SPLIT),
    ("ors_num_tasks", "/{env}/num_tasks", "a split's task count", "POST", "", _SPLIT),
    ("ors_task", "/{env}/task", "task `index` of a split (negative: from the end)", "POST", "",
     (*_SPLIT, ("index", ("integer", True)))),
    ("ors_task_range", "/{env}/task_range", "tasks `start` to `stop`, as a slice", "POST", "",
     (*_SPLIT, ("start", ("integer", False)), ("stop", ("integer", False)))),
    # An episode: a session (X-Session-ID) on one task, scored by the task's own verifier.
    ("ors_create", "/create", "starts an episode on a task: a task_spec, or a split and index",
     "POST", "", (("env_name", ("string", False)), ("task_spec", ("object", False)),
                  ("split", ("string", False)), ("index", ("integer", False)),
                  ("secrets", ("object", False)))),
    ("ors_ping", "/ping", "keeps an episode's session", "POST", "", ()),
    ("ors_delete", "/delete", "ends an episode", "POST", "", ()),
    ("ors_prompt", "/{env}/prompt", "the episode's prompt, as text blocks", "GET", "", ()),
    ("ors_task_tools", "/{env}/task_tools", "the episode's tools (one: answer)", "GET", "", ()),
    ("ors_call", "/{env}/call", "calls the answer tool: scored, as server-sent events", "POST",
     "text/event-stream", (("name", ("string", True)), ("input", ("object", True)),
                           ("task_id", ("string", False)))),
)  # fmt: skip
# OpenReward's client names the environment in an `X-Deployment` header instead.
_ORS_VERBS += tuple(
    (name, pattern.removeprefix("/{env}"), summary + " (environment: X-Deployment)", method,
     kind, body)
    for name, pattern, summary, method, kind, body in _ORS_VERBS
    if pattern.startswith("/{env}/")
)  # fmt: skip
ORS_PREFIX = "/ors"
_ORS_LISTS = ("ors_tasks", "ors_task_range")  # every task of a split, or any slice of them
ORS = tuple(
    Route(
        name, prefix + pattern, summary, (), kind or "application/json", method, body,
        side="ors", handler=name.removeprefix("ors_"),
        lane="process" if name in _ORS_LISTS else "thread",
    )
    for prefix in (ORS_PREFIX, "")
    for name, pattern, summary, method, kind, body in _ORS_VERBS
)  # fmt: skip
# A registry's catalog (`taskpack serve --registry R`, and every mirror): `serve/catalog.py`.
_FACETS = ("q", "license", "reward", "tag")
CATALOG = tuple(
    Route(name, pattern, summary, query, kind, side="catalog", handler=name[len("catalog_") :])
    for name, pattern, summary, query, kind in (
        ("catalog_sets", "/api/v1/sets", "every set at its highest release: `q` words in its "
         "name or description, one value a facet (license, reward, tag); and the facets' counts",
         (*_FACETS, "offset", "limit"), _JSON),
        ("catalog_set", "/api/v1/sets/{name}", "a set's tags and versions", (), _JSON),
        ("catalog_results", "/api/v1/sets/{name}/versions/{version}/results",
         "a version's results: per split, per model, tasks rated, mean reward, pass@1", (), _JSON),
        ("catalog_openapi", "/openapi.json", "this API, as OpenAPI 3.1", (), _JSON),
        ("catalog_home", "/", "every set, searched and narrowed by facets", _FACETS, _HTML),
        ("catalog_set_page", "/sets/{name}", "a set's versions and their results", (), _HTML),
    )
)  # fmt: skip
COMMON = (
    Route("style", "/assets/style.css", "the pages' style sheet", (), "text/css", side="app"),
    Route("health", "/healthz", "ok when serving", (), "text/plain", side="app"),
)
ROUTES = (*SERVED, *REGISTRY, *CATALOG, *COMMON, *ORS)
_BY_NAME = {r.name: r for r in reversed(ROUTES)}  # a name's first route


def named(name: str) -> Route:
    """The route called `name` (the first of its patterns, for an ORS verb's two)."""
    return _BY_NAME[name]


_INTEGERS = ("index", "offset", "limit", "page")
_FLAGS = ("canonical", "nulls")


def match(
    path: str, routes: tuple[Route, ...] = ROUTES, method: str = "GET"
) -> tuple[Route, dict[str, str]] | None:
    """The route `path` (as decoded by the server) takes for `method` (HEAD as GET), with its
    parameters; None if none. A parameter is never empty."""
    given = path.strip("/").split("/") if path.strip("/") else []
    method = "GET" if method == "HEAD" else method
    for route in routes:
        if route.method != method:
            continue
        found = _bind(route.segments, given)
        if found is not None:
            return route, found
    return None


def _bind(pattern: list[str], given: list[str]) -> dict[str, str] | None:
    found: dict[str, str] = {}
    for i, part in enumerate(pattern):
        if part.endswith("*}"):
            rest = "/".join(given[i:])
            if not rest:
                return None
            found[part[1:-2]] = rest
            return found
        if i >= len(given):
            return None
        if part.startswith("{"):
            if not given[i]:
                return None
            found[part[1:-1]] = given[i]
        elif part != given[i]:
            return None
    return found if len(pattern) == len(given) else None


def url(route: str, /, **params: object) -> str:
    """The path of `route` with `params` put in, each escaped (`/` too, but in a
    `{name*}` part, where the server takes it as part of the value)."""
    out = []
    for part in _BY_NAME[route].segments:
        if part.startswith("{"):
            value = str(params[part.strip("{}*")])
            out.append(quote(value, safe="/" if part.endswith("*}") else ""))
        else:
            out.append(part)
    return "/" + "/".join(out)


_ORS_ERRORS = {
    "400": {"description": 'a bad split or index: {"detail": ...}'},
    "404": {"description": 'no such environment: {"detail": ...}'},
    "413": {"description": 'a body over 64 KiB: {"detail": ...}'},
    "422": {"description": 'a body that is not the fields listed: {"detail": [...]}'},
}


def openapi(
    title: str, version: str, served: tuple[Route, ...] = SERVED, prefix: str = "/api/v1"
) -> dict[str, object]:
    """The JSON routes of `served` (one version's, or a catalog's) below `prefix`, the
    document itself, and the ORS verbs below `/ors` (answered at the root too, where ORS
    clients send them), as OpenAPI 3.1."""

    def schema(p: str) -> dict[str, str]:
        kind = "integer" if p in _INTEGERS else "boolean" if p in _FLAGS else "string"
        return {"type": kind}

    paths: dict[str, dict[str, object]] = {}
    documented = [r for r in served if r.pattern.startswith(prefix) or r.handler == "openapi"]
    documented += [r for r in ORS if r.pattern.startswith(ORS_PREFIX + "/")]
    for r in documented:
        params = [
            {"name": p, "in": "path", "required": True, "schema": schema(p)} for p in r.params
        ] + [{"name": q, "in": "query", "required": False, "schema": schema(q)} for q in r.query]
        operation: dict[str, object] = {
            "summary": r.summary,
            "parameters": params,
            "responses": {
                "200": {"description": "OK", "content": {r.kind: {}}},
                **(
                    _ORS_ERRORS
                    if r.side == "ors"
                    else {
                        "400": {"description": "malformed request: {error}"},
                        "404": {"description": "no such split, index, id or file: {error}"},
                    }
                ),
            },
        }
        if r.body:
            properties = {name: {"type": kind} for name, (kind, _) in r.body.items()}
            needed = [name for name, (_, required) in r.body.items() if required]
            body = {"type": "object", "properties": properties, "required": needed}
            operation["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": body}},
            }
        paths.setdefault(r.pattern.replace("*}", "}"), {})[r.method.lower()] = operation
    return {"openapi": "3.1.0", "info": {"title": title, "version": version}, "paths": paths}
