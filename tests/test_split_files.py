"""A large split is stored as several Parquet files of `PART_GROUPS` row groups each: the same
tasks, digests and exports as one file, read one file at a time, checked as one split."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import taskpack
from taskpack.errors import TaskpackError
from taskpack.exporter import export
from taskpack.importer import import_sources
from taskpack.merging import merge
from taskpack.records import stored_manifest
from taskpack.registry.cache import Cache
from taskpack.registry.client import load, publish
from taskpack.storage import writer
from taskpack.storage.integrity import verify
from taskpack.storage.taskset import read_manifest

from .conftest import make_task

TASKS = [make_task(i, answer=str(i)) for i in range(21)]


@pytest.fixture
def small_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Row groups of 4 tasks, files of 2 row groups: 21 tasks make files of 8, 8 and 5."""
    monkeypatch.setattr(writer, "ROW_GROUP_ROWS", 4)
    monkeypatch.setattr(writer, "PART_GROUPS", 2)


def _write(path: Path, tasks: list[dict[str, Any]] = TASKS) -> Path:
    taskpack.write(path, {"train": tasks, "test": tasks[:3]}, name="parts", version="1.0.0")
    return path


@pytest.fixture
def one_file(tmp_path: Path) -> Path:
    return _write(tmp_path / "one")


@pytest.fixture
def several(tmp_path: Path, small_files: None) -> Path:
    return _write(tmp_path / "several")


def test_a_large_split_is_files_of_bounded_row_groups_with_the_same_tasks(
    one_file: Path, several: Path
) -> None:
    entry = json.loads((several / "manifest.json").read_text())["splits"]["train"]
    assert "path" not in entry and "sha256" not in entry
    assert [(p["path"], p["rows"]) for p in entry["parts"]] == [
        ("splits/train/00000.parquet", 8),
        ("splits/train/00001.parquet", 8),
        ("splits/train/00002.parquet", 5),
    ]
    for p in entry["parts"]:
        assert pq.ParquetFile(several / p["path"]).num_row_groups <= 2
    assert entry["bytes"] == sum(p["bytes"] for p in entry["parts"])
    small = json.loads((several / "manifest.json").read_text())["splits"]["test"]
    assert (small["path"], "parts" in small) == ("splits/test.parquet", False)
    assert sorted(p.name for p in (several / "splits").iterdir()) == ["test.parquet", "train"]

    a, b = taskpack.open(one_file), taskpack.open(several)
    assert a.manifest.splits["train"].digest == b.manifest.splits["train"].digest
    x, y = a.split("train"), b.split("train")
    assert [y[i] for i in range(21)] == list(x) == list(y)
    assert [y[i].id for i in (-1, -13, 16, 15, 8, 7, 0)] == [
        "t20",
        "t8",
        "t16",
        "t15",
        "t8",
        "t7",
        "t0",
    ]
    with pytest.raises(IndexError):
        y[21]
    assert y.get("t17") == x.get("t17") and y.get("nope") is None
    assert y.digests() == x.digests() and y.ids() == x.ids()
    assert y.to_arrow().equals(x.to_arrow())
    assert [t.id for t in y.shuffle(seed=3)] == [t.id for t in x.shuffle(seed=3)]
    assert verify(b) == []


def test_streaming_a_split_holds_one_file_at_a_time(several: Path) -> None:
    split = taskpack.open(several).split("train")
    assert len(list(split.rows())) == 21 and split._files == {}
    assert split[9].id == "t9" and set(split._files) == {1}


def test_the_columnar_import_cuts_files_the_same_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "gsm8k.jsonl"
    lines = [{"question": f"What is {i} + 1?", "answer": f"so #### {i + 1}"} for i in range(50)]
    source.write_text("".join(json.dumps(r) + "\n" for r in lines))
    one = import_sources(tmp_path / "one", {"train": [str(source)]}, "gsm8k", name="g").manifest
    monkeypatch.setattr(writer, "ROW_GROUP_ROWS", 4)
    monkeypatch.setattr(writer, "PART_GROUPS", 3)
    for columnar in (True, False):
        target = tmp_path / f"several-{columnar}"
        m = import_sources(
            target, {"train": [str(source)]}, "gsm8k", name="g", columnar=columnar
        ).manifest
        assert m.splits["train"].digest == one.splits["train"].digest
        parts = m.splits["train"].files()
        assert [p.rows for p in parts[:-1]] == [12] * 4 and sum(p.rows for p in parts) == 50
        assert list(taskpack.open(target).split("train")) == list(
            taskpack.open(tmp_path / "one").split("train")
        )


