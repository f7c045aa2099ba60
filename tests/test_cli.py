"""The CLI: each command's output, and exit codes 0 (ok), 1 (invalid input), 2 (usage)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner

import taskpack
from taskpack.cli import main
from taskpack.errors import TaskpackError, install_line


@pytest.fixture
def example(tmp_path: Path) -> Path:
    result = CliRunner().invoke(main, ["example", str(tmp_path / "ex")])
    assert result.exit_code == 0, result.output
    return tmp_path / "ex"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_validate_ok(example: Path) -> None:
    code, out = run("validate", str(example))
    assert code == 0
    assert "(example@1.0.0) is valid: 27 tasks in 2 split(s), digest sha256:" in out


def test_validate_tampered_exits_1_and_names_the_row(example: Path) -> None:
    path = example / "splits" / "test.parquet"
    table = pq.read_table(path)
    ids = table.column("id").to_pylist()
    ids[1] = ids[0]
    pq.write_table(table.set_column(0, "id", pa.array(ids)), path)
    code, out = run("validate", str(example))
    assert code == 1
    assert "split 'test' row 1 (id 'test-0000')" in out
    assert "duplicate of row 0" in out


def test_info_lists_splits_counts_digests_bytes(example: Path) -> None:
    code, out = run("info", str(example))
    assert code == 0
    manifest = json.loads((example / "manifest.json").read_text())
    assert manifest["digest"] in out
    for name, split in manifest["splits"].items():
        assert f"{name:<16}{split['rows']:>10}{split['bytes']:>14}  {split['digest']}" in out
    code, out = run("info", str(example), "--json")
    assert json.loads(out)["digest"] == manifest["digest"]


def test_ls_prints_ids_of_the_split(example: Path) -> None:
    code, out = run("ls", str(example), "--split", "test")
    assert code == 0
    assert out.split() == [f"test-{i:04d}" for i in range(5)] + ["choice-0000"]


def test_show_yaml_and_json(example: Path) -> None:
    code, out = run("show", str(example), "code-0000")
    assert code == 0
    shown = yaml.safe_load(out)
    assert shown["reward"]["entry_point"] == "square"
    assert shown["solution"] == "def square(n):\n    return n * n\n"
    run_sh = next(f for f in shown["files"] if f["path"] == "run.sh")
    assert run_sh["mode"] == "0755" and run_sh["text"].startswith("#!/bin/sh")
    code, out = run("show", str(example), "--split", "test", "choice-0000", "--format", "json")
    shown = json.loads(out)
    assert code == 0 and shown["answer"] == "B" and "solution" not in shown
    assert "name" not in shown["prompt"][0]  # JSON for scripts: what is null is left out
    code, out = run("show", str(example), "-s", "test", "choice-0000", "--format=json", "--nulls")
    every = json.loads(out)
    assert every["solution"] is None and every["prompt"][0]["name"] is None
    assert every["files"] == [] and every["answer"] == "B"


def test_errors_exit_1_for_bad_input_and_2_for_usage(example: Path, tmp_path: Path) -> None:
    code, out = run("show", str(example), "--split", "train", "missing-id")
    assert code == 1 and "split train: no task 'missing-id'" in out
    code, out = run("ls", str(example), "--split", "nope")
    assert code == 1 and "no split 'nope'" in out
    code, out = run("validate", str(tmp_path))
    assert code == 1 and "not a task set" in out
    code, out = run("show", str(example))
    assert code == 2
    code, out = run("info", str(tmp_path / "absent"))
    assert code == 1 and "no such task-set folder" in out
    code, out = run("example", str(example))
    assert code == 1 and "already exists" in out


@pytest.mark.parametrize("command", ["validate", "info", "ls", "show", "example"])
def test_every_command_has_help(command: str) -> None:
    code, out = run(command, "--help")
    assert code == 0 and "Usage:" in out


def test_installed_entry_point_runs(example: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "taskpack", "ls", str(example), "-s", "train"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "code-0000" in proc.stdout.split()


def test_typos_get_a_did_you_mean_and_show_finds_an_id_in_any_split(example: Path) -> None:
    code, out = run("convert", "x.jsonl", "--from", "gsm8", "-o", "out")
    assert code == 1 and "no format 'gsm8'; did you mean 'gsm8k'?" in out
    code, out = run("catalog", "build", "humaneva", "--source", str(example))
    assert code == 1 and "did you mean 'humaneval'?" in out
    code, out = run("ls", str(example), "--split", "tset")
    assert (
        code == 1
        and "did you mean 'test'?" in out
        and "(known: train, test)" in out
        and "example@1.0.0: no split 'tset'" in out
    )
    code, out = run("show", str(example), "test-0001")  # no --split: found in test
    assert code == 0 and "id: test-0001" in out
    code, out = run("show", str(example), "test-001")
    assert code == 1 and "did you mean 'test-0001'" in out
    code, out = run("show", str(example), "test-1")  # the number without its zero-padding
    assert code == 1 and "did you mean 'test-0001'?" in out, out


def test_an_unknown_version_lists_the_versions(tmp_path: Path) -> None:

    for version in ("1.0.0", "1.2.0"):
        taskpack.write(
            tmp_path / version, {"test": [{"id": "a", "prompt": "q"}]}, name="v", version=version
        )
        assert run("publish", str(tmp_path / version), "--registry", str(tmp_path / "reg"))[0] == 0
    code, out = run("info", "v@2.0.0", "--registry", str(tmp_path / "reg"))
    assert code == 1 and "no version of 'v' matches '2.0.0' (versions: 1.0.0, 1.2.0)" in out, out


def test_optional_adapters_name_their_extra(example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`to_pandas` and `to_torch` without their package say which extra installs it."""
    import importlib.util

    real = importlib.util.find_spec
    hidden = {"pandas", "torch"}
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in hidden else real(name, *a)
    )
    split = taskpack.open(example).split("test")
    for call, extra in ((split.to_pandas, "pandas"), (split.to_torch, "torch")):
        with pytest.raises(TaskpackError, match=re.escape(install_line(extra))):
            call()


