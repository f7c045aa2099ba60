"""Pass rates from rollouts: stored beside the tasks (task digests unchanged, the version's
covering them), read from the shapes trainers write (NeMo Gym's own reward profile among them),
filtered by band, carried through later steps, and checked like every other byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import taskpack
from taskpack.cli import main
from taskpack.curation import annotate, decontaminate, filter_pass_rate, keep
from taskpack.errors import TaskpackError
from taskpack.importer import import_sources
from taskpack.storage.ratings import pass_at, settings_key

from .conftest import DATA

SETTINGS = {"n": 4, "temperature": 0.7}


@pytest.fixture(scope="module")
def gsm8k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("sets") / "gsm8k"
    sources = {s: [str(DATA / "gsm8k" / f"{s}.jsonl")] for s in ("train", "test")}
    import_sources(target, sources, "gsm8k", name="gsm8k", version="1.0.0")
    return target


def rewards_of(i: int) -> list[float]:
    """Task i's 4 rollouts: i % 5 of them solved (0, 1/4, ... 1: every band has tasks)."""
    solved = min(i % 5, 4)
    return [1.0] * solved + [0.0] * (4 - solved)


def write_rollouts(path: Path, split: str, count: int) -> Path:
    with path.open("w") as f:
        for i in range(count):
            for r in rewards_of(i):
                f.write(json.dumps({"id": f"{split}-{i:05d}", "reward": r}) + "\n")
    return path


def annotated(gsm8k: Path, tmp_path: Path, name: str = "rated") -> Path:
    rollouts = write_rollouts(tmp_path / "rollouts.jsonl", "test", 1319)
    report = annotate(gsm8k, [str(rollouts)], model="m1", settings=SETTINGS)
    out = tmp_path / name
    keep(
        report.taskset,
        report.kept(),
        out,
        version="1.1.0",
        source=report.record,
        annotations=report.annotations(),
    )
    return out


def test_pass_rates_leave_task_digests_and_enter_the_version_digest(
    gsm8k: Path, tmp_path: Path
) -> None:
    original, rated = taskpack.open(gsm8k), taskpack.open(annotated(gsm8k, tmp_path))
    for split in ("train", "test"):
        assert rated.split(split).digest == original.split(split).digest
    assert rated.manifest.digest != original.manifest.digest
    rows = rated.annotations("test")
    assert len(rows) == 1319 and rated.annotations("train") == []
    first = rows[1]
    assert first == {
        "id": "test-00001",
        "model": "m1",
        "settings": settings_key(SETTINGS),
        "count": 4,
        "correct": 1,
        "mean": 0.25,
    }
    assert taskpack.verify(rated) == []
    assert rated.manifest.source["operation"] == "annotate"
    assert rated.manifest.source["counted"] == {"rollouts": 5276, "tasks": 1319, "unmatched": 0}
    # another model's rates make another version digest; the same rates, the same digest
    again = annotate(rated, [str(tmp_path / "rollouts.jsonl")], model="m1", settings=SETTINGS)
    assert again.rows["test"] == rows
    other = annotate(rated, [str(tmp_path / "rollouts.jsonl")], model="m2", settings=SETTINGS)
    assert len(other.rows["test"]) == 2 * 1319


def test_pass_rates_travel_with_a_published_version(gsm8k: Path, tmp_path: Path) -> None:
    rated = annotated(gsm8k, tmp_path)
    taskpack.publish(rated)
    pulled = taskpack.open("gsm8k@1.1.0")
    assert pulled.manifest.digest == taskpack.open(rated).manifest.digest
    assert pulled.annotations("test") == taskpack.open(rated).annotations("test")
    assert taskpack.verify(pulled) == []


def test_a_changed_pass_rate_is_caught(gsm8k: Path, tmp_path: Path) -> None:
    rated = annotated(gsm8k, tmp_path)
    path = rated / "annotations" / "test.parquet"
    table = pq.read_table(path)
    counts = table.column("correct").to_pylist()
    counts[1] = 4
    pq.write_table(table.set_column(4, "correct", pa.array(counts, pa.int64())), path)
    problems = taskpack.verify(taskpack.open(rated))
    assert any("annotations" in p or "test.parquet" in p for p in problems), problems


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    import numpy as np

    for n, c in [(4, 1), (16, 3), (10, 10), (10, 0), (5, 4)]:
        for k in range(1, n + 1):
            expected = 1.0 if n - c < k else 1 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1))
            assert pass_at(n, c, k) == pytest.approx(expected)
    assert pass_at(4, 1, 5) is None and pass_at(4, 1, 0) is None


