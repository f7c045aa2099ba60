"""`taskpack serve` as an Open Reward Standard environment, judged by the ORS clients
themselves, unmodified, each in a pinned venv of its own: ors-sdk 0.1.0's `ORS` client and
openreward 0.1.167's environment client read the GSM8K test split (1319 tasks) a taskpack
server serves and run episodes on it and on HumanEval; ORS's own `Server`, over the very same
task specs, answers a battery of good and bad requests with the statuses and bodies taskpack's
server gives; and ors-sdk's own server tests and example walkthrough run against it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

import taskpack
from taskpack.cli import main
from taskpack.serve.app import Api, App, Catalog, Registered, background, task_json

from .conftest import DATA
from .test_conformance import run_check

pytestmark = [pytest.mark.slow, pytest.mark.conformance]


@pytest.fixture(scope="module")
def gsm8k(tmp_path_factory: pytest.TempPathFactory) -> taskpack.TaskSet:
    from taskpack.importer import import_sources

    path = tmp_path_factory.mktemp("ors") / "gsm8k"
    import_sources(path, {"test": [str(DATA / "gsm8k" / "test.jsonl")]}, "gsm8k", name="gsm8k")
    return taskpack.open(path)


@pytest.fixture(scope="module")
def server(gsm8k: taskpack.TaskSet) -> Iterator[str]:
    with background(App(api=Api(Catalog(gsm8k)))) as url:
        yield url


def spec(task: taskpack.Task) -> dict[str, Any]:
    return {**task_json(task), "digest": task.digest, "split": "test", "question": task.instruction}


@pytest.mark.parametrize(("client", "base"), [("ors", "/ors/"), ("ors", ""), ("openreward", "")])
def test_the_frameworks_own_client_reads_the_served_set(
    client: str, base: str, server: str, gsm8k: taskpack.TaskSet
) -> None:
    """ors-sdk's aiohttp client joins its paths to the origin, so `.../ors/` and the bare
    origin reach the same verbs; OpenReward's takes the origin as OPENREWARD_SESSION_URL."""
    out = run_check(client, "check_ors_client.py", client, server + base, "gsm8k", "test")
    split = gsm8k.split("test")
    assert out["splits"] == ["test"] and out["counts"] == {"test": 1319}
    assert out["task5"] == spec(split[5])
    assert out["range"] == [spec(split[i]) for i in range(10, 20)]
    assert out["tail"] == ["test-01316", "test-01317", "test-01318"]
    assert out["last"] == "test-01318"
    status, detail = out["errors"]["split"]  # ORS's words, then what was asked and what is
    assert status == 400 and detail.startswith("Invalid split") and "(splits: test)" in detail
    status, detail = out["errors"]["index"]
    assert status == 400 and detail.startswith("Invalid index") and "has 1319 tasks" in detail
    status, detail = out["errors"]["name"]
    assert status == 404 and "unknown environment" in detail
    shown = CliRunner().invoke(
        main,
        ["show", str(gsm8k.objects.root), "test-00005", "--format", "json"],  # type: ignore[attr-defined]
    )
    printed = json.loads(shown.output)
    assert printed["id"] == "test-00005"
    for field in printed.keys() - {"files"}:  # what `show` prints, the same
        assert out["task5"][field] == printed[field], field


