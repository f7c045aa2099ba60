"""`taskpack serve`: the JSON API through a real HTTP client against the running command, bad
requests as JSON 4xx, and the HTML view in a real headless browser."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import taskpack
from taskpack.rows import INLINE_MAX
from taskpack.serve import task_json

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
    assert proc.stderr is not None
    line = proc.stderr.readline()
    url = line.rsplit(" on ", 1)[1].strip().rstrip("/")
    yield url, path
    proc.terminate()
    proc.wait(timeout=10)


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
        ("/view/train/missing", 404, "no task"),
        ("/view/train?page=0", 400, "page"),
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


def test_a_published_version_is_served_the_same(tmp_path: Path) -> None:
    from taskpack.serve import Api, App, Catalog, background

    path = tmp_path / "ts"
    taskpack.write(path, {"train": _tasks()}, name="srv", version="1.2.0")
    taskpack.publish(path)
    with background(App(api=Api(Catalog(taskpack.open("srv@1.2"))))) as url:
        got = httpx.get(f"{url}/api/v1/splits/train/tasks/3")
        assert got.json()["task"]["id"] == "t3"
        assert got.json()["digest"] == taskpack.open(path).manifest.digest


@pytest.mark.slow
def test_the_html_view_in_a_headless_browser(served: tuple[str, Path], tmp_path: Path) -> None:
    """Debian's chromium, driven by Selenium: the list filters, a task page shows what the
    API says the task is, and a screenshot is taken of it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    url, _ = served
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--no-proxy-server"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(url + "/view/train")
        assert "61 of 61 tasks" in driver.find_element(By.TAG_NAME, "body").text
        box = driver.find_element(By.NAME, "where")
        box.send_keys("difficulty=easy")
        box.submit()
        listed = [a.text for a in driver.find_elements(By.CSS_SELECTOR, "ol a")]
        assert listed == [f"t{i}" for i in range(1, 60, 2)]
        driver.find_element(By.LINK_TEXT, "t1").click()
        assert "t1" in driver.title
        driver.get(url + "/view/train/t99")
        task = httpx.get(url + "/api/v1/splits/train/by-id/t99").json()["task"]
        page = driver.find_element(By.TAG_NAME, "body").text
        assert task["prompt"][0]["content"] in page  # "a <b>big</b> one", escaped, as text
        assert "big.bin" in page and task["files"][0]["sha256"] in driver.page_source
        assert task["id"] in driver.title
        shot = Path(os.environ.get("TASKPACK_SCREENSHOT", tmp_path / "task.png"))
        assert driver.save_screenshot(str(shot))
        assert shot.read_bytes()[:8] == base64.b64decode("iVBORw0KGgo=")  # a PNG
    finally:
        driver.quit()