def test_open_r1_lists_match_tasks_by_their_text(gsm8k: Path, tmp_path: Path) -> None:
    """open-r1's compute_pass_rate.py leaves a `pass_rate_rewards` list beside the `problem`;
    its rows name no task id, so the text does (whitespace and case aside)."""
    questions = [json.loads(line)["question"] for line in (DATA / "gsm8k" / "test.jsonl").open()]
    table = pa.table(
        {
            "problem": ["  " + q.upper() + "\n" for q in questions[:50]] + ["an unknown problem"],
            "pass_rate_rewards": [rewards_of(i) for i in range(50)] + [[1.0]],
        }
    )
    pq.write_table(table, tmp_path / "open_r1.parquet")
    report = annotate(gsm8k, [str(tmp_path / "open_r1.parquet")], model="m1")
    assert len(report.rows["test"]) == 50 and report.unmatched == ["an unknown problem"]
    by_id = {r["id"]: r for r in report.rows["test"]}
    assert by_id["test-00003"]["correct"] == 3 and by_id["test-00003"]["count"] == 4


@pytest.mark.slow
@pytest.mark.conformance
@pytest.mark.parametrize("release", ["nemo", "nemo04"])
def test_nemo_gym_reward_profiles_give_its_own_means(
    gsm8k: Path, tmp_path: Path, release: str
) -> None:
    """NeMo Gym's RewardProfiler (0.7, and 0.4), in its own venv, profiles rollouts of
    taskpack's NeMo Gym rows; annotate reads its *_reward_profiling.jsonl back to the same
    counts and means."""
    from taskpack.exporter import export

    from .test_conformance import run_check

    export(taskpack.open(gsm8k), "nemo", tmp_path / "nemo")
    rewards = {str(i): [0.5 * (i % 3), 1.0, 0.0, 1.0][: 2 + i % 3] for i in range(60)}
    (tmp_path / "rewards.json").write_text(json.dumps(rewards))
    result = run_check(
        release,
        "check_nemo_profile.py",
        str(tmp_path / "nemo" / "test.jsonl"),
        str(tmp_path / "rewards.json"),
        str(tmp_path / "eval.jsonl"),
    )
    assert result["groups"] == 60
    profile = [json.loads(line) for line in Path(result["profile"]).read_text().splitlines()]
    report = annotate(gsm8k, [result["profile"]], model="m1", settings={"n": 4})
    by_id = {r["id"]: r for r in report.rows["test"]}
    assert len(by_id) == 60
    for group in profile:
        row = by_id[group["sample"]["id"]]
        assert row["count"] == group["num_rollouts"]
        assert row["mean"] == pytest.approx(group["mean/reward"])
        assert row["correct"] == sum(i["reward"] >= 1.0 for i in group["rollout_infos"])


def test_filter_keeps_a_band_and_says_what_it_left(gsm8k: Path, tmp_path: Path) -> None:
    rated = annotated(gsm8k, tmp_path)
    middle = filter_pass_rate(rated, "0.25..0.75", model="m1")
    assert middle.dropped["train"] == [] and middle.unmeasured["train"] == 7473  # kept whole
    kept = 1319 - len(middle.dropped["test"])
    assert kept == sum(0.25 <= sum(rewards_of(i)) / 4 <= 0.75 for i in range(1319))
    assert len(filter_pass_rate(rated, "unsolved", model="m1").dropped["test"]) == 1319 - 264
    hard = filter_pass_rate(rated, "hard", model="m1")  # (0, 0.3): 1 of 4 solved
    assert 1319 - len(hard.dropped["test"]) == 264
    with pytest.raises(TaskpackError, match="no pass rates of 'm9'"):
        filter_pass_rate(rated, "hard", model="m9")
    with pytest.raises(TaskpackError, match=r"LOW\.\.HIGH within 0\.\.1"):
        filter_pass_rate(rated, "0.9..0.1", model="m1")
    out = tmp_path / "middle"
    m = keep(middle.taskset, middle.kept(), out, version="1.2.0", source=middle.record)
    # the pass rates of the tasks kept come along; those of the dropped do not
    assert {r["id"] for r in taskpack.open(out).annotations("test")} == set(
        taskpack.open(out).split("test").ids()
    )
    assert m.source["options"]["pass_rate"] == "0.25..0.75"


