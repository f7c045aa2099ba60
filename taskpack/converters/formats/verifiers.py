"""Verifiers (PrimeIntellect), in both forms its releases load.

**Tasksets (verifiers 0.4, `verifiers.v1`; the default).** The export is an installable
package: `pyproject.toml` and a module named by the `package` option (by default the output
folder's name) that exports `TaskpackTaskset` via `__all__`, so that
`load_taskset(TasksetConfig(id=PACKAGE))` finds it once installed. Its `load()` yields the
tasks from the package's own files (`PACKAGE/data/<split>.jsonl`, one `TaskData` each), not
from a registry: a training node then needs neither taskpack nor credentials, and trains on
exactly the tasks exported. prompt -> `prompt` (system messages -> `system_prompt`);
environment image, workdir, CPUs, memory, storage, timeouts and internet -> `image`,
`workdir`, `resources`, `timeout`, `network_allow`; limits' time -> `timeout.agent`; answer,
reward, solution, metadata, a unit test's test code and the reference reply ride in the task
data, and each task scores its reply with taskpack's grader (`taskpack_grade.py`, copied in)
through verifiers' own `@vf.reward` path. Such a package's tasks read back from its folder.

**Datasets (verifiers 0.3, legacy: `form: dataset`)**, as `vf.SingleTurnEnv` formats them:
`prompt` (chat messages, the system prompt included), `question`, `answer`, `example_id`, and
an optional `info` (a JSON string). A task whose id is not a number is numbered by its place,
its id kept in `info.id`. Read from Parquet, JSONL or a dataset saved with
`save_to_disk`; written as both (`<split>.parquet`, `<split>/`). prompt -> prompt; answer ->
answer; `info.id`, else `example_id` -> the task id; `question` is the instruction (the last
user message) and is written from it. Anything else, `info` included, is kept in
`extras.verifiers`. There is never a `task` column: verifiers releases read that as a task
route. A task from elsewhere gets its reward (and a unit test's test file) in `info`, and the
export gets `taskpack_env.py`, a module whose `load_environment()` returns a
`vf.SingleTurnEnv` that scores by those rewards.
"""

from __future__ import annotations

import dataclasses
import json
import keyword
import re
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping
from importlib import metadata, resources
from pathlib import Path
from typing import Any, Literal

import tomli_w
from pydantic import Field, field_validator, model_validator

from taskpack import records
from taskpack.converters._chat import read_messages, text_messages
from taskpack.converters._columnar.fieldmap import FieldMap, IdOf, Native
from taskpack.converters._columnar.kinds import Chat, LastUser, Text, Whole
from taskpack.converters._format import (
    Format,
    FreeField,
    Options,
    Target,
    WriteOptions,
    config_note,
)
from taskpack.converters._rowfile import write_native
from taskpack.converters._rows import Hints, native_rows, read_rows
from taskpack.converters._sources.jsonl import json_lines
from taskpack.converters._sources.records import Record, RowError
from taskpack.converters._sources.tables import iter_table_rows
from taskpack.converters._verifier import solve_reference
from taskpack.errors import TaskpackError, require
from taskpack.model import Task
from taskpack.rewards import shipped

ENV_MODULE = "taskpack_env.py"  # vf.load_environment("taskpack_env") with the export on sys.path
SCORED = {"exact_match", "numeric_match", "math_match", "multiple_choice", "unit_tests", "io_tests"}
_MODULE = re.compile(r"[a-z_][a-z0-9_]*")


class VerifiersWriteOptions(WriteOptions):
    form: Literal["taskset", "dataset"] = Field(
        default="taskset",
        description="taskset: an installable verifiers 0.4 taskset package (the default); "
        "dataset: verifiers 0.3 datasets for vf.SingleTurnEnv (legacy).",
    )
    package: str | None = Field(
        default=None,
        description="The taskset package's module name, its id in load_taskset (default: "
        "the output folder's name, lowercase, other characters as _).",
    )

    @field_validator("package")
    @classmethod
    def _module(cls, value: str | None) -> str | None:
        if value is not None and (not _MODULE.fullmatch(value) or keyword.iskeyword(value)):
            raise ValueError(f"{value!r} is not a module name (lowercase letters, digits, _)")
        return value

    @model_validator(mode="after")
    def _embed_in_datasets(self) -> VerifiersWriteOptions:
        if self.embed and self.form == "taskset":
            raise ValueError("embed needs form dataset (a taskset's TaskData has no free field)")
        return self


