"""Rollout rewards in the shapes trainers write them, as (how the task is named, the name, the
rewards): one record per rollout (`{"id": ..., "reward": 1.0}`), one per task with a list of
rewards (open-r1's `pass_rate_rewards` column), or NeMo Gym's reward profile (`sample`, the
row the rollouts ran, and `rollout_infos`, one `reward` each). Files are JSONL, JSON or Parquet,
plain or compressed.

A task is named by an id field of the record (or of NeMo Gym's `sample`) or, where there is
none (open-r1's datasets have a `problem` and no id), by its text, which is matched with the
instruction of a task as decontamination normalises it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from taskpack.converters import iter_table_rows
from taskpack.errors import TaskpackError

ID_FIELDS = ("id", "task_id", "instance_id", "key")
TEXT_FIELDS = ("problem", "prompt", "question", "instruction")
REWARD_LISTS = ("pass_rate_rewards", "rewards")


def _number(value: Any, where: str) -> float:
    """A reward: a number from 0 to 1 (a pass rate counts rewards, so a reward outside that
    range, NaN or infinite has no meaning in it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TaskpackError(f"{where}: reward {value!r} is not a number")
    if not 0 <= value <= 1:  # also NaN; and an int of 400 digits, before any float()
        shown = repr(value) if len(repr(value)) < 40 else repr(value)[:37] + "..."
        raise TaskpackError(f"{where}: reward {shown} is not a number from 0 to 1")
    return float(value)


def _name(row: Mapping[str, Any], key: str | None, where: str) -> tuple[str, str]:
    """("id", the id) or ("text", the text) naming the task a record is about."""
    if key is not None:
        if key not in row:
            raise TaskpackError(f"{where}: no field {key!r} (--key)")
        return ("text" if key in TEXT_FIELDS else "id", str(row[key]))
    for field in ID_FIELDS:
        if isinstance(row.get(field), (str, int)) and not isinstance(row.get(field), bool):
            return "id", str(row[field])
    for field in TEXT_FIELDS:
        if isinstance(row.get(field), str):
            return "text", row[field]
    raise TaskpackError(
        f"{where}: names no task (a field of {', '.join(ID_FIELDS + TEXT_FIELDS)}, or --key)"
    )


def rewards(
    uris: Sequence[str], key: str | None = None, errors: list[str] | None = None
) -> Iterator[tuple[str, str, list[float]]]:
    """(kind, name, rewards) per record of every file, kind being "id" or "text". A record
    `taskpack grade` marked `"status": "error"` (its completion could not be scored: a sandbox
    that did not start, a grader out of time) is no reward: it is left out, its name put in
    `errors`, never counted as a 0."""
    for uri in uris:
        for record in iter_table_rows(uri):
            where = record.where
            if record.error is not None:
                raise TaskpackError(f"{where}: {record.error}")
            row = record.task
            if not isinstance(row, dict):
                raise TaskpackError(f"{where}: not an object")
            if isinstance(row.get("rollout_infos"), list):  # NeMo Gym's reward profile
                sample = row.get("sample")
                kind, name = _name(sample if isinstance(sample, dict) else {}, key, where)
                infos = [i for i in row["rollout_infos"] if isinstance(i, dict) and "reward" in i]
                yield kind, name, [_number(i["reward"], where) for i in infos]
                continue
            listed = next((f for f in REWARD_LISTS if isinstance(row.get(f), list)), None)
            kind, name = _name(row, key, where)
            if row.get("status") == "error":
                if errors is not None:
                    errors.append(name)
                continue
            if listed is not None:
                yield kind, name, [_number(r, where) for r in row[listed]]
            elif "reward" in row:
                yield kind, name, [_number(row["reward"], where)]
            else:
                raise TaskpackError(
                    f"{where}: no reward (a `reward`, a `pass_rate_rewards` list, or NeMo "
                    "Gym's `rollout_infos`)"
                )
