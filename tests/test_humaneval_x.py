"""HumanEval-X in every language it has (tests/fixtures/humaneval_x, hand-made in its shape):
each row reads as a task of its language, and its Harbor export runs in the sandbox where
this machine has the language's toolchain (Python, C++, Java, JavaScript; not Go nor Rust:
`check` says so): the canonical solution scores 1, no solution 0, and code that exits 0 before
the tests end scores 0 (HumanEval-X's own evaluation, reading only the exit status, would give
it 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskpack.exporter import convert_format
from taskpack.importer import read_source
from taskpack.rewards.trials import Bounds, attempt, check_task, folder_side

FIXTURES = Path(__file__).parent / "fixtures" / "humaneval_x"
LANGS = ["cpp", "go", "java", "js", "python", "rust"]
RUNS_HERE = {"cpp", "java", "js", "python"}
# A solution that ends the test program with status 0 before its tests finish.
EXITS_EARLY = {
    "cpp": (
        "solution.cpp",
        "#include <cstdlib>\nint add(int x, int y) { std::exit(0); return 0; }\n",
    ),
    "java": (
        "solution.java",
        "class Solution {\n    public int add(int x, int y) { System.exit(0); return 0; }\n}\n",
    ),
    "js": ("solution.js", "const add = (x, y) => { process.exit(0) }\n"),
}


@pytest.mark.parametrize("lang", LANGS)
def test_each_language_reads_as_a_task_of_its_own(lang: str) -> None:
    tasks = list(read_source(FIXTURES / f"humaneval_{lang}.jsonl", "humaneval-x", split="test"))
    prefix = {"cpp": "CPP", "js": "JavaScript"}.get(lang, lang.capitalize())
    assert tasks and all(t.id.startswith(prefix + "/") for t in tasks)
    for task in tasks:
        reward = task.reward
        assert reward is not None
        if lang == "python":
            assert reward.kind == "unit_tests" and reward.entry_point in (
                "has_close_elements",
                "add",
            )
            continue
        assert reward.kind == "test_command"
        ext = {"js": "js", "rust": "rs"}.get(lang, lang)
        assert {f.path for f in task.files_of("tests")} >= {f"test.{ext}", "run_tests.sh"}
        assert task.prompt[0].text.endswith(f"to /app/solution.{ext}.")
        assert task.environment is not None and task.environment.image
        assert "canonical_solution" not in task.metadata and "declaration" in task.metadata


def test_a_row_of_another_language_is_one_error_line(tmp_path: Path) -> None:
    src = tmp_path / "odd.jsonl"
    src.write_text(
        '{"task_id": "Kotlin/0", "prompt": "x", "canonical_solution": "y", "test": "z"}\n'
    )
    with pytest.raises(Exception, match=r"'Kotlin/0' names no HumanEval-X language"):
        list(read_source(src, "humaneval-x"))


@pytest.mark.parametrize("lang", LANGS)
def test_exports_run_where_the_toolchain_is(tmp_path: Path, lang: str) -> None:
    src = FIXTURES / f"humaneval_{lang}.jsonl"
    result = convert_format({"test": [str(src)]}, "humaneval-x", "harbor", tmp_path / "h")
    # only what Harbor keeps as taskpack's verifier and oracle, said so, and the prompt's line
    assert all(
        "(read back: " in loss or "a line saying where the work goes is added" in loss
        for loss in result.losses
    ), result.losses
    folders = sorted(p for p in (tmp_path / "h" / "test").iterdir() if p.is_dir())
    for folder in folders:
        outcome = check_task(folder, Bounds(timeout=120), adversarial=lang == "python")
        if lang not in RUNS_HERE:
            assert outcome.status == "not run", outcome
            assert "is not on this machine" in (outcome.reason or "")
            continue
        assert (outcome.status, outcome.oracle, outcome.null) == ("ok", 1.0, 0.0), outcome


@pytest.mark.parametrize("lang", sorted(EXITS_EARLY))
def test_code_that_exits_0_early_scores_0(tmp_path: Path, lang: str) -> None:
    src = FIXTURES / f"humaneval_{lang}.jsonl"
    convert_format({"test": [str(src)]}, "humaneval-x", "harbor", tmp_path / "h")
    folder = next(p for p in (tmp_path / "h" / "test").iterdir() if p.name.endswith("53"))
    name, code = EXITS_EARLY[lang]
    solve = f"#!/bin/bash\ncat > /app/{name} <<'EOF'\n{code}EOF\n".encode()
    side = folder_side(folder)
    assert attempt(side, {"solve.sh": (solve, 0o755)}, Bounds(timeout=120)) == 0.0
    honest = side.solution  # the same verifier gives the canonical solution 1
    assert attempt(side, honest, Bounds(timeout=120)) == 1.0
