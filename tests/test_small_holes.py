"""The smaller holes of issue 40 (item 7), each one line and a test that failed before: a
corrupt Parquet page, a reward `0_1`, a task.toml that is not TOML, and an export that changed a
task without saying so. (The server's header and request-line bounds are in test_reach.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import taskpack
from taskpack.cli import main
from taskpack.exporter import export
from taskpack.rewards.trials import Bounds, Refused, check_task, parse_reward

from .conftest import harbor_folder, make_task


def test_show_of_a_corrupt_parquet_page_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "ts"
    tasks = [make_task(i, prompt="x" * 2000 + str(i)) for i in range(50)]
    taskpack.write(path, {"train": tasks}, name="corrupt")
    split = next((path / "splits").glob("*.parquet"))
    data = bytearray(split.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])
    split.write_bytes(bytes(data))
    result = CliRunner().invoke(main, ["show", str(path), "t25"])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert "does not decode" in result.output and "taskpack validate" in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("text", ["0_1", "1_0", "nan", "inf", "-inf", "0x1", "1 1", "½", ""])
def test_a_reward_text_outside_the_decimal_grammar_is_refused(text: str) -> None:
    with pytest.raises(Refused, match="not a number"):
        parse_reward({"reward.txt": text + "\n"}, 0, False)


@pytest.mark.parametrize(("text", "value"), [("1", 1.0), (" 0.5\n", 0.5), ("-1e-3", -0.001)])
def test_a_decimal_reward_text_reads(text: str, value: float) -> None:
    assert parse_reward({"reward.txt": text}, 0, False) == value


def test_check_refuses_a_task_toml_that_is_not_toml(tmp_path: Path) -> None:
    win = "#!/bin/bash\nmkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n"
    folder = harbor_folder(tmp_path, "t", win, "#!/bin/bash\ntrue\n")
    (folder / "task.toml").write_text('version = "1.0"\n[verifier\ntimeout_sec = 60\n')
    result = check_task(folder, Bounds(timeout=30), adversarial=False)
    assert result.status == "failed" and "task.toml is not valid TOML" in result.reason


def test_an_export_that_changes_a_unit_test_task_says_what(tmp_path: Path) -> None:
    """A HumanEval-shaped task goes to Harbor as a verifier and an oracle of taskpack's: read
    back, its reward is a test command and its solution a file. That is reported, per field."""
    task = {
        "id": "HumanEval/0",
        "prompt": "def add(a, b):\n",
        "solution": "    return a + b\n",
        "reward": {"kind": "unit_tests", "test_file": "test.py", "entry_point": "add"},
        "files": [
            {
                "path": "test.py",
                "role": "tests",
                "data": b"def check(f):\n    assert f(1, 2) == 3\n",
            }
        ],
    }
    taskpack.write(tmp_path / "ts", {"train": [task]}, name="he")
    for fmt in ("harbor", "openreward"):
        losses = export(taskpack.open(tmp_path / "ts"), fmt, tmp_path / fmt).losses
        text = "\n".join(losses)
        for field in ("reward unit_tests", "solution"):
            assert f"{fmt}: {field} (read back" in text, (fmt, text)
        # the prompt is carried, one line added: a change, not a loss
        assert f"{fmt}: prompt: a line saying where the work goes is added in 1 task(s)" in text
        assert f"{fmt}: prompt (" not in text
    args = ["convert", str(tmp_path / "harbor" / "train"), "--from", "harbor"]
    result = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "back"), "--name", "he"])
    assert result.exit_code == 0, result.output
    again = taskpack.open(tmp_path / "back").split("train")[0]
    assert again.reward is not None and again.reward.kind == "test_command"
