"""Native round trips on files the frameworks' own tools wrote (../shared/data/peers/): format
-> task set -> same format gives back every row (as JSON values, in order) and every file (bytes
and mode; task.toml as data), with the embedded whole-task copy off, as it is by default.

And proof that this is the converters' doing, not a copy: the prompt each row holds comes back
from the model's own fields alone (extras stripped), and no extras hold a serialized task.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import taskpack
from taskpack.converters import get, names
from taskpack.converters._residue import same
from taskpack.exporter import convert_format, export
from taskpack.importer import import_sources

from .conftest import DATA

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PEERS = DATA / "peers"
NEMO_FILES = sorted((PEERS / "nemo_gym").glob("*.jsonl"))
SKYRL_FILES = sorted((PEERS / "skyrl").glob("*/*.parquet"))
VERIFIERS = [
    PEERS / "verifiers" / "gsm8k" / n for n in ("train.parquet", "test.parquet", "test_hf")
]
HARBOR = PEERS / "harbor_cookbook"
DATASETS = {"form": "dataset"}  # Verifiers 0.3's form, the one peers/verifiers holds
# verl's gsm8k.py output (shared), and what its math_dataset.py and gsm8k_multiturn_w_tool.py
# wrote (tests/fixtures/verl/README.md)
VERL_FILES = sorted((PEERS / "verl").glob("*/*.parquet")) + sorted(
    (Path(__file__).parent / "fixtures" / "verl").glob("*/*.parquet")
)


def through_taskset(tmp: Path, src: Path, fmt: str, split: str) -> taskpack.TaskSet:
    import_sources(tmp / "ts", {split: [str(src)]}, fmt, name="peer")
    ts = taskpack.open(tmp / "ts")
    for task in ts.split(split):
        assert "taskpack" not in json.dumps(task.extras), "a whole task rode along in extras"
    return ts


def jsonl(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def test_all_peer_files_are_here() -> None:
    assert len(NEMO_FILES) == 71 and len(SKYRL_FILES) == 4 and len(VERL_FILES) == 6
    assert len([p for p in HARBOR.iterdir() if (p / "task.toml").is_file()]) == 10


@pytest.mark.parametrize("src", NEMO_FILES, ids=lambda p: p.stem)
def test_nemo_gym_rows_come_back_equal(tmp_path: Path, src: Path) -> None:
    ts = through_taskset(tmp_path, src, "nemo", "train")
    assert export(ts, "nemo", tmp_path / "out").losses == []
    back, original = jsonl(tmp_path / "out" / "train.jsonl"), jsonl(src)
    assert len(back) == len(original)
    for n, (a, b) in enumerate(zip(back, original, strict=True)):
        assert same(a, b), f"row {n}"
    # The prompt is the model's: the conversation's texts come back with extras stripped.
    for task, row in zip(ts.split("train"), original, strict=True):
        bare = task.model_copy(update={"extras": {}})
        taskpack.write(tmp_path / "bare", {"t": [bare]}, name="b", overwrite=True)
        export(taskpack.open(tmp_path / "bare"), "nemo", tmp_path / "b", overwrite=True)
        rebuilt = jsonl(tmp_path / "b" / "t.jsonl")[0]["responses_create_params"]["input"]
        assert texts(rebuilt) == texts(row["responses_create_params"]["input"])
        break  # one row per file: writing a task set per row is slow


def texts(value: Any) -> list[str]:
    """Every `text`/`content` string in a Responses input, in order."""
    if isinstance(value, str):
        return [value]
    out: list[str] = []
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, dict):
            for key in ("content", "text", "output", "arguments"):
                if isinstance(item.get(key), str):
                    out.append(item[key])
                elif isinstance(item.get(key), list):
                    out += texts(item[key])
    return out


@pytest.mark.parametrize("src", SKYRL_FILES, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_skyrl_rows_come_back_equal(tmp_path: Path, src: Path) -> None:
    ts = through_taskset(tmp_path, src, "skyrl", src.stem)
    assert export(ts, "skyrl", tmp_path / "out").losses == []
    back = pq.read_table(tmp_path / "out" / f"{src.stem}.parquet").to_pylist()
    original = pq.read_table(src).to_pylist()
    assert same(back, original)
    first = ts.split(src.stem)[0]
    assert first.prompt and first.answer == original[0]["reward_spec"]["ground_truth"]
    if src.parent.name == "gsm8k":  # SkyRL's gsm8k environment is a numeric match
        assert first.reward is not None and first.reward.kind == "numeric_match"
        assert "env_class" not in first.extras["skyrl"]


@pytest.mark.parametrize("src", VERL_FILES, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_verl_rows_come_back_equal(tmp_path: Path, src: Path) -> None:
    ts = through_taskset(tmp_path, src, "verl", src.stem)
    assert export(ts, "verl", tmp_path / "out").losses == []
    back = pq.read_table(tmp_path / "out" / f"{src.stem}.parquet").to_pylist()
    original = pq.read_table(src).to_pylist()
    assert same(back, original)
    tasks = list(ts.split(src.stem))
    for task, row in zip(tasks, original, strict=True):  # the model's fields, not a residue
        assert task.answer == row["reward_model"]["ground_truth"]
        assert [m.text for m in task.prompt] == [m["content"] for m in row["prompt"]]
        assert task.solution == row["extra_info"].get("answer")
    kinds = {t.reward.kind if t.reward else None for t in tasks}
    assert kinds == {"math_match" if src.parent.name == "math" else "numeric_match"}
    if src.parent.name == "math":  # MATH's own columns are the task's metadata
        assert set(tasks[0].metadata) == {"level", "type"}
    if src.parent.name == "gsm8k":  # verl's gsm8k.py output: every field is the model's
        assert all(not t.extras for t in tasks)


def test_gsm8k_to_verl_agrees_with_verls_own_dataset_script(tmp_path: Path) -> None:
    """verl's gsm8k.py made peers/verl/gsm8k from the same GSM8K files: taskpack's export is
    the same rows, every column (verl's instruction line, the ground truth without commas,
    extra_info's split, index, worked answer and question)."""
    for split in ("train", "test"):
        src = DATA / "gsm8k" / f"{split}.jsonl"
        result = convert_format({split: [str(src)]}, "gsm8k", "verl", tmp_path / split)
        assert result.losses == []
        ours = pq.read_table(tmp_path / split / f"{split}.parquet")
        theirs = pq.read_table(PEERS / "verl" / "gsm8k" / f"{split}.parquet")
        assert ours.schema.names == theirs.schema.names
        assert same(ours.to_pylist(), theirs.to_pylist())


@pytest.mark.parametrize("src", VERIFIERS, ids=lambda p: p.name)
def test_verifiers_rows_come_back_equal(tmp_path: Path, src: Path) -> None:
    import datasets

    split = src.stem.removesuffix("_hf")
    ts = through_taskset(tmp_path, src, "verifiers", split)
    assert export(ts, "verifiers", tmp_path / "out", options=DATASETS).losses == []
    if src.is_dir():
        original = list(datasets.load_from_disk(str(src)))
        back = list(datasets.load_from_disk(str(tmp_path / "out" / split)))
    else:
        original = pq.read_table(src).to_pylist()
        back = pq.read_table(tmp_path / "out" / f"{split}.parquet").to_pylist()
    assert same(back, original)
    assert all(not t.extras for t in ts.split(split))  # every column has a model field


def tree(folder: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            rel = p.relative_to(folder).as_posix()
            data: Any = p.read_bytes()
            if rel == "task.toml":
                data = tomllib.loads(data.decode("utf-8"))
            out[rel] = (data, p.stat().st_mode & 0o777)
    return out


def test_harbor_cookbook_folders_come_back_equal(tmp_path: Path) -> None:
    ts = through_taskset(tmp_path, HARBOR, "harbor", "recipes")
    tasks = {t.id: t for t in ts.split("recipes")}
    assert len(tasks) == 10
    assert export(ts, "harbor", tmp_path / "out").losses == []
    for folder in sorted(p for p in HARBOR.iterdir() if p.is_dir()):
        assert tree(tmp_path / "out" / "recipes" / folder.name) == tree(folder), folder.name
    steps = tasks["multi-step"]
    assert [s.name for s in steps.steps] == ["scaffold", "implement", "document"]
    assert steps.prompt == [] and steps.steps[0].prompt
    assert {(f.step, f.role) for f in steps.files} >= {
        ("implement", "workspace"),
        ("implement", "tests"),
        ("scaffold", "solution"),
        (None, "tests"),
    }
    mcp = tasks["mcp-tools"].tools
    assert [(t.type, t.name, t.url) for t in mcp] == [
        ("mcp", "mcp-server", "http://mcp-server:8000/mcp")
    ]
    for task in tasks.values():  # the agent's side holds no verifier and no oracle
        env = {f.path for f in task.files_of("environment")}
        assert not any(p.startswith(("tests/", "solution/")) for p in env), task.id


def test_harbor_folder_reads_the_same_without_its_index(tmp_path: Path) -> None:
    import shutil

    ts = through_taskset(tmp_path, HARBOR, "harbor", "recipes")
    export(ts, "harbor", tmp_path / "out")
    indexed = list(taskpack.open(tmp_path / "ts").split("recipes"))
    (tmp_path / "out" / "recipes" / "index.json").unlink()
    import_sources(
        tmp_path / "again", {"recipes": [str(tmp_path / "out" / "recipes")]}, "harbor", name="x"
    )
    again = list(taskpack.open(tmp_path / "again").split("recipes"))
    assert [t.digest for t in again] == [t.digest for t in indexed]
    shutil.rmtree(tmp_path / "again")


# --- cross-format: what the target can carry is kept, the rest is reported ----------------


def test_skyrl_to_verifiers_keeps_the_conversation_and_reports_skyrl_fields(
    tmp_path: Path,
) -> None:
    src = PEERS / "skyrl" / "multiply" / "validation.parquet"
    result = convert_format(
        {"test": [str(src)]}, "skyrl", "verifiers", tmp_path / "v", write_options=DATASETS
    )
    assert result.losses == [  # each field by name
        "verifiers: extras.skyrl.data_source lost in 200 task(s)",
        "verifiers: extras.skyrl.env_class lost in 200 task(s)",
        "verifiers: extras.skyrl.extra_info lost in 200 task(s)",
    ]
    rows = pq.read_table(tmp_path / "v" / "test.parquet").to_pylist()
    original = pq.read_table(src).to_pylist()
    assert [r["prompt"] for r in rows] == [r["prompt"] for r in original]
    assert [r["answer"] for r in rows] == [r["reward_spec"]["ground_truth"] for r in original]
    with pytest.raises(
        taskpack.TaskpackError, match=r"verifiers cannot carry extras\.skyrl\.data_source.*--embed"
    ):
        convert_format({"test": [str(src)]}, "skyrl", "verifiers", tmp_path / "s", strict=True)


# Every row format (a format with a free field), by the suffix of the file it writes a split to.
ROW_FORMATS = {
    name: next(glob for glob, kind in get(name).split_globs if kind == "file").removeprefix("*.")
    for name in names()
    if get(name).free is not None
}
PEER_ROWS = {
    "skyrl": PEERS / "skyrl" / "multiply" / "validation.parquet",
    "verl": Path(__file__).parent / "fixtures" / "verl" / "gsm8k_tool" / "test.parquet",
    "verifiers": PEERS / "verifiers" / "gsm8k" / "test.parquet",
    "nemo": PEERS / "nemo_gym" / "example_multi_turn_gymnasium.jsonl",
}


def rows_of(path: Path) -> list[Any]:
    return jsonl(path) if path.suffix == ".jsonl" else pq.read_table(path).to_pylist()


@pytest.mark.parametrize(
    ("here", "there"), [(a, b) for a in sorted(PEER_ROWS) for b in sorted(ROW_FORMATS) if a != b]
)
def test_every_direction_reports_what_does_not_come_back(
    tmp_path: Path, here: str, there: str
) -> None:
    """A framework's file to another format and back: where the rows do not come back equal,
    one of the two conversions said what it lost, naming the field; nothing changes silently."""
    assert set(PEER_ROWS) <= set(ROW_FORMATS)
    src = PEER_ROWS[here]
    opts = {"verifiers": DATASETS}
    out = tmp_path / "there" / f"t.{ROW_FORMATS[there]}"
    go = convert_format({"t": [str(src)]}, here, there, out.parent, write_options=opts.get(there))
    back_file = tmp_path / "back" / f"t.{ROW_FORMATS[here]}"
    back = convert_format(
        {"t": [str(out)]}, there, here, back_file.parent, write_options=opts.get(here)
    )
    said = go.losses + back.losses
    assert all(" lost in " in line and line.split(": ", 1)[1].strip() for line in said)
    if not same(rows_of(back_file), rows_of(src)):
        assert said, f"{here} -> {there} -> {here} changed rows and reported nothing"


def test_verifiers_to_skyrl_and_nemo_lose_nothing(tmp_path: Path) -> None:
    src = PEERS / "verifiers" / "gsm8k" / "test.parquet"
    sky = convert_format({"test": [str(src)]}, "verifiers", "skyrl", tmp_path / "s", strict=True)
    assert sky.losses == []
    nemo = convert_format({"test": [str(src)]}, "verifiers", "nemo", tmp_path / "n", strict=True)
    assert nemo.losses == []
    row = jsonl(tmp_path / "n" / "test.jsonl")[0]
    original = pq.read_table(src).slice(0, 1).to_pylist()[0]
    assert [m["role"] for m in row["responses_create_params"]["input"]] == ["system", "user"]
    assert row["expected_answer"] == original["answer"]


def test_nemo_to_skyrl_and_harbor_report_what_does_not_fit(tmp_path: Path) -> None:
    tools = PEERS / "nemo_gym" / "example_single_tool_call.jsonl"
    sky = convert_format({"t": [str(tools)]}, "nemo", "skyrl", tmp_path / "s")
    assert "skyrl: tools lost in 5 task(s)" in sky.losses
    # Its row's own `id` and `question` are absent here (spellings, not data): nothing of
    # extras.nemo to lose.
    assert not any("extras.nemo" in x for x in sky.losses)
    to_harbor = convert_format({"t": [str(tools)]}, "nemo", "harbor", tmp_path / "th")
    assert any(x.startswith("harbor: function tools") for x in to_harbor.losses)
    images = PEERS / "nemo_gym" / "circle_count.jsonl"
    harbor = convert_format({"t": [str(images)]}, "nemo", "harbor", tmp_path / "h")
    assert "harbor: prompt content parts other than text lost in 5 task(s)" in harbor.losses
    calls = PEERS / "nemo_gym" / "example_multi_turn_gymnasium.jsonl"
    ver = convert_format({"t": [str(calls)]}, "nemo", "verifiers", tmp_path / "v")
    assert "verifiers: extras.nemo.agent_ref lost in 5 task(s)" in ver.losses
    assert "verifiers: extras.nemo.follow_ups lost in 5 task(s)" in ver.losses


def test_harbor_to_nemo_and_back_to_harbor(tmp_path: Path) -> None:
    result = convert_format({"r": [str(HARBOR)]}, "harbor", "nemo", tmp_path / "n")
    assert "nemo: files lost in 10 task(s)" in result.losses
    assert "nemo: extras.harbor.version lost in 9 task(s)" in result.losses
    rows = jsonl(tmp_path / "n" / "r.jsonl")
    simple = (HARBOR / "simple-task" / "instruction.md").read_text(encoding="utf-8")
    row = next(r for r in rows if r["id"] == "simple-task")
    assert row["responses_create_params"]["input"] == [{"role": "user", "content": simple}]


def test_gsm8k_to_skyrl_agrees_with_skyrls_own_dataset_script(tmp_path: Path) -> None:
    """SkyRL's gsm8k_dataset.py made peers/skyrl/gsm8k from the same GSM8K file: taskpack's
    export has the same prompt (SkyRL's `####` line included), environment and ground truth."""
    convert_format({"test": [str(DATA / "gsm8k" / "test.jsonl")]}, "gsm8k", "skyrl", tmp_path / "s")
    ours = pq.read_table(tmp_path / "s" / "test.parquet").to_pylist()
    theirs = pq.read_table(PEERS / "skyrl" / "gsm8k" / "validation.parquet").to_pylist()
    keys = ("prompt", "env_class", "reward_spec")
    assert [{k: r[k] for k in keys} for r in ours] == [{k: r[k] for k in keys} for r in theirs]
