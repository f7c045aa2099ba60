"""verl (volcengine) RL Parquet, as verl's preprocessing scripts write it and
`verl.utils.dataset.rl_dataset.RLHFDataset` reads it: `data_source`, `prompt` (chat messages),
`ability`, `reward_model` {`style`, `ground_truth`}, `extra_info` {`split`, `index`, ...}.

prompt -> prompt; `reward_model.ground_truth` -> answer; `extra_info.answer` (the worked
solution verl's GSM8K scripts keep there) -> solution. `data_source` picks the function
`verl.utils.reward_score.default_compute_score` scores a row with, so it names the reward
kind: `openai/gsm8k` -> numeric_match, the MATH sets -> math_match; a row of another source
keeps its `data_source` (and verl's scorer for it) in `extras.verl` with no reward kind.
Other columns (a source's own, as verl's scripts keep them: MATH's `level` and `type`) ->
metadata, written back as columns. `ability`, the reward style and `extra_info` (tool and
interaction arguments included) are kept in `extras.verl` and written back where they were.

A task from elsewhere gets the `data_source` whose scorer grades its reward kind, verl's own
instruction line for it (as verl's gsm8k.py and math_dataset.py append it), and
`extra_info` {split, index, answer, question} as verl's scripts fill it, plus `id` where its
id is not `<split>-<row>`. Other reward kinds keep `data_source` naming where the task came
from, for a custom reward function, and are reported.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from taskpack.base.fs import write_atomic
from taskpack.converters._chat import read_messages, text_messages
from taskpack.converters._columnar.fieldmap import FieldMap, Native, Ordinal
from taskpack.converters._columnar.kinds import Chat, JsonFields, Same, Text
from taskpack.converters._format import Format, FreeField, Target, WriteOptions, config_note
from taskpack.converters._payload import PAYLOAD_KEY
from taskpack.converters._rowfile import write_native
from taskpack.converters._rows import Hints
from taskpack.converters._verifier import reply_fields
from taskpack.model import Task
from taskpack.rewards import shipped

HOOK = "taskpack_reward.py"  # the reward function shipped beside the Parquet (`_verl_reward`)
HOOK_FIELD = "taskpack_reward"  # extra_info's field it reads a task's reward from

# data_source -> the reward kind default_compute_score applies to it (verl 0.9).
MATH_SOURCES = ("lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval", "HuggingFaceH4/MATH-500")
REWARDS = {"openai/gsm8k": "numeric_match", **dict.fromkeys(MATH_SOURCES, "math_match")}
# reward kind -> the data_source a task from elsewhere is written with, verl's line asking for
# the answer in the form that scorer reads, and the ability verl's script gives such rows.
SOURCES = {"numeric_match": "openai/gsm8k", "math_match": "DigitalLearningGmbH/MATH-lighteval"}
SUFFIXES = {
    "numeric_match": ' Let\'s think step by step and output the final answer after "####".',
    "math_match": " Let's think step by step and output the final answer within \\boxed{}.",
}
# The same line in verl's multi-turn scripts, which quote the marker.
_ALSO = " Let's think step by step and output the final answer after `####`."
ABILITIES = {"numeric_match": "math", "math_match": "math", "unit_tests": "code"}


COLUMNS = ("data_source", "prompt", "ability", "reward_model", "extra_info")


class VerlWriteOptions(WriteOptions):
    instruction_suffix: str | None = Field(
        default=None,
        description="Appended to the last user message. By default, tasks from elsewhere whose "
        "reward verl scores get verl's own line for it (the answer after ####, or in "
        "\\boxed{}); '' adds nothing.",
    )


def _kind(task: Task) -> str | None:
    return task.reward.kind if task.reward is not None else None


def _native(task: Task) -> bool:
    return "verl" in task.extras or (task.source is not None and task.source.format == "verl")


def to_task(row: dict[str, Any], split: str, ordinal: int) -> tuple[dict[str, Any], Hints]:
    spec = row.get("reward_model")
    extra = row.get("extra_info")
    spec = spec if isinstance(spec, dict) else {}
    extra = extra if isinstance(extra, dict) else {}
    tid = extra.get("id")
    kind = REWARDS.get(str(row.get("data_source")))
    solution = extra.get("answer")
    task = {
        "id": str(tid) if isinstance(tid, (str, int)) and str(tid) else f"{split}-{ordinal:05d}",
        "metadata": {k: v for k, v in row.items() if k not in COLUMNS},
        "prompt": read_messages(row.get("prompt"), "prompt"),
        "answer": spec.get("ground_truth"),
        "solution": solution if isinstance(solution, str) else None,
        "reward": {"kind": kind} if kind else None,
        "source": {"format": "verl", "split": split, "row": ordinal},
    }
    return task, {}


def _prompt(task: Task, target: Target) -> list[dict[str, Any]]:
    messages = text_messages(task, target.losses)
    suffix = getattr(target.options, "instruction_suffix", None)
    if suffix is None and not _native(task):
        suffix = SUFFIXES.get(_kind(task) or "")
    users = [m for m in messages if m["role"] == "user"]
    if suffix and users:
        users[-1]["content"] += suffix
    return messages


def _question(task: Task) -> str:
    """The question without verl's instruction line, as verl's scripts keep it."""
    text = task.instruction
    for suffix in (*SUFFIXES.values(), _ALSO):
        text = text.removesuffix(suffix)
    return text


def _hooked(task: Task) -> dict[str, Any] | None:
    """What the shipped reward function (`taskpack_reward.py`) scores a task by: for a reward
    kind verl's own `default_compute_score` lacks and taskpack's grader scores."""
    return reply_fields(task) if _kind(task) not in (*SOURCES, None) else None


def to_row(task: Task, hints: Hints, target: Target) -> dict[str, Any]:
    kind = _kind(task)
    source = task.source.format if task.source is not None and task.source.format else None
    hooked = _hooked(task)
    if kind is not None and kind not in SOURCES and hooked is None:
        target.losses.lost(
            f"reward kind {kind!r} (neither verl's default_compute_score nor taskpack's "
            "reward function scores it; data_source names the task's origin)",
            task,
        )
    extra: dict[str, Any] = {}
    if task.source is not None and task.source.split is not None:
        extra["split"] = task.source.split
    if task.source is not None and task.source.row is not None:
        extra["index"] = task.source.row
        if task.id != f"{task.source.split}-{task.source.row:05d}":
            extra["id"] = task.id
    else:
        extra["id"] = task.id
    if task.solution is not None:
        extra["answer"] = task.solution
        extra["question"] = _question(task)
    if hooked is not None:  # JSON text: one struct column could not hold every kind's spec
        extra[HOOK_FIELD] = json.dumps(hooked, ensure_ascii=False)
    row = {
        "data_source": SOURCES.get(kind or "") or source or "taskpack",
        "prompt": _prompt(task, target),
        "ability": ABILITIES.get(kind or ""),
        "reward_model": {"style": "rule", "ground_truth": task.answer},
        "extra_info": extra,
    }
    clash = sorted(k for k in task.metadata if k in COLUMNS)
    if clash:
        target.losses.lost(f"metadata keys named like verl's columns ({', '.join(clash)})", task)
    return row | {k: v for k, v in task.metadata.items() if k not in COLUMNS}


def write(tasks: Iterable[Task], out: Path, split: str, target: Target) -> list[Path]:
    def placed(row: dict[str, Any], task: Task, index: int) -> None:
        extra = row.get("extra_info")
        if isinstance(extra, dict) and not _native(task):
            # RLHFDataset hands `index` on with each prompt: a task with no row of its own
            # gets its place in this split.
            row["extra_info"] = {"split": split, "index": index} | extra

    hooked: list[bool] = []

    def noted(tasks: Iterable[Task]) -> Iterator[Task]:
        for task in tasks:
            if not hooked and _hooked(task) is not None:
                hooked.append(True)
            yield task

    written = write_native(FORMAT, noted(tasks), to_row, target, out / f"{split}.parquet", placed)
    if not hooked:
        return written
    for name, module in ((HOOK, "verl_hook"), ("taskpack_grade.py", "grader")):
        write_atomic(out / name, shipped(module))
    return [*written, out / HOOK, out / "taskpack_grade.py"]


def trainer_configs(
    files: Mapping[str, list[Path]], sources: list[dict[str, Any]], target: Target
) -> dict[str, str]:
    """verl's `data` section and TRL's dataset mixture for the exported files, which keep the
    rows in the order written: a mixture's draw (verl 0.9 has no per-file weights, and TRL's
    `fraction` would take each dataset's first rows rather than a draw by weight) or a
    curriculum (verl 0.9 dropped its curriculum sampler: order comes from the files). verl's
    validation files are a mixture's evaluation-only sources, else the test split."""
    import yaml

    train = [str(p) for p in files.get("train", []) if p.suffix == ".parquet"]
    hook = next((p for paths in files.values() for p in paths if p.name == HOOK), None)
    if not train or not (sources or target.curriculum is not None or hook is not None):
        return {}
    data: dict[str, Any] = {"train_files": train}
    held_out = [p for p in files.get("eval") or files.get("test") or [] if p.suffix == ".parquet"]
    if held_out:
        data["val_files"] = [str(p) for p in held_out]
    data["shuffle"] = False
    verl: dict[str, Any] = {"data": data}
    if hook is not None:  # where verl 0.9 reads it (`config.reward.custom_reward_function`)
        verl["reward"] = {"custom_reward_function": {"path": str(hook), "name": "compute_score"}}
    note = config_note(sources, target)
    trl = {
        "datasets": [{"path": "parquet", "data_files": path, "split": "train"} for path in train],
        "shuffle_dataset": False,  # GRPOConfig's; on by default
    }
    return {
        "verl_data.yaml": note + yaml.safe_dump(verl, sort_keys=False),
        "trl_datasets.yaml": note + yaml.safe_dump(trl, sort_keys=False),
    }


