"""Mixtures: a versioned, seeded draw from task sets by weight, pinned by digest; a sampler that
resumes where it stopped; verl's own loader reads the data config its export writes."""

from __future__ import annotations

from collections import Counter
from itertools import islice
from pathlib import Path

import pytest
from click.testing import CliRunner

import taskpack
from taskpack.cli import main
from taskpack.curation import Part, lineage, mix
from taskpack.curation.mixture import draws, sampler, sources
from taskpack.errors import TaskpackError
from taskpack.importer import import_sources

from .conftest import DATA


@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sets")
    gsm8k = {s: [str(DATA / "gsm8k" / f"{s}.jsonl")] for s in ("train", "test")}
    import_sources(root / "gsm8k", gsm8k, "gsm8k", name="gsm8k", version="1.0.0")
    human = {"train": [str(DATA / "humaneval" / "HumanEval.jsonl.gz")]}
    import_sources(root / "humaneval", human, "humaneval", name="humaneval", version="1.0.0")
    return root


def test_a_mixture_draws_by_weight_until_a_source_runs_out(
    sets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TASKPACK_LINEAGE_PATHS", "1")  # unpublished inputs: found by their path
    parts = [Part(str(sets / "gsm8k"), 0.7), Part(str(sets / "humaneval"), 0.3)]
    m = mix("arith", parts, tmp_path / "mix", seed=0)
    ts = taskpack.open(tmp_path / "mix")
    ids = ts.split("train").ids()
    by_source = Counter(i.split("/")[0] for i in ids)
    assert by_source["humaneval"] == 164 and len(ids) == len(set(ids))  # ran out, no repeat
    assert 0.6 < by_source["gsm8k"] / len(ids) < 0.8
    # a task keeps everything but its id
    first = next(i for i in ids if i.startswith("gsm8k/"))
    mine, theirs = (
        ts.split("train").get(first),
        taskpack.open(sets / "gsm8k").split("train").get(first.split("/", 1)[1]),
    )
    assert mine is not None and theirs is not None and mine.prompt == theirs.prompt
    entries = sources(ts)
    assert [(e["label"], e["weight"], e["tasks"]) for e in entries] == [
        ("gsm8k", 0.7, 7473),
        ("humaneval", 0.3, 164),
    ]
    assert entries[0]["digest"] == taskpack.open(sets / "gsm8k").manifest.digest
    assert m.source["operation"] == "mix" and m.source["options"] == {"seed": 0, "size": None}
    # the same seed, the same mixture; another, another order
    again = mix("arith", parts, tmp_path / "again", seed=0)
    assert again.digest == m.digest
    assert mix("arith", parts, tmp_path / "other", seed=1).digest != m.digest
    assert [link.manifest.ref for link in lineage(tmp_path / "mix") if link.manifest][:2] == [
        "arith@1.0.0",
        "gsm8k@1.0.0",
    ]


def test_a_larger_size_repeats_sources_and_says_so(sets: Path, tmp_path: Path) -> None:
    parts = [Part(str(sets / "gsm8k"), 0.5), Part(str(sets / "humaneval"), 0.5)]
    mix("big", parts, tmp_path / "big", size=1000)
    ids = taskpack.open(tmp_path / "big").split("train").ids()
    assert len(ids) == 1000 == len(set(ids))
    human = [i for i in ids if i.startswith("humaneval/")]
    assert len({i.split("~")[0] for i in human}) == 164 and any("~3" in i for i in human)


def test_draws_resume_and_sampler_resumes(sets: Path, tmp_path: Path) -> None:
    assert draws([5, 5], [1, 1], 3, size=40)[:20] == draws([5, 5], [1, 1], 3, size=20)
    parts = [Part(str(sets / "gsm8k"), 0.8), Part(str(sets / "humaneval"), 0.2)]
    mix("s", parts, tmp_path / "s", size=3000)
    ts = taskpack.open(tmp_path / "s")
    split, entries = ts.split("train"), sources(ts)
    stream = [(p, t.id) for p, t in islice(sampler(split, seed=7, entries=entries), 9000)]
    resumed = [
        (p, t.id) for p, t in islice(sampler(split, seed=7, start=8190, entries=entries), 20)
    ]
    assert resumed == stream[8190:8210]
    share = Counter(t.split("/")[0] for _, t in stream)
    assert 0.77 < share["gsm8k"] / 9000 < 0.83


def test_an_empty_or_missing_source_is_an_error(sets: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(TaskpackError, match="has no split 'dev'"):
        mix("m", [Part(str(sets / "gsm8k"), 1, "dev")], tmp_path / "m")
    with pytest.raises(TaskpackError, match="no source to train on"):
        mix("m", [Part(str(sets / "gsm8k"), 0)], tmp_path / "m")
    with pytest.raises(TaskpackError, match="REF\\[:SPLIT\\]:WEIGHT"):
        Part.parse("gsm8k@1")
    assert Part.parse("gsm8k@1:test:0.25") == Part("gsm8k@1", 0.25, "test")
    assert Part.parse("gsm8k@1:0.25") == Part("gsm8k@1", 0.25)


def test_the_cli_mixes_publishes_and_exports_verls_config(sets: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        main,
        [
            "mix",
            "arith",
            f"{sets / 'gsm8k'}:train:0.7",
            f"{sets / 'humaneval'}:0.3",
            "--eval-only",
            f"{sets / 'gsm8k'}:test",
            "--env",
            f"{sets / 'humaneval'}=code",
            "-o",
            str(tmp_path / "mix"),
            "--publish",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "gsm8k-test: gsm8k@1.0.0 test, 1319 tasks, evaluation only" in result.output
    ts = taskpack.open("arith@1")
    assert ts.split("eval").ids()[0] == "gsm8k-test/test-00000"
    assert [e["env"] for e in sources(ts)] == [None, "code", None]
    exported = runner.invoke(main, ["export", "arith@1", "--to", "verl", "-o", str(tmp_path / "v")])
    assert exported.exit_code == 0, exported.output
    config = (tmp_path / "v" / "verl_data.yaml").read_text()
    drawn = Counter(i.split("/")[0] for i in ts.split("train").ids())
    total = sum(drawn.values())
    assert (
        f'"gsm8k" 0.7 (drawn: {drawn["gsm8k"]} tasks, {drawn["gsm8k"] / total:.0%}), '
        f'"humaneval" 0.3 (drawn: {drawn["humaneval"]} tasks, {drawn["humaneval"] / total:.0%})'
    ) in config
    assert [e.get("drawn") for e in sources(ts)] == [drawn["gsm8k"], drawn["humaneval"], None]
    assert str((tmp_path / "v" / "train.parquet").absolute()) in config


@pytest.mark.slow
@pytest.mark.conformance
def test_verl_reads_the_mixtures_data_config(sets: Path, tmp_path: Path) -> None:
    from taskpack.exporter import export

    from .test_conformance import run_check

    parts = [
        Part(str(sets / "gsm8k"), 0.7),
        Part(str(sets / "humaneval"), 0.3),
        Part(str(sets / "gsm8k"), 0, "test", evaluation_only=True),
    ]
    mix("arith", parts, tmp_path / "mix")
    ts = taskpack.open(tmp_path / "mix")
    export(ts, "verl", tmp_path / "verl")
    result = run_check("verl", "check_verl_mixture.py", str(tmp_path / "verl" / "verl_data.yaml"))
    ours = Counter(i.split("/")[0] for i in ts.split("train").ids())
    assert result["train_files"] == {"openai/gsm8k": ours["gsm8k"], "humaneval": 164}
    assert result["val_files"] == {"openai/gsm8k": 1319}
    assert result["shuffle"] is False
    # TRL's parser and loader read the same rows, in the mixture's order
    trl = run_check(
        "trl", "check_trl_mixture.py", str(tmp_path / "verl" / "trl_datasets.yaml"),
        str(tmp_path / "trl"),
    )  # fmt: skip
    assert trl["shuffle_dataset"] is False
    assert result["order"] == ts.split("train").ids()
    named = {"gsm8k": "openai/gsm8k", "humaneval": "humaneval"}
    assert trl["data_sources"] == [named[i.split("/")[0]] for i in ts.split("train").ids()]
    assert "prompt" in trl["columns"]


@pytest.fixture(scope="module")
def enved(sets: Path, tmp_path_factory: pytest.TempPathFactory) -> taskpack.TaskSet:
    """A mixture whose sources name the environments they run in."""
    parts = [
        Part(str(sets / "gsm8k"), 0.7, env="math"),
        Part(str(sets / "humaneval"), 0.3, env="code"),
        Part(str(sets / "gsm8k"), 0, "test", env="math-eval", evaluation_only=True),
    ]
    target = tmp_path_factory.mktemp("enved") / "mix"
    mix("arith", parts, target)
    return taskpack.open(target)


@pytest.mark.slow
@pytest.mark.conformance
def test_nemo_gym_reads_the_rows_nemo_rl_is_pointed_at(
    enved: taskpack.TaskSet, tmp_path: Path
) -> None:
    from taskpack.exporter import export

    from .test_conformance import run_check

    export(enved, "nemo", tmp_path / "nemo")
    result = run_check(
        "nemo", "check_nemo_mixture.py", str(tmp_path / "nemo" / "nemo_rl_data.yaml")
    )
    ours = Counter(i.split("/")[0] for i in enved.split("train").ids())
    (train,) = result["train"]
    assert train["agents"] == {"math": ours["gsm8k"], "code": 164} and not train["offending"]
    assert train["ids"] == enved.split("train").ids() and train["env_name"] == "nemo_gym"
    (held_out,) = result["validation"]
    assert held_out["agents"] == {"math-eval": 1319} and not held_out["offending"]
    assert result["shuffle"] is False


@pytest.mark.slow
@pytest.mark.conformance
def test_each_prime_rl_env_loads_its_sources_tasks(enved: taskpack.TaskSet, tmp_path: Path) -> None:
    from taskpack.exporter import export

    from .test_conformance import installed, run_check

    export(enved, "verifiers", tmp_path / "vf", options={"package": "arith_tp"})
    env = installed(tmp_path / "vf", tmp_path)
    out = run_check(
        "verifiers04", "check_prime_rl_envs.py", str(tmp_path / "vf" / "prime_rl.toml"), env=env
    )
    assert out["ratios"] == [0.7, 0.3] and out["samplers"] == [None, None]
    train = [i for i in enved.split("train").ids()]
    assert out["train"] == {
        "gsm8k": [i for i in train if i.startswith("gsm8k/")],
        "humaneval": [i for i in train if i.startswith("humaneval/")],
    }
    assert out["eval"] == {"gsm8k-test": enved.split("eval").ids()}


def test_an_env_for_no_source_is_refused(sets: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["mix", "m", f"{sets / 'gsm8k'}:1", "--env", "other@1=code", "-o", str(tmp_path / "m")],
    )
    assert result.exit_code == 2 and "expected REF=ENV for a source's REF" in result.output
    assert not (tmp_path / "m").exists()
