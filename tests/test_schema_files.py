"""The committed JSON Schema files are exactly what the models export, and they validate data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taskpack.schema import MODELS, schema_text

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_committed_schema_matches_model(name: str) -> None:
    committed = (SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8")
    assert committed == schema_text(MODELS[name]), (
        f"schemas/{name}.schema.json is stale: run `python -m taskpack.schema schemas`"
    )


def test_task_schema_names_every_reward_kind() -> None:
    schema = json.loads((SCHEMAS / "task.schema.json").read_text(encoding="utf-8"))
    kinds = {
        d["properties"]["kind"]["const"]
        for k, d in schema["$defs"].items()
        if "kind" in d.get("properties", {})
    }
    assert {
        "exact_match",
        "numeric_match",
        "multiple_choice",
        "unit_tests",
        "swe_tests",
        "weighted_tests",
        "rubric",
        "judge",
    } <= kinds
