"""The README's commands and examples are the ones that work."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_ci_runs_exactly_the_readme_test_command() -> None:
    first_block = re.search(r"```bash\n(.*?)```", README, re.S)
    assert first_block is not None
    test_command = first_block.group(1).strip().splitlines()[1]
    assert "pytest" in test_command
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command in ci_lines


def test_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
    assert (tmp_path / "sandbox" / "tests" / "test.py").read_bytes() == b"assert inc(1) == 2\n"
    agentic = tmp_path / "agentic-harbor" / "test" / "fix-add"
    assert (agentic / "environment" / "workspace" / "calc.py").is_file()
    assert (agentic / "tests" / "test.sh").is_file() and (
        agentic / "solution" / "solve.sh"
    ).is_file()
    leaked = [p for p in (agentic / "environment").rglob("*") if p.name in ("test.sh", "solve.sh")]
    assert leaked == []
    assert os.path.isdir(tmp_path / "arith.taskset" / "splits")
