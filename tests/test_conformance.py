"""Conformance: what taskpack writes, each framework's own code accepts. Each framework runs in
its own pinned, cached virtual environment (tests/conformance/frameworks.py); a framework that
cannot be installed fails the test, it is never skipped.

    python -m pytest -m conformance        # only these
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from itertools import islice
from pathlib import Path
from typing import Any

import pytest

import taskpack
from taskpack.exporter import convert_format, export
from taskpack.importer import import_sources, read_source

from .conformance.frameworks import ensure
from .conftest import REAL_SETS

pytestmark = [pytest.mark.conformance, pytest.mark.slow]
CHECKS = Path(__file__).parent / "conformance"


def run_check(
    framework: str, script: str, *args: str, env: dict[str, str] | None = None
) -> dict[str, Any]:
    import os
    import tempfile

    python = ensure(framework)
    # The framework's own temporary folders (Verifiers' Harbor taskset keeps each download of
    # the tasks, about 90 MB for GSM8K's test split) go in one removed once the check ends.
    with tempfile.TemporaryDirectory(prefix="taskpack-check-") as scratch:
        proc = subprocess.run(
            [str(python), str(CHECKS / script), *args],
            capture_output=True,
            text=True,
            timeout=1200,
            check=False,
            env={**os.environ, "TMPDIR": scratch, **(env or {})},
        )
    assert proc.returncode == 0, f"{framework} rejected our output:\n{proc.stderr[-5000:]}"
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def gsm8k(tmp_path_factory: pytest.TempPathFactory) -> taskpack.TaskSet:
    from .conftest import DATA

    path = tmp_path_factory.mktemp("conf") / "gsm8k"
    sources = {s: [str(DATA / "gsm8k" / f"{s}.jsonl")] for s in ("train", "test")}
    import_sources(path, sources, "gsm8k", name="gsm8k")
    return taskpack.open(path)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> taskpack.TaskSet:
    """40 GSM8K and 40 HumanEval tasks: answers, unit tests and files in one split."""
    from .conftest import DATA

    path = tmp_path_factory.mktemp("conf") / "mixed"
    tasks = [
        *islice(read_source(DATA / "gsm8k" / "test.jsonl", "gsm8k", split="test"), 40),
        *islice(read_source(DATA / "humaneval" / "HumanEval.jsonl.gz", "humaneval"), 40),
    ]
    taskpack.write(path, {"test": tasks}, name="mixed")
    return taskpack.open(path)


def test_verifiers_singleturnenv_accepts_and_scores(
    gsm8k: taskpack.TaskSet, tmp_path: Path
) -> None:
    export(gsm8k, "verifiers", tmp_path / "vf", options={"form": "dataset"})
    result = run_check(
        "verifiers",
        "check_verifiers.py",
        str(tmp_path / "vf" / "train"),
        str(tmp_path / "vf" / "test"),
    )
    assert result["train_rows"] == len(gsm8k.split("train")) == 7473
    assert result["eval_rows"] == len(gsm8k.split("test")) == 1319
    assert result["rewards"] == [1.0, 1.0, 1.0]


def test_verifiers_03_own_singleturn_tests_pass_on_the_dataset_export(
    gsm8k: taskpack.TaskSet, tmp_path: Path
) -> None:
    """Verifiers 0.3.1's own `tests/test_singleturn_env.py`, its chat-dataset fixture answered
    by taskpack's export, passes as it does on Verifiers' own saved GSM8K: `generate` keys each
    rollout on `example_id`, which every row carries (the ids are not numbers, so each row is
    numbered by its place and keeps its id in `info`)."""
    import pyarrow.parquet as pq

    from .conftest import DATA

    export(gsm8k, "verifiers", tmp_path / "vf", options={"form": "dataset"}, splits=("test",))
    rows = pq.read_table(tmp_path / "vf" / "test.parquet").to_pylist()
    assert [r["example_id"] for r in rows] == list(range(1319))
    ids = [json.loads(r["info"])["id"] for r in rows]
    assert ids == [t.id for t in gsm8k.split("test")]
    back = list(read_source(tmp_path / "vf" / "test.parquet", "verifiers", split="test"))
    assert [t.id for t in back] == ids
    outcomes = {}
    for name, dataset in (
        ("theirs", DATA / "peers" / "verifiers" / "gsm8k" / "test.parquet"),
        ("ours", tmp_path / "vf" / "test.parquet"),
    ):
        (tmp_path / name).mkdir()
        ran = run_check(
            "verifiers", "check_verifiers_suite.py", str(tmp_path / name), str(dataset.resolve())
        )
        outcomes[name] = ran["tests"]
    assert outcomes["ours"] == outcomes["theirs"]
    assert len(outcomes["ours"]) == 16 and set(outcomes["ours"].values()) == {"passed"}


def installed(package: Path, tmp_path: Path) -> dict[str, str]:
    """`pip install` of an exported taskset package with the verifiers 0.4 venv's pip, into a
    folder of this test's (the cached venv stays as it was); the environment that finds it."""
    site = tmp_path / "site"
    pip = [str(ensure("verifiers04")), "-m", "pip", "install", "-q", "--no-deps"]
    proc = subprocess.run(
        [*pip, "--target", str(site), str(package)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"PYTHONPATH": str(site)}


def test_verifiers_04_loads_the_taskset_package_and_scores_every_task(
    gsm8k: taskpack.TaskSet, tmp_path: Path
) -> None:
    """`pip install` of the export, then verifiers 0.4's own `load_taskset(TasksetConfig(id=
    NAME))` yields all 1319 GSM8K test tasks (the default split) and, with the taskset's own
    config, all 7473 of train; verifiers' scoring path gives every reference 1 and every wrong
    answer 0, and every task validates."""
    result = export(gsm8k, "verifiers", tmp_path / "gsm8k-tp")
    assert result.losses == []
    env = installed(tmp_path / "gsm8k-tp", tmp_path)
    test = run_check("verifiers04", "check_verifiers_taskset.py", "gsm8k_tp", env=env)
    assert test["type"] == "TaskpackTaskset" and test["tasks"] == 1319
    assert test["ids"] == ["test-00000", "test-00001", "test-00002"] and test["idx"] == [0, 1, 2]
    assert test["keys"] == test["ids"] and test["unique_keys"] == 1319  # prime-rl's task key
    assert test["reference"] == [1.0] and test["wrong"] == [0.0] and test["valid"] == [True]
    train = run_check("verifiers04", "check_verifiers_taskset.py", "gsm8k_tp", "train", env=env)
    assert train["tasks"] == 7473 and train["reference"] == [1.0] and train["wrong"] == [0.0]


def test_verifiers_04_taskset_carries_code_choices_math_and_the_environment(
    data_dir: Path, tmp_path: Path
) -> None:
    from .conftest import DATA

    he = list(islice(read_source(DATA / "humaneval" / "HumanEval.jsonl.gz", "humaneval"), 5))
    reader, path, options = REAL_SETS["science-exam"]
    mc = list(islice(read_source(path, reader, split="test", **options), 5))
    boxed = {
        "id": "in-a-box",
        "prompt": [
            {"role": "system", "content": "Answer in a box."},
            {"role": "user", "content": "What is 2 + 3?"},
        ],
        "answer": "5",
        "reward": {"kind": "numeric_match"},
        "environment": {
            "image": "python:3.12-slim",
            "workdir": "/app",
            "cpus": 2,
            "memory_mb": 2048,
            "internet": False,
            "test_timeout_sec": 30,
        },
        "limits": {"timeout_sec": 600},
    }
    tasks = [boxed, *MATH_TASKS, *he, *mc]
    taskpack.write(tmp_path / "ts", {"test": tasks}, name="t")
    result = export(
        taskpack.open(tmp_path / "ts"),
        "verifiers",
        tmp_path / "vf",
        options={"package": "mixed_tp"},
    )
    assert result.losses == []
    env = installed(tmp_path / "vf", tmp_path)
    out = run_check("verifiers04", "check_verifiers_taskset.py", "mixed_tp", env=env)
    assert out["tasks"] == len(tasks)
    assert out["reference"] == [1.0] and out["wrong"] == [0.0] and out["valid"] == [True]
    first = out["first"]
    assert first["system_prompt"] == "Answer in a box."
    assert first["prompt"] == [{"role": "user", "content": "What is 2 + 3?"}]
    assert (first["image"], first["workdir"], first["network_allow"]) == (
        "python:3.12-slim",
        "/app",
        [],
    )
    assert first["resources"] == {"cpu": 2.0, "memory": 2.0}
    assert first["timeout"] == {"scoring": 30.0, "agent": 600.0}


@pytest.mark.parametrize("release", ["nemo", "nemo04"])
def test_nemo_gym_validates_every_row(
    mixed: taskpack.TaskSet, tmp_path: Path, release: str
) -> None:
    """NeMo Gym 0.7's data validation, and 0.4's (last quarter's), on the same rows."""
    export(mixed, "nemo", tmp_path / "nemo")
    result = run_check(release, "check_nemo.py", str(tmp_path / "nemo" / "test.jsonl"))
    assert result == {
        "examples": len(mixed.split("test")),
        "offending": [],
        "first_offending": False,
    }
    rows = [
        json.loads(line) for line in (tmp_path / "nemo" / "test.jsonl").read_text().splitlines()
    ]
    assert not any("agent_ref" in r or "task_source" in r for r in rows)
    assert sum("expected_answer" in r for r in rows) == 40
    assert all(r["question"] for r in rows)


def test_nemo_gym_07_takes_every_exported_id_and_its_tasks_read_back(
    gsm8k: taskpack.TaskSet, tmp_path: Path
) -> None:
    """nemo-gym 0.7.0's own `materialize_task` finds each row's durable id (it numbers rows
    without one by their place, which shifts when datasets are added or reordered); its
    materialized rows read back as the same tasks and are written back in that form."""
    export(gsm8k, "nemo", tmp_path / "nemo", splits=("test",))
    materialized = tmp_path / "materialized.jsonl"
    out = run_check(
        "nemo",
        "check_nemo_tasks.py",
        str(tmp_path / "nemo" / "test.jsonl"),
        "gsm8k",
        str(materialized),
    )
    tasks = list(gsm8k.split("test"))
    assert out["tasks"] == out["unique"] == len(tasks) == 1319
    assert out["positional"] == 0
    assert out["ids"] == [t.id for t in tasks[:3]]
    back = list(read_source(materialized, "nemo", split="test"))
    assert [(t.prompt, t.answer) for t in back] == [(t.prompt, t.answer) for t in tasks]
    convert_format({"test": [str(materialized)]}, "nemo", "nemo", tmp_path / "again")
    rows = [json.loads(x) for x in materialized.read_text().splitlines()]
    again = [json.loads(x) for x in (tmp_path / "again" / "test.jsonl").read_text().splitlines()]
    assert again == rows and rows[0]["task_id"] == {"taskset": "gsm8k", "task_id": tasks[0].id}


def test_skyrl_prompt_dataset_and_gsm8k_env(gsm8k: taskpack.TaskSet, tmp_path: Path) -> None:
    export(gsm8k, "skyrl", tmp_path / "sky", splits=("test",))
    result = run_check("skyrl", "check_skyrl.py", str(tmp_path / "sky" / "test.parquet"))
    assert result["rows"] == 1319 and result["env_class"] == "gsm8k"
    import pyarrow.parquet as pq

    prompts = pq.read_table(tmp_path / "sky" / "test.parquet").column("prompt").to_pylist()
    assert all(p[-1]["content"].endswith('output the final answer after "####".') for p in prompts)
    assert result["rewards"] == [1.0, 1.0, 1.0] and result["wrong"] == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("source", ["gsm8k", "humaneval"])
def test_skyrl_prompt_dataset_checks_hold_on_the_export(
    data_dir: Path, tmp_path: Path, source: str
) -> None:
    """The checks of SkyRL's own dataset test (`tests/train/dataset/test_dataset.py`, not in
    skyrl's wheel or source distribution), made by skyrl's own PromptDataset on the export:
    the length filter keeps exactly the short prompts, items carry the row's prompt, env class
    and every other column, and collate_fn gives the trainer's dicts."""
    files = {"gsm8k": "gsm8k/test.jsonl", "humaneval": "humaneval/HumanEval.jsonl.gz"}
    import_sources(tmp_path / "ts", {"test": [str(data_dir / files[source])]}, source, name="s")
    export(taskpack.open(tmp_path / "ts"), "skyrl", tmp_path / "sky")
    out = run_check("skyrl", "check_skyrl_dataset.py", str(tmp_path / "sky" / "test.parquet"))
    assert out["rows"] == {"gsm8k": 1319, "humaneval": 164}[source]
    assert out["kept"] == out["expected"] and out["rows"] / 2 <= out["kept"] < out["rows"]
    assert out["items_match_rows"] is True
    assert out["batch_keys"] == [["env_class", "env_extras", "prompt", "uid"]] * 2
    assert out["batch_uids"] == ["0", "1"]


def test_skyrl_exports_ship_the_env_classes_skyrl_gym_lacks(data_dir: Path, tmp_path: Path) -> None:
    """HumanEval's rows name `unit_tests`, which skyrl-gym 0.4 does not ship: the export ships
    and registers it (`taskpack_skyrl_env.py`), and in skyrl-gym's venv `skyrl_gym.make` on
    each row's env class scores the reference code 1, no code 0 and a forger 0, as do
    multiple-choice and exact-match rows."""
    from taskpack.converters._verifier import solve_reference
    from taskpack.rewards.trials import FORGERS

    from .conftest import make_task

    src = {"test": [str(data_dir / "humaneval" / "HumanEval.jsonl.gz")]}
    import_sources(tmp_path / "he", src, "humaneval", name="humaneval")
    he = taskpack.open(tmp_path / "he")
    export(he, "skyrl", tmp_path / "sky")
    assert (tmp_path / "sky" / "taskpack_skyrl_env.py").is_file()
    tasks = list(he.split("test"))
    forger = FORGERS["always-equal"].code
    replies = []
    for row in (0, 81, 163):
        task = tasks[row]
        code = solve_reference(task)
        cheat = forger.format(f=task.reward.entry_point)  # type: ignore[union-attr,union-attr]
        replies += [
            [row, f"```python\n{code}```"],
            [row, "no code"],
            [row, f"```python\n{cheat}```"],
        ]
    (tmp_path / "replies.json").write_text(json.dumps(replies))
    out = run_check(
        "skyrl", "check_skyrl_envs.py", str(tmp_path / "sky" / "test.parquet"),
        str(tmp_path / "replies.json"),
    )  # fmt: skip
    assert out["rows"] == 164 and out["env_classes"] == ["unit_tests"]
    assert [r for _, r in out["rewards"]] == [1.0, 0.0, 0.0] * 3
    choices = [{"label": "A", "text": "x"}, {"label": "B", "text": "y"}]
    mixed = [
        make_task(
            0, prompt="Pick B.", answer="B", reward={"kind": "multiple_choice", "choices": choices}
        ),
        make_task(1, prompt="Say yes.", answer="yes", reward={"kind": "exact_match"}),
    ]
    taskpack.write(tmp_path / "mixed", {"train": mixed}, name="mixed")
    export(taskpack.open(tmp_path / "mixed"), "skyrl", tmp_path / "sky2")
    replies = [[0, "\\boxed{B}"], [0, "\\boxed{A}"], [1, "yes"], [1, "no"]]
    (tmp_path / "replies.json").write_text(json.dumps(replies))
    out = run_check(
        "skyrl", "check_skyrl_envs.py", str(tmp_path / "sky2" / "train.parquet"),
        str(tmp_path / "replies.json"),
    )  # fmt: skip
    assert out["env_classes"] == ["exact_match", "multiple_choice"]
    assert [r for _, r in out["rewards"]] == [1.0, 0.0, 1.0, 0.0]


@pytest.mark.parametrize("where", ["folder", "hub"])
def test_openenv_serves_a_harbor_export(
    where: str, gsm8k: taskpack.TaskSet, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """OpenEnv 0.10's HarborTaskProvider serves the task folders of taskpack's Harbor export of
    GSM8K's test split (1319), from the folder, and of its first 12 tasks from a Hub dataset
    repo the folder is uploaded to as `tasks/` (through the test Hub, whose git commits and
    downloads take a second a task): every task, named as its folder, its instruction and its
    files as written."""
    source = gsm8k
    if where == "hub":
        first = list(islice(gsm8k.split("test"), 12))
        taskpack.write(tmp_path / "first", {"test": first}, name="gsm8k")
        source = taskpack.open(tmp_path / "first")
    export(source, "harbor", tmp_path / "harbor", splits=("test",))
    folder = tmp_path / "harbor" / "test"
    folders = sorted(p for p in folder.iterdir() if p.is_dir())
    spec, env = str(folder), None
    if where == "hub":
        from huggingface_hub import HfApi

        hub = request.getfixturevalue("hub")
        spec = f"{hub.owner}/gsm8k-harbor"
        api = HfApi(endpoint=hub.endpoint)
        api.create_repo(spec, repo_type="dataset")
        api.upload_folder(
            repo_id=spec, folder_path=folder, path_in_repo="tasks", repo_type="dataset",
            ignore_patterns=["index.json", "dataset.toml"],
        )  # fmt: skip
        env = {
            "HF_ENDPOINT": hub.endpoint, "HF_HUB_DISABLE_XET": "1", "HF_TOKEN": "test-token",
            "OPENENV_DATASET_CACHE": str(tmp_path / "openenv"),
        }  # fmt: skip
    out = run_check("openenv", "check_openenv_tasks.py", spec, env=env)
    assert out["count"] == len(folders) == (12 if where == "hub" else 1319)
    assert out["names"] == [f.name for f in folders] and out["third"] == folders[2].name
    written = [(f / "instruction.md").read_text() for f in folders]
    assert [i.strip() for i in out["instructions"]] == [w.strip() for w in written]
    third = sorted(str(p.relative_to(folders[2])) for p in folders[2].rglob("*") if p.is_file())
    assert out["files"] == third


def test_skyrl_swe_rows_in_the_mini_swe_agent_shape(data_dir: Path, tmp_path: Path) -> None:
    src = data_dir / "swebench" / "swebench_lite_test.jsonl"
    options = {"file_names": {"test": "validation"}}
    convert_format({"test": [str(src)]}, "swebench", "skyrl", tmp_path / "s", write_options=options)
    result = run_check("skyrl", "check_skyrl.py", str(tmp_path / "s" / "validation.parquet"), "swe")
    first = json.loads(src.read_text(encoding="utf-8").split("\n", 1)[0])
    assert result["rows"] == 300 and result["env_class"] == "null"
    instance = result["instance"]
    # the SWE-bench record itself, field for field, and what mini-swe-agent reads besides
    assert {k: v for k, v in instance.items() if k in first} == first
    assert set(instance) - set(first) == {"image_name", "eval_script"}
    tag = first["instance_id"].replace("__", "_1776_")
    assert instance["image_name"] == f"swebench/sweb.eval.x86_64.{tag}:latest".lower()
    assert instance["eval_script"].startswith("#!/bin/bash\n# taskpack: this SWE-bench")


MATH_TASKS = [  # MATH-style answers, made here (not read from verl): a task from elsewhere
    {"id": f"math-{n}", "prompt": question, "answer": answer, "reward": {"kind": "math_match"}}
    for n, (question, answer) in enumerate(
        [
            ("What is 1/2 + 1/4?", "\\frac{3}{4}"),
            ("Simplify sqrt(8)/sqrt(4).", "\\sqrt{2}"),
            ("Solve x^2 = 4x for every x.", "0, 4"),
            ("Which interval solves 2x + 1 <= 7?", "(-\\infty,3]"),
            ("Area of a circle of radius 3?", "9\\pi"),
            ("Interior angle of a regular hexagon, in degrees?", "120^\\circ"),
        ]
    )
]


def test_verl_rlhf_dataset_loads_and_default_compute_score_grades(
    gsm8k: taskpack.TaskSet, tmp_path: Path
) -> None:
    """verl's own loader takes every exported row and its own scorer, chosen by the row's
    data_source, gives each reference 1 and each wrong answer 0: GSM8K from its source files,
    MATH-style tasks made here, and MATH files verl's script wrote, through a task set. On the
    MATH rows taskpack's math_match grader agrees with verl's scorer on every candidate."""
    from taskpack.rewards import grader

    export(gsm8k, "verl", tmp_path / "g", splits=("test",))
    taskpack.write(tmp_path / "m", {"test": MATH_TASKS}, name="m")
    export(taskpack.open(tmp_path / "m"), "verl", tmp_path / "mo")
    fixture = Path(__file__).parent / "fixtures" / "verl" / "math" / "train.parquet"
    import_sources(tmp_path / "f", {"train": [str(fixture)]}, "verl", name="f")
    export(taskpack.open(tmp_path / "f"), "verl", tmp_path / "fo")
    files = [tmp_path / "g" / "test.parquet", tmp_path / "mo" / "test.parquet"]
    files.append(tmp_path / "fo" / "train.parquet")
    env = {"TASKPACK_GRADE": str(Path(grader.__file__))}
    result = run_check("verl", "check_verl.py", *map(str, files), env=env)
    assert result["rows"] == 1319 + len(MATH_TASKS) + 8
    assert result["data_sources"] == ["DigitalLearningGmbH/MATH-lighteval", "openai/gsm8k"]
    assert result["reference"] == [1.0] and result["wrong"] == [0.0]
    assert result["disagree"] == []


def test_verls_own_reward_loading_runs_the_shipped_reward_function(
    gsm8k: taskpack.TaskSet, tmp_path: Path
) -> None:
    """verl 0.9.1 loads the reward function a verl export ships (`taskpack_reward.py`, named
    in `verl_data.yaml` as `reward.custom_reward_function`) with its own loader, and scores
    with it: on HumanEval rows (unit tests, which verl's own scorer lacks) the reference in a
    fence, and its body alone, score 1, a wrong body and code that exits 0 score 0; a GSM8K
    row of the same export goes to verl's own `default_compute_score` (1 and 0)."""
    from taskpack.importer import import_sources

    from .conftest import DATA

    import_sources(tmp_path / "he", {"train": [str(DATA / "humaneval" / "HumanEval.jsonl.gz")]},
                   "humaneval", name="he")  # fmt: skip
    he = taskpack.open(tmp_path / "he").split("train")
    mixed = [he[i].model_dump() for i in range(3)] + [gsm8k.split("test")[0].model_dump()]
    taskpack.write(tmp_path / "set", {"train": mixed}, name="mixed")
    result = export(taskpack.open(tmp_path / "set"), "verl", tmp_path / "v")
    assert not any("unit_tests" in loss for loss in result.losses), result.losses
    parquet = str((tmp_path / "v" / "train.parquet").absolute())
    replies = []
    for row in range(3):
        task = he[row]
        whole = task.instruction + (task.solution or "")
        replies += [
            {"file": parquet, "row": row, "reply": f"Sure.\n```python\n{whole}```"},
            {"file": parquet, "row": row, "reply": f"```python\n{task.solution}```"},
            {"file": parquet, "row": row, "reply": "```python\n    return None\n```"},
            {
                "file": parquet,
                "row": row,
                "reply": f"```python\nimport os\nos._exit(0)\n{whole}```",
            },
        ]
    answer = str(gsm8k.split("test")[0].answer)
    replies += [
        {"file": parquet, "row": 3, "reply": f"So the answer is #### {answer}"},
        {"file": parquet, "row": 3, "reply": "#### 123456789"},
    ]
    (tmp_path / "replies.json").write_text(json.dumps(replies))
    config = tmp_path / "v" / "verl_data.yaml"
    out = run_check("verl", "check_verl_reward.py", str(config), str(tmp_path / "replies.json"))
    assert out["path"] == str((tmp_path / "v" / "taskpack_reward.py").absolute())
    assert out["scores"] == [1.0, 1.0, 0.0, 0.0] * 3 + [1.0, 0.0]


def _trl_set(tmp_path: Path) -> Any:
    """`tmp_path/set`: HumanEval's first two tasks, a numeric one (`q`) and a rubric one
    (`j`, which taskpack does not score); HumanEval's split returned."""
    from taskpack.importer import import_sources

    from .conftest import DATA

    import_sources(tmp_path / "he", {"train": [str(DATA / "humaneval" / "HumanEval.jsonl.gz")]},
                   "humaneval", name="he")  # fmt: skip
    he = taskpack.open(tmp_path / "he").split("train")
    judged = {"kind": "rubric", "criteria": [{"description": "It rhymes"}]}
    tasks = [he[i].model_dump() for i in range(2)] + [
        {"id": "q", "prompt": "2 + 2?", "answer": "4", "reward": {"kind": "numeric_match"}},
        {"id": "j", "prompt": "A poem.", "reward": judged},
    ]
    taskpack.write(tmp_path / "set", {"train": tasks}, name="mixed")
    return he


def test_trls_grpo_trainer_scores_with_taskpacks_reward_function(tmp_path: Path) -> None:
    """TRL 1.16's GRPOTrainer takes `taskpack.trl.reward_func(split)` among its reward_funcs:
    its own reward step scores a HumanEval reference 1 and a wrong body 0, a numeric answer 1
    and a wrong one 0, and a task taskpack does not score None (TRL's "no reward"); a training
    step on the CPU (a tiny model made in the venv) logs the function's reward."""
    he = _trl_set(tmp_path)
    first = he[0]
    given = [
        {"id": first.id, "completion": f"```python\n{first.instruction}{first.solution}```"},
        {"id": first.id, "completion": "```python\n    return None\n```"},
        {"id": "q", "completion": "<think>2 and 2</think> \\boxed{4}"},
        {"id": "q", "completion": "5"},
        {"id": "j", "completion": "Roses are red."},
    ]
    (tmp_path / "given.json").write_text(json.dumps(given))
    root = str(Path(__file__).resolve().parents[1])
    out = run_check("trl", "check_trl_reward.py", str(tmp_path / "set"), "train",
                    str(tmp_path / "given.json"), env={"PYTHONPATH": root})  # fmt: skip
    assert out["scores"] == [1.0, 0.0, 1.0, 0.0, None]
    assert "rewards/taskpack_reward/mean" in out["logged"]


def test_a_trl_export_is_what_trls_trainers_load_and_step_on(tmp_path: Path) -> None:
    """`export --to trl`: `load_dataset("json")` reads its files as TRL's conversational
    datasets; GRPOTrainer with the reward function the export ships scores a HumanEval
    reference 1 and a wrong body 0, a numeric answer 1 and a wrong one 0, a rubric task None,
    and steps on the CPU; SFTTrainer steps on the rows' prompt and completion."""
    he = _trl_set(tmp_path)
    export(taskpack.open(tmp_path / "set"), "trl", tmp_path / "trl")
    rows = [
        json.loads(line) for line in (tmp_path / "trl" / "train.jsonl").read_text().splitlines()
    ]
    assert all(set(m) == {"role", "content"} for r in rows for m in r["prompt"])  # no null keys
    first = he[0]
    given = [
        {"row": 0, "completion": f"```python\n{first.instruction}{first.solution}```"},
        {"row": 0, "completion": "```python\n    return None\n```"},
        {"row": 2, "completion": "\\boxed{4}"},
        {"row": 2, "completion": "5"},
        {"row": 3, "completion": "Roses are red."},
    ]
    (tmp_path / "given.json").write_text(json.dumps(given))
    root = str(Path(__file__).resolve().parents[1])
    out = run_check("trl", "check_trl_export.py", str(tmp_path / "trl"),
                    str(tmp_path / "given.json"), env={"PYTHONPATH": root})  # fmt: skip
    assert out["columns"] == ["answer", "completion", "id", "prompt", "taskpack_reward"]
    assert out["scores"] == [1.0, 0.0, 1.0, 0.0, None]
    assert "rewards/taskpack_reward/mean" in out["grpo"] and "train_loss" in out["sft"]


# Replies as models write them, and whether taskpack's reading of each agrees with verl's own
# (math_dapo's answer, prime_code's code): where they part, the reason, by class.
REPLIES = [
    ("The sum is 12.\nAnswer: 12", "12", None),
    ("so the total is \\boxed{12}.", "12", None),
    ("<think>maybe 13</think>The total is \\boxed{12}", "12", None),
    # both an Answer: line and a box: math_dapo prefers the line, taskpack the box
    ("Answer: 13\nCorrection: \\boxed{12}", "12", "box over Answer: line"),
    # an answer more than 300 characters before the end: math_dapo reads the last 300 only
    ("\\boxed{12}" + " and so on" * 40, "12", "beyond verl's last 300 characters"),
    # reasoning that ends with no answer: math_dapo still reads the think's Answer: line
    ("<think>Answer: 12", "", "an unclosed <think> answers nothing"),
]
CODE_REPLIES = [
    ("```python\ndef f(x):\n    return x\n```", None),
    ("Here:\n```python\ndef f(x):\n    return x\n```\nDone.", None),
    # a test block after the solution: prime_code runs the last block, taskpack the one
    # defining the entry point
    ("```python\ndef f(x):\n    return x\n```\n```python\nprint(f(1))\n```",
     "the block defining the entry point"),
    ("```py\ndef f(x):\n    return x\n```", "a ```py fence"),
]  # fmt: skip


def test_replies_are_read_as_verls_own_code_reads_them_or_the_difference_is_named(
    tmp_path: Path,
) -> None:
    """taskpack's reading of replies against verl 0.9.1's own functions on the same replies
    (run in its venv): they agree except on the classes named, each a choice taskpack makes."""
    from taskpack.rewards import grader

    replies = [r for r, _, _ in REPLIES] + [r for r, _ in CODE_REPLIES]
    (tmp_path / "replies.json").write_text(json.dumps(replies))
    theirs = run_check("verl", "check_verl_extraction.py", str(tmp_path / "replies.json"))["read"]
    for (reply, ours, differs), verl in zip(REPLIES, theirs[: len(REPLIES)], strict=True):
        mine = grader.extract_answer(reply).strip().rstrip(".")
        assert mine == ours, reply
        same = grader.math_form(mine) == grader.math_form(str(verl["dapo"] or ""))
        assert same == (differs is None), (reply, mine, verl["dapo"], differs)
    for (reply, differs), verl in zip(CODE_REPLIES, theirs[len(REPLIES) :], strict=True):
        same = grader.extract_code(reply, "f").strip() == verl["prime_code"].strip()
        assert same == (differs is None), (reply, verl["prime_code"], differs)


def test_gem_math_env_scores_the_reference_answer(gsm8k: taskpack.TaskSet, tmp_path: Path) -> None:
    export(gsm8k, "gem", tmp_path / "gem", splits=("test",))
    result = run_check("gem", "check_gem.py", str(tmp_path / "gem" / "test.parquet"))
    assert result == {"rows": 1319, "rewards": [1.0, 1.0, 1.0], "wrong": 0.0}


def test_gem_qa_env_scores_multiple_choice_and_reports_what_gem_cannot_score(
    data_dir: Path, tmp_path: Path
) -> None:
    src = data_dir / "kaggle_llm_science_exam" / "train.csv"
    mc = convert_format(
        {"test": [str(src)]}, "kaggle", "gem", tmp_path / "g", options={"preset": "multiple-choice"}
    )
    assert not any("reward" in loss for loss in mc.losses)
    result = run_check("gem", "check_gem.py", str(tmp_path / "g" / "test.parquet"), "qa")
    assert result == {"rows": 200, "rewards": [1.0] * 3, "wrong": [0.0] * 3}
    he = {"test": [str(data_dir / "humaneval" / "HumanEval.jsonl.gz")]}
    losses = convert_format(he, "humaneval", "gem", tmp_path / "gem").losses
    assert any("reward kind 'unit_tests' (no GEM environment scores it" in x for x in losses)
    # SkyRL's export ships the environment that scores it (see the skyrl-gym test above)
    losses = convert_format(he, "humaneval", "skyrl", tmp_path / "skyrl").losses
    assert not any("reward kind" in x for x in losses), losses
    assert (tmp_path / "skyrl" / "taskpack_skyrl_env.py").is_file()


def test_ors_environment_serves_splits_tasks_and_prompts(
    mixed: taskpack.TaskSet, tmp_path: Path
) -> None:
    export(mixed, "openreward", tmp_path / "or")
    result = run_check("ors", "check_ors.py", str(tmp_path / "or"))
    assert result["splits"] == ["test"] and result["tasks"] == {"test": 80}
    tasks = list(mixed.split("test"))
    got = result["prompts"]["test"]
    assert len(got) == len(tasks) == 80
    for prompt, task in zip(got, tasks, strict=True):  # the instruction says where work goes
        assert prompt.startswith(task.instruction)
        assert prompt.endswith(("Write your final answer to /app/answer.txt.", "`.")), prompt


def test_harbor_loads_and_lints_every_folder(mixed: taskpack.TaskSet, tmp_path: Path) -> None:
    export(mixed, "harbor", tmp_path / "hb")
    result = run_check("harbor", "check_harbor.py", str(tmp_path / "hb" / "test"))
    assert result["folders"] == result["loaded"] == 80
    assert result["lint_exit"] == 0 and result["findings"] == [], result


def test_terminal_bench_to_harbor_agrees_with_harbors_own_mapper(
    data_dir: Path, tmp_path: Path
) -> None:
    """Harbor 0.26's TerminalBenchMapper and taskpack put the same files, byte for byte, in
    environment/, tests/ and solution/ of every folder Harbor maps; the scripts each side
    generates (test.sh, solve.sh, the Dockerfile, a docker-compose.yaml) aside. The one
    deliberate difference: where a task's Dockerfile copies tests/ or solution.sh, Harbor puts
    them in the build context (the agent's image); taskpack does not, and reports it."""
    import hashlib

    root = data_dir / "terminal_bench"
    parents = sorted({p.parent.parent for p in root.rglob("task.yaml")})
    result = run_check("harbor", "check_harbor_mapper.py", str(tmp_path / "hb"), *map(str, parents))
    theirs: dict[str, dict[str, str]] = result["mapped"]
    assert len(theirs) == 6 and len(result["failed"]) == 2  # no run-tests.sh: Harbor refuses
    export_result = convert_format(
        {"test": [str(root)]}, "terminal-bench", "harbor", tmp_path / "ours"
    )
    assert any("Dockerfile COPY sources outside" in line for line in export_result.losses)
    generated = {"tests/test.sh", "solution/solve.sh", "environment/Dockerfile"}
    generated.add("environment/docker-compose.yaml")
    for key, files in theirs.items():
        source = Path(key)
        name = source.relative_to(root).as_posix().replace("/", "__")
        folder = tmp_path / "ours" / "test" / name
        ours = {
            p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in folder.rglob("*")
            if p.is_file()
            and p.relative_to(folder).parts[0] in ("environment", "tests", "solution")
        }
        expected = {k: v for k, v in files.items() if k not in generated}
        leaked = {
            k for k in expected if k.startswith(("environment/tests/", "environment/solution"))
        }
        assert {k: v for k, v in ours.items() if k not in generated} == {
            k: v for k, v in expected.items() if k not in leaked
        }, name
        assert not any(k.startswith(("environment/tests/", "environment/solution")) for k in ours)


@pytest.mark.parametrize("source", ["gsm8k", "humaneval", "science-exam"])
def test_verifiers_environment_module_scores_by_the_tasks_reward(
    data_dir: Path, tmp_path: Path, source: str
) -> None:
    """verifiers' own `load_environment` imports the module taskpack writes; its rubric gives
    the reference 1.0 and a wrong reply 0.0 for numeric, unit-test and multiple-choice tasks."""
    from taskpack.converters._verifier import solve_reference

    reader, path, options = REAL_SETS[source]
    tasks = list(islice(read_source(path, reader, split="test", **options), 5))
    taskpack.write(tmp_path / "ts", {"test": tasks}, name="t")
    result = export(
        taskpack.open(tmp_path / "ts"), "verifiers", tmp_path / "vf", options={"form": "dataset"}
    )
    assert not any("reward" in loss or "files" in loss for loss in result.losses)
    references = {}
    for task in tasks:
        reference = solve_reference(task)
        if task.reward is not None and task.reward.kind == "unit_tests":
            reference, wrong = f"```python\n{reference}```", "```python\npass\n```"
        else:
            wrong = (
                "Z" if task.reward is not None and task.reward.kind == "multiple_choice" else "-1"
            )
        references[task.prompt[-1].text] = [reference, wrong]
    (tmp_path / "refs.json").write_text(json.dumps(references))
    out = run_check(
        "verifiers", "check_verifiers_env.py", str(tmp_path / "vf"), str(tmp_path / "refs.json")
    )
    assert out["type"] == "SingleTurnEnv" and out["eval_rows"] == 5
    assert out["reference"] == [1.0] * 5 and out["wrong"] == [0.0] * 5


def test_framework_interpreters_are_found_where_pyenv_keeps_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A HOME of its own (as a user's machine or CI may have) does not hide pyenv's
    interpreters: `pyenv root` says where they are; what is missing says where it looked."""
    from .conformance import frameworks

    before = frameworks.pyenv_root()
    monkeypatch.setenv("HOME", str(tmp_path))
    if not (shutil.which("pyenv") or os.environ.get("PYENV_ROOT")):
        monkeypatch.setenv("PYENV_ROOT", str(before))  # as a user who set it would
    assert frameworks.pyenv_root() == before
    with pytest.raises(RuntimeError, match=rf"no Python 3\.99 .*none in {before}/versions"):
        frameworks.interpreter("3.99")
