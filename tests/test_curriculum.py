"""Curriculum in the data: `export -W order=easy-first|hard-first -W model=M` writes each split's
rows by a model's pass rates, and the trainers' configs that keep that order (verl's and TRL's
shuffling off, NeMo RL's list-form data section, prime-rl's orchestrator sources with a
difficulty-pool sampler and its warm start). A mixture carries its sources' pass rates, so it
is ordered the same way. The trainers' own code reading these is in tests/test_conformance.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

import taskpack
from taskpack.base.nesting import parse_toml
from taskpack.curation import annotate, keep
from taskpack.curation.mixing import Part, mix
from taskpack.errors import TaskpackError
from taskpack.exporter import convert_format, export
from taskpack.importer import import_sources
from taskpack.storage.ratings import by_difficulty

from .conftest import DATA

MEASURED = 500  # train tasks with rollouts; the rest are unmeasured


def rate_of(i: int) -> float:
    return (i % 5) / 4  # 0, 1/4, ... 1: ties in every band


@pytest.fixture(scope="module")
def rated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """GSM8K, its first 500 train tasks measured for model m1 (4 rollouts each)."""
    root = tmp_path_factory.mktemp("curriculum")
    sources = {s: [str(DATA / "gsm8k" / f"{s}.jsonl")] for s in ("train", "test")}
    import_sources(root / "gsm8k", sources, "gsm8k", name="gsm8k", version="1.0.0")
    rollouts = root / "rollouts.jsonl"
    with rollouts.open("w") as f:
        for i in range(MEASURED):
            solved = i % 5
            for reward in [1.0] * solved + [0.0] * (4 - solved):
                f.write(json.dumps({"id": f"train-{i:05d}", "reward": reward}) + "\n")
    report = annotate(root / "gsm8k", [str(rollouts)], model="m1", settings={"n": 4})
    out = root / "rated"
    keep(report.taskset, report.kept(), out, version="1.1.0", source=report.record,
         annotations=report.annotations())  # fmt: skip
    return out


def jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:  # lines end at \n only: text holds U+2028
        return [json.loads(line) for line in f]


def verl_ids(path: Path) -> list[int]:
    return [row["index"] for row in pq.read_table(path).column("extra_info").to_pylist()]


def test_by_difficulty_sorts_stably_and_places_the_unmeasured() -> None:
    ids = ["a", "b", "c", "d", "e"]
    rates = {"a": 0.5, "b": 1.0, "c": 0.5, "e": 0.0}
    assert by_difficulty(ids, rates, "easy-first") == [1, 0, 2, 4, 3]
    assert by_difficulty(ids, rates, "hard-first") == [4, 0, 2, 1, 3]
    assert by_difficulty(ids, rates, "hard-first", "first") == [3, 4, 0, 2, 1]
    with pytest.raises(TaskpackError, match="easy-first or hard-first"):
        by_difficulty(ids, rates, "easiest")


@pytest.mark.parametrize("order", ["easy-first", "hard-first"])
def test_verl_export_writes_rows_in_order_and_shuffling_off(
    rated: Path, tmp_path: Path, order: str
) -> None:
    ts = taskpack.open(rated)
    result = export(ts, "verl", tmp_path / "v", options={"order": order, "model": "m1"})
    ids = verl_ids(tmp_path / "v" / "train.parquet")
    assert sorted(ids) == list(range(7473))  # every row, once
    rates = [rate_of(i) for i in ids[:MEASURED]]
    assert rates == sorted(rates, reverse=order == "easy-first")
    assert ids[MEASURED:] == list(range(MEASURED, 7473))  # unmeasured last, in stored order
    first_band = [i for i in ids[:100] if rate_of(i) == rates[0]]
    assert first_band == sorted(first_band)  # ties keep their stored order
    assert verl_ids(tmp_path / "v" / "test.parquet") == list(range(1319))  # nothing measured
    data = yaml.safe_load((tmp_path / "v" / "verl_data.yaml").read_text())["data"]
    assert data == {
        "train_files": [str(tmp_path / "v" / "train.parquet")],
        "val_files": [str(tmp_path / "v" / "test.parquet")],
        "shuffle": False,
    }
    trl = yaml.safe_load((tmp_path / "v" / "trl_datasets.yaml").read_text())
    assert trl["shuffle_dataset"] is False
    assert trl["datasets"] == [
        {"path": "parquet", "data_files": str(tmp_path / "v" / "train.parquet"), "split": "train"}
    ]
    note = (tmp_path / "v" / "verl_data.yaml").read_text().splitlines()[0]
    assert note == (
        f'# taskpack export: rows {order} by the pass rates of "m1" (unmeasured last); '
        "shuffling is off to keep that order"
    )
    assert result.files[-2:] == [
        tmp_path / "v" / "verl_data.yaml",
        tmp_path / "v" / "trl_datasets.yaml",
    ]


def test_unmeasured_first_puts_them_ahead(rated: Path, tmp_path: Path) -> None:
    options = {"order": "easy-first", "model": "m1", "unmeasured": "first"}
    export(taskpack.open(rated), "verl", tmp_path / "v", options=options, splits=("train",))
    ids = verl_ids(tmp_path / "v" / "train.parquet")
    assert ids[: 7473 - MEASURED] == list(range(MEASURED, 7473))
    assert [rate_of(i) for i in ids[7473 - MEASURED :]][:1] == [1.0]


def test_nemo_rl_data_section_lists_entries_each_with_its_env_name(
    rated: Path, tmp_path: Path
) -> None:
    export(
        taskpack.open(rated), "nemo", tmp_path / "n", options={"order": "hard-first", "model": "m1"}
    )
    data = yaml.safe_load((tmp_path / "n" / "nemo_rl_data.yaml").read_text())["data"]
    entry = {
        "dataset_name": "NemoGymDataset",
        "env_name": "nemo_gym",
        "processor": "nemo_gym_data_processor",
    }
    assert data == {
        "train": [{"data_path": str(tmp_path / "n" / "train.jsonl"), **entry}],
        "validation": [{"data_path": str(tmp_path / "n" / "test.jsonl"), **entry}],
        "shuffle": False,
    }
    rows = jsonl(tmp_path / "n" / "train.jsonl")
    first = [int(r["task_id"].split("-")[1]) for r in rows[:MEASURED]]
    assert [rate_of(i) for i in first] == sorted(rate_of(i) for i in first)


def test_prime_rl_sources_and_the_pool_warm_start(rated: Path, tmp_path: Path) -> None:
    options = {"order": "easy-first", "model": "m1", "package": "gsm_cur"}
    export(taskpack.open(rated), "verifiers", tmp_path / "p", options=options)
    config = parse_toml((tmp_path / "p" / "prime_rl.toml").read_text())
    assert config == {
        "orchestrator": {
            "train": {
                "source": [
                    {
                        "name": "gsm_cur",
                        "ratio": 1.0,
                        "env": {"taskset": {"id": "gsm_cur", "split": "train"}},
                        "curriculum": {"sampler": {"type": "difficulty_pool"}},
                    }
                ]
            },
            "eval": {
                "source": [
                    {"name": "gsm_cur-test", "env": {"taskset": {"id": "gsm_cur", "split": "test"}}}
                ]
            },
        }
    }
    warm = json.loads((tmp_path / "p" / "prime_rl_pool-gsm_cur.json").read_text())
    assert warm == {"task_rewards": {f"train-{i:05d}": rate_of(i) for i in range(MEASURED)}}
    rows = jsonl(tmp_path / "p" / "gsm_cur" / "data" / "train.jsonl")
    assert [warm["task_rewards"].get(r["id"]) for r in rows[:3]] == [1.0, 1.0, 1.0]


def test_a_mixture_carries_its_sources_pass_rates_and_orders_by_them(
    rated: Path, tmp_path: Path
) -> None:
    import_sources(
        tmp_path / "other",
        {"train": [str(DATA / "gsm8k" / "test.jsonl")]},
        "gsm8k",
        name="other",
        version="1.0.0",
    )
    parts = [Part(str(rated), 3.0), Part(str(tmp_path / "other"), 1.0)]
    mix("mixed", parts, tmp_path / "mix", seed=1)
    mixed = taskpack.open(tmp_path / "mix")
    notes = {r["id"]: r for r in mixed.annotations("train")}
    source = {r["id"]: r for r in taskpack.open(rated).annotations("train")}
    ids = mixed.split("train").ids()
    carried = [i for i in ids if i.split("/", 1)[1] in source and i.startswith("gsm8k/")]
    assert carried and sorted(notes) == sorted(carried)
    assert all(
        {**notes[i], "id": i.split("/", 1)[1]} == source[i.split("/", 1)[1]] for i in carried
    )
    options = {"order": "easy-first", "model": "m1", "package": "mixed_cur"}
    export(mixed, "verifiers", tmp_path / "p", options=options)
    config = parse_toml((tmp_path / "p" / "prime_rl.toml").read_text())
    sources = config["orchestrator"]["train"]["source"]
    assert [(s["name"], s["ratio"], s["env"]["taskset"]["source"]) for s in sources] == [
        ("gsm8k", 3.0, "gsm8k"),
        ("other", 1.0, "other"),
    ]
    assert all(s["curriculum"] == {"sampler": {"type": "difficulty_pool"}} for s in sources)
    warm = json.loads((tmp_path / "p" / "prime_rl_pool-gsm8k.json").read_text())["task_rewards"]
    assert sorted(warm) == sorted(carried)
    assert json.loads((tmp_path / "p" / "prime_rl_pool-other.json").read_text()) == {
        "task_rewards": {}
    }
    order = [row["id"] for row in jsonl(tmp_path / "p" / "mixed_cur" / "data" / "train.jsonl")]
    measured = [warm[i] for i in order[: len(carried)]]
    assert measured == sorted(measured, reverse=True) and set(order[: len(carried)]) == set(carried)


def test_order_errors_say_what_is_missing(rated: Path, tmp_path: Path) -> None:
    ts = taskpack.open(rated)
    with pytest.raises(TaskpackError, match=r"has no pass rates of 'm2' \(it has: \['m1'\]\)"):
        export(ts, "verl", tmp_path / "a", options={"order": "easy-first", "model": "m2"})
    with pytest.raises(TaskpackError, match="order and model go together"):
        export(ts, "verl", tmp_path / "b", options={"order": "easy-first"})
    with pytest.raises(TaskpackError, match="ordered by a task set's pass rates"):
        convert_format(
            {"test": [str(DATA / "gsm8k" / "test.jsonl")]}, "gsm8k", "verl", tmp_path / "c",
            write_options={"order": "easy-first", "model": "m1"},
        )  # fmt: skip
    assert not any((tmp_path / n).exists() for n in "abc")


@pytest.mark.slow
@pytest.mark.conformance
def test_verl_and_trl_hand_out_the_rows_in_curriculum_order(rated: Path, tmp_path: Path) -> None:
    """verl 0.9.1's RLHFDataset and `create_rl_sampler` over the written data config, and TRL
    1.16's parser, `get_dataset` and GRPO's `RepeatSampler`, give the rows as written."""
    from .test_conformance import run_check

    ts = taskpack.open(rated)
    export(ts, "verl", tmp_path / "v", options={"order": "easy-first", "model": "m1"})
    written = [f"train-{i:05d}" for i in verl_ids(tmp_path / "v" / "train.parquet")]
    verl = run_check("verl", "check_verl_mixture.py", str(tmp_path / "v" / "verl_data.yaml"))
    assert verl["shuffle"] is False and verl["order"] == written
    assert [rate_of(int(i[6:])) for i in verl["order"][:5]] == [1.0] * 5
    trl = run_check(
        "trl", "check_trl_mixture.py", str(tmp_path / "v" / "trl_datasets.yaml"),
        str(tmp_path / "trl"),
    )  # fmt: skip
    assert trl["shuffle_dataset"] is False and len(trl["data_sources"]) == 7473


@pytest.mark.slow
@pytest.mark.conformance
def test_nemo_gym_and_prime_rl_read_the_curriculum_configs(rated: Path, tmp_path: Path) -> None:
    """NeMo Gym 0.7 validates the rows each entry of NeMo RL's data section names, in the
    written order; verifiers 0.4 loads prime-rl's training source, keyed as the warm start."""
    from .test_conformance import installed, run_check

    ts = taskpack.open(rated)
    options = {"order": "hard-first", "model": "m1"}
    export(ts, "nemo", tmp_path / "n", options=options)
    nemo = run_check("nemo", "check_nemo_mixture.py", str(tmp_path / "n" / "nemo_rl_data.yaml"))
    (train,) = nemo["train"]
    assert train["env_name"] == "nemo_gym" and not train["offending"]
    assert train["ids"] == [r["task_id"] for r in jsonl(tmp_path / "n" / "train.jsonl")]
    assert [rate_of(int(i[6:])) for i in train["ids"][:5]] == [0.0] * 5
    export(ts, "verifiers", tmp_path / "p", options={**options, "package": "gsm_hard"})
    env = installed(tmp_path / "p", tmp_path)
    out = run_check(
        "verifiers04", "check_prime_rl_envs.py", str(tmp_path / "p" / "prime_rl.toml"), env=env
    )
    assert out["samplers"] == ["difficulty_pool"] and out["ratios"] == [1.0]
    keys = out["train"]["gsm_hard"]
    warm = json.loads((tmp_path / "p" / "prime_rl_pool-gsm_hard.json").read_text())
    assert set(warm["task_rewards"]) <= set(keys) and len(warm["task_rewards"]) == MEASURED
    assert [warm["task_rewards"][k] for k in keys[:3]] == [0.0, 0.0, 0.0]
    assert len(out["eval"]["gsm_hard-test"]) == 1319
