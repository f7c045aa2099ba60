"""Verifiers (PrimeIntellect, the HF-Dataset API of 0.3) datasets as `vf.SingleTurnEnv`
formats them: `prompt` (chat messages, the system prompt included), `question`, `answer`,
`example_id`, and an optional `info` (a JSON string). Read from Parquet, JSONL or a dataset
saved with `save_to_disk`; written as both (`<split>.parquet`, `<split>/`).

prompt -> prompt; answer -> answer; `example_id` -> the task id; `question` is the
instruction (the last user message) and is written from it. Anything else, `info` included, is
kept in `extras.verifiers`. There is never a `task` column: verifiers releases read that as a
task route. A task from elsewhere gets its reward (and a unit test's test file) in `info`, and
the export gets `taskpack_env.py`, a module whose `load_environment()` returns a
`vf.SingleTurnEnv` that scores by those rewards.
"""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pyarrow as pa

from taskpack import records
from taskpack.converters._chat import read_messages, text_messages
from taskpack.converters._columnar import (
    Batch,
    NotColumnar,
    Parsed,
    Template,
    grouped,
    last_user,
    mapped,
    messages,
    refuse,
    role_keys,
    row_numbers,
    slot,
    table_chunks,
    text_columns,
)
from taskpack.converters._format import Format, Options, Target
from taskpack.converters._payload import payload_json, task_from_payload
from taskpack.converters._rowfile import write_parquet_rows
from taskpack.converters._rows import Hints, native_template, read_rows, write_row
from taskpack.converters._source import Record, iter_table_rows
from taskpack.errors import require
from taskpack.model import Task
from taskpack.nesting import parse_json

ENV_MODULE = "taskpack_env.py"  # vf.load_environment("taskpack_env") with the export on sys.path
SCORED = {"exact_match", "numeric_match", "math_match", "multiple_choice", "unit_tests"}


def to_task(row: dict[str, Any], split: str, ordinal: int) -> tuple[dict[str, Any], Hints]:
    eid = row.get("example_id")
    prompt = row.get("prompt")
    task = {
        "id": str(eid) if isinstance(eid, (int, str)) and str(eid) else f"{split}-{ordinal:05d}",
        "prompt": row.get("question") if prompt is None else read_messages(prompt, "prompt"),
        "answer": row.get("answer"),
        "source": {"format": "verifiers", "split": split, "row": ordinal},
    }
    return task, {}


def _info(task: Task) -> dict[str, Any]:
    """What the environment module's rubric needs: the reward, and a unit test's test file."""
    info: dict[str, Any] = {} if task.id.isdigit() else {"id": task.id}
    reward = task.reward
    if reward is not None:
        info["reward"] = reward.model_dump(mode="json")
    if isinstance(reward, records.UnitTests):
        info["tests"] = task.file(reward.test_file).read_bytes().decode("utf-8", "replace")
    return info


def to_row(task: Task, hints: Hints, target: Target) -> dict[str, Any]:
    row: dict[str, Any] = {"question": task.instruction}
    if task.answer is None or isinstance(task.answer, str):
        row["answer"] = task.answer or ""
    else:
        target.losses.lost("answer (not text; written as JSON text)", task)
        row["answer"] = json.dumps(task.answer, ensure_ascii=False)
    if task.id.isdigit():
        row["example_id"] = int(task.id)
    info = _info(task)
    if info:
        row["info"] = json.dumps(info, ensure_ascii=False)
    if task.reward is not None and task.reward.kind not in SCORED:
        target.losses.lost(
            f"reward kind {task.reward.kind!r} (no Verifiers rubric scores it)", task
        )
    row["prompt"] = text_messages(task, target.losses)
    return row


def write(tasks: Iterable[Task], out: Path, split: str, target: Target) -> list[Path]:
    require("datasets", "datasets")
    import datasets

    def rows() -> Iterator[dict[str, Any]]:
        for task in tasks:
            row = write_row(FORMAT, task, to_row, target)
            if target.options.embed:
                row["info"] = payload_json(task)
            yield row

    staged = out / f".{split}.rows.parquet"  # written a batch at a time, then memory-mapped
    cache = out / f".{split}.cache"
    try:
        write_parquet_rows(rows(), staged)
        ds = datasets.Dataset.from_parquet(str(staged), cache_dir=str(cache))
        ds.save_to_disk(str(out / split))
        ds.to_parquet(str(out / f"{split}.parquet"))
    finally:
        staged.unlink(missing_ok=True)
        shutil.rmtree(cache, ignore_errors=True)
    modules = resources.files("taskpack.converters")
    for source, name in (("_verifiers_env.py", ENV_MODULE), ("_grade.py", "taskpack_grade.py")):
        (out / name).write_bytes(modules.joinpath(source).read_bytes())
    return [out / split, out / f"{split}.parquet", out / ENV_MODULE]