# Distributions an export must not be named after though they may not be installed where it is
# written: `pip install` of the export would replace (or, with --no-deps, shadow) them.
WELL_KNOWN = frozenset(
    [
        "verifiers",
        "datasets",
        "transformers",
        "torch",
        "numpy",
        "pandas",
        "pyarrow",
        "pydantic",
        "requests",
        "httpx",
        "openai",
        "anthropic",
        "trl",
        "verl",
        "skyrl",
        "skyrl_gym",
        "nemo_gym",
        "harbor",
        "openreward",
        "ors",
        "openenv",
        "vllm",
        "accelerate",
        "huggingface_hub",
        "tokenizers",
        "taskpack",
        "setuptools",
        "pip",
    ]
)


def package_name(target: Target) -> str:
    """The module a taskset export installs as: the `package` option, else the output
    folder's name made one. A name that is already a distribution's or a module's (installed
    here, in the standard library, or well known) is refused: installing the export would
    replace that package, or fail on its own dependency on it (`verifiers` needs `verifiers`)."""
    name = getattr(target.options, "package", None)
    if not name:
        name = re.sub(r"[^a-z0-9_]", "_", target.name.lower()).strip("_") or "tasks"
        name = f"t_{name}" if name[0].isdigit() or keyword.iskeyword(name) else name
    if _taken(name):
        raise TaskpackError(
            f"the taskset package would be named {name!r}, which is already a package's name: "
            "choose another with -W package=NAME"
        )
    return str(name)


def _taken(name: str) -> bool:
    if name in WELL_KNOWN or name in sys.stdlib_module_names:
        return True
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def _own_id(row: dict[str, Any]) -> str | None:
    """The task id a row written from elsewhere keeps in `info` (its `example_id` is a number)."""
    try:
        info = json.loads(row["info"]) if isinstance(row.get("info"), str) else None
    except ValueError:
        return None
    own = info.get("id") if isinstance(info, dict) else None
    return own if isinstance(own, str) and own else None


def to_task(row: dict[str, Any], split: str, ordinal: int) -> tuple[dict[str, Any], Hints]:
    eid = row.get("example_id")
    prompt = row.get("prompt")
    own = _own_id(row)
    task = {
        "id": own
        or (str(eid) if isinstance(eid, (int, str)) and str(eid) else f"{split}-{ordinal:05d}"),
        "prompt": row.get("question") if prompt is None else read_messages(prompt, "prompt"),
        "answer": row.get("answer"),
        "source": {"format": "verifiers", "split": split, "row": ordinal},
    }
    return task, {}


def _info(task: Task) -> dict[str, Any]:
    """What the environment module's rubric needs: the reward, and a code task's test file."""
    info: dict[str, Any] = {} if task.id.isdigit() else {"id": task.id}
    reward = task.reward
    if reward is not None:
        info["reward"] = reward.model_dump(mode="json")
    if isinstance(reward, records.CODE_KINDS):
        info["tests"] = task.file(reward.test_file).read_bytes().decode("utf-8", "replace")
    return info


def to_row(task: Task, hints: Hints, target: Target) -> dict[str, Any]:
    row: dict[str, Any] = {"question": task.instruction}
    if task.answer is None or isinstance(task.answer, str):
        row["answer"] = task.answer or ""
    else:
        target.losses.lost("answer (not text; written as JSON text)", task)
        row["answer"] = json.dumps(task.answer, ensure_ascii=False)
    if task.id.isdigit():
        row["example_id"] = int(task.id)
    info = _info(task)
    if info:
        row["info"] = json.dumps(info, ensure_ascii=False)
    if task.reward is not None and task.reward.kind not in SCORED:
        target.losses.lost(
            f"reward kind {task.reward.kind!r} (no Verifiers rubric scores it)", task
        )
    row["prompt"] = text_messages(task, target.losses)
    return row


def write(tasks: Iterable[Task], out: Path, split: str, target: Target) -> list[Path]:
    if target.options.form == "taskset":
        return _write_taskset(tasks, out, split, target)
    return _write_datasets(tasks, out, split, target)


def _example_id(row: dict[str, Any], task: Task, index: int) -> None:
    """Every row numbered, as `vf.SingleTurnEnv` numbers its dataset (its rollouts and
    generate() key on `example_id`): a task whose id is not a number gets its place in the
    split, its own id kept in `info`."""
    if not task.id.isdigit():
        row["example_id"] = index


