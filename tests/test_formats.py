"""Framework formats both ways. With the opt-in `embed` option, task set -> format -> task set
keeps every digest (on the real GSM8K, HumanEval and SWE-bench Lite files): that proves the
embedding only. Native round trips on files the frameworks wrote are in test_peers.py; here,
without embedding, what a format cannot carry is reported, and `--strict` refuses it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

import taskpack
from taskpack.cli import main
from taskpack.converters import get, names
from taskpack.errors import TaskpackError
from taskpack.exporter import convert_format, export
from taskpack.importer import import_sources

from .conftest import make_task

SOURCES = {
    "gsm8k": ("gsm8k", "gsm8k/test.jsonl"),
    "humaneval": ("humaneval", "humaneval/HumanEval.jsonl.gz"),
    "swebench": ("swebench", "swebench/swebench_lite_test.jsonl"),
}
OUTPUT_FILE = {
    "verifiers": "test.parquet",
    "verl": "test.parquet",
    "skyrl": "test.parquet",
    "nemo": "test.jsonl",
    "gem": "test.parquet",
    "openreward": "test",
    "harbor": "test",
}


@pytest.fixture(scope="module")
def tasksets(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> dict[str, Path]:
    from .conftest import DATA

    root = tmp_path_factory.mktemp("sets")
    out = {}
    for name, (fmt, rel) in SOURCES.items():
        import_sources(root / name, {"test": [str(DATA / rel)]}, fmt, name=name)
        out[name] = root / name
    return out


WRITABLE = [n for n in names() if get(n).write and get(n).read]  # round trips: read back


@pytest.mark.parametrize("fmt", WRITABLE)
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_embedded_round_trip_keeps_every_task_digest(
    tmp_path: Path, tasksets: dict[str, Path], fmt: str, source: str
) -> None:
    original = taskpack.open(tasksets[source])
    form = {"form": "dataset"} if fmt == "verifiers" else {}  # a taskset has no free field
    export(original, fmt, tmp_path / "out", options={"embed": True, **form})
    back = tmp_path / "back"
    import_sources(back, {"test": [str(tmp_path / "out" / OUTPUT_FILE[fmt])]}, fmt, name=source)
    # the same tasks (the version digest also covers each set's own lineage, which differs)
    assert taskpack.open(back).split("test").digest == original.split("test").digest
    assert [t.digest for t in taskpack.open(back).split("test")] == [
        t.digest for t in original.split("test")
    ]


@pytest.mark.parametrize(
    ("folder", "options", "taken"),
    [
        ("verifiers", {}, "verifiers"),  # well known, installed here or not
        ("datasets", {}, "datasets"),
        ("pyarrow", {}, "pyarrow"),  # installed here
        ("mine", {"package": "json"}, "json"),  # the standard library's
    ],
)
def test_a_taskset_package_named_as_an_existing_package_is_refused(
    tmp_path: Path, tasksets: dict[str, Path], folder: str, options: dict[str, str], taken: str
) -> None:
    """`pip install` of a package named `verifiers` (which depends on `verifiers`) fails, and
    with --no-deps replaces the framework: the export says so in one line and writes nothing."""
    original = taskpack.open(next(iter(tasksets.values())))
    with pytest.raises(TaskpackError) as refused:
        export(original, "verifiers", tmp_path / folder, options=options)
    assert str(refused.value) == (
        f"the taskset package would be named {taken!r}, which is already a package's name: "
        "choose another with -W package=NAME"
    )
    assert not (tmp_path / folder).exists()
    export(original, "verifiers", tmp_path / folder, options={"package": f"my_{taken}"})
    assert (tmp_path / folder / f"my_{taken}" / "__init__.py").is_file()


def test_a_verifiers_taskset_package_reads_back_the_tasks_it_was_written_from(
    tmp_path: Path, tasksets: dict[str, Path]
) -> None:
    """Native fields, not an embedded copy (a taskset has no free field): prompt, answer,
    reward, solution, files of unit tests, metadata, environment and limits come back."""
    boxed = make_task(
        0,
        prompt=[
            {"role": "system", "content": "Box it."},
            {"role": "user", "content": "2 + 3?"},
        ],
        environment={"image": "python:3.12-slim", "workdir": "/app", "cpus": 2, "memory_mb": 1536},
        limits={"timeout_sec": 90},
        files=[],
    )
    taskpack.write(tmp_path / "own", {"test": [boxed]}, name="own")
    for name, path in [*tasksets.items(), ("own", tmp_path / "own")]:
        original = taskpack.open(path)
        out = tmp_path / f"pkg-{name}"
        result = export(original, "verifiers", out)
        assert (out / "pyproject.toml").is_file() and (
            out / f"pkg_{name}" / "__init__.py"
        ).is_file()
        if name == "swebench":  # what a reply cannot show is reported, never silently kept
            assert any("reward kind 'swe_tests'" in x for x in result.losses), result.losses
            continue
        assert result.losses == [], result.losses
        import_sources(tmp_path / f"back-{name}", {"test": [str(out)]}, "verifiers", name=name)
        back = list(taskpack.open(tmp_path / f"back-{name}").split("test"))
        for a, b in zip(original.split("test"), back, strict=True):
            assert b.extras == {}, b.extras  # nothing left over: every field is the model's
            assert a.model_dump(exclude={"source"}) == b.model_dump(exclude={"source"})


def test_verifiers_dataset_saved_to_disk_reads_back_too(
    tmp_path: Path, tasksets: dict[str, Path]
) -> None:
    original = taskpack.open(tasksets["gsm8k"])
    export(original, "verifiers", tmp_path / "out", options={"embed": True, "form": "dataset"})
    import_sources(
        tmp_path / "back", {"test": [str(tmp_path / "out" / "test")]}, "verifiers", name="g"
    )
    assert taskpack.open(tmp_path / "back").split("test").digest == original.split("test").digest


def test_any_pair_converts_through_the_model(tmp_path: Path, data_dir: Path) -> None:
    """humaneval -> nemo -> skyrl -> gem keeps the prompt; each step reports what it drops (the
    unit-test reward and its file do not fit row formats without embedding). NeMo Gym rows'
    own `id` is kept as a row field, not as the task id (the frameworks' data repeats them)."""
    src = str(data_dir / "humaneval" / "HumanEval.jsonl.gz")
    r1 = convert_format({"test": [src]}, "humaneval", "nemo", tmp_path / "nemo")
    assert "nemo: files lost in 164 task(s)" in r1.losses
    assert "nemo: reward lost in 164 task(s)" in r1.losses
    convert_format(
        {"test": [str(tmp_path / "nemo" / "test.jsonl")]}, "nemo", "skyrl", tmp_path / "sky"
    )
    r3 = convert_format(
        {"test": [str(tmp_path / "sky" / "test.parquet")]}, "skyrl", "gem", tmp_path / "gem"
    )
    assert "gem: extras.skyrl.data_source lost in 164 task(s)" in r3.losses
    import_sources(
        tmp_path / "back", {"test": [str(tmp_path / "gem" / "test.parquet")]}, "gem", name="h"
    )
    import_sources(tmp_path / "direct", {"test": [src]}, "humaneval", name="h")
    back, direct = (list(taskpack.open(tmp_path / p).split("test")) for p in ("back", "direct"))
    assert [t.instruction for t in back] == [t.instruction for t in direct]


def test_loss_report_and_strict(tmp_path: Path) -> None:
    tool_turn = make_task(
        0, prompt=[{"role": "user", "content": "q"}, {"role": "tool", "content": "r"}]
    )
    taskpack.write(tmp_path / "ts", {"test": [tool_turn, make_task(1)]}, name="t")
    ts = taskpack.open(tmp_path / "ts")
    result = export(ts, "nemo", tmp_path / "out")
    assert result.losses == [
        "nemo: chat tool calls, tool messages and message names lost in 1 task(s)",
        "nemo: files lost in 2 task(s)",
        "nemo: metadata lost in 2 task(s)",
        "nemo: reward lost in 2 task(s)",
    ]
    with pytest.raises(TaskpackError, match=r"nemo cannot carry .* \(task 't0'\); --strict"):
        export(ts, "nemo", tmp_path / "strict", strict=True)
    assert not (tmp_path / "strict").exists()
    runner = CliRunner()
    out = runner.invoke(
        main, ["export", str(tmp_path / "ts"), "--to", "nemo", "-o", str(tmp_path / "cli")]
    )
    assert (
        out.exit_code == 0
        and "loss: nemo: chat tool calls, tool messages and message names lost" in out.output
    )
    out = runner.invoke(
        main,
        ["export", str(tmp_path / "ts"), "--to", "nemo", "-o", str(tmp_path / "c2"), "--strict"],
    )
    assert out.exit_code == 1 and "--strict" in out.output


def test_cli_convert_to_format_and_unknown_formats(tmp_path: Path, data_dir: Path) -> None:
    runner = CliRunner()
    src = str(data_dir / "gsm8k" / "test.jsonl")
    out = runner.invoke(
        main, ["convert", src, "--from", "gsm8k", "--to", "skyrl", "-o", str(tmp_path / "s")]
    )
    assert out.exit_code == 0, out.output
    assert (tmp_path / "s" / "test.parquet").is_file()
    out = runner.invoke(
        main, ["export", str(tmp_path / "nope"), "--to", "nemo", "-o", str(tmp_path / "x")]
    )
    assert out.exit_code == 1
    out = runner.invoke(
        main, ["convert", src, "--from", "gsm8k", "--to", "bogus", "-o", str(tmp_path / "y")]
    )
    assert out.exit_code == 1 and "no format 'bogus'" in out.output


def test_loss_lines_say_only_what_is_lost(tmp_path: Path, tasksets: dict[str, Path]) -> None:
    """Embedded, a NeMo export loses nothing (it reads back whole): it says what only the
    embedded copy holds. A Harbor folder's prompt gains a line: changed, not lost."""
    gsm8k = taskpack.open(tasksets["gsm8k"])
    plain = export(gsm8k, "nemo", tmp_path / "plain")
    embedded = export(gsm8k, "nemo", tmp_path / "embedded", options={"embed": True})
    assert "nemo: reward lost in 1319 task(s)" in plain.losses
    assert not [line for line in embedded.losses if " lost in " in line], embedded.losses
    assert "nemo: reward carried by the embedded task only, in 1319" in embedded.losses
    harbor = export(gsm8k, "harbor", tmp_path / "harbor")
    assert "harbor: prompt: a line saying where the work goes is added in 1319 task(s)" in (
        harbor.losses
    )
    assert not [
        line for line in harbor.losses if line.startswith("harbor: prompt") and "lost" in line
    ]


def test_a_large_folder_export_says_so_before_it_starts(
    tmp_path: Path, tasksets: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past 1 GiB or 100,000 files (here, past 10 files), `export` says what it is about to
    write, from the first task's files times the tasks: within a file or two of what it
    wrote. Below, nothing is said."""
    import taskpack.exporter

    gsm8k = taskpack.open(tasksets["gsm8k"])
    said: list[str] = []
    export(gsm8k, "harbor", tmp_path / "quiet", say=said.append)
    assert said == []
    monkeypatch.setattr(taskpack.exporter, "LARGE_FILES", 10)
    export(gsm8k, "harbor", tmp_path / "h", say=said.append)
    written = sum(len(files) for _, _, files in os.walk(tmp_path / "h" / "test"))
    (line,) = said
    files = int(line.split(" in ")[1].split(" files")[0].replace(",", ""))
    assert line.startswith("about ") and "(1,319 task folders) will be written" in line
    assert 0 <= written - files <= 2  # the split's index.json and dataset.toml
