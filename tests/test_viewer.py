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


# A prompt in Markdown, with what must not become markup: raw HTML and a script link.
MARKDOWN = (
    "## Plot the data\n\nUse **matplotlib** and see [the docs](https://matplotlib.org).\n\n"
    "<script>alert(1)</script> [bad](javascript:alert(1))\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
)


def _write(path: Path, gsm8k: list[dict[str, Any]], picture: str) -> None:
    """A set with real tasks: GSM8K rows, SWE-bench Lite rows, the Harbor cookbook, and one
    task with an image."""
    gsm = path.parent / f"{path.name}-gsm8k.jsonl"
    gsm.write_text("".join(json.dumps(r) + "\n" for r in gsm8k))
    swe = path.parent / f"{path.name}-swe.jsonl"
    lines = (DATA / "swebench" / "swebench_lite_test.jsonl").read_text().splitlines()[:20]
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
    image = make_task(0, id=picture, prompt=MARKDOWN, files=[{"path": "plot.png", "data": PNG}])
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
    assert all("/" in v for v in values) and len(values) == 20

    # Every column ticked, at 1,400 px: the table scrolls in its own column, clear of the
    # sidebar, and the page itself has no horizontal scroll (it once ran under the facets).
    boxes = browser.find_elements(By.CSS_SELECTOR, ".filter input[type=checkbox]")
    ticked = "&".join(f"col={b.get_attribute('value')}" for b in boxes)
    assert len(boxes) >= 5
    browser.get(url + f"/view/swe?{ticked}")
    main, side, wide, window = browser.execute_script(
        "const m = document.querySelector('.main').getBoundingClientRect();"
        "const a = document.querySelector('aside').getBoundingClientRect();"
        "return [m.right, a.left, document.documentElement.scrollWidth, window.innerWidth];"
    )
    assert window <= 1400 and main <= side and wide <= window, (main, side, wide, window)
    q, where = (
        browser.find_element(By.CSS_SELECTOR, f".filter input[name={n}]") for n in ("q", "where")
    )
    for box in (q, where):  # as wide as what it holds before anything is typed
        assert box.size["width"] >= 200


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
    answer = httpx.get(url + "/api/v1/diff/1.0.0/9.9.9")
    assert answer.status_code == 400 and "9.9.9" in answer.json()["error"]
    assert "Traceback" not in answer.text
    page = httpx.get(url + "/diff/1.0.0/9.9.9")  # the page's error is a page
    assert page.status_code == 400 and page.headers["content-type"].startswith("text/html")
    assert "9.9.9" in page.text and "versions: 1.0.0, 1.1.0" in page.text
    assert "Traceback" not in page.text


def _cells(browser: Any, column: int) -> list[str]:
    from selenium.webdriver.common.by import By

    rows = browser.find_elements(By.CSS_SELECTOR, "tbody tr")
    return [tr.find_elements(By.TAG_NAME, "td")[column].text for tr in rows]


def test_browsing_sorts_searches_and_counts_what_it_keeps(
    site: tuple[str, Path], browser: Any, tmp_path: Path
) -> None:
    """Sort by any column (a heading's link, again to reverse), search ids, prompts and
    answers, facet counts of what the search keeps, any metadata field as a column or facet
    however many values it takes, rows that open in place, the set named on every page."""
    from selenium.webdriver.common.by import By

    url, root = site
    split = taskpack.open(root / "viewed-1.1.0").split("gsm8k")
    browser.get(url + "/view/gsm8k")
    browser.find_element(By.LINK_TEXT, "answer").click()
    answers = [float(a) for a in _cells(browser, 2)]
    assert answers == sorted(answers) and len(answers) == 50
    assert answers[0] == min(float(t.answer) for t in split)
    browser.find_element(By.LINK_TEXT, "answer ▲").click()  # again: the other way
    answers = [float(a) for a in _cells(browser, 2)]
    assert answers == sorted(answers, reverse=True)
    assert answers[0] == max(float(t.answer) for t in split)
    browser.get(url + "/view/gsm8k?sort=id&order=desc")
    assert _cells(browser, 0)[:3] == sorted(split.ids(), reverse=True)[:3]

    # search: ids, prompts and answers, case ignored
    browser.get(url + "/view/gsm8k?q=EGGS")
    expected = [t.id for t in split if "eggs" in (t.instruction or "").lower()]
    assert 0 < len(expected) < 50 and _cells(browser, 0) == expected
    assert f"{len(expected)} of 121 tasks" in _text(browser, ".main")
    browser.get(url + f"/view/gsm8k?q={split[7].answer}")
    assert split[7].id in _cells(browser, 0)
    # a prompt longer than its preview opens in place, whole, as Markdown
    browser.get(url + "/view/gsm8k?q=EGGS")
    cell = browser.find_elements(By.CSS_SELECTOR, "tbody tr td:nth-child(2) details")[0]
    cell.find_element(By.TAG_NAME, "summary").click()
    assert cell.get_attribute("open") is not None
    whole = next(t for t in split if t.id == expected[0]).instruction or ""
    assert " ".join(whole.split())[-40:] in " ".join(cell.text.split())
    _shot(browser, "split-searched", tmp_path)

    # every page names the set, its other versions and what changed since the last
    about = _text(browser, ".about")
    assert "viewed@1.1.0" in about and "changes since 1.0.0" in about
    href = browser.find_element(By.LINK_TEXT, "changes since 1.0.0").get_attribute("href")
    assert href.endswith("/diff/1.0.0/this")

    # facets count what the search keeps; a field whose every value is a task's own is a
    # column, not a facet
    swe = taskpack.open(root / "viewed-1.1.0").split("swe")
    repo = swe[0].environment.repo
    browser.get(url + f"/view/swe?q={repo}")
    kept = len(_cells(browser, 0))
    facets = _text(browser, ".facets")
    assert f"{repo} {kept}" in facets and kept < 20
    browser.get(url + "/view/swe")
    facets = _text(browser, ".facets")  # created_at, each task's own (20 of 20): no facet
    assert "metadata.created_at" not in facets and "reward.kind" in facets
    browser.get(url + "/view/swe?col=metadata.created_at&sort=metadata.created_at")
    created = _cells(browser, 4)
    assert created == sorted(str(t.metadata["created_at"]) for t in swe)