REQUESTS: list[list[Any]] = [
    ["GET", "/health", None],
    ["GET", "/{env}/splits", None],
    ["GET", "/GSM8K/splits", None],  # ORS names are case-insensitive
    ["POST", "/{env}/num_tasks", {"split": "test"}],
    ["POST", "/{env}/num_tasks", {"split": "nope"}],
    ["POST", "/{env}/num_tasks", {}],
    ["POST", "/{env}/num_tasks", {"split": "test", "extra": 1}],
    ["POST", "/{env}/tasks", {"split": "test"}],
    ["POST", "/{env}/task", {"split": "test", "index": 5}],
    ["POST", "/{env}/task", {"split": "test", "index": -1}],
    ["POST", "/{env}/task", {"split": "test", "index": -1319}],
    ["POST", "/{env}/task", {"split": "test", "index": 1319}],
    ["POST", "/{env}/task", {"split": "test", "index": -1320}],
    ["POST", "/{env}/task", {"split": "test", "index": [5]}],
    ["POST", "/{env}/task", {"split": "test"}],
    ["POST", "/{env}/task_range", {"split": "test", "start": 10, "stop": 20}],
    ["POST", "/{env}/task_range", {"split": "test", "start": -3}],
    ["POST", "/{env}/task_range", {"split": "test", "stop": -1317}],
    ["POST", "/{env}/task_range", {"split": "test", "start": 5, "stop": 2}],
    ["POST", "/{env}/task_range", {"split": "test", "start": 1300, "stop": 5000}],
    ["POST", "/{env}/task_range", {"split": "test", "start": -5000, "stop": 2}],
    ["POST", "/{env}/task_range", {"split": "nope"}],
    ["POST", "/nope/num_tasks", {"split": "test"}],
    ["GET", "/nope/splits", None],
]


def _ours(url: str, method: str, path: str, body: Any) -> list[Any]:
    answer = httpx.request(
        method, url + path.format(env="gsm8k"), json=body, headers={"X-Session-ID": "s"}
    )
    return [answer.status_code, answer.text]


def test_every_verb_answers_as_the_ors_server_does(
    server: str, gsm8k: taskpack.TaskSet, tmp_path: Path
) -> None:
    specs = {"name": "gsm8k", "splits": {"test": [spec(t) for t in gsm8k.split("test")]}}
    (tmp_path / "specs.json").write_text(json.dumps(specs))
    (tmp_path / "requests.json").write_text(json.dumps(REQUESTS))
    requests = str(tmp_path / "requests.json")
    theirs = run_check("ors", "check_ors_server.py", str(tmp_path / "specs.json"), requests)
    theirs = theirs["answers"]
    for prefix in ("", "/ors"):
        for (method, path, body), (status, text) in zip(REQUESTS, theirs, strict=True):
            got_status, got_text = _ours(server, method, prefix + path, body)
            where = f"{method} {prefix}{path} {body}"
            if path.startswith("/nope/"):  # ORS's server has one environment and sends
                # any other name to it (308, then its 404); taskpack serves several, and
                # answers as ORS's own lookup words a name it lacks
                assert status in (308, 404) and got_status == 404, where
                assert json.loads(got_text) == {"detail": "unknown environment 'nope'"}
                continue
            assert got_status == status, (where, got_text, text)
            mine, ors = json.loads(got_text), json.loads(text)
            if status == 422:
                assert isinstance(mine["detail"], list) and isinstance(ors["detail"], list)
                continue
            if status == 400 and set(ors) == {"detail"}:  # ORS's words, then what was asked
                assert mine["detail"].startswith(ors["detail"] + " "), (where, mine)
                continue
            if isinstance(ors, dict):  # `env_name` beside a task is OpenReward's, added
                mine = {k: v for k, v in mine.items() if k in ors}
            assert mine == ors, where


def test_a_mirror_serves_every_set_of_its_upstream(gsm8k: taskpack.TaskSet, tmp_path: Path) -> None:
    from taskpack.registry.cache import Cache
    from taskpack.registry.mirror import Mirror

    registry = tmp_path / "registry"
    taskpack.publish(gsm8k, registry=registry)
    mirror = Mirror(str(registry), Cache(tmp_path / "cache"))
    with background(App(registered=Registered(mirror))) as url:
        out = run_check("ors", "check_ors_client.py", "ors", url, "gsm8k", "test")
        names = httpx.get(url + "/list_environments").json()
    assert names == ["gsm8k"] and out["counts"] == {"test": 1319}
    assert out["task5"] == spec(gsm8k.split("test")[5])