def _write_datasets(tasks: Iterable[Task], out: Path, split: str, target: Target) -> list[Path]:
    require("datasets", "datasets")
    import datasets

    staged = out / f".{split}.rows.parquet"  # written a batch at a time, then memory-mapped
    cache = out / f".{split}.cache"
    try:
        write_native(FORMAT, tasks, to_row, target, staged, _example_id)
        ds = datasets.Dataset.from_parquet(str(staged), cache_dir=str(cache))
        ds.save_to_disk(str(out / split))
        ds.to_parquet(str(out / f"{split}.parquet"))
    finally:
        staged.unlink(missing_ok=True)
        shutil.rmtree(cache, ignore_errors=True)
    env = resources.files("taskpack.converters").joinpath("_verifiers_env.py").read_bytes()
    (out / ENV_MODULE).write_bytes(env)
    (out / "taskpack_grade.py").write_bytes(shipped("grader"))
    return [out / split, out / f"{split}.parquet", out / ENV_MODULE]


def _rows(uri: str) -> Iterator[Record]:
    path = Path(uri)
    if path.is_dir():  # a dataset saved with save_to_disk
        require("datasets", "datasets")
        import datasets

        for n, row in enumerate(datasets.load_from_disk(str(path))):
            yield Record(f"{uri}: row {n}", task=dict(row), line=n + 1)
    else:
        yield from iter_table_rows(uri)


_CARRIES = frozenset({"prompt", "answer", "reward"})


def _only_test_file(task: Task) -> bool:
    """A code task whose only file is its test file: `info` carries it."""
    reward = task.reward
    return isinstance(reward, records.CODE_KINDS) and [f.path for f in task.files] == [
        reward.test_file
    ]


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    package = _package_dir(Path(uri))
    if package is not None:
        return read_rows(
            TASKSET,
            _taskset_records(package, split),
            lambda row, n: from_taskset_row(row, split, n),
            taskset_row,
        )
    return _native(_rows(uri), split)


def _native(records: Iterator[Record], split: str, first: int = 0) -> Iterator[Record]:
    return FIELDS.rows(records, split, first)


# Files as `vf.SingleTurnEnv` datasets hold them, rows grouped by the roles of their prompts;
# a saved dataset or a taskset package (a folder) goes row by row.
FIELDS = FieldMap(
    {
        "prompt": Chat(),
        "question": LastUser("prompt"),
        "answer": Text(),
        "example_id": Whole(least=0, number=0),  # a number: the id is written back as it
    },
    id=IdOf("example_id"),
    mapping=Native(lambda: FORMAT, to_task, to_row),
    keyed=True,
)


# --- tasksets (verifiers 0.4) --------------------------------------------------------------

_TEMPLATE = "_verifiers_taskset.py"


def _pyproject(name: str) -> bytes:
    """The package's pyproject.toml, written by tomli_w."""
    return tomli_w.dumps(
        {
            "build-system": {
                "requires": ["setuptools>=61"],
                "build-backend": "setuptools.build_meta",
            },
            "project": {
                "name": name,
                "version": "0.1.0",
                "description": f"Tasks exported by taskpack as a Verifiers taskset (id '{name}')",
                "requires-python": ">=3.10",
                "dependencies": ["verifiers>=0.4,<0.5"],
            },
            "tool": {
                "setuptools": {
                    "packages": [name],
                    "package-data": {name: ["data/*.jsonl"]},
                }
            },
        }
    ).encode()


def _write_taskset(tasks: Iterable[Task], out: Path, split: str, target: Target) -> list[Path]:
    name = package_name(target)
    module = out / name
    (module / "data").mkdir(parents=True, exist_ok=True)
    data = module / "data" / f"{split}.jsonl"
    with data.open("w", encoding="utf-8") as f:
        for row, _ in native_rows(TASKSET, tasks, taskset_row, target):
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    converters = resources.files("taskpack.converters")
    files = {
        module / "__init__.py": converters.joinpath(_TEMPLATE).read_bytes(),
        module / "taskpack_grade.py": shipped("grader"),
        out / "pyproject.toml": _pyproject(name),
    }
    for path, body in files.items():
        path.write_bytes(body)
    return [data, *files]


