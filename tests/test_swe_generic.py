"""SWE-bench-shaped rows the harness has no spec for (SWE-Gym's repositories, a newer version)
export with an eval script of the harness's shape, run here for real: on a small git repository
of such an instance, the gold patch scores 1, no patch 0, and the hacks reward-seeking agents
find score 0, both through the folder verifier (tests/test.sh) and through the one script SkyRL's
mini-swe-agent runs (`instance["eval_script"]`, its exit status the verdict). A row whose tests
cannot be run that way is a loss line for that task, never a crash."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from taskpack.converters import _swe_harness
from taskpack.exporter import convert_format
from taskpack.importer import read_source

from .test_swe_report import CANDIDATES, FIXED

pytestmark = pytest.mark.slow  # git repositories and pytest runs

BASE_TESTS = "import calc\n\n\ndef test_sub():\n    assert calc.sub(5, 3) == 2\n"
NEW_TEST = "\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n"
BUGGY = CANDIDATES["null"]


def git(repo: Path, *args: str, input: str | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, input=input
    ).stdout


def diff_of(repo: Path, path: str, text: str) -> str:
    """The patch that turns `path` into `text`, the repository left as it was."""
    (repo / path).write_text(text)
    patch = git(repo, "diff")
    git(repo, "checkout", "-q", ".")
    return patch


@pytest.fixture
def moto(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A repository at its base commit and a SWE-Gym-style record of a repo the harness lacks."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    (repo / "calc.py").write_text(BUGGY)
    (repo / "conftest.py").write_text("")  # puts the repository on pytest's path
    (repo / "tests" / "test_calc.py").write_text(BASE_TESTS)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    record = {
        "repo": "getmoto/moto",
        "instance_id": "getmoto__moto-9999",
        "base_commit": git(repo, "rev-parse", "HEAD").strip(),
        "patch": diff_of(repo, "calc.py", FIXED),
        "test_patch": diff_of(repo, "tests/test_calc.py", BASE_TESTS + NEW_TEST),
        "problem_statement": "add() multiplies.",
        "version": "5.1",  # no SWE-bench spec knows it
        "FAIL_TO_PASS": json.dumps(["tests/test_calc.py::test_add"]),
        "PASS_TO_PASS": json.dumps(["tests/test_calc.py::test_sub"]),
        "created_at": "2024-05-01T12:00:00Z",
    }
    return repo, record


def task_of(tmp_path: Path, record: dict[str, Any]) -> Any:
    src = tmp_path / "rows.jsonl"
    src.write_text(json.dumps(record) + "\n")
    return next(read_source(src, "swebench", split="train"))


def candidate(repo: Path, name: str, gold_patch: str) -> None:
    """The agent's work in the repository: the gold patch, nothing, or a hack in calc.py."""
    git(repo, "checkout", "-q", ".")
    if name == "gold":
        git(repo, "apply", "-", input=gold_patch)
    elif name != "null":
        (repo / "calc.py").write_text(CANDIDATES[name])


def env(root: Path) -> dict[str, str]:
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(root),
        "TASKPACK_TESTS": str(root / "tests"),
        "TASKPACK_LOGS": str(root / "logs"),
    }


@pytest.mark.parametrize("name", list(CANDIDATES))
def test_the_built_eval_script_grades_like_the_harness_would(
    tmp_path: Path, moto: tuple[Path, dict[str, Any]], name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, record = moto
    monkeypatch.setattr(_swe_harness, "REPO_DIR", str(repo))  # /testbed, here
    task = task_of(tmp_path, record)
    made = _swe_harness.files(task)
    instance = json.loads(made["tests/instance.json"][0])
    assert instance["parser"] == "pytest" and instance["runner"] == "pytest"
    assert made["environment/Dockerfile"][0].startswith(
        b"FROM swebench/sweb.eval.x86_64.getmoto_1776_moto-9999:latest\n"
    )
    root = tmp_path / "verify"
    for rel, (data, mode) in made.items():
        if rel.startswith("tests/"):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
            (root / rel).chmod(mode)
    candidate(repo, name, record["patch"])
    subprocess.run(["bash", str(root / "tests" / "test.sh")], env=env(root), timeout=120)
    reward = (root / "logs" / "reward.txt").read_text().strip()
    assert reward == ("1" if name == "gold" else "0"), (
        root / "logs" / "test_output.txt"
    ).read_text()[-3000:]
    if name in ("gold", "null"):  # the test patch was applied, run and taken back
        printed = (root / "logs" / "test_output.txt").read_text()
        assert "tests/test_calc.py::test_add" in printed
        assert (repo / "tests" / "test_calc.py").read_text() == BASE_TESTS


@pytest.mark.parametrize("name", ["gold", "null", "prints pass markers", "os._exit(0) in the call"])
def test_skyrl_rows_carry_what_mini_swe_agent_runs(
    tmp_path: Path, moto: tuple[Path, dict[str, Any]], name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SkyRL export's instance names its image (`image_name`, which mini-swe-agent's
    `get_docker_image_name` takes first) and holds `eval_script`; run as mini-swe-agent runs it
    (`bash <<'EOF' ... EOF` after the agent's patch), its status is 0 for the gold patch only."""
    repo, record = moto
    monkeypatch.setattr(_swe_harness, "REPO_DIR", str(repo))
    (tmp_path / "rows.jsonl").write_text(json.dumps(record) + "\n")
    result = convert_format(
        {"train": [str(tmp_path / "rows.jsonl")]}, "swebench", "skyrl", tmp_path / "s"
    )
    assert result.losses == []
    row = pq.read_table(tmp_path / "s" / "train.parquet").to_pylist()[0]
    instance = row["instance"]
    assert instance["image_name"] == "swebench/sweb.eval.x86_64.getmoto_1776_moto-9999:latest"
    assert "swe-bench" in row["data_source"]
    assert {k: v for k, v in instance.items() if k in record} == record
    candidate(repo, name, record["patch"])
    script = f"bash <<'EOF'\n{instance['eval_script']}\nEOF\n"
    home = {"PATH": env(tmp_path)["PATH"], "HOME": str(tmp_path)}
    status = subprocess.run(["bash", "-c", script], env=home, timeout=120, capture_output=True)
    assert (status.returncode == 0) == (name == "gold"), status.stdout[-3000:]


def test_a_row_whose_tests_cannot_be_run_is_a_loss_line_not_a_crash(
    tmp_path: Path, moto: tuple[Path, dict[str, Any]]
) -> None:
    _, record = moto
    odd = {**record, "instance_id": "getmoto__moto-1", "FAIL_TO_PASS": json.dumps(["test_add"])}
    (tmp_path / "rows.jsonl").write_text(json.dumps(record) + "\n" + json.dumps(odd) + "\n")
    for fmt in ("harbor", "openreward", "skyrl"):
        result = convert_format(
            {"t": [str(tmp_path / "rows.jsonl")]}, "swebench", fmt, tmp_path / fmt
        )
        lines = [x for x in result.losses if "not pytest node ids" in x]
        assert lines == [
            f"{fmt}: the SWE-bench eval script (the harness has no spec for getmoto/moto 5.1, "
            "and its tests are not pytest node ids to run) lost in 1 task(s)"
        ], result.losses
    folders = sorted(p.name for p in (tmp_path / "harbor" / "t").iterdir() if p.is_dir())
    assert folders == ["getmoto__moto-1", "getmoto__moto-9999"]
    assert not (tmp_path / "harbor" / "t" / "getmoto__moto-1" / "tests" / "eval.sh").exists()