# verl's preprocessing scripts' Parquet, as its field map states it. The map reads row by row
# only: a verl row's `extra_info` names its own place (split, index), which `to_row` writes back
# from the task's source, so what a row keeps beyond the mapping depends on the row's place; a
# template, whose `extra_info` fields are slots, cannot tell and would keep them all.
FIELDS = FieldMap(
    {
        "data_source": Same(),
        "prompt": Chat(),
        "ability": Same(),
        "reward_model.style": Same(),
        "reward_model.ground_truth": Text(),
        "extra_info": JsonFields(never=("id", PAYLOAD_KEY)),
    },
    id=Ordinal(),
    mapping=Native(lambda: FORMAT, to_task, to_row),
    rest=True,
    suffixes=(".parquet",),
)


FORMAT: Format = Format(
    name="verl",
    summary="verl RL Parquet: data_source, prompt, ability, reward_model, extra_info.",
    read=FIELDS.read,
    write=write,
    free=FreeField("extra_info"),
    split_globs=(("*.parquet", "file"),),
    write_options=VerlWriteOptions,
    trainer_configs=trainer_configs,
    # A reward kind verl has no scorer for is reported by `to_row`, naming the kind.
    carries=frozenset({"prompt", "answer", "solution", "reward", "metadata"}),
)
