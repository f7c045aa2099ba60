"""An import split into parts (`lines`), converted independently and merged, is the task set a
single import writes: the same rows in the same order, the same digests."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import taskpack
from taskpack.cli import main
from taskpack.errors import TaskpackError
from taskpack.importer import import_sources
from taskpack.storage.rows import INLINE_MAX

from .conftest import make_task


def test_gsm8k_in_three_parts_merges_into_the_single_import(tmp_path: Path, data_dir: Path) -> None:
    source = {"train": [str(data_dir / "gsm8k" / "train.jsonl")]}
    whole = import_sources(tmp_path / "whole", source, "gsm8k", name="gsm8k").manifest
    spans = [(1, 2500), (2501, 5000), (5001, 7473)]
    parts = []
    for k, span in enumerate(spans):
        part = tmp_path / f"part{k}"
        import_sources(part, source, "gsm8k", name="gsm8k", lines={"train": span})
        parts.append(part)
    merged = taskpack.merge(parts, tmp_path / "merged", name="gsm8k")
    # The same tasks: the same split digest (the version digest also pins the three files' sizes)
    assert merged.splits["train"].digest == whole.splits["train"].digest
    assert merged.splits["train"].rows == 7473
    # The parts' files are taken whole (no second encoding): the same rows, in three files.
    files = sorted((tmp_path / "merged" / "splits" / "train").glob("*.parquet"))
    assert [f.name for f in files] == ["00000.parquet", "00001.parquet", "00002.parquet"]
    stored = pq.read_table(tmp_path / "whole" / "splits/train.parquet")
    assert stored.equals(pa.concat_tables([pq.read_table(f) for f in files]))
    assert taskpack.verify(taskpack.open(tmp_path / "merged")) == []


def test_parts_with_large_files_and_missing_splits(tmp_path: Path) -> None:
    big = [{"path": "big.bin", "data": b"z" * (INLINE_MAX + 7)}]
    train = [make_task(i, files=big if i == 4 else []) for i in range(6)]
    test = [make_task(100 + i) for i in range(3)]
    whole = taskpack.write(tmp_path / "whole", {"train": train, "test": test}, name="s")
    taskpack.write(tmp_path / "a", {"train": train[:3], "test": test}, name="s")
    taskpack.write(tmp_path / "b", {"train": train[3:]}, name="s")
    merged = taskpack.merge([tmp_path / "a", tmp_path / "b"], tmp_path / "m", name="s")
    assert {n: s.digest for n, s in merged.splits.items()} == {
        n: s.digest for n, s in whole.splits.items()
    }
    task = taskpack.open(tmp_path / "m").split("train").get("t4")
    assert task is not None
    assert (task.materialize(tmp_path / "out") / "big.bin").read_bytes() == big[0]["data"]


def test_a_tampered_part_or_a_repeated_id_is_refused(tmp_path: Path) -> None:
    taskpack.write(tmp_path / "a", {"train": [make_task(0), make_task(1)]}, name="s")
    taskpack.write(tmp_path / "b", {"train": [make_task(1)]}, name="s")
    with pytest.raises(TaskpackError, match=r"row 2 \(id 't1'\): id: duplicate of row 1"):
        taskpack.merge([tmp_path / "a", tmp_path / "b"], tmp_path / "m", name="s")
    assert not (tmp_path / "m").exists()
    path = tmp_path / "b" / "splits/train.parquet"
    table = pq.read_table(path)
    pq.write_table(table.set_column(2, "solution", table.column("solution").fill_null("x")), path)
    with pytest.raises(TaskpackError, match=r"does not match|digest"):
        taskpack.merge([tmp_path / "a", tmp_path / "b"], tmp_path / "m", name="s")


def test_cli_convert_lines_then_merge(tmp_path: Path, data_dir: Path) -> None:
    src = str(data_dir / "gsm8k" / "test.jsonl")
    run = CliRunner().invoke
    assert (
        run(main, ["convert", src, "--from", "gsm8k", "-o", str(tmp_path / "w"), "-q"]).exit_code
        == 0
    )
    for k, span in enumerate(["1:700", "701:1319"]):
        args = ["convert", src, "--from", "gsm8k", "-o", str(tmp_path / f"p{k}"), "--lines", span]
        assert run(main, [*args, "-q", "--name", "w"]).exit_code == 0
    out = run(
        main, ["merge", str(tmp_path / "p0"), str(tmp_path / "p1"), "-o", str(tmp_path / "m")]
    )
    assert out.exit_code == 0, out.output
    merged, whole = taskpack.open(tmp_path / "m").manifest, taskpack.open(tmp_path / "w").manifest
    assert merged.splits["test"].digest == whole.splits["test"].digest
    assert f"wrote w@0.1.0 to {tmp_path / 'm'} (test: 1319), digest {merged.digest}" in out.output
    bad = run(
        main, ["convert", src, "--from", "gsm8k", "-o", str(tmp_path / "x"), "--lines", "9:2"]
    )
    assert bad.exit_code == 2 and "FIRST:LAST" in bad.output


def _gsm8k_lines(count: int) -> list[bytes]:
    """GSM8K-shaped lines, with blank and whitespace-only lines among them (read past, they
    number no row)."""
    import json

    lines = []
    for i in range(count):
        row = {"question": f"Q{i}: what is {i} + {i}? " + "pad " * 30, "answer": f"#### {2 * i}"}
        lines.append(json.dumps(row).encode() + b"\n")
        if i % 997 == 3:
            lines.append(b"\n")
        if i % 1493 == 7:
            lines.append(b"  \t\r\n")
    return lines


@pytest.mark.parametrize("columnar", [True, False])
def test_spans_across_blocks_and_blank_lines_merge_into_the_single_import(
    tmp_path: Path, columnar: bool
) -> None:
    """Spans of lines of a source over several of the columnar reader's 1 MiB blocks, starting
    and ending on blank lines and inside blocks: the parts (columnar, or row by row) merge into
    the single import."""
    lines = _gsm8k_lines(12_000)
    source = tmp_path / "train.jsonl"
    source.write_bytes(b"".join(lines))
    assert source.stat().st_size > 2 << 20
    sources = {"train": [str(source)]}
    whole = import_sources(tmp_path / "whole", sources, "gsm8k", name="g").manifest
    blanks = [k + 1 for k, line in enumerate(lines) if not line.strip()]  # line numbers
    assert blanks[0] > 2 and blanks[5] < 9000
    # spans: up to a blank line, from one blank line to another, inside blocks, the last line
    cuts = [0, blanks[0] - 1, blanks[5], 9000, len(lines) - 1, len(lines)]
    parts, digests = [], []
    for k, (a, b) in enumerate(itertools.pairwise(cuts)):
        part = tmp_path / f"part{k}"
        done = import_sources(
            part, sources, "gsm8k", name="g", lines={"train": (a + 1, b)}, columnar=columnar
        )
        parts.append(part)
        digests.append(done.manifest.digest)
    for checked in (None, digests):
        merged = taskpack.merge(parts, tmp_path / "merged", name="g", digests=checked)
        assert merged.splits["train"].digest == whole.splits["train"].digest
        assert merged.splits["train"].rows == whole.splits["train"].rows
        shutil.rmtree(tmp_path / "merged")


def test_merge_by_digests_refuses_a_part_that_is_not_the_one_written(tmp_path: Path) -> None:
    a = taskpack.write(tmp_path / "a", {"train": [make_task(0)]}, name="s")
    b = taskpack.write(tmp_path / "b", {"train": [make_task(1)]}, name="s")
    with pytest.raises(TaskpackError, match=f"digest {b.digest}, not {a.digest}"):
        taskpack.merge(
            [tmp_path / "a", tmp_path / "b"], tmp_path / "m", digests=[a.digest] * 2, name="s"
        )
    path = tmp_path / "b" / "splits/train.parquet"
    table = pq.read_table(path)
    digests = table.column("digest").to_pylist()
    pq.write_table(
        table.set_column(1, "digest", pa.array(["sha256:" + "0" * 64] * len(digests))), path
    )
    with pytest.raises(TaskpackError, match="digest"):
        taskpack.merge(
            [tmp_path / "a", tmp_path / "b"], tmp_path / "m", digests=[a.digest, b.digest], name="s"
        )


@pytest.mark.parametrize("columnar", [True, False])
def test_spans_after_a_line_longer_than_a_block_keep_their_own_lines(
    tmp_path: Path, columnar: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line over the columnar reader's block (read in several reads, one of which ends no
    line) is one line: a span after it holds the rows of its own lines."""
    from taskpack.converters._sources import chunk

    monkeypatch.setattr(chunk, "BLOCK", 4096)
    lines = _gsm8k_lines(20)
    lines[1] = json.dumps({"question": "x" * 10_000, "answer": "#### 1"}).encode() + b"\n"
    source = tmp_path / "train.jsonl"
    source.write_bytes(b"".join(lines))
    sources = {"train": [str(source)]}
    part = import_sources(
        tmp_path / "part", sources, "gsm8k", name="g", lines={"train": (5, 7)}, columnar=columnar
    )
    got = [t.prompt[0].content for t in taskpack.open(tmp_path / "part").split("train")]
    wanted = [json.loads(line)["question"] for line in lines[4:7] if line.strip()]
    assert got == wanted and part.manifest.splits["train"].rows == len(wanted) == 2
