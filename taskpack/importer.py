"""Import sources into task sets: stream rows through a reader, validate each, write a split.

By default the first bad row stops the import, naming the file, line and reason, and nothing is
written. With `skip_invalid` the good rows are written and every skipped row is reported
(where, line, id, reason) so nothing is lost silently.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import Any

from taskpack.base.fs import write_atomic
from taskpack.base.objects import file_sha256
from taskpack.converters import Record, read_records, reader
from taskpack.converters import options as checked_options
from taskpack.errors import InvalidTask, TaskpackError
from taskpack.model import Manifest, SplitInfo, Task
from taskpack.storage.rows import coerce_task
from taskpack.storage.writer import TaskSetWriter

_SPLIT_WORDS = ("train", "test", "validation", "valid", "dev")
_SPLIT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


_HF_SHARD = re.compile(r"(.*?)-\d+-of-\d+")  # the Hub's `test-00000-of-00001.parquet`


def split_of(uri: str, default: str = "train") -> str:
    """The split a file's name suggests (`gsm8k_test.jsonl`, `test-00000-of-00001.parquet`,
    `swebench_lite_test.jsonl` -> test), else `default`."""
    stem = uri.rstrip("/").rsplit("/", 1)[-1].split(".")[0].lower()
    shard = _HF_SHARD.fullmatch(stem)
    stem = shard.group(1) if shard else stem
    for split in _SPLIT_WORDS:
        if stem == split or stem.endswith(("_" + split, "-" + split)):
            return split
    return default


def sources_by_split(
    sources: Iterable[str], split: str | None = None, fmt: str | None = None
) -> dict[str, list[str]]:
    """`SPLIT=URI` or a plain `URI`: into `split` when given; else, for an output folder of
    `fmt`'s writer, every split it holds under its name (what taskpack wrote, it reads back
    whole); else the split the URI's name suggests (`split_of`), else the split the format's
    data always is (HumanEval's is `test`), else `train`."""
    from taskpack.converters import export_splits

    out: dict[str, list[str]] = {}
    for spec in sources:
        name, sep, uri = spec.partition("=")
        if not sep or not _SPLIT_NAME.fullmatch(name):
            whole = export_splits(spec, fmt) if fmt is not None and split is None else None
            for found, uris in (whole or {}).items():
                out.setdefault(found, []).extend(uris)
            if whole:
                continue
            default = reader(fmt).default_split if fmt is not None else "train"
            name, uri = split or split_of(spec, default), spec
        out.setdefault(name, []).append(uri)
    return out


@dataclass
class ImportResult:
    manifest: Manifest
    skipped: list[dict[str, Any]] = field(default_factory=list)


def _tasks(
    records: Iterable[Record],
    split: str,
    skipped: list[dict[str, Any]] | None,
    seen: set[str],
) -> Iterator[Task]:
    """Validated tasks from records; bad ones raise, or are listed in `skipped` when given."""
    for record in records:
        try:
            if record.error is not None:
                raise InvalidTask(record.where, record.error)
            task = coerce_task(record.task or {}, record.where)
            if task.id in seen:
                raise InvalidTask(record.where, f"id: duplicate id {task.id!r}")
            seen.add(task.id)
        except InvalidTask as e:
            if skipped is None:
                raise
            tid = (
                record.task.get("id")
                if isinstance(record.task, Mapping)
                else getattr(record.task, "id", None)
            )
            skipped.append(
                {
                    "split": split,
                    "where": e.where,
                    "line": record.line,
                    "id": tid,
                    "reason": e.reason,
                }
            )
            continue
        yield task


def _rows_of(records: Iterable[Record], uri: str) -> Iterator[Record]:
    """A source's records; none is an error (an empty file is a mistake, not a split)."""
    empty = True
    for record in records:
        empty = False
        yield record
    if empty:
        raise TaskpackError(f"{uri}: no rows (empty source)")


def split_tasks(
    uris: Sequence[str],
    fmt: str,
    split: str,
    options: dict[str, Any],
    skipped: list[dict[str, Any]] | None,
    lines: tuple[int, int] | None = None,
) -> Iterator[Task]:
    """All sources of one split in order (only lines first..last of each, when given); ids
    must be unique across them."""
    seen: set[str] = set()
    for uri in uris:
        records = read_records(uri, fmt, split, options)
        if lines is not None:
            first, last = lines
            records = (r for r in records if r.line is not None and first <= r.line <= last)
        yield from _tasks(_rows_of(records, uri), split, skipped, seen)


def read_source(
    source: str | os.PathLike[str], fmt: str, *, split: str = "train", **options: Any
) -> Iterator[Task]:
    """Yield the tasks of one source, one at a time; the first bad row raises `InvalidTask`."""
    uri = os.fspath(source)
    yield from _tasks(_rows_of(read_records(uri, fmt, split, options), uri), split, None, set())


def import_sources(
    target: str | os.PathLike[str],
    sources: Mapping[str, Sequence[str]],
    fmt: str,
    *,
    options: Mapping[str, Any] | None = None,
    skip_invalid: bool = False,
    report: str | os.PathLike[str] | None = None,
    progress: Callable[[Iterator[Any], str], Iterator[Any]] | None = None,
    lines: Mapping[str, tuple[int, int]] | None = None,
    columnar: bool = True,
    **meta: Any,
) -> ImportResult:
    """Write a task set at `target` from `{split: [source, ...]}` read as format `fmt`.

    `lines` keeps, per split, only lines first..last (1-based, inclusive) of its sources.
    `meta` takes TaskSetWriter's options (name, version, description, license, overwrite).
    With `skip_invalid`, skipped rows go to the result and, as JSON lines, to `report`.
    A split from one source in a format with a columnar reader is read with it (`columnar`;
    see `converters._columnar`), else, or when that reader gives up, row by row.
    """
    reader(fmt)  # an unknown format fails before anything is written
    skipped: list[dict[str, Any]] | None = [] if skip_invalid else None
    source = {"operation": "convert", "format": fmt, **meta.pop("source", {})}
    if options:
        source["options"] = dict(options)
    try:
        with TaskSetWriter(target, **meta) as writer, ThreadPoolExecutor(1) as pool:
            files = pool.submit(_read_from, sources)
            for split, uris in sources.items():
                span = (lines or {}).get(split)
                opts = dict(options or {})
                info = None
                if columnar and skipped is None and len(uris) == 1:
                    info = _write_columns(writer, fmt, uris[0], split, opts, progress, span)
                if info is None:
                    tasks = split_tasks(uris, fmt, split, opts, skipped, span)
                    info = writer.write_split(split, progress(tasks, split) if progress else tasks)
                if info.rows == 0:
                    raise TaskpackError(
                        f"{', '.join(uris)}: every row was invalid; nothing written"
                        + (f" (reasons in {report})" if report is not None else "")
                    )
            writer.record(**source, files=files.result())
    finally:
        if skip_invalid and report is not None:
            _write_report(Path(report), skipped or [])
    assert writer.manifest is not None
    return ImportResult(writer.manifest, skipped or [])


def _read_from(sources: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    """The lineage of an import: each source's split and location, with a local file's
    sha256 (hashed on a thread of its own while the rows are converted)."""
    from taskpack.base.provenance import located

    out = []
    for split, uris in sources.items():
        for uri in uris:
            local = "://" not in uri and Path(uri).is_file()
            out.append({"split": split, **located(uri, file_sha256(Path(uri)) if local else None)})
    return out


def _write_columns(
    writer: TaskSetWriter,
    fmt: str,
    uri: str,
    split: str,
    options: dict[str, Any],
    progress: Callable[[Iterator[Any], str], Iterator[Any]] | None,
    lines: tuple[int, int] | None = None,
) -> SplitInfo | None:
    """The split read by the format's columnar reader, batches its checks refuse by the row
    path (see `_columnar.mapped`); None when there is no such reader, it gives up on the
    source, or a row is invalid (the partial split is dropped, for the row path to write the
    whole source and name the row as it always does)."""
    from taskpack.converters import Batch, NotColumnar

    form = reader(fmt)
    read_columns = form.read_columns
    if read_columns is None:
        return None

    def rows() -> Iterator[None]:  # one tick per row, for the progress count
        # Mapping (Arrow compute) and writing (Parquet) release the GIL: a batch is hashed and
        # written on a second thread while the next one is mapped.
        with writer.split(split) as out, ThreadPoolExecutor(1) as pool:
            written: Future[None] | None = None
            count = 0
            for item in read_columns(uri, split, checked_options(form, options), lines):
                if written is not None:
                    written.result()  # rows go in source order
                    written = None
                if isinstance(item, Batch):
                    written = pool.submit(lambda b: out.add_table(b.stored()), item)
                    count += item.table.num_rows
                    yield from repeat(None, item.table.num_rows)
                    continue
                for task in _tasks(item, split, None, set()):
                    out.add(task)
                    count += 1
                    yield None
            if written is not None:
                written.result()
            if not count:
                raise NotColumnar("no rows")  # the row path names the empty source

    try:
        for _ in progress(rows(), split) if progress else rows():
            pass
    except (NotColumnar, InvalidTask):  # InvalidTask: a bad row or a duplicate id (at close)
        return None
    return writer.written[split]


def _write_report(path: Path, skipped: list[dict[str, Any]]) -> None:
    lines = "".join(json.dumps(entry, ensure_ascii=False) + "\n" for entry in skipped)
    write_atomic(path, lines.encode("utf-8"))