def test_the_ors_verbs_are_in_the_openapi_document() -> None:
    """Each ORS verb, below /ors, with its method, its body's fields (the ones the server
    reads, from the one table) and ORS's error answers."""
    from taskpack.base.routes import openapi

    paths = openapi("t", "1")["paths"]
    assert isinstance(paths, dict)
    task = paths["/ors/{env}/task"]["post"]
    body = task["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["split", "index"] and body["properties"]["index"] == {
        "type": "integer"
    }
    assert set(task["responses"]) == {"200", "400", "404", "413", "422"}
    ranged = paths["/ors/{env}/task_range"]["post"]["requestBody"]["content"]
    assert ranged["application/json"]["schema"]["required"] == ["split"]
    assert "get" in paths["/ors/{env}/splits"] and "post" in paths["/ors/create_session"]
    assert "/api/v1/splits/{split}/tasks/{index}" in paths and "/{env}/task" not in paths


def test_every_ors_error_is_in_ors_shape(server: str) -> None:
    """A body over the bound, one nested past what Python reads and a wrong method's body:
    each `{"detail": ...}` with ORS's status, never a 500 or the JSON API's `error`."""
    big = httpx.post(server + "/ors/gsm8k/num_tasks", content=b" " * (65 << 10))
    assert big.status_code == 413 and "65536" in big.json()["detail"]
    deep = b'{"split": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    nested = httpx.post(server + "/ors/gsm8k/task", content=deep)
    assert nested.status_code == 413  # past the bound: refused before it is parsed
    deep = b'{"split": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"
    nested = httpx.post(server + "/ors/gsm8k/task", content=deep)
    assert nested.status_code == 422 and nested.json()["detail"][0]["type"] == "json_invalid"
    unknown = httpx.post(server + "/ors/nope/num_tasks", json={"split": "test"})
    assert unknown.status_code == 404 and "nope" in unknown.json()["detail"]


def test_environment_names_are_exact_and_a_case_twin_never_replaces_another(
    tmp_path: Path,
) -> None:
    """A mirror of `Foo` and `foo`: two environments, each by its exact name; `FOO` names
    neither (404, naming both); a name with one set of its spelling is found ignoring case,
    as ORS finds it."""
    from taskpack.registry.cache import Cache
    from taskpack.registry.mirror import Mirror

    from .conftest import make_task

    registry = tmp_path / "registry"
    for name, count in (("Foo", 2), ("foo", 3), ("Bar", 4)):
        taskpack.write(tmp_path / name, {"train": [make_task(i) for i in range(count)]}, name=name)
        taskpack.publish(tmp_path / name, registry=registry)
    mirror = Mirror(str(registry), Cache(tmp_path / "cache"))
    with background(App(registered=Registered(mirror))) as url:
        assert httpx.get(url + "/list_environments").json() == ["Bar", "Foo", "foo"]

        def count(env: str) -> httpx.Response:
            return httpx.post(f"{url}/ors/{env}/num_tasks", json={"split": "train"}, timeout=30)

        assert count("Foo").json()["num_tasks"] == 2 and count("foo").json()["num_tasks"] == 3
        assert count("bar").json()["num_tasks"] == 4
        twin = count("FOO")
        assert twin.status_code == 404 and "Foo, foo" in twin.json()["detail"]


