"""The viewer of `taskpack serve`, in Debian's headless Chromium (Selenium): a split's table,
stats and facets, a filter that explains a bad expression, every field of real tasks (GSM8K,
SWE-bench, a Harbor task with files, an image), and the changes between two versions; a
screenshot of each kind of page (kept in $TASKPACK_SCREENSHOTS when set)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import taskpack
from taskpack.importer import import_sources

from .conftest import DATA, make_task
from .test_serve import _started

pytestmark = pytest.mark.slow
# A 2x2 PNG, red and blue.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP4z8DwHwyBLAYGBgYGBgCM4Aj4n2KqYgAAAABJRU5ErkJggg=="
)


def _write(path: Path, gsm8k: list[dict[str, Any]], picture: str) -> None:
    """A set with real tasks: GSM8K rows, SWE-bench Lite rows, the Harbor cookbook, and one
    task with an image."""
    gsm = path.parent / f"{path.name}-gsm8k.jsonl"
    gsm.write_text("".join(json.dumps(r) + "\n" for r in gsm8k))
    swe = path.parent / f"{path.name}-swe.jsonl"
    lines = (DATA / "swebench" / "swebench_lite_test.jsonl").read_text().splitlines()[:6]
    swe.write_text("\n".join(lines) + "\n")
    parts = []
    for fmt, split, source in (
        ("gsm8k", "gsm8k", str(gsm)),
        ("swebench", "swe", str(swe)),
        ("harbor", "harbor", str(DATA / "peers" / "harbor_cookbook")),
    ):
        part = path.parent / f"{path.name}-{split}"
        import_sources(part, {split: [source]}, fmt, name="viewed", overwrite=True)
        parts.append(part)
    image = make_task(0, id=picture, files=[{"path": "plot.png", "data": PNG}])
    taskpack.write(path.parent / f"{path.name}-img", {"images": [image]}, name="x", overwrite=True)
    parts.append(path.parent / f"{path.name}-img")
    taskpack.merge(parts, path, name="viewed", version=path.name.split("-")[-1], overwrite=True)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Versions 1.0.0 and 1.1.0 (a GSM8K question changed and a row added; the picture task
    replaced by another), the second served, with the registry both are in."""
    root = tmp_path_factory.mktemp("viewer")
    rows = [json.loads(x) for x in (DATA / "gsm8k" / "test.jsonl").read_text().splitlines()]
    registry = root / "registry"
    changed = {**rows[5], "question": rows[5]["question"] + " (checked)"}
    new = [*rows[:5], changed, *rows[6:121]]
    for version, chosen, picture in (("1.0.0", rows[:120], "picture"), ("1.1.0", new, "plot")):
        _write(root / f"viewed-{version}", chosen, picture)
        taskpack.publish(root / f"viewed-{version}", registry=str(registry))
    command = [sys.executable, "-m", "taskpack", "serve", "viewed@1.1.0", "--port", "0"]
    proc = subprocess.Popen(
        [*command, "--registry", str(registry)], stderr=subprocess.PIPE, text=True
    )
    try:
        yield _started(proc), root
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--no-proxy-server"):
        options.add_argument(arg)
    options.add_argument("--window-size=1400,1000")
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _shot(driver: Any, name: str, tmp_path: Path) -> None:
    folder = Path(os.environ.get("TASKPACK_SCREENSHOTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    assert driver.save_screenshot(str(path))
    assert path.read_bytes()[:8] == base64.b64decode("iVBORw0KGgo=")


def _text(driver: Any, css: str = "body") -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.CSS_SELECTOR, css).text)


def test_a_split_at_a_glance(site: tuple[str, Path], browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    url, _ = site
    browser.get(url + "/view/gsm8k")
    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "thead th")]
    assert headers == ["id", "prompt", "answer", "reward"]
    rows = browser.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert len(rows) == 50
    first = httpx.get(url + "/api/v1/splits/gsm8k/tasks/0").json()["task"]
    cells = [td.text for td in rows[0].find_elements(By.TAG_NAME, "td")]
    assert cells[0] == first["id"] and cells[2] == first["answer"]
    assert cells[1].startswith(first["prompt"][0]["content"][:40])
    assert cells[3] == "numeric_match"
    stats = _text(browser, ".stats")
    assert "121 tasks" in stats and "numeric_match 121" in stats
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.hist rect")) == 24
    assert "reward.kind" in _text(browser, ".facets")
    _shot(browser, "split", tmp_path)
    # The placeholder is a filter that matches: typed in, it keeps tasks.
    box = browser.find_element(By.NAME, "where")
    box.send_keys(box.get_attribute("placeholder"))
    box.submit()
    assert "0 of 121" not in _text(browser, ".main")
    assert len(browser.find_elements(By.CSS_SELECTOR, "tbody tr")) > 0
    browser.get(url + "/view/gsm8k?page=3")
    assert "page 3 of 3" in _text(browser, ".main")
    assert len(browser.find_elements(By.CSS_SELECTOR, "tbody tr")) == 21


