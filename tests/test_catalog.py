"""Catalog recipes ship in the package and build task sets from local upstream copies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import taskpack
from taskpack.cli import main
from taskpack.converters import get, names
from taskpack.converters.formats import mbpp
from taskpack.errors import TaskpackError
from taskpack.importer import import_sources, read_source
from taskpack.recipes import build, recipes


def test_every_recipe_is_valid_and_names_a_known_importer() -> None:
    found = recipes()
    assert set(found) == {
        "gsm8k",
        "humaneval",
        "swebench-lite",
        "swebench-verified",
        "mbpp",
        "llm-science-exam",
    }
    for r in found.values():
        assert r.format in names() and get(r.format).read and r.splits and r.upstream.revision


def test_catalog_list_cli() -> None:
    result = CliRunner().invoke(main, ["catalog", "list"])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split() == ["NAME", "FORMAT", "SPLITS", "LICENSE", "UPSTREAM"]
    assert [line.split()[0] for line in lines[1:]] == sorted(recipes())
    assert all("  https://" in line for line in lines[1:])  # columns never run together
    assert len({line.index("http") for line in lines[1:]}) == 1  # and are aligned


def test_build_from_local_copy_matches_plain_convert(tmp_path: Path, data_dir: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "catalog",
            "build",
            "llm-science-exam",
            "--source",
            str(data_dir / "kaggle_llm_science_exam"),
            "-o",
            str(tmp_path / "k"),
        ],
    )
    assert result.exit_code == 0, result.output
    ts = taskpack.open(tmp_path / "k")
    assert ts.manifest.source["recipe"] == "llm-science-exam"
    assert {n: s.rows for n, s in ts.manifest.splits.items()} == {"train": 200, "test": 200}
    direct = [
        t.digest
        for t in read_source(
            data_dir / "kaggle_llm_science_exam" / "train.csv", "kaggle", preset="multiple-choice"
        )
    ]
    assert [t.digest for t in ts.split("train")] == direct


def test_build_single_file_source_and_pinned_hash_check(tmp_path: Path, data_dir: Path) -> None:
    sample = data_dir / "swebench" / "swebench_verified_sample50.jsonl"
    m = build("swebench-verified", sample, tmp_path / "v").manifest
    assert m.splits["test"].rows == 50
    altered = tmp_path / "gsm8k"
    altered.mkdir()
    for split in ("train", "test"):
        (altered / f"{split}.jsonl").write_bytes((data_dir / "gsm8k" / "test.jsonl").read_bytes())
    with pytest.raises(TaskpackError, match="sha256 differs from the recipe's pinned"):
        build("gsm8k", altered, tmp_path / "g")
    assert not (tmp_path / "g").exists()
    assert (
        build("gsm8k", altered, tmp_path / "g", check=False).manifest.splits["train"].rows == 1319
    )


MBPP_ROWS = [
    {
        "task_id": 11,
        "text": "Write a python function to remove first and last occurrence of a "
        "given character from the string.",
        "code": "def remove_Occ(s,ch): \r\n    return s",
        "test_list": [
            'assert remove_Occ("hello","l") == "heo"',
            'assert remove_Occ("abcda","a") == "bcd"',
        ],
        "test_setup_code": "",
        "challenge_test_list": [],
    },
    {
        "task_id": 12,
        "text": "Sort a matrix.",
        "code": "def sort_matrix(M):\n    return sorted(M)",
        "test_list": ["assert sort_matrix([[2],[1]])==[[1],[2]]"],
        "test_setup_code": "import math",
        "challenge_test_list": ["assert sort_matrix([])==[]"],
    },
]


def test_mbpp_rows_map_and_rebuild(tmp_path: Path) -> None:
    src = tmp_path / "mbpp.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in MBPP_ROWS))
    m = import_sources(tmp_path / "out", {"train": [str(src)]}, "mbpp", name="mbpp").manifest
    tasks = list(taskpack.open(tmp_path / "out").split("train"))
    assert m.splits["train"].rows == 2
    assert [mbpp.source_row(t) for t in tasks] == MBPP_ROWS
    first = tasks[0]
    assert first.id == "mbpp-11" and first.solution == MBPP_ROWS[0]["code"]
    assert first.reward is not None and first.reward.kind == "unit_tests"
    assert first.reward.entry_point == "remove_Occ"
    assert 'assert remove_Occ("hello","l") == "heo"' in first.prompt[0].content
    assert tasks[1].file("test.py").read_bytes().startswith(b"import math\nassert sort_matrix")


def test_mbpp_builds_the_four_splits_mbpp_defines(tmp_path: Path) -> None:
    rows = [
        {
            "task_id": i,
            "text": f"Write f{i}.",
            "code": f"def f{i}():\n    return {i}\n",
            "test_list": [f"assert f{i}() == {i}"],
            "test_setup_code": "",
            "challenge_test_list": [],
        }
        for i in range(1, 975)
    ]
    (tmp_path / "mbpp.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    m = build("mbpp", tmp_path / "mbpp.jsonl", tmp_path / "ts").manifest
    counts = {n: s.rows for n, s in m.splits.items()}
    assert counts == {"prompt": 10, "test": 500, "validation": 90, "train": 374}
    ts = taskpack.open(tmp_path / "ts")
    assert ts.split("test")[0].id == "mbpp-11" and ts.split("train")[373].id == "mbpp-974"