@pytest.mark.parametrize("fmt", ["skyrl", "nemo"])
def test_row_exports_of_several_files_equal_those_of_one(
    one_file: Path, several: Path, tmp_path: Path, fmt: str
) -> None:
    for where in (one_file, several):
        export(taskpack.open(where), fmt, tmp_path / f"{fmt}-{where.name}")
    made = {
        p.relative_to(tmp_path / f"{fmt}-one"): p
        for p in (tmp_path / f"{fmt}-one").rglob("*")
        if p.is_file()
    }
    assert made
    for rel, path in made.items():
        other = tmp_path / f"{fmt}-several" / rel
        if path.suffix == ".parquet":
            assert pq.read_table(other).equals(pq.read_table(path)), rel
        else:
            assert other.read_bytes() == path.read_bytes(), rel


def test_merging_sets_of_several_files(tmp_path: Path, small_files: None) -> None:
    a = _write(tmp_path / "a", TASKS[:11])
    b = _write(tmp_path / "b", [make_task(i, answer=str(i)) for i in range(11, 21)])
    m = merge([a, b], tmp_path / "merged", name="parts", version="1.0.0")
    merged = taskpack.open(tmp_path / "merged")
    parts = m.splits["train"].files()
    # each part's files taken whole: a's two and b's two, their row groups kept as they were
    sources = [*taskpack.open(a).manifest.splits["train"].files()]
    sources += taskpack.open(b).manifest.splits["train"].files()
    assert [(p.rows, p.sha256) for p in parts] == [(p.rows, p.sha256) for p in sources]
    assert len(parts) == 4 and sum(p.rows for p in parts) == 21
    for p in parts:
        assert pq.ParquetFile(tmp_path / "merged" / p.path).num_row_groups <= 2
    assert [t.id for t in merged.split("train")] == [f"t{i}" for i in range(21)]
    assert verify(merged) == []


def _swap_first_files(root: Path) -> None:
    """Same files, same digests in the manifest, but the first two files listed the other way."""
    manifest = json.loads((root / "manifest.json").read_text())
    parts = manifest["splits"]["train"]["parts"]
    parts[0], parts[1] = parts[1], parts[0]
    (root / "manifest.json").write_text(json.dumps(manifest))


def test_files_listed_out_of_order_break_the_chain(several: Path) -> None:
    _swap_first_files(several)
    problems = verify(taskpack.open(several))
    assert problems == ["split 'train': digest " + _digest(several) + " does not match its tasks"]
    with pytest.raises(TaskpackError, match=r"not published, invalid: .*does not match its tasks"):
        publish(several, registry=str(several.parent / "registry"))


def _digest(root: Path) -> str:
    return str(json.loads((root / "manifest.json").read_text())["splits"]["train"]["digest"])