def test_the_cli_prints_a_histogram_and_refuses_an_empty_split(gsm8k: Path, tmp_path: Path) -> None:
    rated = annotated(gsm8k, tmp_path)
    runner = CliRunner()
    shown = runner.invoke(main, ["filter", str(rated), "--model", "m1", "--pass-rate", "0.1..0.9"])
    assert shown.exit_code == 0, shown.output
    assert "test: 1319 tasks, 792 kept (0.1..0.9)" in shown.output
    assert "train: 7473 tasks, none measured by m1: all kept (--unmeasured drop" in shown.output
    lines = shown.output.splitlines()
    assert any(line.split()[:3] == ["0", "264", "0"] for line in lines), shown.output
    assert any(line.split()[:3] == ["1", "263", "0"] for line in lines), shown.output
    refused = runner.invoke(
        main,
        [
            "filter",
            str(rated),
            "--model",
            "m1",
            "--pass-rate",
            "0.4..0.45",
            "-o",
            str(tmp_path / "none"),
        ],
    )
    assert refused.exit_code == 1
    assert "test: no task is left" in refused.output
    assert "split(s) test would be left empty; nothing was written" in refused.output
    rollouts = write_rollouts(tmp_path / "r.jsonl", "test", 10)
    made = runner.invoke(
        main,
        [
            "annotate",
            str(gsm8k),
            str(rollouts),
            "--model",
            "m1",
            "-S",
            "n=4",
            "-o",
            str(tmp_path / "ann"),
        ],
    )
    assert made.exit_code == 0, made.output
    assert "40 rollouts of m1 for 10 tasks" in made.output
    assert "test: 10 of 1319 tasks measured; pass rates:" in made.output


def test_later_steps_keep_the_pass_rates_of_the_tasks_they_keep(
    gsm8k: Path, tmp_path: Path
) -> None:
    rated = annotated(gsm8k, tmp_path)
    report = decontaminate(rated, [f"{rated}:train"], splits=["test"])
    out = tmp_path / "clean"
    keep(report.taskset, report.kept(), out, version="1.2.0", source=report.record)
    clean = taskpack.open(out)
    rows: list[dict[str, Any]] = clean.annotations("test")
    assert len(rows) == 1319 - len(report.dropped["test"])
    assert {r["id"] for r in rows} == set(clean.split("test").ids())


def test_the_viewer_and_the_hub_card_show_pass_rates(gsm8k: Path, tmp_path: Path) -> None:
    """The split page's panel: a histogram per model whose bins are links keeping their tasks;
    a band that is not one shows an error and no tasks, never the unfiltered table."""
    import re
    from html import unescape
    from urllib.parse import parse_qs, urlsplit

    import httpx

    from taskpack.registry.hub import dataset_card
    from taskpack.serve.app import Api, App, Catalog, background

    rated = taskpack.open(annotated(gsm8k, tmp_path))
    with background(App(api=Api(Catalog(rated)))) as url:
        page = httpx.get(f"{url}/view/test").text
        assert '<section class="passrates">' in page and "1319 tasks</summary>" in page
        links = [unescape(h) for h in re.findall(r'href="(/view/test\?rated=[^"]+)"', page)]
        assert len(links) == 12
        counts = []
        for href in links:
            shown = httpx.get(f"{url}{href}").text
            counts.append(int(re.search(r"<p>(\d+) of 1319 tasks", shown).group(1)))  # type: ignore[union-attr]
        assert counts == [264, 0, 0, 264, 0, 0, 264, 0, 264, 0, 0, 263]  # 0, 1/4, 1/2, 3/4, 1
        label = parse_qs(urlsplit(links[0]).query)["rated"][0]
        bad = httpx.get(f"{url}/view/test", params={"rated": label, "band": "0.5..0.2"}).text
        assert "pass rates: pass-rate band" in bad and "<p>0 of 1319 tasks" in bad
        unknown = httpx.get(f"{url}/view/test", params={"rated": "m9", "band": "hard"}).text
        assert "no pass rates of &#x27;m9&#x27; here" in unknown
    card = dataset_card(rated, "me")
    assert "## Pass rates" in card and 'test, m1 {"n":4,"temperature":0.7}: 1319 tasks' in card


def test_exports_carry_pass_rates_where_the_framework_reads_extra_fields(
    gsm8k: Path, tmp_path: Path
) -> None:
    from taskpack.exporter import export

    rated = taskpack.open(annotated(gsm8k, tmp_path))
    export(rated, "verl", tmp_path / "verl", splits=["test"])
    rows = pq.read_table(tmp_path / "verl" / "test.parquet").to_pylist()
    assert rows[1]["extra_info"]["pass_rates"] == [
        {
            "model": "m1",
            "settings": SETTINGS,
            "rollouts": 4,
            "solved": 1,
            "mean_reward": 0.25,
            "pass_rate": 0.25,
        }
    ]
    export(rated, "skyrl", tmp_path / "skyrl", splits=["test"])
    sky = pq.read_table(tmp_path / "skyrl" / "test.parquet").to_pylist()
    assert sky[3]["extra_info"]["pass_rates"][0]["pass_rate"] == 0.75
    export(rated, "verifiers", tmp_path / "vf", splits=["test"])  # the 0.4 taskset package
    lines = (tmp_path / "vf" / "vf" / "data" / "test.jsonl").read_text().splitlines()
    assert json.loads(lines[2])["metadata"]["pass_rates"][0]["solved"] == 2
    export(rated, "verifiers", tmp_path / "vf3", splits=["test"], options={"form": "dataset"})
    import datasets

    info = json.loads(datasets.load_from_disk(str(tmp_path / "vf3" / "test"))[2]["info"])
    assert info["pass_rates"][0]["solved"] == 2


