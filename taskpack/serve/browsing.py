"""A split as the viewer browses it, read from its stored columns with no task built: what
it holds (stats and the values of each metadata and environment field), which of its tasks
hold a text, and its tasks in the order of a column."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from taskpack.base.nesting import parse_json

if TYPE_CHECKING:
    from taskpack.storage.taskset import Split


@dataclass
class Stats:
    """What a split holds, read once from its stored columns (no task is built)."""

    rows: int
    prompt_chars: list[int]
    reward_kinds: Counter[str] = field(default_factory=Counter)
    # `metadata.k` / `environment.k` -> counts of each scalar value it takes
    values: dict[str, Counter[str]] = field(default_factory=dict)
    roles: dict[str, tuple[int, int]] = field(default_factory=dict)  # role -> (files, bytes)

    @property
    def facets(self) -> dict[str, Counter[str]]:
        """The fields that group tasks (more than one value, and some value shared: a field
        whose every value is a task's own, a commit hash or an id, groups nothing), and the
        repo."""
        return {k: c for k, c in self.values.items() if 1 < len(c) < sum(c.values()) or _repo(k)}

    @classmethod
    def of(cls, split: Split, positions: Sequence[int] | None = None) -> Stats:
        """The split's stats, or those of the tasks at `positions` (a search's or filter's)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        table = split.columns(["prompt", "reward", "metadata", "environment", "files"])
        if positions is not None:
            table = table.take(pa.array(positions, pa.int64()))
        # A prompt's length as the characters of its stored JSON: counted by Arrow, no row
        # decoded (a plain question's JSON adds about 40 to its text).
        lengths = pc.utf8_length(table.column("prompt").fill_null(""))
        stats = cls(rows=len(table), prompt_chars=lengths.to_pylist())
        for text, n in _counts(table.column("reward")):
            reward = _decoded(text)
            stats.reward_kinds[reward.get("kind", "?") if isinstance(reward, dict) else "none"] += n
        values: dict[str, Counter[str]] = {}
        for column in ("metadata", "environment"):
            for text, n in _counts(table.column(column)):
                item = _decoded(text)
                for key, value in item.items() if isinstance(item, dict) else ():
                    if isinstance(value, (str, int, float, bool)):
                        values.setdefault(f"{column}.{key}", Counter())[str(value)] += n
        stats.values = dict(sorted(values.items()))
        files = pc.list_flatten(table.column("files"))
        if len(files):
            flat = pa.table(
                {"role": pc.struct_field(files, "role"), "size": pc.struct_field(files, "size")}
            )
            grouped = flat.group_by("role").aggregate([("size", "count"), ("size", "sum")])
            stats.roles = {
                row["role"]: (row["size_count"], row["size_sum"] or 0)
                for row in sorted(grouped.to_pylist(), key=lambda r: r["role"])
            }
        return stats

    def example_filter(self) -> str:
        """A filter that matches some of this split's tasks (the filter box's placeholder)."""
        for key, counts in self.facets.items():
            value, _ = counts.most_common(1)[0]
            return f"{key}={value}"
        kind = self.reward_kinds.most_common(1)
        return f"reward.kind={kind[0][0]}" if kind else "id=..."


def _counts(column: Any) -> list[tuple[Any, int]]:
    """Each distinct value of a column with its count: Arrow counts, so each distinct text
    is decoded once however many rows share it."""
    import pyarrow.compute as pc

    counted = pc.value_counts(column)
    return list(
        zip(counted.field("values").to_pylist(), counted.field("counts").to_pylist(), strict=True)
    )


def _repo(key: str) -> bool:
    return key in ("environment.repo", "metadata.repo")


def _decoded(text: str | None) -> Any:
    return None if text is None else parse_json(text)


def prompt_text(prompt: Any) -> str:
    """A prompt's text, its messages joined (a string prompt as it is)."""
    if isinstance(prompt, str):
        return prompt
    parts = []
    for item in prompt or ():
        if isinstance(item, dict):
            content = item.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts += [c.get("text", "") for c in content if isinstance(c, dict)]
    return "\n".join(parts)


def search(split: Split, text: str) -> set[str]:
    """The ids of the tasks whose id, prompt or answer holds `text`, ignoring case (Arrow
    matches the stored columns; no task is built)."""
    import pyarrow.compute as pc

    table = split.columns(["id", "prompt", "answer"])
    hit = None
    for column in table.columns:
        found = pc.match_substring(column.fill_null(""), text, ignore_case=True)
        hit = found if hit is None else pc.or_(hit, found)
    return set(pc.filter(table.column("id"), hit).to_pylist()) if hit is not None else set()


def sorted_ids(split: Split, ids: Sequence[str], column: str, descending: bool) -> list[str]:
    """`ids` ordered by `column` (one of `SORTS` or a `metadata.`/`environment.` field): numbers
    as numbers, text ignoring case; tasks with no value last either way."""
    top = column.split(".", 1)[0]
    table = split.columns(["id"] if top == "id" else ["id", top])
    every = table.column("id").to_pylist()
    raw = every if top == "id" else table.column(top).to_pylist()
    wanted = set(ids)
    keys: dict[str, tuple[int, float, str]] = {}
    for tid, value in zip(every, raw, strict=True):
        if tid in wanted:
            keys[tid] = _sort_key(_sort_value(column, value, top in split.json_columns))
    have = sorted((i for i in ids if keys[i][0] < 2), key=keys.__getitem__, reverse=descending)
    return have + [i for i in ids if keys[i][0] == 2]


def _sort_value(column: str, value: Any, stored_json: bool) -> Any:
    if stored_json and isinstance(value, str):
        value = _decoded(value)
    if column == "prompt":
        return prompt_text(value)
    if column == "reward":
        return value.get("kind") if isinstance(value, dict) else None
    for part in column.split(".")[1:]:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _sort_key(value: Any) -> tuple[int, float, str]:
    if value is None or value == "":
        return (2, 0.0, "")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value), "")
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text.casefold())
