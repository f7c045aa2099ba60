"""Conversations as text: `{role, content}` text messages for the row formats built on chat
templates (SkyRL, Verifiers, GEM), and one instruction text for the folder formats (Harbor,
OpenReward). Everything else a conversation can hold is reported lost by the writer, never
silently flattened.
"""

from __future__ import annotations

from typing import Any

from taskpack import records
from taskpack.converters._format import Losses, Target
from taskpack.converters._sources.records import RowError
from taskpack.model import Item, Task


def read_messages(value: Any, field: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise RowError(f"field {field!r}: expected a list of messages")
    messages = []
    for i, m in enumerate(value):
        if not isinstance(m, dict) or "role" not in m:
            raise RowError(f"field {field!r}[{i}]: expected a message with a role")
        messages.append({k: v for k, v in m.items() if v is not None})
    return messages


def text_messages(task: Task, losses: Losses) -> list[dict[str, Any]]:
    """The prompt as `{role, content}` text messages; anything else is a reported loss."""
    out = []
    for item in task.prompt:
        if not isinstance(item, records.Message):
            losses.lost(f"prompt items of type {item.type!r}", task)
            continue
        if item.tool_calls or item.tool_call_id or item.name:
            losses.lost("prompt tool calls and message names", task)
        if isinstance(item.content, list) and not all(
            isinstance(p, records.TextPart) for p in item.content
        ):
            losses.lost("prompt content parts other than text", task)
        out.append({"role": item.role, "content": item.text})
    return out


def _kind(item: Item) -> str:
    return f"{item.type} {item.role}" if isinstance(item, records.Message) else str(item.type)


def instruction_text(prompt: list[Any], task: Task, target: Target) -> str:
    """What the agent reads: the prompt's text. One user message is written as it is; system,
    developer and user texts are joined; anything else the agent would have seen is a loss."""
    if (
        len(prompt) == 1
        and isinstance(prompt[0], records.Message)
        and isinstance(prompt[0].content, str)
    ):
        return prompt[0].content
    texts = []
    for item in prompt:
        if isinstance(item, records.Message) and item.role in ("system", "developer", "user"):
            if isinstance(item.content, list) and any(p.type != "text" for p in item.content):
                target.losses.lost("prompt content parts other than text", task)
            texts.append(item.text)
        else:
            target.losses.lost(
                f"prompt items other than instructions ({_kind(item)})",
                task,
            )
    return "\n\n".join(texts)
