"""Pass rates as a version stores them: per split, one Parquet file of rows (task id, model,
sampling settings, rollouts, successes, mean reward), beside the tasks and not in them, so a
task's digest stays what it was while the version's digest covers what was measured.

A row holds counts, not rates: the pass rate is `correct / count`, and pass@k for any k up to
`count` follows from them (the unbiased estimator of Chen et al. 2021, `pass_at`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from math import comb
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from taskpack.digests import canonical_json, content_digest
from taskpack.errors import TaskpackError

SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("model", pa.string()),
        ("settings", pa.string()),  # canonical JSON of the sampling settings
        ("count", pa.int64()),
        ("correct", pa.int64()),
        ("mean", pa.float64()),
    ]
)
FIELDS = tuple(SCHEMA.names)


def settings_key(settings: Mapping[str, Any]) -> str:
    """The one spelling of a sampling setup (n, temperature, max tokens, ...)."""
    return canonical_json(dict(settings)).decode()


def pass_at(count: int, correct: int, k: int) -> float | None:
    """The chance that at least one of k rollouts drawn from these succeeds; None for k
    larger than the rollouts there are."""
    if not 0 < k <= count:
        return None
    if count - correct < k:
        return 1.0
    return 1.0 - comb(count - correct, k) / comb(count, k)


def sorted_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows in their one order (id, model, settings), each once."""
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        key = (row["id"], row["model"], row["settings"])
        if key in out:
            raise TaskpackError(f"annotations: task {key[0]!r} twice for model {key[1]!r}")
        out[key] = {f: row[f] for f in FIELDS}
    return [out[key] for key in sorted(out)]


def digest(rows: list[dict[str, Any]]) -> str:
    """What the rows say, however they are stored: over their canonical JSON, sorted."""
    return content_digest([[row[f] for f in FIELDS] for row in rows])


def write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path, compression="zstd")


def read(path: Path) -> list[dict[str, Any]]:
    table = pq.read_table(path)
    if table.schema.names != list(FIELDS):
        raise TaskpackError(f"{path}: not a taskpack annotations file")
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def problems(rows: list[dict[str, Any]], expected: str, ids: Iterable[str]) -> list[str]:
    """Why stored annotations are not what their digest says, or name tasks the split lacks."""
    found = []
    if digest(rows) != expected:
        found.append(f"annotations digest differs from {expected}")
    known = set(ids)
    strangers = sorted({r["id"] for r in rows} - known)
    if strangers:
        found.append(f"annotations of {len(strangers)} task(s) not in the split: {strangers[:3]}")
    bad = [r["id"] for r in rows if not 0 <= r["correct"] <= r["count"] or r["count"] < 1]
    if bad:
        found.append(f"annotations with impossible counts: {bad[:3]}")
    return found


def models(rows: Iterable[Mapping[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The (model, settings) pairs the rows measure, each once, in order."""
    pairs = dict.fromkeys((r["model"], r["settings"]) for r in rows)
    return [(model, json.loads(settings)) for model, settings in pairs]