def trainer_configs(
    files: Mapping[str, list[Path]], sources: list[dict[str, Any]], target: Target
) -> dict[str, str]:
    """prime-rl's orchestrator sources for a taskset export (`[[orchestrator.train.source]]`,
    as prime-rl reads them since 559b447): one per source of a mixture, this package's
    taskset limited to the source's tasks (`source`) and sampled at the mixture's weight
    (`ratio`), the evaluation-only sources as eval sources; for a plain export, the train
    split, and the test split to evaluate on. Rows in curriculum order get prime-rl's
    `difficulty_pool` sampler and, per training source, its warm start: the state the sampler
    keeps, `{"task_rewards": {Task.key: mean reward}}`, keyed as the taskset keys its tasks
    (by id). The 0.3 dataset form has no taskset config to limit, so none."""
    if target.options.form != "taskset" or not files.get("train"):
        return {}
    if not sources and target.curriculum is None:
        return {}
    name = package_name(target)
    curriculum = target.curriculum

    def source(label: str, split: str, weight: float | None, mixed: bool) -> dict[str, Any]:
        taskset = {"id": name, "split": split} | ({"source": label} if mixed else {})
        entry: dict[str, Any] = {"name": label, "env": {"taskset": taskset}}
        if weight is not None:
            entry["ratio"] = weight
        if curriculum is not None and split == "train":
            entry["curriculum"] = {"sampler": {"type": "difficulty_pool"}}
        return entry

    if sources:
        train = [
            source(s["label"], "train", float(s["weight"]), True)
            for s in sources
            if not s.get("evaluation_only")
        ]
        held_out = [
            source(s["label"], "eval", None, True) for s in sources if s.get("evaluation_only")
        ]
    else:
        train = [source(name, "train", 1.0, False)]
        held_out = [source(f"{name}-test", "test", None, False)] if files.get("test") else []
    orchestrator: dict[str, Any] = {"train": {"source": train}}
    if held_out:
        orchestrator["eval"] = {"source": held_out}
    out = {
        "prime_rl.toml": config_note(sources, target)
        + tomli_w.dumps({"orchestrator": orchestrator})
    }
    if curriculum is not None:
        means = curriculum.means.get("train", {})
        for entry in train:
            mine = entry["env"]["taskset"].get("source")
            rewards = {
                key: mean
                for key, mean in means.items()
                if mine is None or key.startswith(f"{mine}/")
            }
            state = {"task_rewards": rewards}
            out[f"prime_rl_pool-{entry['name']}.json"] = json.dumps(state, indent=1) + "\n"
    return out


def _mb_to_gb(mb: int | None) -> float | None:
    return None if mb is None else mb / 1024


def taskset_row(task: Task, hints: Hints, target: Target) -> dict[str, Any]:
    """The task's `TaskData`, as the package's `data/<split>.jsonl` holds it."""
    messages = text_messages(task, target.losses)
    lead = 0
    while lead < len(messages) and messages[lead]["role"] == "system":
        lead += 1
    row: dict[str, Any] = {"id": task.id}
    if messages[lead:]:
        row["prompt"] = messages[lead:]
    if lead:
        row["system_prompt"] = "\n\n".join(m["content"] for m in messages[:lead])
    row |= _environment(task, target)
    if task.answer is not None:
        row["answer"] = task.answer
    reward = task.reward
    if reward is not None:
        row["reward"] = reward.model_dump(mode="json")
        if reward.kind not in SCORED:
            target.losses.lost(f"reward kind {reward.kind!r} (no Verifiers reward scores it)", task)
    if isinstance(reward, records.CODE_KINDS):
        row["tests"] = task.file(reward.test_file).read_bytes().decode("utf-8", "replace")
    if task.solution is not None:
        row["solution"] = task.solution
    if task.metadata:
        row["metadata"] = task.metadata
    reference = solve_reference(task)
    if reference is not None:
        code = isinstance(reward, records.CODE_KINDS)
        row["reference"] = f"```python\n{reference}```" if code else reference
    return row


_ENV_LOST = ("dockerfile", "repo", "commit", "setup_commit", "setup", "env", "gpus")