def test_a_bad_filter_or_address_lists_nothing_and_shows_the_way_back(
    site: tuple[str, Path], browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    url, _ = site
    browser.get(url + "/view/gsm8k?where=nothing")
    assert not browser.find_elements(By.CSS_SELECTOR, "tbody tr")  # never the unfiltered table
    assert "0 of 121 tasks" in _text(browser, ".main")
    browser.find_element(By.LINK_TEXT, "drop the where").click()
    assert len(browser.find_elements(By.CSS_SELECTOR, "tbody tr")) == 50
    browser.get(url + "/view/gsm8k?sort=nope")
    assert "no column 'nope'" in _text(browser, ".error")
    assert not browser.find_elements(By.CSS_SELECTOR, "tbody tr")
    for path, status in (("/view/gsm8k/no-such-task", 404), ("/view/nosplit", 404)):
        answer = httpx.get(url + path)
        assert answer.status_code == status and "text/html" in answer.headers["content-type"]
        browser.get(url + path)
        assert _text(browser, ".error") and browser.find_element(
            By.LINK_TEXT, "viewed@1.1.0: its splits"
        )
    browser.get(url + "/view/gsm8k/no-such-task")
    browser.find_element(By.LINK_TEXT, "split gsm8k").click()
    assert len(browser.find_elements(By.CSS_SELECTOR, "tbody tr")) == 50
    browser.get(url + "/view/gsm8k/no-such-task")
    _shot(browser, "error", tmp_path)


def test_prompts_as_markdown_and_patches_coloured(
    site: tuple[str, Path], browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    url, root = site
    browser.get(url + "/view/images/plot")
    rendered = browser.find_element(By.CSS_SELECTOR, ".md")
    assert rendered.find_element(By.TAG_NAME, "h2").text == "Plot the data"
    assert rendered.find_element(By.TAG_NAME, "strong").text == "matplotlib"
    assert len(rendered.find_elements(By.CSS_SELECTOR, "table td")) == 2
    assert "<script>alert(1)</script>" in rendered.text  # shown as text, never run
    hrefs = [a.get_attribute("href") for a in rendered.find_elements(By.TAG_NAME, "a")]
    assert hrefs == ["https://matplotlib.org/"]  # the javascript: link is no link
    assert browser.execute_script("return document.scripts.length") == 0
    swe = taskpack.open(root / "viewed-1.1.0").split("swe")[0]
    browser.get(url + f"/view/swe/{swe.id}")
    added = browser.find_elements(By.CSS_SELECTOR, "pre.patch .add")
    removed = browser.find_elements(By.CSS_SELECTOR, "pre.patch .del")
    wanted = [
        x
        for x in (swe.solution or "").splitlines()
        if x[:1] in "+-" and x[:3] not in ("+++", "---")
    ]
    assert len(added) + len(removed) == len(wanted)
    assert added[0].value_of_css_property("background-color") != removed[0].value_of_css_property(
        "background-color"
    )
    browser.execute_script("arguments[0].scrollIntoView()", removed[0])
    _shot(browser, "swe-task", tmp_path)


def test_a_diffs_ids_link_to_their_tasks_and_words_are_marked(
    site: tuple[str, Path], browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    url, _ = site
    browser.get(url + "/diff/1.0.0/1.1.0")
    marked = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "table.diff ins")]
    assert any("checked" in m for m in marked)
    assert not browser.find_elements(By.CSS_SELECTOR, "table.diff del")  # only words were added
    browser.find_element(By.LINK_TEXT, "plot").click()  # added: a task of the served version
    assert browser.current_url.endswith("/view/images/plot")
    browser.get(url + "/diff/1.0.0/1.1.0")
    browser.find_element(By.LINK_TEXT, "picture").click()  # removed: at its own version
    assert browser.current_url.endswith("/view/images/picture?at=1.0.0")
    assert "of version 1.0.0" in _text(browser, ".nav") and "picture" in _text(browser, "h1")
