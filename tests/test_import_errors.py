"""Bad sources: the first bad row stops the import with file, line and reason and writes nothing;
--skip-invalid writes the good rows and a machine-readable report of the rest."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import zstandard
from click.testing import CliRunner

import taskpack
from taskpack.cli import main
from taskpack.errors import InvalidTask, TaskpackError
from taskpack.importer import import_sources, read_source

GOOD = [
    {"question": "1+1?", "answer": "1+1=2\n#### 2"},
    {"question": "Big?", "answer": "so\n#### 1,080"},
    {"question": "Neg?", "answer": "down\n#### -3"},
]


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def good_lines() -> list[str]:
    return [json.dumps(r) for r in GOOD]


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        ('{"question": "cut', "not valid JSON"),
        ('{"question": 12, "answer": "#### 1"}', "field 'question': expected str, got int"),
        ('{"question": "no answer"}', "field 'answer': missing"),
        ('{"question": "q", "answer": "no final line"}', "no '#### <final answer>' line"),
        ("[1, 2]", "expected a JSON object, got list"),
    ],
)
def test_first_bad_row_stops_with_file_line_reason(
    tmp_path: Path, bad_line: str, reason: str
) -> None:
    src = write_lines(tmp_path / "train.jsonl", [*good_lines()[:2], bad_line, good_lines()[2]])
    with pytest.raises(InvalidTask) as info:
        import_sources(tmp_path / "out", {"train": [str(src)]}, "gsm8k", name="g")
    assert info.value.where == f"{src}:3"
    assert reason in info.value.reason
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.jsonl"]


def test_skip_invalid_writes_good_rows_and_reports_the_rest(tmp_path: Path) -> None:
    lines = [*good_lines(), '{"question": "cut', '{"question": 5, "answer": "#### 5"}']
    src = write_lines(tmp_path / "train.jsonl", lines)
    report = tmp_path / "skipped.jsonl"
    result = import_sources(
        tmp_path / "out",
        {"train": [str(src)]},
        "gsm8k",
        name="g",
        skip_invalid=True,
        report=report,
    )
    assert result.manifest.splits["train"].rows == 3
    entries = [json.loads(line) for line in report.read_text().splitlines()]
    assert [(e["line"], e["split"]) for e in entries] == [(4, "train"), (5, "train")]
    assert "not valid JSON" in entries[0]["reason"]
    assert "expected str" in entries[1]["reason"]
    assert [t.answer for t in taskpack.open(tmp_path / "out").split("train")] == ["2", "1080", "-3"]


def test_duplicate_ids_stop_or_are_skipped(tmp_path: Path) -> None:
    rows = [
        {"task_id": "A", "prompt": "p", "canonical_solution": "s", "test": "t", "entry_point": "f"}
    ] * 2
    src = write_lines(tmp_path / "he.jsonl", [json.dumps(r) for r in rows])
    with pytest.raises(InvalidTask, match=r"he.jsonl:2: id: duplicate id 'A'"):
        import_sources(tmp_path / "out", {"test": [str(src)]}, "humaneval", name="h")
    assert not (tmp_path / "out").exists()
    result = import_sources(
        tmp_path / "out", {"test": [str(src)]}, "humaneval", name="h", skip_invalid=True
    )
    assert result.manifest.splits["test"].rows == 1
    assert result.skipped[0]["line"] == 2 and result.skipped[0]["id"] == "A"


def test_missing_required_column_stops_even_when_skipping(tmp_path: Path) -> None:
    src = tmp_path / "t.csv"
    src.write_text("id,question\n1,hi\n")
    with pytest.raises(TaskpackError, match=r"missing required column\(s\) \['prompt'\]"):
        import_sources(
            tmp_path / "out",
            {"train": [str(src)]},
            "kaggle",
            name="k",
            options={"prompt_column": "prompt"},
            skip_invalid=True,
        )
    assert not (tmp_path / "out").exists()


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "empty.jsonl", [])
    with pytest.raises(TaskpackError, match="no rows"):
        import_sources(tmp_path / "out", {"train": [str(src)]}, "gsm8k", name="g")
    assert not (tmp_path / "out").exists()


def test_non_utf8_line_is_reported(tmp_path: Path) -> None:
    src = tmp_path / "train.jsonl"
    src.write_bytes(b'{"question": "caf\xe9", "answer": "#### 1"}\n')
    with pytest.raises(InvalidTask, match=r"train\.jsonl:1: not valid UTF-8"):
        list(read_source(src, "gsm8k"))


def test_gzip_zstd_and_fsspec_urls_read_the_same_tasks(tmp_path: Path) -> None:
    raw = "".join(line + "\n" for line in good_lines()).encode()
    (tmp_path / "t.jsonl.gz").write_bytes(gzip.compress(raw))
    (tmp_path / "t.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(raw))
    (tmp_path / "t.jsonl").write_bytes(raw)
    import fsspec

    with fsspec.open("memory://bucket/t.jsonl", "wb") as f:
        f.write(raw)
    sources = [
        str(tmp_path / "t.jsonl"),
        str(tmp_path / "t.jsonl.gz"),
        str(tmp_path / "t.jsonl.zst"),
        f"file://{tmp_path / 't.jsonl'}",
        "memory://bucket/t.jsonl",
    ]
    digests = [[t.digest for t in read_source(s, "gsm8k")] for s in sources]
    assert len(digests[0]) == 3 and all(d == digests[0] for d in digests)


def test_cli_convert_several_sources_into_splits(tmp_path: Path) -> None:
    train = write_lines(tmp_path / "train.jsonl", good_lines()[:2])
    test = write_lines(tmp_path / "other.jsonl", good_lines()[2:])
    out = tmp_path / "math.taskset"
    result = CliRunner().invoke(
        main,
        [
            "convert",
            str(train),
            f"test={test}",
            "--from",
            "gsm8k",
            "-o",
            str(out),
            "--version",
            "1.2.0",
            "--license",
            "MIT",
        ],
    )
    assert result.exit_code == 0, result.output
    m = taskpack.open(out).manifest
    assert (m.name, m.version, m.license) == ("math", "1.2.0", "MIT")
    assert {n: s.rows for n, s in m.splits.items()} == {"train": 2, "test": 1}


def test_cli_convert_bad_row_exits_1_and_skip_invalid_reports(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "train.jsonl", [*good_lines(), "{oops"])
    out = tmp_path / "g.taskset"
    result = CliRunner().invoke(main, ["convert", str(src), "--from", "gsm8k", "-o", str(out)])
    assert result.exit_code == 1
    assert f"{src}:4: not valid JSON" in result.output
    assert not out.exists()
    result = CliRunner().invoke(
        main, ["convert", str(src), "--from", "gsm8k", "-o", str(out), "--skip-invalid"]
    )
    assert result.exit_code == 0, result.output
    report = tmp_path / "g.taskset.skipped.jsonl"
    assert [json.loads(x)["line"] for x in report.read_text().splitlines()] == [4]
    result = CliRunner().invoke(main, ["convert", str(src), "--from", "nope", "-o", "x"])
    assert result.exit_code == 1 and "no format 'nope'" in result.output