def _rows(uri: str) -> Iterator[Record]:
    path = Path(uri)
    if path.is_dir():  # a dataset saved with save_to_disk
        require("datasets", "datasets")
        import datasets

        for n, row in enumerate(datasets.load_from_disk(str(path))):
            yield Record(f"{uri}: row {n}", task=dict(row), line=n + 1)
    else:
        yield from iter_table_rows(uri)


_CARRIES = frozenset({"prompt", "answer", "reward"})


def _only_test_file(task: Task) -> bool:
    """A unit-test task whose only file is its test file: `info` carries it."""
    reward = task.reward
    return isinstance(reward, records.UnitTests) and [f.path for f in task.files] == [
        reward.test_file
    ]


def _embedded(row: dict[str, Any]) -> dict[str, Any] | None:
    info = row.get("info")
    if isinstance(info, str) and info.startswith("{"):
        try:
            whole = parse_json(info)
        except ValueError:
            return None
        if isinstance(whole, dict) and {"id", "prompt", "files"} <= whole.keys():
            return task_from_payload(whole, "info")
    return None


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return _native(_rows(uri), split)


def _native(records: Iterator[Record], split: str, first: int = 0) -> Iterator[Record]:
    return read_rows(
        FORMAT, records, lambda row, n: to_task(row, split, n), to_row, _embedded, first
    )


_COLUMNS = ("question", "answer", "example_id", "prompt")


def read_columns(uri: str, split: str, options: Options) -> Iterator[Batch | Iterator[Record]]:
    """`read`, a batch at a time (see `_columnar`), for files as `vf.SingleTurnEnv` datasets
    hold them: exactly `question` and `answer` (text), `example_id` (a whole number, not
    negative) and `prompt` (a user message among them, text contents), the question either
    always or never the last user message among rows of the same roles. Rows of the same roles
    share a template (`grouped`), its residue the row path's, computed once on a row of slots
    that these checks keep true for every row."""
    import pyarrow.compute as pc

    @functools.lru_cache(maxsize=64)
    def template(names: tuple[str, ...], roles: tuple[str, ...], asked: bool) -> Template:
        last = last_user(roles)
        row = {
            "question": slot(f"#content{last}" if asked else "question"),
            "answer": slot("answer"),
            "example_id": 0,  # a number: the id is written back as it
            "prompt": [
                {"role": role, "content": slot(f"#content{k}")} for k, role in enumerate(roles)
            ],
        }
        return native_template(FORMAT, row, list(names), lambda r, n: to_task(r, split, n), to_row)

    def batch(table: pa.Table, first: int, parsed: Parsed) -> Batch:
        names = table.schema.names
        if sorted(names) != sorted(_COLUMNS) or table.num_rows == 0:
            raise NotColumnar(f"columns {names}")
        keys = role_keys(table.column("prompt").combine_chunks())
        return grouped(keys, table, row_numbers(first, table.num_rows), parsed, one)

    def one(table: pa.Table, rows: pa.Array, _: Parsed, _key: str) -> Batch:
        """Rows of one template: the same roles."""
        roles, contents = messages(table.column("prompt"))
        last = last_user(roles)
        if last is None:
            raise NotColumnar("a prompt without a user message")
        question, answer = text_columns(table, ["question", "answer"])
        matches = pc.sum(pc.equal(question, contents[last]).cast(pa.int64())).as_py()
        if matches not in (0, table.num_rows):
            raise NotColumnar("a question that is the last user message only in some rows")
        asked = matches > 0  # in every row (a count would differ between batches)
        example_id = table.column("example_id").combine_chunks()
        if not pa.types.is_integer(example_id.type):
            raise NotColumnar("an example_id that is not a whole number")
        refuse(pc.is_null(example_id), "no example_id")
        refuse(pc.less(example_id, 0), "a negative example_id")  # no number to write back
        columns = {
            "question": question,
            "answer": answer,
            **{f"#content{k}": c for k, c in enumerate(contents)},
        }
        ids = pc.cast(example_id, pa.string())
        return template(tuple(table.schema.names), tuple(roles), asked).fill(ids, columns, rows)

    yield from mapped(table_chunks(uri, keyed=True), batch, lambda rows, n: _native(rows, split, n))


FORMAT = Format(
    name="verifiers",
    summary="Verifiers 0.3 datasets (SingleTurnEnv): prompt, question, answer, example_id, info.",
    read=read,
    read_columns=read_columns,
    write=write,
    carries=lambda task: _CARRIES | ({"files"} if _only_test_file(task) else set()),
)
