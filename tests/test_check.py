"""Exports that run: `taskpack check` runs each exported task's oracle and then no solution
through the exported verifier, in bubblewrap; a working task scores 1 then 0.

The figures test covers whole data sets (GSM8K test, HumanEval, the LLM Science Exam train
CSV, the Terminal-Bench folders) in both folder formats: every task that runs here scores 1
and 0; the rest are counted as not run, each with its reason.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

import taskpack
from taskpack.cli import main
from taskpack.exporter import convert_format, export
from taskpack.importer import read_source
from taskpack.rewards.trials import check_export, summary

from .conftest import REAL_SETS

SETS = {
    name: REAL_SETS[name]
    for name in ("gsm8k", "humaneval", "science-exam", "terminal-bench", "harbor-cookbook")
}
SAMPLE = 20  # the forgers and the source's own verifier run on every 20th task
# Terminal-Bench tasks need images this machine cannot pull or build; two folders in the data
# have no Dockerfile at all. None of them may count as passed.
TB_NOT_RUN = {
    "needs image ghcr.io/laude-institute/t-bench/python-3-13:20250620, which cannot be "
    "pulled or built here": 2,
    "needs image buildpack-deps:jammy, which cannot be pulled or built here": 1,
    "needs image ubuntu:24.04, which cannot be pulled or built here": 1,
    "needs image swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest, which cannot be "
    "pulled or built here": 1,
    "needs image swebench/sweb.eval.x86_64.django_1776_django-11099:latest, which cannot be "
    "pulled or built here": 1,
    "no environment/Dockerfile to build the environment from": 2,
}

# The Harbor cookbook's tasks need ubuntu:24.04 or several containers; one has steps (which
# OpenReward cannot carry: there it is a task of its own image).
_COMPOSE = "several containers (docker-compose): no container runtime here"
_UBUNTU = "needs image ubuntu:24.04, which cannot be pulled or built here"
COOKBOOK_NOT_RUN = {
    "harbor": {_COMPOSE: 5, _UBUNTU: 4, "multi-step tasks are not checked yet": 1},
    "openreward": {_COMPOSE: 5, _UBUNTU: 5},
}


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["harbor", "openreward"])
@pytest.mark.parametrize("name", sorted(SETS))
def test_every_exported_task_that_runs_scores_1_then_0(tmp_path: Path, fmt: str, name: str) -> None:
    """Every task: its reference scores 1 and no solution 0; every 20th: each forger of the
    battery scores 0 and the source task's own verifier gives every candidate the same reward."""
    reader, source, options = SETS[name]
    convert_format({"test": [str(source)]}, reader, fmt, tmp_path / "out", options=options)
    sources = list(read_source(source, reader, split="test", **options))
    results = check_export(tmp_path / "out" / "test", sample=SAMPLE, sources=sources)
    sampled = len([r for r in results[::SAMPLE] if r.status != "not run"])
    print(f"\n{fmt} {name}: " + "\n".join(summary(results)))  # the figures, with -s
    print(f"  forgers and parity on {sampled} tasks")
    ran = [r for r in results if r.status != "not run"]
    assert [r for r in ran if r.status != "ok"] == []
    assert all(r.oracle == 1.0 and r.null == 0.0 and not r.forged for r in ran)
    assert all(r.source_null == 0.0 and r.parity == [] for r in ran[::SAMPLE])
    not_run = Counter(r.reason for r in results if r.status == "not run")
    if name == "terminal-bench":
        assert not_run == TB_NOT_RUN and ran == []
    elif name == "harbor-cookbook":
        assert not_run == COOKBOOK_NOT_RUN[fmt] and ran == []
    else:
        assert not_run == {} and len(ran) == {"gsm8k": 1319, "humaneval": 164}.get(name, 200)


def test_a_verifier_that_passes_anything_or_an_oracle_that_fails_is_caught(
    tmp_path: Path,
) -> None:
    tasks = [
        {"id": "q", "prompt": "2 + 2?", "answer": "4", "reward": {"kind": "numeric_match"}},
        {"id": "wrong-oracle", "prompt": "2 + 3?", "answer": "5", "solution": "x"},
    ]
    taskpack.write(tmp_path / "ts", {"test": tasks}, name="t")
    export(taskpack.open(tmp_path / "ts"), "harbor", tmp_path / "hb")
    lenient = tmp_path / "hb" / "test" / "q" / "tests" / "test.sh"
    lenient.write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    wrong = tmp_path / "hb" / "test" / "wrong-oracle" / "solution" / "solve.sh"
    wrong.write_text("#!/bin/bash\necho 6 > /app/answer.txt\n")
    results = {r.folder.name: r for r in check_export(tmp_path / "hb")}
    assert (results["q"].status, results["q"].oracle, results["q"].null) == ("failed", 1.0, 1.0)
    assert (results["wrong-oracle"].status, results["wrong-oracle"].oracle) == ("failed", 0.0)
    out = CliRunner().invoke(main, ["check", str(tmp_path / "hb"), "--json"])
    assert out.exit_code == 1
    lines = [json.loads(x) for x in out.output.splitlines() if x.startswith("{")]
    assert {x["task"]: x["status"] for x in lines} == {
        "test/q": "failed",
        "test/wrong-oracle": "failed",
    }


def test_sandbox_has_no_network_and_cannot_touch_the_export(tmp_path: Path) -> None:
    task = {
        "id": "net",
        "prompt": "?",
        "answer": "1",
        "reward": {"kind": "exact_match"},
        "files": [
            {
                "path": "solve.sh",
                "role": "solution",
                "mode": 0o755,
                "data": b'#!/bin/bash\npython3 -c "import socket; socket.create_connection'
                b"(('127.0.0.1', 22), 2)\" && echo 1 > /app/answer.txt\n"
                b"echo gone > /tests/expected.json\n",
            }
        ],
    }
    taskpack.write(tmp_path / "ts", {"test": [task]}, name="t")
    export(taskpack.open(tmp_path / "ts"), "harbor", tmp_path / "hb")
    [result] = check_export(tmp_path / "hb")
    assert result.status == "failed" and result.oracle == 0.0  # no connection was made
    expected = tmp_path / "hb" / "test" / "net" / "tests" / "expected.json"
    assert json.loads(expected.read_text())["answer"] == "1"  # the export itself is untouched


def test_check_names_what_it_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap
    (tmp_path / "x").mkdir()
    out = CliRunner().invoke(main, ["check", str(tmp_path / "x")])
    assert out.exit_code == 1 and "bubblewrap is not installed" in out.output


def test_task_toml_is_valid_whatever_the_text_holds(tmp_path: Path) -> None:
    """Written by a TOML library: control characters such as U+007F and quotes survive."""
    import tomllib

    odd = 'del \x7f, quote " and \\ backslash, tab \t, \u2028'
    task = {"id": "odd", "prompt": "?", "answer": "1", "metadata": {"note": odd, "n": [1, 2]}}
    taskpack.write(tmp_path / "ts", {"test": [task]}, name="t")
    export(taskpack.open(tmp_path / "ts"), "harbor", tmp_path / "hb")
    config = tomllib.loads((tmp_path / "hb" / "test" / "odd" / "task.toml").read_text())
    assert config["metadata"] == {"note": odd, "n": [1, 2]}
