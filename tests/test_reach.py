"""Nothing a client sends reaches past what it was given (issue 40, items 1-3, 5 and the serve
parts of 7): the diff pages open only versions of the served set, on a lane of their own; the
mirror touches only its own cache; a lying server cannot exhaust a client. Each test is an
attack that worked before these changes."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

import taskpack
from taskpack.errors import TaskpackError
from taskpack.fetch import FetchError
from taskpack.registry.cache import Cache, registry_dirname
from taskpack.registry.mirror import Mirror, NotFound
from taskpack.serve import lane
from taskpack.serve.app import Api, App, Catalog, Registered, allowed_hosts, background

from .conftest import make_task
from .hostile import Hostile, endless, reply

SECRET = "SECRET-PROMPT-of-another-set"
PRIVATE = "PRIVATE-PROMPT-of-a-folder"


def _raw(url: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """GET `path` exactly as written (no client normalises `..` or re-encodes it)."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.putrequest("GET", path, skip_accept_encoding=True)
    for k, v in (headers or {}).items():
        conn.putheader(k, v)
    conn.endheaders()
    response = conn.getresponse()
    try:
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


def _version(i: int, n: int, answer: str = "") -> list[dict[str, Any]]:
    return [make_task(j, answer=f"{j}{answer}", files=[]) for j in range(n)]


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three versions of `viewed` (every answer changes between them), another set whose
    prompts are secret, and a task-set folder beside it that nothing publishes."""
    root = tmp_path_factory.mktemp("reach")
    reg = root / "registry"
    for i, version in enumerate(("1.0.0", "1.1.0", "1.2.0")):
        path = root / f"viewed-{version}"
        tasks = _version(i, 3000, "." * i)
        tasks += [make_task(9000, id="a/b", prompt="the one with a slash", files=[])]
        tasks += [make_task(9001, id="a%2Fb", prompt="the one with a percent", files=[])]
        taskpack.write(path, {"train": tasks}, name="viewed", version=version)
        taskpack.publish(path, registry=reg)
    secret = [make_task(0, prompt=SECRET, files=[])]
    taskpack.write(root / "secret", {"train": secret}, name="secret", version="1.0.0")
    taskpack.publish(root / "secret", registry=reg)
    folder = [make_task(0, prompt=PRIVATE, files=[])]
    taskpack.write(root / "private.taskset", {"train": folder}, name="viewed", version="9.0.0")
    (root / "en@quot").mkdir()
    return reg


@pytest.fixture
def site(registry: Path) -> Iterator[tuple[str, App]]:
    api = Api(Catalog(taskpack.open("viewed@1.1.0", registry=registry), str(registry)))
    app = App(api=api)
    with background(app) as url:
        yield url, app


def test_a_diff_opens_only_versions_of_the_served_set(
    site: tuple[str, App], registry: Path
) -> None:
    url, _ = site
    root = registry.parent
    ok, body = _raw(url, "/api/v1/diff/1.0.0/1.2.0")
    assert ok == 200 and len(json.loads(body)["splits"]["train"]["changed"]) == 3000
    assert _raw(url, "/api/v1/diff/this/1.0.0")[0] == 200
    attacks = [
        str(root / "private.taskset"),  # a folder by its path
        f"{root}/en@quot/../private.taskset",  # a path holding '@', through a real folder
        "secret@1.0.0",  # another set of the same registry
        "secret",
        "../private.taskset",
        "latest",  # a tag: not a version
    ]
    for ref in attacks:
        for page in ("/api/v1/diff", "/diff"):
            for path in (
                f"{page}/1.0.0/{quote(ref, safe='')}",
                f"{page}/{quote(ref, safe='')}/this",
            ):
                status, text = _raw(url, path)
                assert status in (400, 404), (path, status)
                assert PRIVATE not in text and SECRET not in text and "Traceback" not in text
    # Twice-encoded slashes stay '%2F' (decoded once): one part, refused as a ref.
    status, text = _raw(url, "/api/v1/diff/1.0.0/..%252F..%252Fprivate.taskset")
    assert status == 400 and "'..%2F..%2Fprivate.taskset'" in json.loads(text)["error"]


def test_a_diff_cannot_probe_which_folders_exist(site: tuple[str, App], registry: Path) -> None:
    url, _ = site
    there = str(registry.parent / "private.taskset")
    absent = str(registry.parent / "no-such.taskset")
    answers = [_raw(url, f"/api/v1/diff/1.0.0/{quote(p, safe='')}") for p in (there, absent)]
    (s1, t1), (s2, t2) = answers
    assert s1 == s2 and s1 in (400, 404)
    assert t1.replace(there, "X") == t2.replace(absent, "X")


def test_a_task_id_holding_a_slash_opens_through_the_viewers_own_links(
    site: tuple[str, App],
) -> None:
    url, _ = site
    status, page = _raw(url, "/view/train?q=the+one+with+a")  # their prompts
    assert status == 200
    hrefs = [h for h in re.findall(r'href="(/view/train/[^"?]+)"', page) if "%2" in h]
    assert sorted(hrefs) == ["/view/train/a%252Fb", "/view/train/a%2Fb"]
    for href, prompt in (("/view/train/a%2Fb", "slash"), ("/view/train/a%252Fb", "percent")):
        status, task = _raw(url, href)
        assert status == 200 and f"the one with a {prompt}" in task, href
    status, body = _raw(url, "/api/v1/splits/train/by-id/a%2Fb")
    assert status == 200 and json.loads(body)["task"]["id"] == "a/b"
    status, body = _raw(url, "/api/v1/splits/train/by-id/a%252Fb")
    assert status == 200 and json.loads(body)["task"]["id"] == "a%2Fb"


def test_one_diff_of_a_pair_however_many_ask(site: tuple[str, App]) -> None:
    url, app = site
    answers: list[bytes] = []

    def ask() -> None:
        answers.append(httpx.get(url + "/api/v1/diff/1.0.0/1.2.0", timeout=120).content)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(answers) == 8 and len(set(answers)) == 1
    assert app.lane.computed == 1
    page = httpx.get(url + "/diff/1.0.0/1.2.0", timeout=120)  # the page: from what was kept
    assert page.status_code == 200 and app.lane.computed == 1


def test_diffs_run_on_a_bounded_lane_of_their_own(
    site: tuple[str, App], monkeypatch: pytest.MonkeyPatch
) -> None:
    """8 diffs at once: at most AT_ONCE worker processes compute them, a ninth pair beyond
    WAITING is refused with 503, and a task request is answered while they run (it never
    waits behind them; bench/serve.py --diffs times it)."""
    url, app = site
    monkeypatch.setattr(lane, "WAITING", 8)
    versions = ["1.0.0", "1.1.0", "1.2.0", "this"]
    pairs = [(a, b) for a in versions for b in versions if a != b][:9]
    statuses: dict[tuple[str, str], int] = {}

    def ask(pair: tuple[str, str]) -> None:
        answer = httpx.get(url + f"/api/v1/diff/{pair[0]}/{pair[1]}", timeout=300)
        statuses[pair] = answer.status_code

    threads = [threading.Thread(target=ask, args=(p,)) for p in pairs[:8]]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while len(app.lane._pending) < 8 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(app.lane._pending) == 8  # all in flight: the first worker is still starting
    busy = httpx.get(url + f"/api/v1/diff/{pairs[8][0]}/{pairs[8][1]}", timeout=60)
    assert (
        busy.status_code == 503
        and "try again" in busy.json()["error"]
        and busy.headers["retry-after"]
    )
    task = httpx.get(url + "/api/v1/splits/train/tasks/1234", timeout=60)
    assert task.status_code == 200 and task.json()["task"]["id"] == "t1234"
    assert app.lane._pending, "the task request waited for the diffs"
    pool = app.lane._pool
    assert pool is not None and pool._max_workers == lane.AT_ONCE == 1
    for t in threads:
        t.join()
    assert set(statuses.values()) == {200} and app.lane.computed == 8


# --- the mirror ------------------------------------------------------------------------------


@pytest.fixture
def two_registries(tmp_path: Path) -> tuple[Path, Path]:
    """A public registry the mirror serves, and a private one the user pulled once."""
    public, private = tmp_path / "public", tmp_path / "private"
    taskpack.write(tmp_path / "p", {"train": [make_task(0)]}, name="public", version="1.0.0")
    taskpack.publish(tmp_path / "p", registry=public)
    hidden = [make_task(0, prompt=SECRET)]
    taskpack.write(tmp_path / "s", {"train": hidden}, name="private", version="1.0.0")
    taskpack.publish(tmp_path / "s", registry=private)
    taskpack.pull("private@1.0.0", registry=private)  # into the user's own cache
    return public, private


def test_the_mirror_keeps_a_cache_of_its_own(two_registries: tuple[Path, Path]) -> None:
    public, _ = two_registries
    user = Cache()
    mirror = Mirror(str(public))
    assert mirror.cache.root == user.root / "mirrors" / registry_dirname(mirror.location.url)
    before = sorted(p for p in user.root.rglob("*") if "mirrors" not in p.parts)
    with background(App(registered=Registered(mirror))) as url:
        assert taskpack.load("public@1.0.0", registry=url, cache=Cache(user.root.parent / "c"))
    after = sorted(p for p in user.root.rglob("*") if "mirrors" not in p.parts)
    assert before == after  # the user's cache untouched
    assert (mirror.cache.root / "manifests").is_dir()


def test_the_mirror_never_reads_the_users_private_registry(
    two_registries: tuple[Path, Path],
) -> None:
    public, private = two_registries
    user = Cache()
    hidden = user.root / "manifests" / registry_dirname(f"file://{private}") / "private"
    assert (hidden / "1.0.0.json").is_file()  # what the attack read before
    secret_sha = taskpack.open("private@1.0.0", registry=private).manifest.splits["train"].sha256
    # The old default: the mirror shared the user's cache; even so, nothing reaches it now.
    for mirror in (Mirror(str(public)), Mirror(str(public), user)):
        climb = "../" * 2 + f"{registry_dirname(f'file://{private}')}/private"
        for name in (climb, "..", f"public/../{climb}", "public\n"):
            with pytest.raises(NotFound):
                mirror.manifest(name, "1.0.0")
            with pytest.raises(NotFound):
                mirror.versions(name)
        with pytest.raises(NotFound):
            mirror.object("public", "1.0.0", str(secret_sha))
        with background(App(registered=Registered(mirror))) as url:
            for path in (
                "/registry/v1/sets/..%2F..%2Fx/versions/1.0.0",
                f"/registry/v1/sets/{quote(climb, safe='')}/versions/1.0.0",
                "/registry/v1/sets/../versions",
                f"/registry/v1/sets/public/versions/1.0.0/objects/{secret_sha}",
                "/registry/v1/sets/public/versions/..%2F1.0.0",
            ):
                status, text = _raw(url, path)
                assert status == 404 and SECRET not in text and '"splits"' not in text, path


def test_the_mirror_deletes_nothing_outside_its_cache(tmp_path: Path) -> None:
    """A cached manifest that does not parse is set aside inside the cache; a host file the
    client names is never touched."""
    public = tmp_path / "public"
    taskpack.write(tmp_path / "p", {"train": [make_task(0)]}, name="public", version="1.0.0")
    taskpack.publish(tmp_path / "p", registry=public)
    victim = tmp_path / "victim" / "1.0.0.json"
    victim.parent.mkdir()
    victim.write_text("not a manifest")
    mirror = Mirror(str(public), Cache(tmp_path / "cache" / "deep" / "er"))
    climb = os.path.relpath(victim.parent, mirror.cache.root / "manifests" / "x")
    with pytest.raises(NotFound):
        mirror.manifest(climb, "1.0.0")
    assert victim.read_text() == "not a manifest"
    mirror.manifest("public", "1.0.0")
    kept = next((mirror.cache.root / "manifests").rglob("1.0.0.json"))
    kept.write_text("{broken")
    assert mirror.manifest("public", "1.0.0").name == "public"  # fetched again
    assert kept.with_name("1.0.0.json.bad").read_text() == "{broken"


# --- a lying server --------------------------------------------------------------------------

GIB = 1 << 30


def test_fetch_refuses_an_answer_larger_than_it_can_be() -> None:
    from taskpack.fetch import task

    def answer(path: str) -> Iterator[bytes]:
        yield f"HTTP/1.1 200 OK\r\nContent-Length: {GIB}\r\n\r\n".encode()
        yield from endless(b"")

    with Hostile(answer) as liar:
        start = time.monotonic()
        with pytest.raises(FetchError, match=f"{GIB} bytes"):
            task(liar.url, "train", 0)
        assert time.monotonic() - start < 5


def test_fetch_holds_no_more_than_its_bound_of_an_endless_answer() -> None:
    """Run in a process of its own, to read its peak memory: a 1 GiB answer took 3.1 GB."""
    with Hostile(lambda path: endless(b"HTTP/1.1 200 OK\r\n\r\n")) as liar:
        code = (
            "import sys\n"
            "from taskpack.fetch import task, FetchError, MAX_ANSWER\n"
            "try:\n    task(sys.argv[1], 'train', 0)\n"
            "except FetchError as e:\n    print(e)\n"
            # VmHWM is this program's own peak (ru_maxrss keeps the forking parent's)
            "peak = open('/proc/self/status').read().split('VmHWM:')[1].split()[0]\n"
            "print(int(peak) >> 10, MAX_ANSWER >> 20)\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, liar.url], capture_output=True, text=True, timeout=120
        )
    assert out.returncode == 0, out.stderr
    message, peak = out.stdout.strip().splitlines()
    assert "more than" in message
    used, bound = (int(x) for x in peak.split())
    assert used < bound + 150, (used, bound)  # MiB: the bound plus the interpreter


def test_fetch_has_one_deadline_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from taskpack import fetch

    monkeypatch.setattr(fetch, "TIMEOUT", 2.0)
    body = b'{"splits": {}}' * 100
    head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode()

    def trickle(path: str) -> Iterator[bytes]:
        yield head
        for i in range(len(body)):
            yield body[i : i + 1]
            time.sleep(0.5)

    with Hostile(trickle) as liar:
        start = time.monotonic()
        with pytest.raises(FetchError, match="within 2 s"):
            fetch.task(liar.url, "train", 0)
        assert time.monotonic() - start < 4


def test_no_redirect_to_another_origin_is_followed() -> None:
    from taskpack.fetch import task
    from taskpack.registry import open_registry

    with Hostile(lambda path: iter([reply(b'["x"]')])) as other:
        moved = reply(b"", "302 Found", f"Location: {other.url}/api/v1\r\n")
        with Hostile(lambda path: iter([moved])) as liar:
            with pytest.raises(FetchError, match="HTTP 302"):
                task(liar.url, "train", 0)
            with pytest.raises(TaskpackError, match="another origin"):
                open_registry(liar.url).names()
        assert other.paths == []


@pytest.mark.parametrize(
    "version",
    [b"[]", b'"x"', b'{"splits": 5}', b'{"splits": {"t": 1}, "digest": 1}', b"{no json", b"7"],
)
def test_any_unexpected_shape_is_one_fetch_error(version: bytes) -> None:
    from taskpack.fetch import task

    with Hostile(lambda path: iter([reply(version)])) as liar, pytest.raises(FetchError):
        task(liar.url, "train", 0)


def test_an_http_registry_bounds_every_answer(tmp_path: Path) -> None:
    """A listing claiming 1 GiB is refused before it is read, one without a length at its
    bound; an object is never written past its listed size."""
    from taskpack.registry import open_registry
    from taskpack.registry.http import MAX_LISTING

    taskpack.write(tmp_path / "ts", {"train": [make_task(0)]}, name="lied", version="1.0.0")
    manifest = (tmp_path / "ts" / "manifest.json").read_bytes()
    size = taskpack.open(tmp_path / "ts").manifest.splits["train"].bytes

    def answer(path: str) -> Iterator[bytes]:
        if path.endswith("/names"):
            yield f"HTTP/1.1 200 OK\r\nContent-Length: {GIB}\r\n\r\n".encode()
            yield from endless(b"")
        elif path.endswith("/tags"):
            yield from endless(b"HTTP/1.1 200 OK\r\n\r\n")
        elif path.endswith("/versions"):
            yield reply(b'["1.0.0"]')
        elif path.endswith("/versions/1.0.0"):
            yield reply(manifest)
        else:  # the split object: far more than its listed size, no length given
            yield from endless(b"HTTP/1.1 200 OK\r\n\r\n")

    with Hostile(answer) as liar:
        registry = open_registry(liar.url)
        start = time.monotonic()
        with pytest.raises(TaskpackError, match=f"{GIB} bytes"):
            registry.names()
        assert time.monotonic() - start < 5
        with pytest.raises(TaskpackError, match=f"more than the {MAX_LISTING} bytes"):
            registry.tags("lied")
        with pytest.raises(TaskpackError, match=f"more than the {size} bytes"):
            taskpack.pull("lied@1.0.0", registry=liar.url)
    biggest = max(p.stat().st_size for p in Cache().root.rglob("*") if p.is_file())
    assert biggest <= max(size, len(manifest))


def test_an_http_registry_bounds_pass_rates_by_their_listed_size(tmp_path: Path) -> None:
    """An annotations file is listed with its size too: never read past it."""
    from taskpack.storage.writer import TaskSetWriter

    with TaskSetWriter(tmp_path / "ts", name="rated", version="1.0.0") as writer:
        writer.write_split("train", [make_task(0)])
        row = {"id": "t0", "model": "m", "settings": "{}", "count": 2, "correct": 1, "mean": 0.5}
        writer.annotate("train", [row])
    m = taskpack.open(tmp_path / "ts").manifest
    split = m.splits["train"]
    files = {split.sha256: (tmp_path / "ts" / str(split.path)).read_bytes()}

    def answer(path: str) -> Iterator[bytes]:
        if path.endswith("/versions/1.0.0"):
            yield reply((tmp_path / "ts" / "manifest.json").read_bytes())
        elif path.rsplit("/", 1)[-1] in files:
            yield reply(files[path.rsplit("/", 1)[-1]])
        else:  # the annotations: far more than their listed size, no length given
            yield from endless(b"HTTP/1.1 200 OK\r\n\r\n")

    with Hostile(answer) as liar:
        size = m.annotations["train"].bytes
        with pytest.raises(TaskpackError, match=f"more than the {size} bytes"):
            taskpack.pull("rated@1.0.0", registry=liar.url)


# --- the server's own bounds ----------------------------------------------------------------


def test_serve_refuses_huge_headers_and_other_hosts_in_the_request_line(
    site: tuple[str, App],
) -> None:
    _, app = site
    hosts = allowed_hosts("127.0.0.1", 1)  # its names, bare or with a port
    with background(App(api=app.api, hosts=hosts)) as checked:
        _, port = checked.removeprefix("http://").rsplit(":", 1)

        def send(request: bytes) -> bytes:
            with socket.create_connection(("127.0.0.1", int(port)), timeout=30) as s:
                s.sendall(request)
                return s.recv(4096)

        big = b"GET /api/v1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n"
        assert send(big).startswith(b"HTTP/1.1 431")
        other = b"GET http://other.host/api/v1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        assert send(other).startswith(b"HTTP/1.1 421")
        mine = "GET /api/v1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        assert send(mine.encode()).startswith(b"HTTP/1.1 200")
