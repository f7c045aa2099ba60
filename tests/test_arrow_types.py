"""Parquet sources whose columns hold what JSON has no type for (timestamps, dates, times,
durations, decimals, bytes) read into tasks, and a native round trip writes them back with
their Arrow types and values: SkyRL's own SWE-Gym preprocessing output (`created_at:
timestamp[ms]`, at the top and inside `instance`) and a verl file with such columns of its own."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import taskpack
from taskpack.converters._arrowjson import back, to_json
from taskpack.exporter import export
from taskpack.importer import import_sources

from .conftest import DATA

SWE = json.loads((DATA / "swebench" / "swebench_lite_test.jsonl").read_text().split("\n", 1)[0])


def skyrl_swe_gym(path: Path) -> pa.Table:
    """Rows as SkyRL's preprocess_swegym.py leaves them: the instance's own columns (kept by
    `datasets.map`), then data_source, prompt, env_class and the instance as a struct."""
    created = dt.datetime(2023, 5, 1, 12, 30, 15, 123000)
    instance = {**SWE, "created_at": created}
    columns = {k: [v] for k, v in instance.items()}
    columns["data_source"] = ["SumanthRH/SWE-Gym-Subset"]
    columns["prompt"] = [[{"role": "user", "content": SWE["problem_statement"]}]]
    columns["env_class"] = ["null"]
    columns["instance"] = [instance]
    table = pa.table(columns)
    stamp = pa.timestamp("ms")
    table = table.set_column(
        table.schema.get_field_index("created_at"), "created_at", table["created_at"].cast(stamp)
    )
    struct = table.schema.field("instance").type
    typed = pa.struct(
        [pa.field(f.name, stamp if f.name == "created_at" else f.type) for f in struct]
    )
    table = table.set_column(
        table.schema.get_field_index("instance"), "instance", table["instance"].cast(typed)
    )
    pq.write_table(table, path)
    return table


def verl_with_types(path: Path) -> pa.Table:
    rows = [
        {
            "data_source": "openai/gsm8k",
            "prompt": [{"role": "user", "content": f"What is {i} + {i}?"}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": str(2 * i)},
            "extra_info": {"split": "train", "index": i},
            "difficulty": Decimal(f"{i}.25"),
            "published": dt.date(2024, 1, 1 + i),
            "seen_at": dt.datetime(2024, 2, 3, 4, 5, i, tzinfo=dt.timezone.utc),
            "budget": dt.timedelta(seconds=30 + i),
            "thumbnail": bytes([0, 255, i]),
        }
        for i in range(3)
    ]
    schema = pa.schema(
        [
            ("data_source", pa.string()),
            ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
            ("ability", pa.string()),
            ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
            ("extra_info", pa.struct([("split", pa.string()), ("index", pa.int64())])),
            ("difficulty", pa.decimal128(6, 2)),
            ("published", pa.date32()),
            ("seen_at", pa.timestamp("us", tz="UTC")),
            ("budget", pa.duration("ms")),
            ("thumbnail", pa.binary()),
        ]
    )
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, path)
    return table


@pytest.mark.parametrize(
    ("fmt", "make", "split"),
    [("skyrl", skyrl_swe_gym, "train"), ("verl", verl_with_types, "train")],
    ids=["skyrl-swe-gym", "verl"],
)
def test_native_round_trips_keep_arrow_types(tmp_path: Path, fmt: str, make, split: str) -> None:
    src = tmp_path / f"{split}.parquet"
    original = make(src)
    import_sources(tmp_path / "ts", {split: [str(src)]}, fmt, name="typed")
    ts = taskpack.open(tmp_path / "ts")
    result = export(ts, fmt, tmp_path / "out")
    assert result.losses == []
    back_table = pq.read_table(tmp_path / "out" / f"{split}.parquet")
    for field in original.schema:
        assert back_table.schema.field(field.name).type == field.type, field.name
    assert back_table.select(original.schema.names).to_pylist() == original.to_pylist()


def test_the_task_holds_the_values_as_json(tmp_path: Path) -> None:
    src = tmp_path / "train.parquet"
    verl_with_types(src)
    import_sources(tmp_path / "ts", {"train": [str(src)]}, "verl", name="typed")
    task = taskpack.open(tmp_path / "ts").split("train")[1]
    assert task.metadata == {
        "difficulty": "1.25",
        "published": "2024-01-02",
        "seen_at": "2024-02-03T04:05:01+00:00",
        "budget": 31000,
        "thumbnail": "AP8B",
    }


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (dt.datetime(2020, 2, 29, 23, 59, 59, 999999), pa.timestamp("us")),
        (
            dt.datetime(2020, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=5))),
            pa.timestamp("s", "UTC"),
        ),
        (dt.date(1, 1, 1), pa.date32()),
        (dt.time(13, 14, 15, 16), pa.time64("us")),
        (dt.timedelta(days=2, milliseconds=5), pa.duration("ms")),
        (Decimal("-12345678901234567890.123"), pa.decimal128(38, 3)),
        (b"\x00\x01", pa.binary()),
        ([{"at": dt.date(2000, 1, 2)}], pa.list_(pa.struct([("at", pa.date32())]))),
    ],
)
def test_values_survive_json(value: object, kind: pa.DataType) -> None:
    typed = pa.array([value], type=kind).to_pylist()[0]
    text = json.loads(json.dumps(to_json(typed, kind)))
    assert pa.array([back(text, kind)], type=kind).to_pylist()[0] == typed
