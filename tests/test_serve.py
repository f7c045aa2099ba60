"""`taskpack serve`: the JSON API through a real HTTP client against the running command, bad
requests as JSON 4xx, and the HTML view in a real headless browser."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import taskpack
from taskpack.serve.app import Api, App, Catalog, background, task_json
from taskpack.storage.rows import INLINE_MAX

from .conftest import make_task


def _tasks() -> list[dict[str, Any]]:
    tasks = [make_task(i, metadata={"difficulty": "easy" if i % 2 else "hard"}) for i in range(60)]
    big = b"B" * (INLINE_MAX + 3)
    tasks.append(make_task(99, files=[{"path": "big.bin", "data": big}], prompt="a <b>big</b> one"))
    return tasks


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    path = tmp_path_factory.mktemp("serve") / "ts"
    taskpack.write(path, {"train": _tasks(), "test": [make_task(500)]}, name="srv")
    proc = subprocess.Popen(
        [sys.executable, "-m", "taskpack", "serve", str(path), "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    url = _started(proc)
    yield url, path
    proc.terminate()
    proc.wait(timeout=10)


def _started(proc: subprocess.Popen[str]) -> str:
    """The URL `taskpack serve` announced, once its workers answer there."""
    assert proc.stderr is not None
    line = proc.stderr.readline()
    url = line.rsplit(" on ", 1)[1].strip().rstrip("/")
    for _ in range(300):
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(url + "/healthz").status_code == 200:
                return url
        time.sleep(0.05)
    raise AssertionError(f"taskpack serve did not answer: {line}")


def test_the_api_serves_the_version(served: tuple[str, Path]) -> None:
    url, path = served
    ts = taskpack.open(path)
    digest = ts.manifest.digest
    with httpx.Client(base_url=url) as http:
        top = http.get("/api/v1").json()
        assert top["name"] == "srv" and top["digest"] == digest
        assert top["splits"]["train"]["rows"] == 61
        count = http.get("/api/v1/splits/train")
        assert count.json()["rows"] == 61 and count.headers["X-Taskpack-Digest"] == digest
        page = http.get("/api/v1/splits/train/ids", params={"offset": 10, "limit": 5}).json()
        assert page["ids"] == ts.split("train").ids()[10:15] and page["total"] == 61
        by_index = http.get("/api/v1/splits/train/tasks/7").json()
        assert by_index["task"] == task_json(ts.split("train")[7]) and by_index["digest"] == digest
        message = by_index["task"]["prompt"][0]
        assert "name" not in message and "tool_calls" not in message  # null fields left out
        kept = http.get("/api/v1/splits/train/tasks/7", params={"nulls": 1}).json()["task"]
        assert kept["prompt"][0]["name"] is None and kept["solution"] is None
        by_id = http.get("/api/v1/splits/train/by-id/t99").json()["task"]
        assert by_id == task_json(ts.split("train").get("t99"))  # type: ignore[arg-type]
        for f in by_id["files"]:  # inline and large files alike, by hash
            data = http.get(f["href"]).content
            assert hashlib.sha256(data).hexdigest() == f["sha256"] and len(data) == f["size"]
        spec = http.get("/openapi.json").json()
        assert (
            spec["openapi"].startswith("3.")
            and "/api/v1/splits/{split}/by-id/{id}" in spec["paths"]
        )


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/api/v1/splits/nope", 404, "no split 'nope'"),
        ("/api/v1/splits/train/by-id/missing", 404, "no task 'missing'"),
        ("/api/v1/splits/train/tasks/61", 404, "out of range"),
        ("/api/v1/splits/train/tasks/-1", 404, "out of range"),
        ("/api/v1/splits/train/tasks/seven", 400, "expected an integer"),
        ("/api/v1/splits/train/ids?limit=100000", 400, "limit"),
        ("/api/v1/files/xyz", 400, "sha256"),
        ("/api/v1/files/" + "0" * 64, 404, "no task file"),
        ("/api/v1/nothing/here", 404, "no such path"),
        ("/elsewhere", 404, "no such path"),
    ],
)
def test_bad_requests_get_a_json_error(
    served: tuple[str, Path], path: str, status: int, says: str
) -> None:
    url, _ = served
    response = httpx.get(url + path)
    assert response.status_code == status, response.text
    body = response.json()
    assert says in body["error"] and "Traceback" not in response.text
    assert body["digest"].startswith("sha256:")


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/view/train/missing", 404, "no task"),
        ("/view/nope", 404, "no split"),
        ("/view/train/missing?at=..%2Fx", 400, "expected a version"),
        ("/view/train/missing?at=9.9.9", 404, "no registry folder there"),
    ],
)
def test_a_bad_page_request_gets_an_error_page(
    served: tuple[str, Path], path: str, status: int, says: str
) -> None:
    url, _ = served
    response = httpx.get(url + path)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("text/html")
    assert says in response.text and "Traceback" not in response.text
    assert '<a href="/">' in response.text and "version digest" in response.text


def test_a_published_version_is_served_the_same(tmp_path: Path) -> None:
    path = tmp_path / "ts"
    taskpack.write(path, {"train": _tasks()}, name="srv", version="1.2.0")
    taskpack.publish(path)
    with background(App(api=Api(Catalog(taskpack.open("srv@1.2"))))) as url:
        got = httpx.get(f"{url}/api/v1/splits/train/tasks/3")
        assert got.json()["task"]["id"] == "t3"
        assert got.json()["digest"] == taskpack.open(path).manifest.digest


def test_every_page_names_the_set_and_its_versions(tmp_path: Path) -> None:
    registry = str(tmp_path / "registry")
    for version, about in (("1.0.0", "first"), ("1.1.0", "a <b>second</b> look")):
        meta = {"description": about, "license": "CC-BY-4.0"}
        taskpack.write(tmp_path / version, {"train": _tasks()}, name="srv", version=version, **meta)
        taskpack.publish(tmp_path / version, registry=registry)
    served = Catalog(taskpack.open("srv@1.1.0", registry=registry), registry)
    with background(App(api=Api(served))) as url:
        for path in ("/", "/view/train", "/view/train/t3", "/view/train/missing"):
            page = httpx.get(url + path).text
            head = page.split('<div class="about">', 1)[1].split("</div>", 1)[0]
            assert "<b>srv@1.1.0</b>" in head and "license CC-BY-4.0" in head, path
            assert "a &lt;b&gt;second&lt;/b&gt; look" in head  # escaped
            assert 'href="/diff/1.0.0/this">changes since 1.0.0<' in head


def test_only_its_own_host_names_are_answered(served: tuple[str, Path]) -> None:
    """A page on another site that DNS-rebinds its name to 127.0.0.1 sends its own Host."""
    url, _ = served
    port = url.rsplit(":", 1)[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost"):
        assert httpx.get(url + "/api/v1", headers={"Host": host}).status_code == 200
    refused = httpx.get(url + "/api/v1", headers={"Host": f"attacker.example:{port}"})
    assert refused.status_code == 421 and "attacker.example" in refused.json()["error"]
    page = httpx.get(url + "/view/train")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"


def test_hostile_values_stay_text() -> None:
    """Every value a task carries is escaped where the HTML shows it, hrefs included; the
    file hash is built outside validation, as a hand-edited row could carry it."""
    from html.parser import HTMLParser

    from taskpack.serve.viewer import task_page

    evil = '"><script>alert(1)</script><a href="'
    task = taskpack.Task.model_validate(
        make_task(1, metadata={"k": evil}, files=[{"path": "a.txt", "data": b"x"}])
    )
    file = task.files[0].model_copy(update={"sha256": evil, "path": "b" + evil})
    hostile = task.model_copy(update={"id": evil, "files": [file]})

    class Tags(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.found.append((tag, attrs))

    parser = Tags()

    class Around:  # the split the page links around the task in
        def ids(self) -> list[str]:
            return [evil, "next"]

    parser.feed(task_page(evil, Around(), hostile, 0))  # type: ignore[arg-type]
    assert "script" not in {tag for tag, _ in parser.found}
    links = [str(dict(attrs)["href"]) for tag, attrs in parser.found if tag == "a"]
    assert links[0] == "/view/%22%3E%3Cscript%3Ealert%281%29%3C%2Fscript%3E%3Ca%20href%3D%22"
    assert links[-1].startswith("/api/v1/files/%22%3E%3Cscript")


def test_idle_connections_do_not_shut_others_out(served: tuple[str, Path]) -> None:
    """300 clients that connect and say nothing: everyone else is still answered."""
    url, _ = served
    address = ("127.0.0.1", int(url.rsplit(":", 1)[1]))
    held = [socket.create_connection(address) for _ in range(300)]
    try:
        with httpx.Client(base_url=url, timeout=10) as http:
            got = [
                http.get(f"/api/v1/splits/train/tasks/{i}").json()["task"]["id"] for i in range(20)
            ]
        assert got == [f"t{i}" for i in range(20)]
    finally:
        for sock in held:
            sock.close()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--host", "no-such-host.invalid"], "--host 'no-such-host.invalid': not an address"),
        (["--host", "192.0.2.1"], "cannot listen on 192.0.2.1"),
        (["--port", "{busy}"], "port {busy} on 127.0.0.1 is in use"),
    ],
)
def test_a_port_it_cannot_have_is_one_line(
    served: tuple[str, Path], args: list[str], says: str
) -> None:
    url, path = served
    busy = url.rsplit(":", 1)[1]
    args = [a.replace("{busy}", busy) for a in args]
    done = subprocess.run(
        [sys.executable, "-m", "taskpack", "serve", str(path), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert says.replace("{busy}", busy) in done.stderr


@pytest.mark.slow
def test_idle_keep_alive_and_half_sent_requests_are_closed(served: tuple[str, Path]) -> None:
    """A client that stops half way through its headers, or keeps a connection open after its
    answer, is cut off after the header-read timeout (10 s)."""
    url, _ = served
    address = ("127.0.0.1", int(url.rsplit(":", 1)[1]))
    with socket.create_connection(address) as half, socket.create_connection(address) as kept:
        half.sendall(b"GET /api/v1 HTTP/1.1\r\n")
        kept.sendall(f"GET /healthz HTTP/1.1\r\nHost: {address[0]}:{address[1]}\r\n\r\n".encode())
        answer = b""
        while not answer.endswith(b"ok\n"):  # its head and body may come in two pieces
            answer += kept.recv(1000)
        assert answer.startswith(b"HTTP/1.1 200")
        for sock in (half, kept):
            sock.settimeout(30)
            assert sock.recv(1000) == b""  # closed by the server, not by our timeout


@pytest.mark.slow
def test_slow_clients_of_a_big_file_hold_little_memory(tmp_path: Path) -> None:
    """8 slow readers of a 256 MiB task file: the server's memory grows by less than 64 MiB
    (a file is sent from disk in pieces, never read whole)."""
    data = os.urandom(1 << 20) * 256
    rows = [{"id": "big", "prompt": "p", "files": [{"path": "big.bin", "data": data}]}]
    taskpack.write(tmp_path / "big", {"train": rows}, name="big")
    sha = hashlib.sha256(data).hexdigest()
    del data, rows
    proc = subprocess.Popen(
        [sys.executable, "-m", "taskpack", "serve", str(tmp_path / "big"), "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = _started(proc)
        before = _rss_mib(proc.pid)
        peak, sizes = before, []

        def reader() -> None:
            got = 0
            with httpx.stream("GET", f"{url}/api/v1/files/{sha}", timeout=120) as response:
                for piece in response.iter_bytes(1 << 16):
                    got += len(piece)
                    time.sleep(0.001)
            sizes.append(got)

        readers = [threading.Thread(target=reader) for _ in range(8)]
        for r in readers:
            r.start()
        while any(r.is_alive() for r in readers):
            peak = max(peak, _rss_mib(proc.pid))
            time.sleep(0.05)
        assert sizes == [256 << 20] * 8
        assert peak - before < 64, (before, peak)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _rss_mib(pid: int) -> float:
    """The resident memory of a process and its children (the server's workers)."""
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    total = 0
    for p in [pid, *map(int, found.split())]:
        with contextlib.suppress(FileNotFoundError):
            status = Path(f"/proc/{p}/status").read_text()
            total += int(next(x for x in status.splitlines() if x.startswith("VmRSS")).split()[1])
    return total / 1024


@pytest.mark.slow
def test_the_html_view_in_a_headless_browser(
    served: tuple[str, Path], browser: Any, tmp_path: Path
) -> None:
    """Debian's chromium, driven by Selenium: the list filters, a task page shows what the
    API says the task is, and a screenshot is taken of it."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    url, _ = served
    browser.get(url + "/view/train")
    assert "61 of 61 tasks" in browser.find_element(By.TAG_NAME, "body").text
    box = browser.find_element(By.NAME, "where")
    box.send_keys("difficulty=easy")
    box.submit()
    # submit() returns before the filtered page has loaded: wait for it, or the old page
    # (or an empty one, mid-load) is read
    WebDriverWait(browser, 30).until(lambda d: "30 of 61 tasks" in d.page_source)
    listed = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "tbody td:first-child a")]
    assert listed == [f"t{i}" for i in range(1, 60, 2)]
    browser.find_element(By.LINK_TEXT, "t1").click()
    WebDriverWait(browser, 30).until(lambda d: "t1" in d.title)
    browser.get(url + "/view/train/t99")
    task = httpx.get(url + "/api/v1/splits/train/by-id/t99").json()["task"]
    page = browser.find_element(By.TAG_NAME, "body").text
    assert task["prompt"][0]["content"] in page  # "a <b>big</b> one", escaped, as text
    assert "big.bin" in page and task["files"][0]["sha256"] in browser.page_source
    assert task["id"] in browser.title
    shot = Path(os.environ.get("TASKPACK_SCREENSHOT", tmp_path / "task.png"))
    assert browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == base64.b64decode("iVBORw0KGgo=")  # a PNG


def test_other_versions_come_from_the_default_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Served without --registry, a version's pages still list its other versions and what
    changed since the one before, from the default registry (TASKPACK_REGISTRY)."""
    monkeypatch.setenv("TASKPACK_REGISTRY", str(tmp_path / "reg"))
    for version, answer in (("1.0.0", "1"), ("1.1.0", "2")):
        path = tmp_path / version
        taskpack.write(path, {"train": [make_task(0, answer=answer)]}, name="v", version=version)
        taskpack.publish(path)
    with background(App(api=Api(Catalog(taskpack.open("v@1.1.0"))))) as url:
        home = httpx.get(url + "/").text
        assert "other versions: " in home and "changes since 1.0.0" in home
        assert '<a href="/?at=1.0.0">1.0.0</a> (<a href="/diff/1.0.0/this">changes</a>)' in home
        older = httpx.get(url + "/?at=1.0.0").text  # another version's own page
        assert "<title>v@1.0.0</title>" in older and 'href="/diff/1.0.0/this"' in older
        diff = httpx.get(url + "/api/v1/diff/1.0.0/this").json()
        assert list(diff["splits"]["train"]["changed"]) == ["t0"], diff


def test_each_route_is_answered_by_the_handler_and_lane_its_entry_names(
    served: tuple[str, Path],
) -> None:
    """The route table says who answers (side, handler) and where (lane): the application
    finds every handler from it when it is made, and work that grows with the data is the
    process lane's, by the table alone."""
    from taskpack.base.routes import ROUTES

    _, path = served
    app = App(api=Api(Catalog(taskpack.open(path))))
    assert set(app.handlers) == {r.name for r in app.routes}
    assert app.handlers["task"] == app.api.r_task and app.handlers["ors_tasks"] == app.ors.r_tasks
    heavy = {r.name for r in ROUTES if r.lane == "process"}
    assert heavy == {"view_split", "diff_page", "diff_json", "ors_tasks", "ors_task_range"}