def test_a_bad_filter_is_explained_on_the_page(site: tuple[str, Path], browser: Any) -> None:
    url, _ = site
    browser.get(url + "/view/gsm8k?where=metadta.x%3D1")
    error = _text(browser, ".error")
    assert "metadta.x=1" in error and "{" not in error
    browser.get(url + "/view/gsm8k?where=nothing")
    assert "KEY=VALUE" in _text(browser, ".error")


def test_facets_of_swe_tasks_and_chosen_columns(site: tuple[str, Path], browser: Any) -> None:
    from selenium.webdriver.common.by import By

    url, _ = site
    browser.get(url + "/view/swe")
    facets = _text(browser, ".facets")
    assert "environment.repo" in facets or "metadata.repo" in facets
    key = "environment.repo" if "environment.repo" in facets else "metadata.repo"
    browser.get(url + f"/view/swe?col={key}")
    headers = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "thead th")]
    assert headers[-1] == key
    values = [
        tr.find_elements(By.TAG_NAME, "td")[-1].text
        for tr in browser.find_elements(By.CSS_SELECTOR, "tbody tr")
    ]
    assert all("/" in v for v in values) and len(values) == 6


def test_every_field_of_real_tasks(site: tuple[str, Path], browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    url, _ = site
    ids = httpx.get(url + "/api/v1/splits/gsm8k/ids").json()["ids"]
    browser.get(url + f"/view/gsm8k/{ids[1]}")
    page = _text(browser)
    task = httpx.get(url + f"/api/v1/splits/gsm8k/by-id/{ids[1]}").json()["task"]
    for section in ("prompt", "answer", "solution", "reward", "source"):
        assert section in [h.text for h in browser.find_elements(By.TAG_NAME, "h2")], section
    assert task["solution"].splitlines()[0] in page
    assert f"previous {ids[0]}" in page and f"next {ids[2]}" in page
    _shot(browser, "task", tmp_path)

    swe = httpx.get(url + "/api/v1/splits/swe/tasks/0").json()["task"]
    browser.get(url + f"/view/swe/{swe['id']}")
    headings = [h.text for h in browser.find_elements(By.TAG_NAME, "h2")]
    assert "environment" in headings and any(h.startswith("files") for h in headings)
    assert swe["environment"]["repo"] in _text(browser)

    harbor = httpx.get(url + "/api/v1/splits/harbor/ids").json()["ids"]
    simple = next(i for i in harbor if "simple" in i)
    browser.get(url + f"/view/harbor/{simple}")
    texts = [p.text for p in browser.find_elements(By.CSS_SELECTOR, ".files pre")]
    dockerfile = DATA / "peers" / "harbor_cookbook" / "simple-task" / "environment"
    shown = next((dockerfile / n).read_text() for n in os.listdir(dockerfile) if n == "Dockerfile")
    assert any(shown.strip().splitlines()[0] in t for t in texts)
    _shot(browser, "harbor-task", tmp_path)

    browser.get(url + "/view/images/plot")
    image = browser.find_element(By.CSS_SELECTOR, ".files img")
    assert browser.execute_script("return arguments[0].naturalWidth", image) == 2


def test_the_changes_between_two_versions(
    site: tuple[str, Path], browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    url, _ = site
    splits = httpx.get(url + "/api/v1/diff/1.0.0/1.1.0").json()["splits"]
    gsm, images = splits["gsm8k"], splits["images"]
    assert (images["added"], images["removed"]) == (["plot"], ["picture"])
    assert len(gsm["added"]) == 1 and not gsm["removed"] and list(gsm["changed"]) == ["gsm8k-00005"]
    fields = {f["field"]: f for f in gsm["changed"]["gsm8k-00005"]}
    assert fields["prompt.0.content"]["new"] == fields["prompt.0.content"]["old"] + " (checked)"
    changed = "gsm8k-00005"
    browser.get(url + "/diff/1.0.0/1.1.0")
    page = _text(browser)
    assert "1 added, 0 removed, 1 changed" in page and "1 added, 1 removed, 0 changed" in page
    assert changed in page
    cells = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "table.diff td")]
    assert any("(checked)" in c for c in cells)
    _shot(browser, "diff", tmp_path)


def test_a_diff_with_an_unknown_version_is_one_error(site: tuple[str, Path]) -> None:
    url, _ = site
    answer = httpx.get(url + "/diff/1.0.0/9.9.9")
    assert answer.status_code == 400 and "9.9.9" in answer.json()["error"]
    assert "Traceback" not in answer.text