def test_a_file_holding_other_rows_than_listed_is_named(several: Path) -> None:
    second = several / "splits" / "train" / "00001.parquet"
    shutil.copyfile(several / "splits" / "train" / "00002.parquet", second)
    with pytest.raises(TaskpackError, match=r"00001\.parquet holds 5 rows, the manifest says 8"):
        taskpack.open(several).split("train")[9]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rows": 22}, "parts hold 21 rows, the split says 22"),
        ({"bytes": 1}, "parts hold .* bytes, the split says 1"),
        ({"path": "splits/train.parquet", "sha256": "0" * 64}, "`parts` or `path` and `sha256`"),
        ({"parts": []}, "needs `path` and `sha256`, or `parts`"),
    ],
)
def test_a_manifest_with_a_split_of_two_layouts_or_wrong_sums_is_refused(
    several: Path, change: dict[str, Any], message: str
) -> None:
    manifest = json.loads((several / "manifest.json").read_text())
    manifest["splits"]["train"].update(change)
    (several / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(TaskpackError, match=message):
        taskpack.open(several)


def test_a_registry_reader_fetches_and_checks_every_file_once(
    several: Path, tmp_path: Path, bucket: str
) -> None:
    publish(several, registry=bucket)
    parts = taskpack.open(several).manifest.splits["train"].files()
    cache = Cache(tmp_path / "cache")
    split = load("parts@1.0.0", split="train", registry=bucket, cache=cache)
    assert [split[i].id for i in (20, 0, 9)] == ["t20", "t0", "t9"]  # type: ignore[index]
    cached = {p.name for p in (tmp_path / "cache" / "objects").rglob("*") if p.is_file()}
    assert cached == {p.sha256 for p in parts}
    assert [t.id for t in split] == [f"t{i}" for i in range(21)]
    again = load("parts@1.0.0", split="train", registry=bucket, cache=cache)  # cached manifest
    assert again[20].id == "t20"  # type: ignore[index]


def test_a_manifest_read_without_pydantic_has_the_same_layout(several: Path) -> None:
    data = (several / "manifest.json").read_bytes()
    light, model = stored_manifest(data), read_manifest(several / "manifest.json")
    assert light.model_dump_json(indent=2) == model.model_dump_json(indent=2)
    for name in ("train", "test"):
        ours, theirs = light.splits[name], model.splits[name]
        assert [vars(p) for p in ours.files()] == [p.model_dump() for p in theirs.files()]
        assert (ours.path, ours.sha256) == (theirs.path, theirs.sha256)
    assert light.objects() == model.objects() and len(model.objects()) == 4


def test_a_hub_version_of_several_files_loads(several: Path, tmp_path: Path, hub: Any) -> None:
    url = f"hf://{hub.owner}"
    publish(several, registry=url)
    split = load("parts@1.0.0", split="train", registry=url, cache=Cache(tmp_path / "cache"))
    assert [t.id for t in split] == [f"t{i}" for i in range(21)]


_HELD = """
import sys
from pathlib import Path
import pyarrow as pa
import taskpack
from taskpack.storage.rows import check_split

ts = taskpack.open(sys.argv[1])
parquet = Path(sys.argv[1], "splits", "train.parquet")
assert check_split([parquet], "train", ts.manifest.splits["train"], 3, 3) == []
print(pa.default_memory_pool().max_memory())
"""


@pytest.mark.slow
def test_checking_a_file_holds_a_row_group_not_the_file(tmp_path: Path) -> None:
    """pyarrow pre-buffers by default: a pass over a file then held every byte of it at once
    (146 MiB of Arrow memory for a 126 MB split, see `base.parquet`)."""
    import random
    import subprocess
    import sys

    rng = random.Random(3)
    tasks = (
        {"id": f"t{i}", "prompt": "p", "files": [{"path": "a.bin", "data": rng.randbytes(60_000)}]}
        for i in range(1000)
    )
    taskpack.write(tmp_path / "big", {"train": tasks}, name="big", version="1.0.0")
    size = (tmp_path / "big" / "splits" / "train.parquet").stat().st_size
    run = subprocess.run(
        [sys.executable, "-c", _HELD, str(tmp_path / "big")], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert size > 55e6
    assert int(run.stdout) < size  # 1.47x the file pre-buffered, 0.69x read a group at a time


_IMPORTED = """
import sys
import pyarrow as pa
from taskpack.importer import import_sources

import_sources(sys.argv[2], {"train": [sys.argv[1]]}, "gsm8k", name="wide")
print(pa.default_memory_pool().max_memory())
"""


@pytest.mark.slow
def test_importing_a_parquet_source_of_wide_rows_holds_a_few_batches(tmp_path: Path) -> None:
    """A batch was 64k rows whatever their size: 1,000 rows of 120 KB were one batch, and the
    import held 6.7x the source (801 MiB for 120 MB). Batches are bounded in bytes too, and a
    column chunk is read a MiB at a time."""
    import random
    import subprocess
    import sys

    import pyarrow as pa

    rng = random.Random(5)
    questions = [rng.randbytes(60_000).hex() for _ in range(500)]
    source = tmp_path / "wide.parquet"
    pq.write_table(pa.table({"question": questions, "answer": ["#### 1"] * 500}), source)
    size = source.stat().st_size
    run = subprocess.run(
        [sys.executable, "-c", _IMPORTED, str(source), str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert size > 55e6
    assert int(run.stdout) < 4 * size
