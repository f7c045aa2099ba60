"""OpenReward (SETA-style) task folders: `<split>/<task>/task.yaml` (id, instruction,
metadata), `weights.json` (test name -> weight), `tests/` (the verifier's files), `solution/`,
`environment/` (the build context), `workspace/` (what the agent starts with in /app),
`other/`;
`<split>/index.json` lists the tasks in order (optional when reading).

instruction -> prompt; weights.json -> a weighted-tests reward (a task from elsewhere gets
weights made from its reward: its unit-test file or each FAIL_TO_PASS test equally, else one
`reward` entry, summing to 1.0); the folders -> files with those roles. Other task.yaml keys
are kept in `extras.openreward`. With the `embed` option task.yaml also carries the whole task
under `taskpack:`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from taskpack import records
from taskpack.base.nesting import parse_json
from taskpack.converters._chat import instruction_text
from taskpack.converters._folders import (
    Files,
    file_entry,
    inside,
    read_folders,
    read_text,
    walk,
    write_split,
)
from taskpack.converters._format import (
    Format,
    Losses,
    Options,
    Target,
    WriteOptions,
    report_uncarried,
)
from taskpack.converters._payload import PAYLOAD_KEY, task_from_payload, task_payload
from taskpack.converters._residue import apply, residue
from taskpack.converters._sources.records import Record, RowError
from taskpack.converters._verifier import complete, graded, instruction_suffix
from taskpack.converters._yaml import load_yaml
from taskpack.errors import describe_error
from taskpack.model import Task

if TYPE_CHECKING:
    from taskpack.storage.taskset import Later

MARKER = "task.yaml"
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's when PyYAML has it: faster
WEIGHTS = "weights.json"
FOLDERS = ("tests", "solution", "environment", "workspace", "other")


def place(rel: str) -> dict[str, Any]:
    """Role and path of a file of the folder; files outside the role folders are `other`."""
    head, _, rest = rel.partition("/")
    if head in FOLDERS and rest:
        return {"role": head, "path": rest}
    return {"role": "other", "path": rel}


def weights(task: Task) -> dict[str, float]:
    reward = task.reward
    if isinstance(reward, records.WeightedTests):
        return dict(reward.weights)
    if isinstance(reward, records.UnitTests):
        raw = {reward.test_file: 1.0}
    elif isinstance(reward, records.SweTests) and reward.fail_to_pass:
        raw = dict.fromkeys(reward.fail_to_pass, 1.0)
    else:
        raw = {"reward": 1.0}
    total = sum(raw.values())
    return {name: value / total for name, value in raw.items()}


def to_yaml(task: Task, target: Target | None) -> dict[str, Any]:
    config: dict[str, Any] = {"id": task.id}
    if task.prompt:
        probe = target or Target(WriteOptions(), Losses("openreward"))
        config["instruction"] = instruction_text(task.prompt, task, probe)
    if task.metadata:
        config["metadata"] = task.metadata
    return config


def convert(task_id: str, folder: Path) -> Any:
    config = load_yaml(read_text(folder, MARKER) or "", MARKER)
    if not isinstance(config, dict):
        raise RowError(f"{MARKER}: expected a mapping")
    if isinstance(config.get(PAYLOAD_KEY), dict):  # written with `embed`: the whole task
        return task_from_payload(_with_contents(folder, config[PAYLOAD_KEY]))
    files = [
        file_entry(path, mode, place(rel))
        for rel, path, mode in walk(folder)
        if rel not in (MARKER, WEIGHTS)
    ]
    reward = None
    text = read_text(folder, WEIGHTS)
    if text is not None:
        try:
            reward = {"kind": "weighted_tests", "weights": parse_json(text)}
        except ValueError as e:
            raise RowError(f"{WEIGHTS}: {e}") from None
    mapped = {
        "id": str(config.get("id") or task_id),
        "prompt": config.get("instruction"),
        "reward": reward,
        "files": files,
        "source": {"format": "openreward"},
        "metadata": config.get("metadata") or {},
    }
    try:
        task = Task.model_validate(mapped)
    except ValidationError as e:
        raise RowError(describe_error(e)) from None
    extra = residue(config, to_yaml(task, None))
    if extra:
        task.extras["openreward"] = extra
    return task


def _with_contents(folder: Path, payload: dict[str, Any]) -> dict[str, Any]:
    """An embedded payload names where each file went; its contents come from the folder."""
    import base64

    out = dict(payload)
    out["files"] = []
    for f in payload.get("files", []):
        data = inside(folder, place_path(f)).read_bytes()
        entry = {k: f.get(k) for k in ("path", "role", "step", "mode")}
        out["files"].append(entry | {"base64": base64.b64encode(data).decode("ascii")})
    return out


def place_path(f: Any) -> str:
    role, path = (f["role"], f["path"]) if isinstance(f, dict) else (f.role, f.path)
    return path if role == "other" and path.split("/")[0] not in FOLDERS else f"{role}/{path}"


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return read_folders(uri, MARKER, convert)


def _task_files(task: Task, target: Target) -> Files:
    report_uncarried(FORMAT, task, target.losses)
    native = "openreward" in task.extras or (
        task.source is not None and task.source.format == "openreward"
    )
    files: dict[str, tuple[bytes, int]] = {}
    for f in task.files:
        if f.step is not None:
            target.losses.lost("files of steps", task)
            continue
        rel = place_path(f)
        if rel in (MARKER, WEIGHTS):
            target.losses.lost(f"files named like the folder's own ({rel})", task)
            continue
        files[rel] = (f.read_bytes(), f.mode)
    test_weights = weights(task)
    config = to_yaml(task, target)
    if not native:
        complete(task, files, target, next(iter(test_weights)), copy_workspace=False)
        if "instruction" in config:
            config["instruction"] += instruction_suffix(task)
    config = apply(config, task.extras.get("openreward", {}))
    if target.options.embed:
        payload = task_payload(task)
        for f in payload["files"]:
            f.pop("text", None), f.pop("base64", None)
        config[PAYLOAD_KEY] = payload
    text = yaml.dump(config, Dumper=_DUMPER, sort_keys=False, allow_unicode=True)
    files[MARKER] = (text.encode("utf-8"), 0o644)
    files[WEIGHTS] = (_weights_json(tuple(test_weights.items())), 0o644)
    return files


@functools.lru_cache(maxsize=256)
def _weights_json(weights: tuple[tuple[str, float], ...]) -> bytes:
    """weights.json's bytes: most tasks of a set share theirs (`{"reward": 1.0}`), and an
    indented dump runs json's Python encoder."""
    return (json.dumps(dict(weights), indent=2) + "\n").encode()


_CARRIES = frozenset({"prompt", "reward", "files", "metadata"})


def write(tasks: Iterable[Task | Later], out: Path, split: str, target: Target) -> list[Path]:
    files = lambda t: _task_files(t, target)  # noqa: E731 - read as the writer's one argument
    written = write_split(tasks, out, split, files, target.losses, progress=target.written)
    return [written.index]


FORMAT = Format(
    name="openreward",
    summary="OpenReward (SETA-style) task folders: task.yaml, weights.json, tests/, solution/.",
    read=read,
    write=write,
    write_later=write,
    task_files=_task_files,
    split_globs=(("*/index.json", "folder"),),
    # A graded task's answer and solution travel as its verifier and oracle.
    carries=lambda task: _CARRIES | ({"answer", "solution"} if graded(task) else set()),
)
