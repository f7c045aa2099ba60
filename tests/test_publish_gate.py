"""`taskpack publish --check`: a version lands only once its tasks work in the sandbox (the
reference scores 1, no solution 0, no forger above 0), a refusal names each failing task on a
line of its own, and the passing check is recorded under the version's digest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import taskpack
from taskpack.base.digests import version_digest
from taskpack.cli import main

pytestmark = pytest.mark.slow  # every task runs in the sandbox, with the battery of forgers


def _tasks(count: int) -> list[dict[str, object]]:
    return [
        {"id": f"q{i}", "prompt": f"{i} + 2?", "answer": str(i + 2),
         "reward": {"kind": "numeric_match"}}
        for i in range(count)
    ]  # fmt: skip


def test_a_set_whose_tasks_work_is_published_with_its_check_recorded(tmp_path: Path) -> None:
    folder, reg = tmp_path / "ok", tmp_path / "reg"
    taskpack.write(folder, {"test": _tasks(3), "train": _tasks(2)}, name="ok", version="1.0.0")
    before = taskpack.open(folder).manifest.digest
    out = CliRunner().invoke(main, ["publish", str(folder), "--registry", str(reg), "--check"])
    assert out.exit_code == 0, out.output
    published = taskpack.open("ok@1.0.0", registry=str(reg)).manifest
    record = published.source["sandbox_check"]
    assert isinstance(record, dict) and (record["checked"], record["of"]) == (5, 5)
    assert published.digest == version_digest(published) != before  # the record is pinned
    assert taskpack.open(folder).manifest == published  # the folder's manifest agrees
    forged = published.model_copy(update={"source": {"sandbox_check": {**record, "of": 9}}})
    assert version_digest(forged) != published.digest


def test_a_failing_task_is_named_and_nothing_is_published(tmp_path: Path) -> None:
    folder, reg = tmp_path / "bad", tmp_path / "reg"
    wrong = {
        "id": "Set/wrong",  # a folder is named `Set__wrong`: refusals name the task's id
        "prompt": "2 + 3?",
        "answer": "five",
        "reward": {"kind": "numeric_match"},
    }
    tasks = [*_tasks(2), wrong]  # a number cannot be read from its reference: it scores 0
    taskpack.write(folder, {"test": tasks}, name="bad", version="1.0.0")
    before = (folder / "manifest.json").read_text()
    out = CliRunner().invoke(main, ["publish", str(folder), "--registry", str(reg), "--check"])
    assert out.exit_code != 0
    lines = [line for line in out.output.splitlines() if line.startswith("test/")]
    assert len(lines) == 1 and lines[0].startswith("test/Set/wrong: failed: oracle scored 0")
    assert "1 of 3 tasks checked do not work" in out.output
    assert not reg.exists() or taskpack.listing(str(reg)) == {}
    assert (folder / "manifest.json").read_text() == before


def test_a_sample_checks_that_many_tasks_and_the_catalog_shows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Signed with the key the hub is given too (TASKPACK_CHECK_KEY): shown as verified."""
    from taskpack.registry.cache import Cache
    from taskpack.registry.mirror import Mirror
    from taskpack.serve.app import App, Registered
    from taskpack.serve.server import background

    monkeypatch.setenv("TASKPACK_CHECK_KEY", "a team secret")
    folder, reg = tmp_path / "big", tmp_path / "reg"
    taskpack.write(folder, {"test": _tasks(10)}, name="big", version="1.0.0")
    args = ["publish", str(folder), "--registry", str(reg), "--check", "--sample", "3"]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    record = taskpack.open("big@1.0.0", registry=str(reg)).manifest.source["sandbox_check"]
    assert isinstance(record, dict) and (record["checked"], record["of"]) == (3, 10)
    mirror = Mirror(str(reg), Cache(tmp_path / "cache"), ttl=60)
    with background(App(registered=Registered(mirror))) as url:
        import urllib.request

        with urllib.request.urlopen(url + "/api/v1/sets") as r:
            [listed] = json.loads(r.read())["sets"]
        with urllib.request.urlopen(url + "/") as r:
            page = r.read().decode()
    assert listed["checked"] == {"status": "verified", "checked": 3, "of": 10,
                                 "by": record["by"]}  # fmt: skip
    assert "3 of 10 tasks passed (verified)" in page
    usage = CliRunner().invoke(main, ["publish", str(folder), "--sample", "3"])
    assert usage.exit_code == 2 and "give --check too" in usage.output