def _environment(task: Task, target: Target) -> dict[str, Any]:
    """image, workdir, resources, timeouts and network rules from the task's environment and
    limits; what TaskData has no field for is reported by name."""
    env, limits = task.environment, task.limits
    out: dict[str, Any] = {}
    timeout = {}
    if env is not None:
        for name in _ENV_LOST:
            if getattr(env, name) not in (None, [], {}):
                target.losses.lost(f"environment.{name} (TaskData has no field for it)", task)
        out |= {k: getattr(env, k) for k in ("image", "workdir") if getattr(env, k) is not None}
        resources = {
            "cpu": env.cpus,
            "memory": _mb_to_gb(env.memory_mb),
            "disk": _mb_to_gb(env.storage_mb),
        }
        resources = {k: v for k, v in resources.items() if v is not None}
        if resources:
            out["resources"] = resources
        timeout = {"setup": env.build_timeout_sec, "scoring": env.test_timeout_sec}
        if env.internet is False:
            out["network_allow"] = []
    if limits is not None:
        timeout["agent"] = limits.timeout_sec
        for name in ("max_turns", "max_tokens"):
            if getattr(limits, name) is not None:
                target.losses.lost(f"limits.{name} (TaskData has no field for it)", task)
    timeout = {k: v for k, v in timeout.items() if v is not None}
    if timeout:
        out["timeout"] = timeout
    return out


def from_taskset_row(row: dict[str, Any], split: str, ordinal: int) -> tuple[dict[str, Any], Hints]:
    prompt = row.get("prompt") or []
    messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
    if row.get("system_prompt"):
        messages = [{"role": "system", "content": row["system_prompt"]}, *messages]
    reward = row.get("reward")
    resources = row.get("resources") or {}
    timeout = row.get("timeout") or {}
    env = {
        "image": row.get("image"),
        "workdir": row.get("workdir"),
        "cpus": resources.get("cpu"),
        "memory_mb": _gb_to_mb(resources.get("memory")),
        "storage_mb": _gb_to_mb(resources.get("disk")),
        "build_timeout_sec": timeout.get("setup"),
        "test_timeout_sec": timeout.get("scoring"),
        "internet": False if row.get("network_allow") == [] else None,
    }
    env = {k: v for k, v in env.items() if v is not None}
    task: dict[str, Any] = {
        "id": str(row.get("id") or f"{split}-{ordinal:05d}"),
        "prompt": read_messages(messages, "prompt"),
        "answer": row.get("answer"),
        "solution": row.get("solution"),
        "reward": reward,
        "environment": env or None,
        "limits": {"timeout_sec": timeout["agent"]} if timeout.get("agent") else None,
        "metadata": row.get("metadata") or {},
        "source": {"format": "verifiers", "split": split, "row": ordinal},
    }
    if isinstance(reward, dict) and reward.get("kind") in ("unit_tests", "io_tests"):
        tests = row.get("tests")
        if not isinstance(tests, str) or not isinstance(reward.get("test_file"), str):
            raise RowError(f"a {reward['kind']} task without its tests")
        task["files"] = [{"path": reward["test_file"], "role": "tests", "data": tests.encode()}]
    return task, {}


def _gb_to_mb(gb: Any) -> int | None:
    return None if gb is None else round(gb * 1024)


def _package_dir(path: Path) -> Path | None:
    """The module folder of a taskset package taskpack wrote, if `path` is one's root."""
    if not (path / "pyproject.toml").is_file():
        return None
    found = [p.parent.parent for p in path.glob("*/data/*.jsonl")]
    found = [p for p in dict.fromkeys(found) if (p / "taskpack_grade.py").is_file()]
    return found[0] if len(found) == 1 else None


def _taskset_records(package: Path, split: str) -> Iterator[Record]:
    data = package / "data" / f"{split}.jsonl"
    if not data.is_file():
        have = sorted(p.stem for p in (package / "data").glob("*.jsonl"))
        raise TaskpackError(f"{package}: no split {split!r} (splits: {', '.join(have)})")

    with data.open("rb") as f:
        yield from json_lines(f, str(data))


FORMAT: Format = Format(
    name="verifiers",
    summary="Verifiers: 0.4 taskset packages (TaskData rows), or 0.3 datasets (form: dataset).",
    read=read,
    read_columns=FIELDS.read_columns,
    write=write,
    free=FreeField("info", whole=True),
    split_globs=(("*/data/*.jsonl", "root"), ("*.parquet", "file")),
    write_options=VerifiersWriteOptions,
    trainer_configs=trainer_configs,
    carries=lambda task: _CARRIES | ({"files"} if _only_test_file(task) else set()),
)
# The taskset form's record: the same format, carrying what TaskData holds (losses of the
# environment's and limits' other fields are reported by name in `_environment`).
_TASKSET_CARRIES = _CARRIES | {"solution", "environment", "limits", "metadata"}
TASKSET = dataclasses.replace(
    FORMAT,
    free=FreeField("metadata"),  # TaskpackData.metadata
    carries=lambda task: _TASKSET_CARRIES | ({"files"} if _only_test_file(task) else set()),
)