def test_a_mirror_keeps_a_bounded_number_of_versions_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that outlives many releases holds each set's latest and at most `_OPEN`
    versions by number (it held every release ever served as an environment); a set's
    latest and that version asked for by number are one, and the latest is asked for on
    every request without being opened again."""
    from taskpack.registry.cache import Cache
    from taskpack.registry.mirror import Mirror
    from taskpack.serve import app

    from .conftest import make_task

    monkeypatch.setattr(app, "_OPEN", 2)
    registry = tmp_path / "registry"
    registry.mkdir()
    registered = Registered(Mirror(str(registry), Cache(tmp_path / "cache"), ttl=0))
    opened = []
    for release in range(1, 5):
        tasks = [make_task(i) for i in range(release)]
        taskpack.write(
            tmp_path / f"v{release}", {"train": tasks}, name="s", version=f"{release}.0.0"
        )
        taskpack.publish(tmp_path / f"v{release}", registry=registry)
        latest = registered.environments()["s"]()
        assert latest.ts.manifest.version == f"{release}.0.0"
        assert registered.version_api("s", f"{release}.0.0").catalog is latest
        assert registered.environments()["s"]() is latest
        opened.append(latest)
    assert list(registered._open.values()) == opened[-2:]
    assert registered._latest == {"s": opened[-1]}
    older = registered.version_api("s", "1.0.0").catalog
    assert older is not opened[0] and older.ts.manifest.version == "1.0.0"  # let go, reopened
    assert registered.environments()["s"]() is opened[-1]  # the latest stays, by name


def test_a_whole_split_is_listed_from_the_lane_and_kept(
    server: str, gsm8k: taskpack.TaskSet
) -> None:
    """ORS `tasks` and `task_range`: written by the lane to a file and sent from it; asked
    again, sent from what was kept."""
    whole = httpx.post(server + "/ors/gsm8k/tasks", json={"split": "test"}, timeout=120)
    assert whole.status_code == 200 and whole.headers["content-type"] == "application/json"
    tasks = whole.json()["tasks"]
    assert len(tasks) == 1319 and tasks[5] == spec(gsm8k.split("test")[5])
    ranged = httpx.post(
        server + "/ors/gsm8k/task_range", json={"split": "test", "start": -3}, timeout=120
    )
    assert ranged.json()["tasks"] == tasks[-3:] and ranged.json()["env_name"] == "gsm8k"
    again = httpx.post(server + "/ors/gsm8k/tasks", json={"split": "test"}, timeout=120)
    assert again.content == whole.content


def test_an_environment_named_by_header_is_never_answered_from_another_ones_answer(
    server: str,
) -> None:
    """OpenReward's client names the environment in `X-Deployment`, not the path: an answer
    kept by path and body would give one environment's answer to every name."""
    for _ in range(2):
        known = httpx.get(server + "/splits", headers={"X-Deployment": "gsm8k"})
        assert known.status_code == 200 and known.json()[0]["name"] == "test"
        unknown = httpx.get(server + "/splits", headers={"X-Deployment": "gsm8k-nope"})
        assert unknown.status_code == 404 and "gsm8k-nope" in unknown.json()["detail"]


# The episode of ors-sdk's own tests (`tests/test_server.py`): its fixture environment's tasks.
FIXTURE = {
    "train": [("0", "What is 2+2?", "4"), ("1", "What is 3*3?", "9")],
    "test": [("0", "What is 5+5?", "10")],
}
# Its example walkthrough's (`examples/test_client.py`), as its example server holds them.
WALKTHROUGH = {
    "train": [
        ("0", "Natalia sold clips to 48 of her friends in April, and then she sold half as many "
         "clips in May. How many clips did Natalia sell altogether in April and May?", "72"),
        ("1", "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of "
         "babysitting. How much did she earn?", "10"),
    ],
    "test": [
        ("0", "A robe takes 2 bolts of blue fiber and half that much white fiber. How many bolts "
         "in total does it take?", "3"),
    ],
}  # fmt: skip
# Served with its tool named as the fixture environment names it (`submit`), three tests fail,
# each on what the fixture environment does that a served set of stored tasks does not.
THEIRS = {
    # the description: taskpack's says what a good answer is, not the fixture's own words
    "test_list_tools": "failed: AssertionError: assert 'Submit your ...episode ends.' == "
    "'Submit your ... math problem'",
    # a spec of id "0" with the question "x": "0" is in both splits, and neither's question
    # is "x": refused (400), never guessed, so the session they go on with does not exist
    "test_ping": "failed: assert 404 == 200",
    "test_session_already_exists": "failed: assert 400 == 200",
}


def _qa_set(root: Path, name: str, splits: dict[str, list[tuple[str, str, str]]]) -> Path:
    tasks = {
        split: [
            {"id": i, "prompt": q, "answer": a, "reward": {"kind": "exact_match"}}
            for i, q, a in rows
        ]
        for split, rows in splits.items()
    }
    taskpack.write(root / name, tasks, name=name)
    return root / name


