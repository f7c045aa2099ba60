"""NeMo Gym JSONL: one row per task, the model's request in `responses_create_params`.

`input` (a string, or Responses-API items: messages with text, image, audio and file parts,
`function_call`, `function_call_output`, `reasoning`) -> prompt; `tools` -> tools (function
tools; `mcp` tools as MCP servers); `expected_answer` -> answer (any JSON); the task id is
`<split>-<row>` (a row's own `id`, not always unique, is kept). A task from elsewhere is written
with `task_id`, the durable id NeMo Gym 0.7 takes (it numbers rows without one by position);
rows in 0.7's materialized form (`{"task_id": {"taskset", "task_id"}, "task_input": row}`) read
as their `task_input` and are written back in that form. Everything else the row holds
(`agent_ref`, sampling settings such as `temperature`, `verifier_metadata`, task-specific
keys) is kept in `extras.nemo` where it was found and written back there. A task from
elsewhere gets `question` (its instruction) for NeMo Gym's verifiers, and a program judged on
input/output tests (`io_tests`) the `verifier_metadata.unit_tests` NeMo Gym's `code_gen`
environment grades (`inputs`, `outputs`, `fn_name`; a call's arguments one JSON value a line,
as LiveCodeBench encodes them); every other reward kind is lost.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from taskpack import records
from taskpack.converters._columnar.fieldmap import FieldMap, Native, Ordinal
from taskpack.converters._columnar.kinds import Chat, LastUser, Maybe, NotTheId, SameJson
from taskpack.converters._format import Format, FreeField, Target, WriteOptions, config_note
from taskpack.converters._payload import PAYLOAD_KEY
from taskpack.converters._rows import Hints, native_rows
from taskpack.converters._sources.records import RowError
from taskpack.model import IoTests, Item, Part, Task, Tool

PARAMS = "responses_create_params"
TASK_ID, TASK_INPUT = "task_id", "task_input"  # NeMo Gym 0.7's task identity and its row
# Responses-API part type -> model part: (model type, {model field: Responses field})
_PARTS: dict[str, tuple[str, dict[str, str]]] = {
    "input_text": ("text", {"text": "text"}),
    "output_text": ("text", {"text": "text"}),
    "input_image": ("image", {"url": "image_url", "file_id": "file_id", "detail": "detail"}),
    "input_file": (
        "file",
        {"file_id": "file_id", "filename": "filename", "data": "file_data", "url": "file_url"},
    ),
}


class NemoWriteOptions(WriteOptions):
    agent_ref: dict[str, Any] | None = Field(
        default=None,
        description="The `agent_ref` of every row ({type, name}); a mixture's rows otherwise "
        "name their source's environment (`mix --env`).",
    )


# --- reading -------------------------------------------------------------------------------


def _part(part: Any, where: str) -> dict[str, Any]:
    if not isinstance(part, dict):
        raise RowError(f"{where}: expected a content part object")
    kind = part.get("type")
    if kind == "input_audio":
        audio = part.get("input_audio") or {}
        return {"type": "audio", "data": audio.get("data"), "format": audio.get("format")}
    if kind not in _PARTS:
        raise RowError(f"{where}: content part type {kind!r} is not one taskpack knows")
    model_type, fields = _PARTS[kind]
    return {"type": model_type, **{m: part.get(r) for m, r in fields.items()}}


def _content(value: Any, where: str) -> Any:
    if isinstance(value, list):
        return [_part(p, f"{where}[{i}]") for i, p in enumerate(value)]
    return value


def _item(item: Any, where: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise RowError(f"{where}: expected an input item object")
    kind = item.get("type", "message")
    if kind == "message":
        return {"role": item.get("role"), "content": _content(item.get("content"), where)}
    if kind == "function_call":
        return {k: item.get(k) for k in ("type", "call_id", "name", "arguments")}
    if kind == "function_call_output":
        return {
            "type": kind,
            "call_id": item.get("call_id"),
            "output": _content(item.get("output"), where),
        }
    if kind == "reasoning":
        summary = item.get("summary") or []
        return {
            "type": kind,
            "summary": [s.get("text") if isinstance(s, dict) else s for s in summary],
            "encrypted_content": item.get("encrypted_content"),
        }
    raise RowError(f"{where}: input item type {kind!r} is not one taskpack knows")


def _tool(tool: Any, where: str) -> dict[str, Any]:
    if not isinstance(tool, dict):
        raise RowError(f"{where}: expected a tool object")
    if tool.get("type") == "function":
        return {k: tool.get(k) for k in ("type", "name", "description", "parameters", "strict")}
    if tool.get("type") == "mcp":
        return {"type": "mcp", "name": tool.get("server_label"), "url": tool.get("server_url")}
    raise RowError(f"{where}: tool type {tool.get('type')!r} is not one taskpack knows")


def to_task(row: dict[str, Any], split: str, ordinal: int) -> tuple[dict[str, Any], Hints]:
    hints: Hints = {}
    if isinstance(row.get(TASK_ID), dict) and isinstance(row.get(TASK_INPUT), dict):
        hints["taskset"] = row[TASK_ID].get("taskset")
        row = row[TASK_INPUT]
    params = row.get(PARAMS)
    if not isinstance(params, dict):
        raise RowError(f"field {PARAMS!r}: expected an object")
    raw = params.get("input", [])
    if isinstance(raw, str):
        hints["input"] = "text"
        prompt: Any = raw
    elif isinstance(raw, list):
        prompt = [_item(x, f"field '{PARAMS}.input'[{i}]") for i, x in enumerate(raw)]
    else:
        raise RowError(f"field '{PARAMS}.input': expected text or a list of items")
    tools = params.get("tools") or []
    if not isinstance(tools, list):
        raise RowError(f"field '{PARAMS}.tools': expected a list")
    task = {
        # A row's own `id` need not be unique (NeMo Gym data repeats them), so it stays a
        # row field; the task id is the row's place.
        "id": f"{split}-{ordinal:05d}",
        "prompt": prompt,
        "answer": row.get("expected_answer"),
        "tools": [_tool(t, f"field '{PARAMS}.tools'[{i}]") for i, t in enumerate(tools)],
        "source": {"format": "nemo", "split": split, "row": ordinal},
    }
    return task, hints


# --- writing -------------------------------------------------------------------------------


def _out_content(content: Any, role: str) -> Any:
    if not isinstance(content, list):
        return content
    parts: list[dict[str, Any]] = []
    p: Part
    for p in content:
        if isinstance(p, records.TextPart):
            kind = "output_text" if role == "assistant" else "input_text"
            parts.append({"type": kind, "text": p.text})
        elif isinstance(p, records.AudioPart):
            parts.append(
                {"type": "input_audio", "input_audio": {"data": p.data, "format": p.format}}
            )
        else:
            kind = "input_image" if isinstance(p, records.ImagePart) else "input_file"
            fields = _PARTS[kind][1]
            parts.append(
                {
                    "type": kind,
                    **{r: getattr(p, m) for m, r in fields.items() if getattr(p, m) is not None},
                }
            )
    return parts


def _out_item(item: Item, task: Task, target: Target) -> dict[str, Any] | None:
    if isinstance(item, records.Message):
        if item.role == "tool" or item.tool_calls or item.tool_call_id or item.name:
            target.losses.lost("chat tool calls, tool messages and message names", task)
            if item.role == "tool":
                return None
        return {"role": item.role, "content": _out_content(item.content, item.role)}
    if isinstance(item, records.FunctionCall):
        return {
            "type": item.type,
            "call_id": item.call_id,
            "name": item.name,
            "arguments": item.arguments,
        }
    if isinstance(item, records.FunctionCallOutput):
        return {
            "type": item.type,
            "call_id": item.call_id,
            "output": _out_content(item.output, "tool"),
        }
    assert isinstance(item, records.Reasoning)
    out: dict[str, Any] = {
        "type": item.type,
        "summary": [{"type": "summary_text", "text": s} for s in item.summary],
    }
    if item.encrypted_content is not None:
        out["encrypted_content"] = item.encrypted_content
    return out


def _out_tool(tool: Tool) -> dict[str, Any]:
    if isinstance(tool, records.FunctionTool):
        return {k: v for k, v in tool.model_dump().items() if v is not None}
    assert isinstance(tool, records.McpServer)
    return {"type": "mcp", "server_label": tool.name, "server_url": tool.url}


def to_row(task: Task, hints: Hints, target: Target) -> dict[str, Any]:
    if hints.get("input") == "text" and len(task.prompt) == 1:
        inputs: Any = task.prompt[0].content  # type: ignore[union-attr]
    else:
        inputs = [x for x in (_out_item(i, task, target) for i in task.prompt) if x is not None]
    params: dict[str, Any] = {"input": inputs}
    if task.tools:
        params["tools"] = [_out_tool(t) for t in task.tools]
    row: dict[str, Any] = {"id": task.id, TASK_ID: task.id, PARAMS: params}
    if task.instruction:
        row["question"] = task.instruction
    if task.answer is not None:
        row["expected_answer"] = task.answer
    if isinstance(task.reward, records.IoTests):
        row["verifier_metadata"] = {"unit_tests": _unit_tests(task, task.reward)}
    elif task.reward is not None:
        target.losses.lost("reward", task)
    agent = target.options.agent_ref
    if agent is None and (env := target.environment(task)):
        # as NeMo Gym's data preparation marks each row of a collated file with its agent
        agent = {"type": "responses_api_agents", "name": env}
    if agent is not None:
        row["agent_ref"] = agent
    if "taskset" in hints:  # as NeMo Gym 0.7's `materialize_task` wraps a flat row
        return {TASK_ID: {"taskset": hints["taskset"], TASK_ID: task.id}, TASK_INPUT: row}
    return row


def _unit_tests(task: Task, reward: IoTests) -> dict[str, Any]:
    """An io_tests task's tests as `code_gen` reads them (LiveCodeBench's `input_output`)."""
    cases = [json.loads(line) for line in task.file(reward.test_file).read_bytes().splitlines()]
    if reward.call is None:
        return {"inputs": [c["input"] for c in cases], "outputs": [c["output"] for c in cases]}
    return {
        "inputs": ["\n".join(json.dumps(a) for a in c["args"]) for c in cases],
        "outputs": [json.dumps(c["output"]) for c in cases],
        "fn_name": reward.call,
    }


def write(tasks: Iterable[Task], out: Path, split: str, target: Target) -> list[Path]:
    path = out / f"{split}.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for row, _ in native_rows(FORMAT, tasks, to_row, target):
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return [path]


def trainer_configs(
    files: Mapping[str, list[Path]], sources: list[dict[str, Any]], target: Target
) -> dict[str, str]:
    """NeMo RL's `data` section for its NeMo Gym environment, in the list form NeMo RL reads
    since its dataset-config change (NVIDIA-NeMo/RL #1649): the training file is already the
    mixture's draw (each row's `agent_ref` naming its source's environment, as `ng_prepare_data`
    collates several environments' data into one file) or in curriculum order, so shuffling is
    off. Every entry names its `env_name` itself: list entries that leave it to `default`
    lose it (NeMo RL #2906). Validation is the evaluation-only sources, else the test split."""
    import yaml

    def entry(path: Path) -> dict[str, Any]:
        return {
            "data_path": str(path),
            "dataset_name": "NemoGymDataset",
            "env_name": "nemo_gym",
            "processor": "nemo_gym_data_processor",
        }

    if not files.get("train") or not (sources or target.curriculum is not None):
        return {}
    data: dict[str, Any] = {"train": [entry(p) for p in files["train"]]}
    held_out = files.get("eval") or files.get("test")
    if held_out:
        data["validation"] = [entry(p) for p in held_out]
    data["shuffle"] = False
    note = config_note(sources, target)
    return {"nemo_rl_data.yaml": note + yaml.safe_dump({"data": data}, sort_keys=False)}


# Rows grouped by the roles of their messages and their tool list (tools map to model objects a
# slot cannot stand for); the request's other fields and the row's kept as each row has them.
FIELDS = FieldMap(
    {
        f"{PARAMS}.input": Chat(responses=True),
        f"{PARAMS}.tools": Maybe(SameJson()),
        "question": Maybe(LastUser(f"{PARAMS}.input", optional=True)),
        "id": Maybe(NotTheId()),
        TASK_ID: Maybe(NotTheId()),
    },
    id=Ordinal(),
    mapping=Native(lambda: FORMAT, to_task, to_row),
    rest=True,
    rest_nulls=False,
    open=(PARAMS,),
    keyed=True,
    never=(PAYLOAD_KEY,),
)


FORMAT: Format = Format(
    name="nemo",
    summary="NeMo Gym JSONL: responses_create_params (input, tools), expected_answer, agent_ref.",
    read=FIELDS.read,
    read_columns=FIELDS.read_columns,
    write=write,
    free=FreeField(None, text=False),
    split_globs=(("*.jsonl", "file"),),
    write_options=NemoWriteOptions,
    trainer_configs=trainer_configs,
    carries=frozenset({"prompt", "answer", "tools", "reward"}),  # reward: io_tests alone
)
