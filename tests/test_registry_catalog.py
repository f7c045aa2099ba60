"""A registry's catalog (`taskpack serve --registry R`): every set at its highest release,
searched by words and narrowed by facets, each set's versions and tags, and each version's
results (models x splits) from its pass rates, as JSON and as pages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import taskpack
from taskpack.curation import annotate, keep
from taskpack.registry.cache import Cache
from taskpack.registry.mirror import Mirror
from taskpack.serve.app import App, Registered
from taskpack.serve.server import background

from .conftest import make_task

PINNED = "python:3.12-slim@sha256:" + "0123456789abcdef" * 4
# Per task of alpha 1.1.0's test split, what each model scored in its 4 rollouts.
SOLVED = {"m1": [4, 2, 0, 4], "m2": [1, 1, 1, 1]}


def _rollouts(path: Path, solved: list[int]) -> str:
    with path.open("w") as f:
        for i, n in enumerate(solved):
            for k in range(4):
                f.write(json.dumps({"id": f"t{i}", "reward": 1.0 if k < n else 0.0}) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """alpha 1.0.0 (tagged stable) and 1.1.0 (rated by two models), beta 0.1.0 and the
    pre-release 0.2.0-rc1."""
    root = tmp_path_factory.mktemp("catalog")
    reg = root / "registry"
    tasks = [make_task(i) for i in range(4)]
    first = root / "alpha-1.0.0"
    taskpack.write(
        first, {"test": tasks}, name="alpha", version="1.0.0", license="MIT",
        description="Arithmetic word problems for <b>small</b> models",
    )  # fmt: skip
    taskpack.publish(first, registry=str(reg), tags=("stable",))
    rated = taskpack.open(first)
    for model, solved in SOLVED.items():
        report = annotate(rated, [_rollouts(root / f"{model}.jsonl", solved)], model=model)
        out = root / f"alpha-{model}"
        keep(report.taskset, report.kept(), out, version="1.1.0", source=report.record,
             annotations=report.annotations())  # fmt: skip
        rated = taskpack.open(out)
    taskpack.publish(rated, registry=str(reg))
    for version in ("0.1.0", "0.2.0-rc1"):
        beta = root / f"beta-{version}"
        env = {"image": PINNED}
        other = [make_task(i, reward={"kind": "exact_match"}, environment=env) for i in range(3)]
        taskpack.write(beta, {"train": other}, name="beta", version=version,
                       description="String puzzles")  # fmt: skip
        taskpack.publish(beta, registry=str(reg))
    return reg


@pytest.fixture(scope="module")
def url(registry: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    cache = Cache(tmp_path_factory.mktemp("catalog-cache"))
    with background(App(registered=Registered(Mirror(str(registry), cache, ttl=60)))) as found:
        yield found


def get(url: str, path: str, **query: str) -> tuple[int, str, bytes]:
    full = url + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
    try:
        with urllib.request.urlopen(full, timeout=60) as r:
            return r.status, r.headers["Content-Type"], r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read()


def sets(url: str, **query: str) -> dict[str, Any]:
    status, kind, body = get(url, "/api/v1/sets", **query)
    assert status == 200 and kind == "application/json", body
    return json.loads(body)  # type: ignore[no-any-return]


def test_every_set_is_listed_at_its_highest_release_with_what_it_holds(url: str) -> None:
    found = sets(url)
    assert found["total"] == 2
    alpha, beta = found["sets"]
    assert (alpha["name"], alpha["version"], beta["version"]) == ("alpha", "1.1.0", "0.1.0")
    assert alpha["license"] == "MIT" and beta["license"] is None
    assert alpha["tasks"] == {"test": 4} and beta["tasks"] == {"train": 3}
    assert alpha["reward_kinds"] == ["numeric_match"] and beta["reward_kinds"] == ["exact_match"]
    assert alpha["models"] == ["m1", "m2"] and beta["models"] == []
    assert alpha["tags"] == {"latest": "1.1.0", "stable": "1.0.0"}
    assert alpha["images"] == [] and beta["images"] == [PINNED]
    assert alpha["digest"] == taskpack.open("alpha@1.1.0", registry=url).manifest.digest
    assert found["facets"]["license"] == {"MIT": 1, "none": 1}
    assert found["facets"]["reward"] == {"numeric_match": 1, "exact_match": 1}


def test_words_and_facets_narrow_the_listing(url: str) -> None:
    assert [s["name"] for s in sets(url, q="ARITHMETIC small")["sets"]] == ["alpha"]
    assert sets(url, q="arithmetic puzzles")["total"] == 0  # every word must match
    assert [s["name"] for s in sets(url, reward="exact_match")["sets"]] == ["beta"]
    assert [s["name"] for s in sets(url, license="none")["sets"]] == ["beta"]
    assert [s["name"] for s in sets(url, tag="stable")["sets"]] == ["alpha"]
    narrowed = sets(url, q="string")
    assert narrowed["facets"]["license"] == {"none": 1}  # counted over what the words keep
    page = sets(url, offset="1", limit="1")
    assert page["total"] == 2 and [s["name"] for s in page["sets"]] == ["beta"]
    status, _, body = get(url, "/api/v1/sets", limit="0")
    assert status == 400 and "limit" in json.loads(body)["error"]


def test_a_versions_results_are_its_models_by_split(url: str) -> None:
    status, _, body = get(url, "/api/v1/sets/alpha/versions/1.1.0/results")
    assert status == 200
    board = {r["model"]: r for r in json.loads(body)["results"]["test"]}
    for model, solved in SOLVED.items():
        assert board[model]["tasks"] == 4
        assert board[model]["pass_at_1"] == pytest.approx(sum(solved) / 16)
        assert board[model]["mean_reward"] == pytest.approx(sum(solved) / 16)
    status, _, body = get(url, "/api/v1/sets/alpha/versions/1.0.0/results")
    assert status == 200 and json.loads(body)["results"] == {}
    status, _, body = get(url, "/api/v1/sets/alpha/versions/9.9.9/results")
    assert status == 404 and "9.9.9" in json.loads(body)["error"]


def test_a_set_lists_its_versions_and_tags(url: str) -> None:
    status, _, body = get(url, "/api/v1/sets/beta")
    found = json.loads(body)
    assert status == 200 and found["latest"] == "0.1.0"
    assert [v["version"] for v in found["versions"]] == ["0.1.0", "0.2.0-rc1"]
    assert get(url, "/api/v1/sets/gamma")[0] == 404


def test_the_pages_escape_and_show_the_leaderboard(url: str) -> None:
    status, kind, body = get(url, "/", q="arithmetic")
    page = body.decode()
    assert status == 200 and kind.startswith("text/html")
    assert "&lt;b&gt;small&lt;/b&gt;" in page and "<b>small</b>" not in page
    assert 'href="/sets/alpha"' in page and 'href="/sets/beta"' not in page
    status, _, body = get(url, "/sets/alpha")
    page = body.decode()
    assert status == 200 and page.index("1.1.0") < page.index("1.0.0 (stable)")
    rows = [line for line in page.split("<tr>") if "<td>m1</td>" in line or "<td>m2</td>" in line]
    assert len(rows) == 2 and "0.625" in rows[0] and "0.250" in rows[1]  # best first
    assert "no results" in page  # 1.0.0 has none
    assert f'title="{PINNED}"' in get(url, "/")[2].decode()  # the images a set needs, listed


def test_the_catalog_api_is_in_its_openapi_document(url: str) -> None:
    paths = json.loads(get(url, "/openapi.json")[2])["paths"]
    assert {"/api/v1/sets", "/api/v1/sets/{name}"} <= set(paths)
    assert "/api/v1/splits/{split}" not in paths  # a single version's routes are not served
    assert [p["name"] for p in paths["/api/v1/sets"]["get"]["parameters"]][:2] == ["q", "license"]


def test_serve_without_a_target_serves_the_registrys_catalog(
    registry: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "TASKPACK_CACHE": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "taskpack", "serve", "--registry", str(registry)]
    proc = subprocess.Popen([*command, "--port", "0"], stderr=subprocess.PIPE, env=env, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "serving the catalog of" in line, line
        served = line.rsplit(" on ", 1)[1].strip().rstrip("/")
        for _ in range(200):
            try:
                found = sets(served)
                break
            except (urllib.error.URLError, ConnectionError):
                import time

                time.sleep(0.05)
        assert [s["name"] for s in found["sets"]] == ["alpha", "beta"]
    finally:
        proc.terminate()
        proc.wait()


def test_one_versions_pages_show_its_results_and_each_tasks_rates(registry: Path) -> None:
    from taskpack.serve.app import Api, Catalog

    rated = taskpack.open(registry.parent / "alpha-m2")
    with background(App(api=Api(Catalog(rated)))) as url:
        home = get(url, "/")[2].decode()
        task = get(url, "/view/test/t1")[2].decode()
    assert "<h2>Results</h2>" in home and "<td>m1</td>" in home and "0.625" in home
    table = task.split("<h2>pass rates</h2>")[1]
    m1, m2 = (row for row in table.split("<tr>") if "<td>m" in row)
    assert "<td>m1</td>" in m1 and "<td>2</td>" in m1 and "0.500" in m1  # t1: 2 of 4 for m1
    assert "<td>m2</td>" in m2 and "<td>1</td>" in m2 and "0.250" in m2


def test_a_pinned_image_is_checked_whole_and_exported_as_written(tmp_path: Path) -> None:
    from taskpack.errors import InvalidTask
    from taskpack.exporter import export

    for bad in ("python@sha256:0123", "python:3.12 slim", "python@sha512:" + "0" * 128):
        with pytest.raises(InvalidTask, match="is not an image reference"):
            taskpack.write(tmp_path / "bad", {"test": [make_task(0, environment={"image": bad})]},
                           name="bad", version="1.0.0", overwrite=True)  # fmt: skip
    folder = tmp_path / "pinned"
    task = make_task(0, environment={"image": PINNED, "workdir": "/app"})
    taskpack.write(folder, {"test": [task]}, name="pinned", version="1.0.0")
    for fmt in ("harbor", "verifiers"):
        export(taskpack.open(folder), fmt, tmp_path / f"out-{fmt}")
    toml = next((tmp_path / "out-harbor").rglob("task.toml")).read_text()
    assert f'docker_image = "{PINNED}"' in toml
    rows = [p for p in (tmp_path / "out-verifiers").rglob("*.jsonl")]
    assert rows and all(PINNED in p.read_text() for p in rows)


def test_pulls_through_the_server_are_counted_per_version(registry: Path, tmp_path: Path) -> None:
    mirror = Mirror(str(registry), Cache(tmp_path / "server"), ttl=60)
    with background(App(registered=Registered(mirror))) as url:
        for k in range(3):
            taskpack.pull("beta@0.1.0", registry=url, cache=Cache(tmp_path / f"node{k}"))
        taskpack.pull("beta@0.2.0-rc1", registry=url, cache=Cache(tmp_path / "node0"))
        taskpack.pull("beta@0.1.0", registry=url, cache=Cache(tmp_path / "node0"))  # cached
        beta = json.loads(get(url, "/api/v1/sets/beta")[2])
        listed = {s["name"]: s["pulls"] for s in sets(url)["sets"]}
        page = get(url, "/sets/beta")[2].decode()
    assert {v["version"]: v["pulls"] for v in beta["versions"]} == {"0.1.0": 3, "0.2.0-rc1": 1}
    assert beta["pulls"] == 4 and listed == {"alpha": 0, "beta": 4}
    assert "0.1.0 (latest), pulled 3 times" in page


def test_each_version_has_its_pages_below_the_catalog(url: str) -> None:
    root = "/sets/alpha/versions/1.1.0"
    status, kind, body = get(url, root + "/")
    home = body.decode()
    assert status == 200 and kind.startswith("text/html")
    assert f'href="{root}/view/test"' in home and 'href="/assets/style.css"' in home
    assert f'href="{root}/?at=1.0.0"' in home and "<td>m1</td>" in home
    status, _, body = get(url, root + "/view/test")  # the process lane's page, moved too
    split = body.decode()
    assert status == 200 and f'href="{root}/view/test/t2"' in split
    assert 'href="/view/' not in split
    status, _, body = get(url, root + "/view/test/t2")
    assert status == 200 and "What is 2 + 1?" in body.decode()
    status, _, body = get(url, root + "/api/v1")
    assert status == 200 and json.loads(body)["version"] == "1.1.0"
    assert get(url, "/sets/alpha/versions/7.0.0/")[0] == 404
    assert get(url, root + "/no/such/page")[0] == 404
    assert f'href="{root}/"' in get(url, "/sets/alpha")[2].decode()  # the set page links it