@pytest.mark.slow
@pytest.mark.conformance
def test_verl_hands_the_pass_rates_to_its_reward_function(gsm8k: Path, tmp_path: Path) -> None:
    from taskpack.exporter import export

    from .test_conformance import run_check

    rated = taskpack.open(annotated(gsm8k, tmp_path))
    export(rated, "verl", tmp_path / "verl", splits=["test"])
    result = run_check("verl", "check_verl_passrates.py", str(tmp_path / "verl" / "test.parquet"))
    assert result["rows"] == 1319 and len(result["rated"]) == 1319
    assert result["rated"]["test-00004"][0]["pass_rate"] == 1.0
    assert result["rated"]["test-00000"][0]["solved"] == 0


def test_an_unreadable_pass_rates_file_is_one_line(gsm8k: Path, tmp_path: Path) -> None:
    """Its size kept, its bytes garbage: `info` and `validate` say so in a line each."""
    rated = annotated(gsm8k, tmp_path)
    path = rated / "annotations" / "test.parquet"
    path.write_bytes(b"PAR1" + b"x" * (path.stat().st_size - 4))
    runner = CliRunner()
    info = runner.invoke(main, ["info", str(rated)])
    assert info.exit_code == 1 and "pass rates do not read" in info.output
    assert "Traceback" not in info.output
    checked = runner.invoke(main, ["validate", str(rated)])
    assert checked.exit_code == 1 and "annotations" in checked.output


def test_unmeasured_tasks_go_one_way_in_every_split(gsm8k: Path, tmp_path: Path) -> None:
    """Kept by default, dropped with --unmeasured drop: in a split measured in part (test, 100
    of 1319 tasks) as in one not measured at all (train), each count said."""
    rollouts = write_rollouts(tmp_path / "part.jsonl", "test", 100)
    report = annotate(gsm8k, [str(rollouts)], model="m1")
    rated = tmp_path / "part"
    keep(report.taskset, report.kept(), rated, version="1.1.0", source=report.record,
         annotations=report.annotations())  # fmt: skip
    band = sum(0.25 <= sum(rewards_of(i)) / 4 <= 0.75 for i in range(100))
    kept = filter_pass_rate(rated, "0.25..0.75", model="m1")
    dropped = filter_pass_rate(rated, "0.25..0.75", model="m1", unmeasured="drop")
    assert 1319 - len(kept.dropped["test"]) == band + 1219 and kept.dropped["train"] == []
    assert 1319 - len(dropped.dropped["test"]) == band and len(dropped.dropped["train"]) == 7473
    run = CliRunner().invoke
    args = ["filter", str(rated), "--model", "m1", "--pass-rate", "0.25..0.75"]
    shown = run(main, args).output
    assert f"test: 1319 tasks, {band + 1219} kept (0.25..0.75); 1219 not measured, kept" in shown
    shown = run(main, [*args, "--unmeasured", "drop"]).output
    assert f"test: 1319 tasks, {band} kept (0.25..0.75); 1219 not measured, dropped" in shown
    assert "train: 7473 tasks, none measured by m1: all dropped (--unmeasured keep" in shown
    assert "train: no task is left" in shown


def test_annotate_names_the_first_rollouts_that_match_no_task(gsm8k: Path, tmp_path: Path) -> None:
    rollouts = write_rollouts(tmp_path / "r.jsonl", "test", 3)
    with rollouts.open("a") as f:
        for name in ("test-99999", "nope", "test-99999"):
            f.write(json.dumps({"id": name, "reward": 1.0}) + "\n")
    shown = CliRunner().invoke(main, ["annotate", str(gsm8k), str(rollouts), "--model", "m"])
    assert shown.exit_code == 0, shown.output
    assert "3 records name no task of the set, 2 names (first: 'test-99999', 'nope')" in (
        shown.output
    )
    help_text = CliRunner().invoke(main, ["filter", "--help"]).output
    assert "10-90% of" in help_text and "%%" not in help_text