def test_exports_draw_no_library_bars_off_a_terminal(example: Path, tmp_path: Path) -> None:
    """`datasets` draws its own bars when a Verifiers export saves; off a terminal (or with
    -q) stderr holds only taskpack's lines."""
    import subprocess
    import sys

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "taskpack",
            "export",
            str(example),
            "--to",
            "verifiers",
            "-W",
            "form=dataset",
            "-o",
            str(tmp_path / "v"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Saving the dataset" not in proc.stderr and "it/s" not in proc.stderr, proc.stderr


def test_every_listing_command_prints_json_for_scripts(example: Path, tmp_path: Path) -> None:
    import json as json_

    reg = str(tmp_path / "reg")
    code, out = run("publish", str(example), "--registry", reg, "--json", "-q")
    published = json_.loads(out)
    assert code == 0 and published["name"] == "example" and published["created"] is True
    listings = {
        "ls": (["ls", "--registry", reg], {"example": "1.0.0"}),
        "versions": (["ls", "example", "--registry", reg], {"1.0.0": ["latest"]}),
        "ids": (["ls", str(example), "-s", "test"], None),
        "diff": (["diff", str(example), "example@1.0.0", "--registry", reg], None),
        "pull": (["pull", "example@1.0.0", "--registry", reg, "-q"], None),
        "formats": (["formats"], None),
        "catalog": (["catalog", "list"], None),
    }
    for name, (args, expected) in listings.items():
        code, out = run(*args, "--json")
        assert code == 0, (name, out)
        value = json_.loads(out)
        if expected is not None:
            assert value == expected, name
    assert json_.loads(run("diff", str(example), "example@1", "--registry", reg, "--json")[1])[
        "test"
    ] == {"added": [], "removed": [], "changed": [], "fields": {}}
    assert "gsm8k" in [f["name"] for f in json_.loads(run("formats", "--json")[1])]
    code, out = run("ls", "--registry", reg)
    assert out.splitlines() == ["NAME     LATEST", "example  1.0.0"]


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("taskpack convert x --from gs", ["gsm8k"]),
        ("taskpack export x --to h", ["harbor"]),  # humaneval has no writer
        ("taskpack catalog build swe", ["swebench-lite", "swebench-verified"]),
    ],
)
def test_shell_completion_offers_formats_and_recipes(words: str, expected: list[str]) -> None:
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "_TASKPACK_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - 1),
    }
    out = subprocess.run(
        [sys.executable, "-c", "from taskpack.cli import main; main(prog_name='taskpack')"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert [line.split(",", 1)[1] for line in out.stdout.split()] == expected


@pytest.mark.parametrize(
    "command",
    [
        "validate {ex}",
        "export {ex} --to harbor -o {tmp}/out",
        "export {ex} --to nemo -o {tmp}/out.jsonl",
        "convert {data}/gsm8k/test.jsonl --from gsm8k -o {tmp}/gsm",
        "publish {ex} --registry {tmp}/reg",
        "catalog build gsm8k --source {data}/gsm8k -o {tmp}/cat --no-check",
    ],
)
def test_long_commands_draw_progress_on_a_terminal_and_none_with_q(
    command: str, example: Path, tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("taskpack.base.progress.on_terminal", lambda: True)
    args = command.format(ex=example, tmp=tmp_path, data=data_dir).split()
    drawn = CliRunner().invoke(main, args)
    assert drawn.exit_code == 0, drawn.output
    assert re.search(r"(tasks|B|it)/s\]", drawn.stderr), drawn.stderr
    for out in tmp_path.glob("out*"):
        subprocess.run(["rm", "-rf", str(out)], check=True)
    for folder in ("gsm", "cat", "reg"):
        subprocess.run(["rm", "-rf", str(tmp_path / folder)], check=True)
    quiet = CliRunner().invoke(main, [*args, "-q"])
    assert quiet.exit_code == 0, quiet.output
    assert not re.search(r"/s\]|\r", quiet.stderr), quiet.stderr  # losses are still said


def test_a_read_never_creates_a_registry(tmp_path: Path) -> None:
    """A mistyped `--registry` folder is one error line for every read, and stays absent."""
    missing = tmp_path / "mistyped" / "registry"
    for args in (["ls"], ["ls", "x"], ["info", "x@1"], ["pull", "x@1.0.0"]):
        code, out = run(*args, "--registry", str(missing))
        assert code == 1 and "no registry folder there (publishing creates one)" in out, out
    assert not (tmp_path / "mistyped").exists()


def test_progress_bars_know_their_total(tmp_path: Path, data_dir: Path) -> None:
    """A bar gets the rows a local source holds up front, so it shows a rate and an ETA."""
    from taskpack.converters._sources.opening import rows_hint

    assert rows_hint(str(data_dir / "gsm8k" / "train.jsonl")) == 7473
    pq.write_table(pa.table({"a": list(range(42))}), tmp_path / "t.parquet")
    assert rows_hint(str(tmp_path / "t.parquet")) == 42
    (tmp_path / "t.csv").write_text("a,b\n1,2\n3,4")
    assert rows_hint(str(tmp_path / "t.csv")) == 2
    assert rows_hint("https://example.com/x.jsonl") is None


def test_an_option_typo_names_the_nearest_option(tmp_path: Path, data_dir: Path) -> None:
    src = str(data_dir / "kaggle_llm_science_exam" / "train.csv")
    args = ["convert", src, "--from", "kaggle", "-O", "id_colum=id", "-o", str(tmp_path / "k")]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 1
    assert "kaggle: no option 'id_colum'; did you mean 'id_column'?" in out.output
    assert "Extra inputs" not in out.output


def test_no_options_given_are_every_format_s_defaults_as_validation_makes_them() -> None:
    """`options` skips pydantic's schema where validating nothing could only give the defaults:
    for every format's read and write options the result is what validation gives, and a
    model with a validator (Kaggle's, Verifiers') is still validated."""
    from pydantic import ValidationError

    from taskpack.converters import get, names, options
    from taskpack.converters._format import _defaults_only

    skipped = []
    for fmt in map(get, names()):
        for write, model in ((False, fmt.read_options), (True, fmt.write_options)):
            skipped += [model.__name__] if _defaults_only(model) else []
            try:
                expected = model.model_validate({})
            except ValidationError:  # Kaggle's: a prompt column or template is required
                with pytest.raises(TaskpackError, match=fmt.name):
                    options(fmt, {}, write=write)
                continue
            mine = options(fmt, {}, write=write)
            assert type(mine) is model and mine == expected, fmt.name
    assert "NemoWriteOptions" in skipped
    assert not {"KaggleOptions", "VerifiersWriteOptions"} & set(skipped)


def test_diff_shows_the_changed_region_of_a_long_text() -> None:
    """Not the same 60-character prefix twice (issue 39): both sides around the first
    difference."""
    from taskpack.cli.inspect import _around_change

    old, new = _around_change("x" * 200 + " the end", "x" * 200 + " THE end")
    assert old != new and "the end" in old and "THE end" in new
    assert len(old) <= 60 and len(new) <= 60
    assert _around_change("short", "shorter") == ("'short'", "'shorter'")


def test_messages_say_what_is_true(tmp_path: Path, data_dir: Path, example: Path) -> None:
    """Issue 39's list: each mistake gets one line naming the real problem and the way out."""
    import shutil

    runner = CliRunner()

    def said(*args: str) -> str:
        result = runner.invoke(main, list(args))
        assert result.exit_code != 0, result.output
        assert "Traceback" not in result.output
        return result.output

    stray = tmp_path / "rows.json"
    stray.write_text("{}")
    assert "is a file, not a task-set folder" in said("info", str(stray))
    assert f"taskpack convert {stray} --from FORMAT" in said("info", str(stray))
    near = tmp_path / "gsm8k.taskset"
    shutil.copytree(example, near)
    assert f"did you mean the folder {near}?" in said("info", str(tmp_path / "gsm8k.tasket"))
    assert "a bucket name is 3 to 63 characters, not 1" in said("ls", "--registry", "s3://b/x")
    assert "nothing after '@'" in said("show", "example@", "x")
    moved = said("show", str(example), "--split", "train", "choice-0000")
    assert "it is in split test (--split test)" in moved
    assert "99999 is not in the range" in said("serve", str(example), "--port", "99999")
    corrupt = tmp_path / "c.parquet"
    corrupt.write_bytes(b"PAR1garbage")
    out = said("convert", str(corrupt), "--from", "verl", "-o", str(tmp_path / "c"))
    assert "c.parquet: not a readable Parquet file" in out and len(out.strip().splitlines()) == 1
    damaged = tmp_path / "damaged"
    shutil.copytree(example, damaged)
    next((damaged / "splits").glob("*.parquet")).unlink()
    assert "`taskpack validate` is the health check" in said("info", str(damaged))
    human = runner.invoke(
        main,
        [
            "convert",
            str(data_dir / "humaneval" / "HumanEval.jsonl.gz"),
            "--from",
            "humaneval",
            "-o",
            str(tmp_path / "he"),
            "-q",
        ],
    )
    assert "(test: 164)" in human.output  # the split the catalog names


def test_export_progress_knows_its_total(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int | None] = []
    import taskpack.base.progress

    real = taskpack.base.progress.counted

    def spy(items: Any, label: str, total: int | None = None, quiet: bool = False) -> Any:
        seen.append(total)
        return real(items, label, total=total, quiet=quiet)

    monkeypatch.setattr(taskpack.base.progress, "counted", spy)
    result = CliRunner().invoke(
        main, ["export", str(example), "--to", "nemo", "-o", str(tmp_path / "n")]
    )
    assert result.exit_code == 0, result.output
    sizes = {n: s.rows for n, s in taskpack.open(example).manifest.splits.items()}
    assert sorted(t for t in seen if t is not None) == sorted(sizes.values())


def test_check_estimates_a_long_run_and_takes_limit_and_ids(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before all forgers on 164 tasks it says how long, and how to sample; --limit and --ids
    pick the tasks (the checks themselves are stubbed: this is about what is asked)."""
    import taskpack.rewards.trials
    from taskpack.rewards.trials import FORGERS, planned, runs

    out = tmp_path / "h"
    convert = [
        "convert",
        str(data_dir / "humaneval" / "HumanEval.jsonl.gz"),
        "--from",
        "humaneval",
        "--to",
        "harbor",
        "-o",
        str(out),
        "-q",
    ]
    assert CliRunner().invoke(main, convert).exit_code == 0
    asked: dict[str, Any] = {}

    def stub(root: Any, *args: Any, **kwargs: Any) -> list[Any]:
        asked.update(kwargs)
        return []

    monkeypatch.setattr(taskpack.rewards.trials, "check_export", stub)
    result = CliRunner().invoke(main, ["check", str(out), "-j", "2"])
    assert f"164 tasks: about {164 * (2 + len(FORGERS))} sandbox runs" in result.stderr
    assert "--sample K" in result.stderr
    quick = CliRunner().invoke(main, ["check", str(out), "--limit", "3", "--ids", "HumanEval/1"])
    assert "sandbox runs" not in quick.stderr and asked["limit"] == 3
    assert asked["ids"] == ["HumanEval/1"]
    assert [i for i, _ in planned(out, 2)] == ["HumanEval/0", "HumanEval/1"]
    assert [i for i, _ in planned(out, ids=["HumanEval/9"])] == ["HumanEval/9"]
    assert runs(10, True, 5, True) == (20 + 2 * len(FORGERS)) * 2


def test_show_prints_swe_bench_prompts_as_they_read(tmp_path: Path) -> None:
    """SWE-bench problem statements carry \\r\\n and trailing blanks, which a YAML block cannot
    hold: shown as plain lines, never as one quoted line of escapes; --format json is exact."""
    from taskpack.importer import import_sources

    from .conftest import DATA

    source = str(DATA / "swebench" / "swebench_lite_test.jsonl")
    import_sources(tmp_path / "s", {"test": [source]}, "swebench", name="s")
    split = taskpack.open(tmp_path / "s").split("test")
    task = next(t for t in split if "\r\n" in t.instruction)
    shown = CliRunner().invoke(main, ["show", str(tmp_path / "s"), task.id]).output
    assert "\\r\\n" not in shown and "  content: |" in shown, shown[:400]
    exact = CliRunner().invoke(main, ["show", str(tmp_path / "s"), task.id, "--format", "json"])
    assert "\\r\\n" in exact.output


def test_formats_says_what_each_option_does(tmp_path: Path) -> None:
    """`taskpack formats` gives each option a sentence; `formats NAME` the whole of it; every
    option of every format has one."""
    from taskpack.converters import get, names

    for name in names():
        fmt = get(name)
        for model in (
            fmt.read_options if fmt.read else None,
            fmt.write_options if fmt.write else None,
        ):
            for option, info in model.model_fields.items() if model else ():
                assert info.description, (name, option)
    listing = CliRunner().invoke(main, ["formats"])
    assert listing.exit_code == 0
    assert (
        "-O prompt_column (default: None): The column used verbatim as the prompt" in listing.output
    )
    one = CliRunner().invoke(main, ["formats", "verl"])
    assert one.output.startswith("verl ") and "'' adds nothing." in one.output
    assert "kaggle" not in one.output
    typo = CliRunner().invoke(main, ["formats", "vrel"])
    assert typo.exit_code == 1 and "did you mean 'verl'" in typo.output


def test_splits_and_columns_are_found_as_a_user_expects(tmp_path: Path) -> None:
    """A table's `prompt` column is its prompt; the Hub's shard names and a benchmark's own
    split name the split; a missing field is listed against the file's own fields only."""
    table = tmp_path / "test-00000-of-00001.csv"
    table.write_text("id,prompt,answer\n1,What is 2+2?,4\n")
    args = ["convert", str(table), "--from", "kaggle", "-O", "answer_column=answer"]
    out = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "k")])
    assert out.exit_code == 0 and "(test: 1)" in out.output, out.output
    task = taskpack.open(tmp_path / "k").split("test")[0]
    assert task.instruction == "What is 2+2?" and task.answer == "4"
    from .conftest import DATA

    swe = DATA / "swebench" / "swebench_verified_sample50.jsonl"
    out = CliRunner().invoke(
        main, ["convert", str(swe), "--from", "swebench", "-o", str(tmp_path / "s")]
    )
    assert out.exit_code == 0 and "(test: 50)" in out.output, out.output
    gsm = tmp_path / "gsm.jsonl"
    gsm.write_text('{"question": "q", "answer": "a\\n#### 1"}\n')
    out = CliRunner().invoke(
        main, ["convert", str(gsm), "--from", "swebench", "-o", str(tmp_path / "x")]
    )
    assert out.exit_code == 1
    assert "field 'instance_id': missing (fields: question, answer)" in out.output, out.output
