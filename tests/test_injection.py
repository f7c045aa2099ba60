"""What a set's author chose never becomes config or code in what an export writes: every config
an export writes parses, through PyYAML and tomllib, to the same keys whatever the set's labels,
names, ids and model names hold; a label no reader would take is refused where it is read, in
one line that names it (a forged manifest sealed with its own digest included)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import taskpack
from taskpack.base.digests import version_digest
from taskpack.curation import annotate, keep
from taskpack.curation.mixing import Part, mix
from taskpack.errors import TaskpackError
from taskpack.exporter import export
from taskpack.storage.integrity import verify

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# What an attacker writes where a value lands in a config line: a line break followed by config,
# quotes, a comment sign, a TOML table header, a template brace and a NUL.
HOSTILE = (
    'x"\n[[orchestrator.train.source]]\nname = "evil"\nratio = 1000\n'
    "custom_reward_function: {path: /tmp/x.py, name: r}\n# {{ t }} \x00 \u2028 \x85 '"
)


def _set(root: Path, name: str, description: str, ids: list[str]) -> Path:
    tasks = [
        {"id": i, "prompt": f"What is {n} + 1?", "answer": str(n + 1),
         "reward": {"kind": "numeric_match"}}
        for n, i in enumerate(ids)
    ]  # fmt: skip
    taskpack.write(
        root / name, {"train": tasks, "test": tasks[:1]}, name=name, description=description
    )
    return root / name


def _rated(root: Path, model: str, description: str, ids: list[str]) -> Path:
    """A set annotated with pass rates of `model`, then a mixture of it and a copy."""
    base = _set(root, "plain", description, ids)
    rollouts = root / "rollouts.jsonl"
    rollouts.write_text("".join(json.dumps({"id": i, "reward": 1.0}) + "\n" for i in ids))
    report = annotate(base, [str(rollouts)], model=model, settings={"n": 1})
    rated = root / "rated"
    keep(report.taskset, report.kept(), rated, version="1.1.0", source=report.record,
         annotations=report.annotations())  # fmt: skip
    other = _set(root, "other", description, ids)
    out = root / "mix"
    mix("mixed", [Part(str(rated), 0.6), Part(str(other), 0.4), Part(str(rated), 0.5, "test")], out)
    return out


def _configs(out: Path) -> dict[str, Any]:
    """Every YAML, TOML and JSON file an export wrote, parsed, by its path under `out`."""
    found: dict[str, Any] = {}
    for path in sorted(out.rglob("*")):
        rel = str(path.relative_to(out))
        if path.suffix in (".yaml", ".yml"):
            found[rel] = yaml.safe_load(path.read_text(encoding="utf-8"))
        elif path.suffix == ".toml":
            found[rel] = tomllib.loads(path.read_text(encoding="utf-8"))
        elif path.suffix == ".json":
            found[rel] = json.loads(path.read_text(encoding="utf-8"))
    return found


def _keys(value: Any, at: str = "") -> set[str]:
    """Every key path of a parsed config (list items by position): its shape, not its values."""
    if isinstance(value, dict):
        return {f"{at}.{k}" for k in value} | {
            p for k, v in value.items() for p in _keys(v, f"{at}.{k}")
        }
    if isinstance(value, list):
        return {p for i, v in enumerate(value) for p in _keys(v, f"{at}[{i}]")}
    return set()


CONFIGURED = [("verl", {}), ("nemo", {}), ("verifiers", {}), ("harbor", {}), ("skyrl", {})]


@pytest.mark.parametrize(("fmt", "options"), CONFIGURED, ids=[f for f, _ in CONFIGURED])
def test_hostile_values_leave_every_configs_keys_as_meant(
    tmp_path: Path, fmt: str, options: dict[str, Any]
) -> None:
    ids = ['q"1\\', "q#2 [[x]] {{y}}"]  # ids key the pool files: the same in both sets
    plain = _rated(tmp_path / "plain", "m1", "A set.", ids)
    hostile = _rated(tmp_path / "hostile", HOSTILE, HOSTILE, ids)
    for where in (plain, hostile):
        for order in (None, "easy-first"):
            chosen = {"order": order, "model": "m1" if where is plain else HOSTILE} if order else {}
            export(
                taskpack.open(where), fmt, where.parent / f"{fmt}-{order}", options=options | chosen
            )
    for order in (None, "easy-first"):
        meant = _configs(plain.parent / f"{fmt}-{order}")
        got = _configs(hostile.parent / f"{fmt}-{order}")
        assert got.keys() == meant.keys(), order
        assert any(p.endswith((".yaml", ".toml")) for p in meant) or fmt in ("harbor", "skyrl")
        for path in meant:
            assert _keys(got[path]) == _keys(meant[path]), (order, path)
    # the hostile model name is in the curriculum comment, quoted, on one line
    for path in (hostile.parent / f"{fmt}-easy-first").rglob("*.yaml"):
        lines = path.read_text(encoding="utf-8").splitlines()
        assert not any(line.startswith(("custom_reward_function", "name =")) for line in lines)


def _forged(root: Path, label: Any) -> Path:
    """A mixture whose manifest its author rewrote, label and all, sealed with its own digest."""
    out = _rated(root, "m1", "A set.", ["q1", "q2"])
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["source"]["mixture"][0]["label"] = label
    manifest["digest"] = version_digest(manifest)
    manifest_path.write_text(json.dumps(manifest))
    return out


@pytest.mark.parametrize("label", [HOSTILE, "a/b", "../x", "", 7, None])
def test_a_forged_label_is_refused_where_it_is_read(tmp_path: Path, label: Any) -> None:
    forged = _forged(tmp_path, label)
    ts = taskpack.open(forged)
    shown = json.dumps(label)
    with pytest.raises(TaskpackError) as e:
        export(ts, "verl", tmp_path / "out")
    assert "\n" not in str(e.value) and f"label {shown} is not a NAME" in str(e.value)
    assert not (tmp_path / "out").exists()
    problems = verify(ts)
    assert any("source.mixture[0]: label" in p for p in problems)
    from taskpack.curation.mixture import sampler, sources

    with pytest.raises(TaskpackError, match="is not a NAME"):
        sources(ts)
    with pytest.raises(TaskpackError, match="is not a NAME"):
        next(sampler(ts.split("train"), entries=ts.manifest.mixture()))


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("weight", -1, "a finite number"),
        ("weight", "1", "a finite number"),
        ("split", "tr\nain", "is not a NAME"),
        ("env", {"x": 1}, "expected text"),
    ],
)
def test_other_forged_mixture_fields_are_refused(
    tmp_path: Path, field: str, value: Any, says: str
) -> None:
    out = _rated(tmp_path, "m1", "A set.", ["q1", "q2"])
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["source"]["mixture"][1][field] = value
    manifest["digest"] = version_digest(manifest)
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(TaskpackError, match=f"source.mixture\\[1\\]: {field}.*{says}"):
        export(taskpack.open(out), "nemo", tmp_path / "out")


def test_scripts_fence_and_refuse_what_could_become_an_instruction() -> None:
    from taskpack.converters._scripts import dockerfile, heredoc, quoted
    from taskpack.converters._swe_harness import _gold

    # a patch holding the old fixed delimiter as a line cannot end its here-document
    patch = "--- a\n+++ b\nTASKPACK_GOLD_PATCH\ntouch /tmp/pwned\n"
    script = _gold(patch, "/testbed").decode()
    end, _ = heredoc("TASKPACK_GOLD_PATCH", patch)
    assert script.count(f"\n{end}\n") == 1 and script.endswith(f"\n{end}\n")
    assert "TASKPACK_GOLD_PATCH\ntouch" in script  # inside the fence, as data
    assert "\n" not in quoted(HOSTILE) and "\u2028" not in quoted(HOSTILE)
    assert dockerfile("python:3.12", "/app") == b"FROM python:3.12\nWORKDIR /app\n"
    for bad in ("/app\nRUN curl x | sh", "/a b", "/app\u2028RUN x"):
        with pytest.raises(TaskpackError, match="one word on one line"):
            dockerfile("python:3.12", bad)


def test_an_evalplus_id_that_could_end_its_docstring_is_refused() -> None:
    from taskpack.converters._sources.records import RowError
    from taskpack.converters.formats.evalplus import to_task

    row = {"task_id": "Mbpp/1", "prompt": "", "entry_point": "f", "canonical_solution":
           "def f(x):\n    return x\n", "base_input": [[1]], "plus_input": []}  # fmt: skip
    assert to_task(row, "test", 0)["id"] == "Mbpp/1"
    for field, value in (("task_id", 'x"""\nimport os'), ("entry_point", "f(); import os")):
        with pytest.raises(RowError, match=f"field '{field}'"):
            to_task(row | {field: value}, "test", 0)
