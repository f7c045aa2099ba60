"""Verifiers 0.4's own built-in tasksets, unmodified, load taskpack's exports: its NeMo Gym
taskset reads a NeMo export's JSONL, and its Harbor taskset has the Harbor CLI download a
dataset of the registry.json `export --to harbor` wrote, then parses each task folder. GSM8K's
test split (1319), HumanEval (164) and the Harbor cookbook: the same count, the same prompts,
unique keys; GSM8K's and HumanEval's tasks declare their image (no `ignore_dockerfile`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import taskpack
from taskpack.exporter import export
from taskpack.importer import import_sources

from .conftest import DATA
from .test_conformance import run_check

pytestmark = [pytest.mark.slow, pytest.mark.conformance]


@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, taskpack.TaskSet]:
    root = tmp_path_factory.mktemp("loaders")
    import_sources(
        root / "gsm8k", {"test": [str(DATA / "gsm8k" / "test.jsonl")]}, "gsm8k", name="gsm8k"
    )
    cookbook = {"train": [str(DATA / "peers" / "harbor_cookbook")]}
    import_sources(root / "cookbook", cookbook, "harbor", name="cookbook")
    humaneval = {"test": [str(DATA / "humaneval" / "HumanEval.jsonl.gz")]}
    import_sources(root / "humaneval", humaneval, "humaneval", name="humaneval")
    return {name: taskpack.open(root / name) for name in ("gsm8k", "cookbook", "humaneval")}


def _text(prompt: Any) -> str:
    """A prompt's user text: NeMo rows give a list of messages."""
    if isinstance(prompt, str):
        return prompt
    return "\n".join(str(m.get("content")) for m in prompt if m.get("role") == "user")


@pytest.mark.parametrize("name", ["gsm8k", "cookbook"])
def test_the_nemo_gym_taskset_loads_a_nemo_export(
    name: str, sets: dict[str, taskpack.TaskSet], tmp_path: Path
) -> None:
    ts = sets[name]
    split = ts.splits[0]
    export(ts, "nemo", tmp_path / "nemo")
    out = run_check(
        "verifiers04",
        "check_verifiers_loaders.py",
        "nemo",
        str(tmp_path / "nemo" / f"{split}.jsonl"),
    )
    tasks = list(ts.split(split))
    assert out["count"] == len(tasks) and len(set(out["keys"])) == len(tasks)
    assert [_text(p) for p in out["prompts"]] == [t.instruction for t in tasks]


@pytest.mark.parametrize("name", ["gsm8k", "humaneval", "cookbook"])
def test_the_harbor_taskset_loads_a_harbor_export_through_its_registry(
    name: str, sets: dict[str, taskpack.TaskSet], tmp_path: Path
) -> None:
    """Verifiers' Harbor taskset has `harbor download --export` copy the dataset's tasks; Harbor
    copies tasks it fetches from git, not local ones (it uses those in place), so the export
    is made a git repository, as a user publishing it would, and named with `git_url`. It
    takes every single-step task; a multi-step one it refuses itself."""
    import subprocess

    ts = sets[name]
    split = ts.splits[0]
    repo = tmp_path / "repo"
    export(ts, "harbor", repo, options={"git_url": repo.as_uri()})
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "export"]):
        subprocess.run([*git, *args], check=True)
    folders = sorted(p for p in (repo / split).iterdir() if p.is_dir())
    single = [f.name for f in folders if not (f / "steps").is_dir()]
    registry = str(repo / "registry.json")
    dataset = f"{name}-{split}"
    names = single if len(single) < len(folders) else []
    built = "1" if name == "cookbook" else "0"  # the cookbook's tasks build their own images
    out = run_check(
        "verifiers04_harbor", "check_verifiers_loaders.py", "harbor", registry, dataset, built,
        *names,
    )  # fmt: skip
    assert out["count"] == len(single) and len(set(out["keys"])) == len(single)
    if built == "0":  # each declares its image, which Verifiers runs it on
        assert set(out["images"]) == {"python:3.12-slim"}
        assert not list(repo.glob("*/*/environment/Dockerfile"))
    written = {
        f.name: (f / "instruction.md").read_text().strip() for f in folders if f.name in single
    }
    assert dict(zip(out["names"], out["prompts"], strict=True)) == written
    if names:  # the multi-step one, asked for alone: Verifiers' own refusal
        with pytest.raises(AssertionError, match="multi-step Harbor tasks are not supported"):
            run_check(
                "verifiers04_harbor", "check_verifiers_loaders.py", "harbor", registry, dataset,
                built, *(f.name for f in folders if f.name not in single),
            )  # fmt: skip
