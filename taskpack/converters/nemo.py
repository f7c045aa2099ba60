"""NeMo Gym JSONL: one row per task, the model's request in `responses_create_params`.

`input` (a string, or Responses-API items: messages with text, image, audio and file parts,
`function_call`, `function_call_output`, `reasoning`) -> prompt; `tools` -> tools (function
tools; `mcp` tools as MCP servers); `expected_answer` -> answer (any JSON); the task id is
`<split>-<row>` (a row's own `id`, not always unique, is kept). Everything else the row holds
(`agent_ref`, sampling settings such as `temperature`, `verifier_metadata`, task-specific
keys) is kept in `extras.nemo` where it was found and written back there. A task from
elsewhere gets `question` (its instruction) for NeMo Gym's verifiers.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
from pydantic import Field

from taskpack import records
from taskpack.converters._columnar import (
    Batch,
    Lines,
    NotColumnar,
    Parsed,
    Template,
    fields_table,
    grouped,
    in_field_order,
    item_fields,
    json_columns,
    json_slot,
    json_values,
    last_user,
    mapped,
    messages,
    ordinal_ids,
    own_names,
    refuse,
    role_keys,
    row_numbers,
    slot,
    table_chunks,
    text,
    without,
)
from taskpack.converters._format import Format, Options, Target, WriteOptions, mixture_note
from taskpack.converters._payload import PAYLOAD_KEY, embedded, task_payload
from taskpack.converters._rows import Hints, native_template, read_rows, write_row
from taskpack.converters._source import Record, RowError, iter_table_rows
from taskpack.model import Item, Part, Task, Tool

PARAMS = "responses_create_params"
_TOOLS = "\x1e"  # in a row's template key: its roles, this, and its tool list's JSON text
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
    params = row.get(PARAMS)
    if not isinstance(params, dict):
        raise RowError(f"field {PARAMS!r}: expected an object")
    raw = params.get("input", [])
    hints: Hints = {}
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
    row: dict[str, Any] = {"id": task.id, PARAMS: params}
    if task.instruction:
        row["question"] = task.instruction
    if task.answer is not None:
        row["expected_answer"] = task.answer
    agent = target.options.agent_ref
    if agent is None and (env := target.environment(task)):
        # as NeMo Gym's data preparation marks each row of a collated file with its agent
        agent = {"type": "responses_api_agents", "name": env}
    if agent is not None:
        row["agent_ref"] = agent
    return row


def write(tasks: Iterable[Task], out: Path, split: str, target: Target) -> list[Path]:
    path = out / f"{split}.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for task in tasks:
            row = write_row(FORMAT, task, to_row, target)
            if target.options.embed:
                row[PAYLOAD_KEY] = task_payload(task)
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return [path]


def mixture_configs(
    files: Mapping[str, list[Path]], sources: list[dict[str, Any]], target: Target
) -> dict[str, str]:
    """NeMo RL's `data` section for its NeMo Gym environments: the training file is already the
    weighted mix, each row's `agent_ref` naming its source's environment, as `ng_prepare_data`
    collates several environments' data into one file; validation is the evaluation-only
    sources."""
    import yaml

    data: dict[str, Any] = {"train_jsonl_fpath": str(files["train"][0])}
    if files.get("eval"):
        data["validation_jsonl_fpath"] = str(files["eval"][0])
    data["shuffle"] = False
    return {
        "nemo_rl_data.yaml": mixture_note(sources) + yaml.safe_dump({"data": data}, sort_keys=False)
    }


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return _native(iter_table_rows(uri), split)


def _native(records: Iterator[Record], split: str, first: int = 0) -> Iterator[Record]:
    return read_rows(
        FORMAT, records, lambda row, n: to_task(row, split, n), to_row, embedded, first
    )


def read_columns(
    uri: str, split: str, options: Options, lines: Lines = None
) -> Iterator[Batch | Iterator[Record]]:
    """`read`, a batch at a time (see `_columnar`), for rows whose `responses_create_params`
    holds `input` (messages with text contents, or one text; a user one never empty) and the
    same other fields in every row (each kept as the row has it), whose `expected_answer` and
    other fields are JSON values never null (objects and floats as `json_columns` takes them),
    with `question` always or never the last user message (among rows of the same roles) and
    an own `id` never the task id. Rows are mapped in groups of one template (`grouped`): the
    same roles in their messages and the same tool list (tools map to model objects a slot
    cannot stand for), its residue (`extras.nemo`) the row path's, computed once on a row of
    slots the checks keep true."""
    import pyarrow.compute as pc

    @functools.lru_cache(maxsize=64)
    def template(shape: tuple[Any, ...], tools: str) -> Template:
        """The template of rows of one shape whose tool list has the JSON text `tools`."""
        names, fields, as_text, roles, asked, typed = shape
        row: dict[str, Any] = {n: json_slot(n) for n in names if n != PARAMS}
        last = last_user(roles)
        if asked:
            row["question"] = slot(f"#content{last}")
        kind = {"type": "message"} if typed else {}
        messages_in = [
            {"role": role, "content": slot(f"#content{k}"), **kind} for k, role in enumerate(roles)
        ]
        row[PARAMS] = {
            f: (slot("#content0") if as_text else messages_in)
            if f == "input"
            else json.loads(tools)
            if f == "tools"
            else json_slot(f"#{PARAMS}.{f}")
            for f in fields
        }
        to = lambda r, n: to_task(r, split, n)  # noqa: E731
        try:
            return native_template(FORMAT, row, list(names), to, to_row)
        except (RowError, ValueError) as e:
            raise NotColumnar(f"a template the row path refuses: {e}") from None

    def batch(table: pa.Table, first: int, parsed: Parsed) -> Batch:
        names = table.schema.names
        params = table.column(PARAMS).combine_chunks() if PARAMS in names else None
        if params is None or not pa.types.is_struct(params.type) or params.null_count:
            raise NotColumnar(f"columns {names}")
        fields = [f.name for f in params.type]
        if "input" not in fields or PAYLOAD_KEY in names:
            raise NotColumnar(f"{PARAMS} fields {params.type}")
        own_names(names)
        ordered = fields == ["input"] or in_field_order(table, PARAMS)
        if not ordered and any(list(r[PARAMS]) != fields for r in parsed()):
            raise NotColumnar(f"{PARAMS} fields in another order, or lacking")
        keys = role_keys(pc.struct_field(params, "input"))
        if "tools" in fields:
            request = fields_table(table, PARAMS)
            tools = json_columns(request, ["tools"], lambda: [r[PARAMS] for r in parsed()])[0]
            keys = [
                f"{k}{_TOOLS}{t}" for k, t in zip(keys, tools["tools"].to_pylist(), strict=True)
            ]
        return grouped(keys, table, row_numbers(first, table.num_rows), parsed, one)

    def one(table: pa.Table, rows: pa.Array, parsed: Parsed, key: str) -> Batch:
        """Rows of one template: the same roles, the same tool list (in the key)."""
        names = table.schema.names
        params = table.column(PARAMS).combine_chunks()
        fields = [f.name for f in params.type]
        inputs = pc.struct_field(params, "input")
        as_text = pa.types.is_string(inputs.type)  # `input` as a bare string: one user message
        typed = _typed_messages(inputs)
        if typed:
            inputs = without(inputs, "type")
        roles, contents = (["user"], [text(inputs)]) if as_text else messages(inputs)
        last = last_user(roles)
        if last is not None:  # an empty one: the row has no question
            refuse(pc.equal(contents[last], ""), "an empty user message")
        others = [n for n in names if n != PARAMS]
        columns, hashed = json_columns(table, others, parsed)
        kept = [f for f in fields if f not in ("input", "tools")]  # as each row has them
        texts, sorted_texts = json_columns(
            fields_table(table, PARAMS), kept, lambda: [r[PARAMS] for r in parsed()]
        )
        columns |= {f"#{PARAMS}.{f}": t for f, t in texts.items()}
        hashed |= {f"#{PARAMS}.{f}": t for f, t in sorted_texts.items()}
        tools = key.partition(_TOOLS)[2]
        null = pa.repeat(False, table.num_rows)
        for n in others:
            null = pc.or_(null, pc.or_(pc.is_null(columns[n]), pc.is_null(table.column(n))))
        refuse(null, "a null field")
        ids = ordinal_ids(split, rows)
        if "id" in names:
            refuse(pc.equal(columns["id"], json_values(ids)), "an own id that is the task id")
        asked = False
        if "question" in names and last is not None:
            question = text(table.column("question").combine_chunks())
            matches = pc.sum(pc.equal(question, contents[last]).cast(pa.int64())).as_py()
            if matches not in (0, table.num_rows):
                raise NotColumnar("a question that is the last user message only in some rows")
            asked = matches > 0  # in every row (a count would differ between batches)
        shape = (tuple(names), tuple(fields), as_text, tuple(roles), asked, typed)
        columns |= {f"#content{k}": c for k, c in enumerate(contents)}
        return template(shape, tools).fill(ids, columns, rows, hashed)

    chunks = table_chunks(uri, keyed=True, by_field=frozenset({PARAMS}), lines=lines)
    yield from mapped(chunks, batch, lambda rows, n: _native(rows, split, n))


def _typed_messages(inputs: pa.Array) -> bool:
    """Whether `input` holds Responses-API message items, `"type": "message"` in every item;
    rows where an item says otherwise, or lacks it, go row by row."""
    import pyarrow.compute as pc

    if "type" not in item_fields(inputs.type):
        return False
    refuse(pc.is_null(inputs), "no input")
    kinds = pc.struct_field(pc.list_flatten(inputs), "type")
    other = pc.invert(pc.fill_null(pc.equal(kinds, "message"), False))
    if pc.any(other).as_py():
        rows = pc.unique(pc.filter(pc.list_parent_indices(inputs), other))
        raise NotColumnar("an input item not a message", sorted(rows.to_pylist()))
    return True


FORMAT = Format(
    name="nemo",
    summary="NeMo Gym JSONL: responses_create_params (input, tools), expected_answer, agent_ref.",
    read=read,
    read_columns=read_columns,
    write=write,
    split_globs=(("*.jsonl", "file"),),
    write_options=NemoWriteOptions,
    mixture_configs=mixture_configs,
    carries=frozenset({"prompt", "answer", "tools"}),
)
