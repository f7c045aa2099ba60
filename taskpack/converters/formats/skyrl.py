"""SkyRL (NovaSky) training Parquet: `data_source`, `prompt` (chat messages), `env_class`,
`reward_spec` {method, ground_truth} and `extra_info`, as SkyRL's dataset scripts write it.
SWE-bench tasks take the shape of SkyRL's mini-swe-agent example instead: `env_class` "null",
the instance record in `instance` and its fields as columns beside it; reading such a row gives
the SWE-bench task back.

prompt -> prompt; `reward_spec.ground_truth` -> answer; `env_class` `gsm8k` -> a numeric-match
reward (SkyRL-Gym's GSM8K environment scores that), and back. `data_source`, other `env_class`
values, `extra_info` and the reward method are kept in `extras.skyrl` and written back where
they were. A task from elsewhere gets its id in `extra_info.id` and, with no SkyRL environment
for its reward, the reward kind as `env_class`, for an environment the user registers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import Field

from taskpack import records
from taskpack.base.fs import write_atomic
from taskpack.converters import _swe_harness as swe_harness
from taskpack.converters import _swe_rules
from taskpack.converters._chat import read_messages, text_messages
from taskpack.converters._columnar.fieldmap import FieldMap, Native, Ordinal
from taskpack.converters._columnar.kinds import Chat, JsonFields, Same, Text
from taskpack.converters._format import Format, FreeField, Target, WriteOptions
from taskpack.converters._payload import PAYLOAD_KEY
from taskpack.converters._rowfile import write_native
from taskpack.converters._rows import Hints
from taskpack.converters._verifier import graded
from taskpack.model import Task
from taskpack.rewards import shipped
from taskpack.rewards.grader import ANSWER_KINDS

ENV_CLASSES = {"numeric_match": "gsm8k"}
REWARDS = {env: kind for kind, env in ENV_CLASSES.items()}


# SkyRL's gsm8k_dataset.py asks for this; its gsm8k environment reads the answer after ####.
GSM8K_SUFFIX = ' Let\'s think step by step and output the final answer after "####".'


class SkyrlWriteOptions(WriteOptions):
    instruction_suffix: str | None = Field(
        default=None,
        description="Appended to the last user message. By default, tasks from elsewhere that "
        "SkyRL's gsm8k environment scores get SkyRL's own GSM8K line; '' adds nothing.",
    )
    file_names: dict[str, str] = Field(
        default_factory=dict,
        description='Parquet file name per split, e.g. {"test": "validation"} (SkyRL\'s own).',
    )


def to_task(row: dict[str, Any], split: str, ordinal: int) -> tuple[dict[str, Any], Hints]:
    instance = row.get("instance")
    if isinstance(instance, dict) and "instance_id" in instance:  # mini-swe-agent rows
        task = _swe_rules.to_task(instance, split, ordinal)
        task["prompt"] = read_messages(row.get("prompt"), "prompt")
        return task, {}
    spec = row.get("reward_spec") or {}
    extra = row.get("extra_info") or {}
    kind = REWARDS.get(str(row.get("env_class")))
    tid = extra.get("id") if isinstance(extra, dict) else None
    task = {
        "id": str(tid) if tid else f"{split}-{ordinal:05d}",
        "prompt": read_messages(row.get("prompt"), "prompt"),
        "answer": spec.get("ground_truth") if isinstance(spec, dict) else None,
        "reward": {"kind": kind} if kind else None,
        "source": {"format": "skyrl", "split": split, "row": ordinal},
    }
    return task, {}


def _answer_text(task: Task, target: Target) -> str | None:
    if task.answer is None or isinstance(task.answer, str):
        return task.answer
    target.losses.lost("answer (not text; written as JSON text)", task)
    import json

    return json.dumps(task.answer, ensure_ascii=False)


def _prompt(task: Task, target: Target) -> list[dict[str, Any]]:
    messages = text_messages(task, target.losses)
    suffix = getattr(target.options, "instruction_suffix", None)
    native = "skyrl" in task.extras or (task.source is not None and task.source.format == "skyrl")
    if suffix is None and not native and env_class(task) == "gsm8k":
        suffix = GSM8K_SUFFIX
    users = [m for m in messages if m["role"] == "user"]
    if suffix and users:
        users[-1]["content"] += suffix
    return messages


def env_class(task: Task) -> str | None:
    kind = task.reward.kind if task.reward is not None else None
    return ENV_CLASSES.get(kind or "", kind)


def _shipped(task: Task) -> bool:
    """Whether the environment module the export ships (`_skyrl_env.py`) scores the task."""
    return graded(task) and env_class(task) in SHIPPED


def to_row(task: Task, hints: Hints, target: Target) -> dict[str, Any]:
    kind = task.reward.kind if task.reward is not None else None
    if kind is not None and kind not in ENV_CLASSES and kind != "swe_tests" and not _shipped(task):
        target.losses.lost(
            f"reward kind {kind!r} (no SkyRL-Gym environment scores it; env_class names it)", task
        )
    source = (task.source.format if task.source else None) or "taskpack"
    if isinstance(task.reward, records.SweTests):
        instance = _swe_rules.source_row(task)
        instance |= _mini_swe_agent(task, instance, target)
        row = {"data_source": "swe-bench", "prompt": _prompt(task, target), "env_class": "null"}
        return {**row, "instance": instance, **instance}
    return {
        "data_source": source,
        "prompt": _prompt(task, target),
        "env_class": env_class(task),
        "reward_spec": {"method": "rule", "ground_truth": _answer_text(task, target)},
        "extra_info": {"id": task.id, **(_grading(task) if _shipped(task) else {})},
    }


def _grading(task: Task) -> dict[str, Any]:
    """What the shipped environment scores a reply by: the reward spec, and a code task's
    tests."""
    reward = task.reward
    assert reward is not None
    found: dict[str, Any] = {"reward": reward.model_dump(mode="json")}
    if isinstance(reward, records.CODE_KINDS):
        found["tests"] = task.file(reward.test_file).read_bytes().decode("utf-8", "replace")
    return found


def _mini_swe_agent(task: Task, instance: dict[str, Any], target: Target) -> dict[str, Any]:
    """What SkyRL's mini-swe-agent example reads beyond the SWE-bench record: the image
    (`image_name`, taken before any guess from `data_source`) and `eval_script`, whose exit
    status it takes as the verdict (the verifier of the folder exports, in one script). A row
    that has its own keeps them."""
    if "image_name" in instance and "eval_script" in instance:
        return {}
    if not swe_harness.available():
        target.losses.lost(
            "the SWE-bench eval script (pip install 'taskpack[swebench]' to write it)", task
        )
        return {}
    try:
        return {
            "image_name": swe_harness.image(task),
            "eval_script": swe_harness.inline_eval_script(task),
        }
    except swe_harness.Unsupported as e:
        target.losses.lost(str(e), task)
        given = task.environment.image if task.environment else None
        return {"image_name": given or swe_harness.default_image(instance)}


def write(tasks: Iterable[Task], out: Path, split: str, target: Target) -> list[Path]:
    """The split's Parquet; where a task needs an environment skyrl-gym does not ship, the
    module that registers it (`taskpack_skyrl_env.py`) and the grader it uses, beside it."""
    path = out / f"{target.options.file_names.get(split, split)}.parquet"
    ships: list[bool] = []

    def noted(tasks: Iterable[Task]) -> Iterator[Task]:
        for task in tasks:
            if not ships and _shipped(task):
                ships.append(True)
            yield task

    written = write_native(FORMAT, noted(tasks), to_row, target, path)
    if not ships:
        return written
    env = resources.files("taskpack.converters").joinpath(_MODULE).read_bytes()
    write_atomic(out / "taskpack_skyrl_env.py", env)
    write_atomic(out / "taskpack_grade.py", shipped("grader"))
    return [*written, out / "taskpack_skyrl_env.py", out / "taskpack_grade.py"]


_MODULE = "_skyrl_env.py"
# The env classes the shipped module registers: the reward kinds taskpack's grader scores.
SHIPPED = (*ANSWER_KINDS, "unit_tests", "io_tests")


_CARRIES = frozenset({"prompt", "answer", "reward"})
# The instance record holds everything the SWE-bench reader takes from it.
_SWE_CARRIES = _CARRIES | {"solution", "files", "environment", "metadata"}


# SkyRL's dataset scripts' Parquet, its rows grouped by the roles of their prompts. In JSON
# Lines, extra_info's key order may vary: those go row by row.
FIELDS = FieldMap(
    {
        "data_source": Text(never=("skyrl",)),
        "prompt": Chat(),
        "env_class": Same(),
        "reward_spec.method": Same(),
        "reward_spec.ground_truth": Text(),
        "extra_info": JsonFields(never=("id", PAYLOAD_KEY)),
    },
    id=Ordinal(),
    mapping=Native(lambda: FORMAT, to_task, to_row),
    suffixes=(".parquet",),
)


FORMAT: Format = Format(
    name="skyrl",
    summary="SkyRL training Parquet: data_source, prompt, env_class, reward_spec, extra_info.",
    read=FIELDS.read,
    read_columns=FIELDS.read_columns,
    write=write,
    free=FreeField("extra_info"),
    split_globs=(("*.parquet", "file"),),
    write_options=SkyrlWriteOptions,
    carries=lambda task: _SWE_CARRIES if isinstance(task.reward, records.SweTests) else _CARRIES,
)