def test_ors_sdks_own_server_tests_and_walkthrough_run_against_taskpack(tmp_path: Path) -> None:
    """ors-sdk 0.1.0's `tests/test_server.py` (17 tests, from its source distribution) against a
    set of its fixture's own tasks, served with the fixture's tool name (`submit`): each passes
    but the three of THEIRS; and its example client's whole walkthrough, rewards 1, 0 and 1 as
    its own server gives them."""
    fixture = taskpack.open(_qa_set(tmp_path, "gsm8kenv", FIXTURE))
    walked = taskpack.open(_qa_set(tmp_path, "gsm8k", WALKTHROUGH))
    with (
        background(App(api=Api(Catalog(fixture)), tool_name="submit")) as one,
        background(App(api=Api(Catalog(walked)))) as two,
    ):
        scratch = tmp_path / "scratch"
        scratch.mkdir()
        out = run_check("ors", "check_ors_suite.py", str(scratch), one, two)
    outcomes = out["tests"]
    assert len(outcomes) == 17
    failed = {name: outcome for name, outcome in outcomes.items() if outcome != "passed"}
    assert failed == THEIRS
    results = [line.strip() for line in out["walkthrough"] if "Result:" in line]
    assert results == [
        "Result: blocks=['Correct!'], reward=1.0, finished=True",
        "Result: blocks=['Incorrect.'], reward=0.0, finished=True",
        "Result: blocks=['Correct!'], reward=1.0, finished=True",
    ]
    assert "  Session tools: ['answer']" in out["walkthrough"]
    assert out["walkthrough"][-1] == "All tests passed!"


@pytest.fixture(scope="module")
def humaneval(tmp_path_factory: pytest.TempPathFactory) -> taskpack.TaskSet:
    from taskpack.importer import import_sources

    path = tmp_path_factory.mktemp("ors") / "humaneval"
    source = {"test": [str(DATA / "humaneval" / "HumanEval.jsonl.gz")]}
    import_sources(path, source, "humaneval", name="humaneval")
    return taskpack.open(path)


@pytest.mark.parametrize("client", ["ors", "openreward"])
def test_the_clients_run_episodes_scored_by_each_tasks_verifier(
    client: str, server: str, gsm8k: taskpack.TaskSet, humaneval: taskpack.TaskSet, tmp_path: Path
) -> None:
    """Each client, unmodified, runs sessions through `answer`: GSM8K's reference scores 1 and
    a wrong number 0 (compared as the exported grader compares); HumanEval's reference code 1
    and no code 0 (run in the sandbox)."""
    from taskpack.converters._verifier import solve_reference

    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(["18", "17"]))
    out = run_check(client, "check_ors_session.py", client, server, "gsm8k", "test", "0",
                    str(answers))  # fmt: skip
    assert out["tools"] == ["answer"]
    assert out["prompt"] == [gsm8k.split("test")[0].instruction]
    assert [r["reward"] for r in out["results"]] == [1.0, 0.0]
    assert all(r["finished"] for r in out["results"])
    task = humaneval.split("test")[7]
    answers.write_text(json.dumps([solve_reference(task), ""]))
    with background(App(api=Api(Catalog(humaneval)))) as url:
        out = run_check(client, "check_ors_session.py", client, url, "humaneval", "test", "7",
                        str(answers))  # fmt: skip
    assert [r["reward"] for r in out["results"]] == [1.0, 0.0]
    assert out["prompt"] == [task.instruction]


def test_trls_openreward_integration_runs_episodes_on_taskpack(
    server: str, gsm8k: taskpack.TaskSet
) -> None:
    """TRL 1.16's `trl.experimental.openreward` (its venv, CPU torch): its spec builds the
    dataset from the served split, its environment factory one environment per rollout, each
    reset an ORS session; a scripted policy answers through the `answer` tool TRL bound from
    the server's tool list (the reference for even tasks, a wrong answer for odd ones), and
    TRL's own reward function reads 1, 0, 1, 0."""
    out = run_check("trl", "check_trl_openreward.py", server, "gsm8k", "test", "4")
    split = gsm8k.split("test")
    assert out["rows"] == 4 and {"task_index", "answer", "question"} <= set(out["columns"])
    assert out["prompts"] == [split[i].instruction for i in range(4)]
    assert out["tools"] == ["answer", "reset"]
    assert out["rewards"] == [1.0, 0.0, 1.0, 0.0] and all(out["finished"])
