"""A corpus of hostile and broken inputs: each one ends in exit code 1 and one error line that
names the place, with no traceback and nothing written."""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zstandard
from click.testing import CliRunner

from taskpack.cli import main
from taskpack.errors import TaskpackError

ROW = json.dumps({"question": "1+1?", "answer": "#### 2"})


def jsonl(path: Path, text: str) -> list[str]:
    path.write_text(text, encoding="utf-8")
    return [str(path), "--from", "gsm8k"]


def deep(tmp: Path) -> list[str]:
    return jsonl(tmp / "deep.jsonl", "[" * 100_000 + "]" * 100_000 + "\n")


def huge_int(tmp: Path) -> list[str]:
    return jsonl(tmp / "int.jsonl", '{"question": "q", "answer": ' + "9" * 5000 + "}\n")


def broken_gz(tmp: Path) -> list[str]:
    data = gzip.compress((ROW + "\n").encode() * 1000)
    (tmp / "cut.jsonl.gz").write_bytes(data[: len(data) // 2])
    return [str(tmp / "cut.jsonl.gz"), "--from", "gsm8k"]


def not_gz(tmp: Path) -> list[str]:
    (tmp / "fake.jsonl.gz").write_bytes(b"this is not gzip at all")
    return [str(tmp / "fake.jsonl.gz"), "--from", "gsm8k"]


def broken_zst(tmp: Path) -> list[str]:
    data = zstandard.ZstdCompressor().compress((ROW + "\n").encode() * 1000)
    (tmp / "cut.jsonl.zst").write_bytes(data[: len(data) // 2])
    return [str(tmp / "cut.jsonl.zst"), "--from", "gsm8k"]


def broken_parquet(tmp: Path) -> list[str]:
    (tmp / "train.parquet").write_bytes(b"PAR1 not really parquet PAR1")
    return [str(tmp / "train.parquet"), "--from", "gsm8k"]


def broken_zip(tmp: Path) -> list[str]:
    (tmp / "data.zip").write_bytes(b"PK\x03\x04 truncated")
    return [str(tmp / "data.zip"), "--from", "kaggle", "--preset", "multiple-choice"]


def directory_named_jsonl(tmp: Path) -> list[str]:
    (tmp / "dir.jsonl").mkdir()
    return [str(tmp / "dir.jsonl"), "--from", "gsm8k"]


def fifo(tmp: Path) -> list[str]:
    os.mkfifo(tmp / "pipe.jsonl")
    return [str(tmp / "pipe.jsonl"), "--from", "gsm8k"]


def gzip_bomb(tmp: Path) -> list[str]:
    os.environ["TASKPACK_MAX_DECOMPRESSED"] = str(1 << 20)  # restored by the test's monkeypatch
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb") as f:
        for _ in range(64):
            f.write(b" " * (1 << 20))
    (tmp / "bomb.jsonl.gz").write_bytes(buf.getvalue())
    return [str(tmp / "bomb.jsonl.gz"), "--from", "gsm8k"]


def long_line(tmp: Path) -> list[str]:
    os.environ["TASKPACK_MAX_LINE_BYTES"] = "1000"
    return jsonl(tmp / "long.jsonl", json.dumps({"question": "x" * 5000, "answer": "#### 1"}))


def alias_bomb(levels: int) -> str:
    """Each level a list of nine aliases of the one before: 9**levels values from ~1 KB."""
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def yaml_bomb(tmp: Path) -> list[str]:
    task = tmp / "tb" / "t"
    task.mkdir(parents=True)
    (task / "task.yaml").write_text(alias_bomb(9) + "instruction: boom\n")
    return [str(tmp / "tb"), "--from", "terminal-bench"]


def mapping_alias_bomb(tmp: Path) -> list[str]:
    (tmp / "map.yaml").write_text(alias_bomb(10))
    (tmp / "t.csv").write_text("q,a\n1,2\n")
    return [str(tmp / "t.csv"), "--from", "kaggle", "--mapping", str(tmp / "map.yaml")]


def all_rows_bad_skipped(tmp: Path) -> list[str]:
    return [*jsonl(tmp / "bad.jsonl", '{"question": 1}\n{"x": 2}\n'), "--skip-invalid"]


def encrypted_zip_member(tmp: Path) -> list[str]:
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("train.csv", "prompt,A,B,answer\nq,1,2,A\n")
    data = bytearray(buf.getvalue())
    data[6] |= 1  # the "encrypted" flag, in the local header and the central directory
    data[data.find(b"PK\x01\x02") + 8] |= 1
    (tmp / "enc.zip").write_bytes(bytes(data))
    return [str(tmp / "enc.zip"), "--from", "kaggle", "--preset", "multiple-choice"]


def template(text: str) -> Callable[[Path], list[str]]:
    def case(tmp: Path) -> list[str]:
        (tmp / "t.csv").write_text("prompt,A,B,answer\nq,1,2,A\n")
        return [str(tmp / "t.csv"), "--from", "kaggle", "-O", f"prompt_template={text}"]

    return case


def payload(value: object) -> Callable[[Path], list[str]]:
    def case(tmp: Path) -> list[str]:
        row = {"question": "q", "answer": "a", "taskpack": value}
        return [*jsonl(tmp / "gem.jsonl", json.dumps(row) + "\n")[:1], "--from", "gem"]

    return case


def file_and_folder(tmp: Path) -> list[str]:
    row = {
        "question": "q",
        "answer": "a",
        "taskpack": {
            "id": "t",
            "prompt": "q",
            "files": [{"path": "a", "data": "MQ=="}, {"path": "a/b", "data": "Mg=="}],
        },
    }
    return [*jsonl(tmp / "gem.jsonl", json.dumps(row) + "\n")[:1], "--from", "gem"]


CASES: dict[str, Callable[[Path], list[str]]] = {
    "an encrypted zip member": encrypted_zip_member,
    "prompt_template with a lone {": template("{prompt"),
    "prompt_template reaching into objects": template("{prompt.__class__}"),
    "prompt_template with an empty field": template("{}"),
    "prompt_template naming no column": template("{nope}"),
    "an embedded task that is not JSON": payload("{not json"),
    "an embedded task that is not an object": payload(5),
    "an embedded task that is invalid": payload({"id": "", "prompt": 3}),
    "an embedded file with no content": payload({"id": "t", "files": [{"path": "a"}]}),
    "an embedded file with bad base64": payload({"id": "t", "files": [{"base64": "%%"}]}),
    "embedded files not a list": payload({"id": "t", "files": "a"}),
    "files a and a/b in one task": file_and_folder,
    "nesting 100000 deep": deep,
    "a 5000-digit integer": huge_int,
    "truncated gzip": broken_gz,
    "not gzip": not_gz,
    "truncated zstd": broken_zst,
    "broken parquet": broken_parquet,
    "broken zip": broken_zip,
    "a directory named .jsonl": directory_named_jsonl,
    "a FIFO": fifo,
    "a gzip bomb": gzip_bomb,
    "a line over the limit": long_line,
    "YAML aliases in task.yaml": yaml_bomb,
    "YAML aliases in --mapping": mapping_alias_bomb,
    "every row bad with --skip-invalid": all_rows_bad_skipped,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_error_line(
    tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("TASKPACK_MAX_DECOMPRESSED", "TASKPACK_MAX_LINE_BYTES"):
        monkeypatch.setenv(name, "")  # a case may set it; the monkeypatch restores it after
    src = tmp_path / "src"
    src.mkdir()
    args = CASES[case](src)
    out = tmp_path / "out.taskset"
    result = CliRunner().invoke(main, ["convert", *args, "-o", str(out), "-q"])
    assert result.exit_code == 1, (case, result.output, result.exception)
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.output
    assert str(src) in errors[0] or "src" in errors[0] or "prompt_template" in errors[0], errors[0]
    assert not out.exists() and not any(p.name.startswith(".out") for p in tmp_path.iterdir())


def test_a_fifo_in_place_of_a_split_or_manifest_is_refused(tmp_path: Path) -> None:
    import taskpack

    taskpack.write(tmp_path / "ts", {"test": [{"id": "a", "prompt": "q"}]}, name="t")
    split = tmp_path / "ts" / "splits" / "test.parquet"
    split.unlink()
    os.mkfifo(split)
    for command in (["validate"], ["ls", "--split", "test"]):
        result = CliRunner().invoke(main, [*command, str(tmp_path / "ts")])
        assert result.exit_code == 1 and "not a regular file" in result.output, result.output
    (tmp_path / "ts" / "manifest.json").unlink()
    os.mkfifo(tmp_path / "ts" / "manifest.json")
    result = CliRunner().invoke(main, ["info", str(tmp_path / "ts")])
    assert result.exit_code == 1 and "not a regular file" in result.output


# --- hostile rows in a task set a reader opens -----------------------------------------------


def _hostile(path: Path, mutate: Callable[[dict[str, Any]], None]) -> None:
    """A task set whose first row is edited by `mutate`, its manifest re-pointed at the new
    bytes (so only reading the rows can tell)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import taskpack
    from taskpack.base.objects import MANIFEST, file_sha256
    from taskpack.model import SplitInfo

    task = {"id": "t0", "prompt": "q", "files": [{"path": "x", "data": b"1"}]}
    taskpack.write(path, {"test": [task, {**task, "id": "t1"}]}, name="h")
    parquet = path / "splits" / "test.parquet"
    table = pq.read_table(parquet)
    rows = table.to_pylist()
    mutate(rows[0])
    schema = pa.schema([f.with_nullable(True) for f in table.schema])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), parquet)
    m = taskpack.open(path).manifest
    info = m.splits["test"].model_dump()
    info.update(sha256=file_sha256(parquet), bytes=parquet.stat().st_size)
    m.splits["test"] = SplitInfo(**info)
    (path / MANIFEST).write_text(m.model_dump_json())


def _set(key: str, value: object) -> Callable[[dict[str, Any]], None]:
    return lambda row: row.__setitem__(key, value)


def _set_file(key: str, value: object) -> Callable[[dict[str, Any]], None]:
    return lambda row: row["files"][0].__setitem__(key, value)


HOSTILE_ROWS: dict[str, Callable[[dict[str, Any]], None]] = {
    "prompt not JSON": _set("prompt", "[{"),
    "prompt not a list": _set("prompt", "5"),
    "an unknown item type": _set("prompt", '[{"type": "nope"}]'),
    "metadata nested 5000 deep": _set("metadata", "[" * 5000 + "]" * 5000),
    "a 5000-digit answer": _set("answer", "9" * 5000),
    "an unknown reward kind": _set("reward", '{"kind": "nope"}'),
    "files null": _set("files", None),
    "a file path null": _set_file("path", None),
    "a file path ../x": _set_file("path", "../x"),
    "a file mode null": _set_file("mode", None),
    "a setuid file mode": _set_file("mode", 0o4755),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_ROWS))
@pytest.mark.parametrize("command", ["validate", "show", "export", "materialize"])
def test_hostile_rows_are_one_error_line(tmp_path: Path, case: str, command: str) -> None:
    ts = tmp_path / "ts"
    _hostile(ts, HOSTILE_ROWS[case])
    out = tmp_path / "out"
    args = {
        "validate": ["validate", str(ts)],
        "show": ["show", str(ts), "t0"],
        "export": ["export", str(ts), "--to", "harbor", "-o", str(out)],
    }
    if command == "materialize":
        import taskpack

        with pytest.raises(TaskpackError):
            taskpack.open(ts).split("test")[0].materialize(out)
        assert not out.exists() or not any(out.rglob("*"))
        return
    result = CliRunner().invoke(main, args[command])
    assert result.exit_code == 1, (case, result.output, result.exception)
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.output
    assert "row 0" in result.output or "t0" in result.output, result.output
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


# --- bounded, complete input: run as a process, so a crash is a signal, not a lost test ----------

DEEP = "[" * 20_000 + "]" * 20_000
GOOD_ROWS = {  # a reader and rows of its shape, the last with a field nested 20000 deep
    "gsm8k": {"question": "1+1?", "answer": "#### 2"},
    "humaneval": {
        "task_id": "HumanEval/0",
        "prompt": "def f():\n",
        "canonical_solution": "    return 1\n",
        "test": "def check(c):\n    assert c() == 1\n",
        "entry_point": "f",
    },
    "mbpp": {
        "task_id": 1,
        "text": "t",
        "code": "def f():\n    return 1",
        "test_list": ["assert f() == 1"],
    },
    "nemo": {"responses_create_params": {"input": [{"role": "user", "content": "hi"}]}},
    "kaggle": {"id": 0, "prompt": "q", **{c: c for c in "ABCDE"}, "answer": "A"},
}


def _swebench_row() -> dict[str, Any]:
    from .conftest import DATA

    with open(DATA / "swebench" / "swebench_lite_test.jsonl", encoding="utf-8") as f:
        return dict(json.loads(f.readline()))


def run_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    import subprocess
    import sys

    full = {**os.environ, **(env or {})}
    done = subprocess.run(
        [sys.executable, "-m", "taskpack", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=full,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def one_error_line(code: int, output: str) -> str:
    assert code == 1, (code, output[-2000:])  # a signal is a negative code
    assert "Traceback" not in output, output[-2000:]
    errors = [line for line in output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, output[-2000:]
    return errors[0]


@pytest.mark.parametrize("reader", [*sorted(GOOD_ROWS), "swebench", "swebench tests"])
def test_a_row_nested_20000_deep_is_one_error_line_in_every_reader(
    tmp_path: Path, reader: str
) -> None:
    fmt = reader.split()[0]
    first = _swebench_row() if fmt == "swebench" else GOOD_ROWS[fmt]
    ids = {"humaneval": "task_id", "mbpp": "task_id", "swebench": "instance_id", "kaggle": "id"}
    key = ids.get(fmt)

    def row(i: int) -> dict[str, Any]:
        if key is None:
            return dict(first)
        value = first[key]
        return {**first, key: value + i if isinstance(value, int) else f"{value}{i}"}

    text = "\n".join(json.dumps(row(i)) for i in range(3))
    good = row(3)
    deep = {**good, "x": json.loads("[" * 50 + "]" * 50)}
    if reader == "swebench tests":  # nested inside a field's JSON text
        line = json.dumps({**good, "FAIL_TO_PASS": DEEP})
    else:
        line = json.dumps(deep).replace("[" * 50 + "]" * 50, DEEP)
    src = tmp_path / "train.jsonl"
    src.write_text(text + "\n" + line + "\n", encoding="utf-8")
    extra = ["--preset", "multiple-choice"] if fmt == "kaggle" else []
    out = tmp_path / "out"
    error = one_error_line(*run_cli("convert", str(src), "--from", fmt, *extra, "-o", str(out)))
    assert "train.jsonl:4" in error and "nested" in error, error
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def _zst_cut_at_a_block(tmp: Path) -> Path:
    rows = b"".join(
        json.dumps({"question": f"{i}+1?", "answer": f"#### {i + 1}"}).encode() + b"\n"
        for i in range(20_000)
    )
    data = zstandard.ZstdCompressor(level=3).compress(rows)
    path = tmp / "cut.jsonl.zst"
    path.write_bytes(data[: len(data) // 2])
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(path.read_bytes()))
    assert 0 < len(reader.read()) < len(rows)  # zstandard's own reader says nothing
    return path


def _blank_lines_bz2(tmp: Path) -> Path:
    import bz2

    path = tmp / "blank.jsonl.bz2"
    path.write_bytes(bz2.compress(b"\n" * (400 << 20)))  # 8 GB would be 6.6 KB
    return path


def _garbage(suffix: str) -> Callable[[Path], Path]:
    def case(tmp: Path) -> Path:
        path = tmp / f"garbage.jsonl{suffix}"
        path.write_bytes(
            b"\x28\xb5\x2f\xfd" + os.urandom(2000)
            if suffix == ".zst"
            else b"\xfd7zXZ\x00" + os.urandom(2000)
        )
        return path

    return case


COMPRESSED: dict[str, Callable[[Path], Path]] = {
    "zstd cut at a block boundary": _zst_cut_at_a_block,
    "bzip2 of blank lines": _blank_lines_bz2,
    "zstd garbage": _garbage(".zst"),
    "xz garbage": _garbage(".xz"),
}


@pytest.mark.parametrize("case", sorted(COMPRESSED))
def test_compressed_input_ends_where_its_format_says(tmp_path: Path, case: str) -> None:
    src = COMPRESSED[case](tmp_path)
    out = tmp_path / "out"
    error = one_error_line(*run_cli("convert", str(src), "--from", "gsm8k", "-o", str(out)))
    assert src.name in error, error
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_decompression_is_bounded_in_time(tmp_path: Path) -> None:
    path = tmp_path / "slow.jsonl.gz"
    path.write_bytes(gzip.compress((ROW + "\n").encode() * 200_000))
    code, output = run_cli(
        "convert",
        str(path),
        "--from",
        "gsm8k",
        "-o",
        str(tmp_path / "out"),
        env={"TASKPACK_MAX_DECOMPRESS_SECONDS": "0"},
    )
    assert "TASKPACK_MAX_DECOMPRESS_SECONDS" in one_error_line(code, output)


def _deep_documents(tmp: Path) -> dict[str, list[str]]:
    """Commands that read a document nested 100000 deep, each of another kind."""
    deep = "[" * 100_000 + "]" * 100_000

    def folder(name: str, files: dict[str, str]) -> Path:
        task = tmp / name / "t"
        (task / "tests").mkdir(parents=True)
        for rel, text in files.items():
            (task / rel).write_text(text)
        return tmp / name

    def convert(src: Path, fmt: str) -> list[str]:
        return ["convert", str(src), "--from", fmt, "-o", str(tmp / f"out-{src.name}")]

    block = "".join("  " * i + "a:\n" for i in range(1500)) + "  " * 1500 + "b\n"
    gem = tmp / "gem.jsonl"
    gem.write_text(json.dumps({"question": "q", "answer": "a", "taskpack": DEEP * 5}) + "\n")
    split = tmp / "split"
    (split / "t").mkdir(parents=True)
    (split / "index.json").write_text('{"tasks": ' + deep + "}")
    harbor = {"task.toml": f"a = {deep}\n", "instruction.md": "Do it.\n"}
    return {
        "TOML task.toml": convert(folder("harbor", harbor), "harbor"),
        "YAML flow": convert(
            folder("tb", {"task.yaml": f"instruction: {deep}\n"}), "terminal-bench"
        ),
        "YAML block": convert(folder("block", {"task.yaml": block}), "terminal-bench"),
        "embedded task text": convert(gem, "gem"),
        "folder index": convert(split, "harbor"),
    }


def test_documents_nested_100000_deep_are_one_error_line(tmp_path: Path) -> None:
    for case, args in _deep_documents(tmp_path).items():
        error = one_error_line(*run_cli(*args))
        assert "nested" in error, (case, error)


@pytest.mark.parametrize("registry", ["local", "s3"])
def test_a_hostile_tag_file_is_passed_over(
    tmp_path: Path, registry: str, request: pytest.FixtureRequest
) -> None:
    """A tag file of 100000 nested `[` names no version: `ls` lists the set without it and
    `info NAME@TAG` says the tag names none, in one line."""
    import taskpack
    from taskpack.registry import open_registry

    url = str(tmp_path / "reg") if registry == "local" else str(request.getfixturevalue("bucket"))
    taskpack.write(tmp_path / "ts", {"test": [{"id": "a", "prompt": "q"}]}, name="t")
    code, output = run_cli("publish", str(tmp_path / "ts"), "--registry", url)
    assert code == 0, output
    reg = open_registry(url)
    hostile = ("[" * 100_000).encode()
    if registry == "local":
        (tmp_path / "reg" / "sets" / "t" / "tags" / "evil.json").write_bytes(hostile)
    else:
        reg.store.write("sets/t/tags/evil.json", hostile)  # type: ignore[attr-defined]
    code, output = run_cli("ls", "t", "--registry", url)
    assert code == 0 and "Traceback" not in output and "0.1.0" in output, output
    assert "evil" not in output
    error = one_error_line(*run_cli("info", "t@evil", "--registry", url))
    assert "evil" in error, error


@pytest.mark.slow
@pytest.mark.parametrize("codec", ["gz", "zst", "bz2", "xz"])
def test_a_source_cut_anywhere_is_one_error_line(tmp_path: Path, codec: str) -> None:
    """40 cuts of each compressed file, spread over its length: every one is refused in one
    line (none imports part of the rows), however the codec's blocks fall."""
    import bz2
    import lzma
    import random

    rows = "".join(
        json.dumps({"question": f"{i}?", "answer": f"#### {i}"}) + "\n" for i in range(20_000)
    )
    pack = {
        "gz": gzip.compress,
        "zst": zstandard.ZstdCompressor(level=3).compress,
        "bz2": bz2.compress,
        "xz": lzma.compress,
    }[codec]
    whole = pack(rows.encode())
    cuts = sorted(random.Random(codec).sample(range(1, len(whole)), 40))
    for cut in cuts:
        src = tmp_path / f"cut{cut}.jsonl.{codec}"
        src.write_bytes(whole[:cut])
        out = tmp_path / f"out{cut}"
        result = CliRunner().invoke(
            main, ["convert", str(src), "--from", "gsm8k", "-o", str(out), "-q"]
        )
        assert result.exit_code == 1 and "Traceback" not in result.output, (cut, result.output)
        errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1 and src.name in errors[0], (cut, result.output)
        assert not out.exists()


@pytest.mark.parametrize(
    ("name", "unit"),
    [
        ("TASKPACK_MAX_LINE_BYTES", "a number of bytes"),
        ("TASKPACK_MAX_DEPTH", "a number of levels"),
        ("TASKPACK_MAX_DECOMPRESSED", "a number of bytes"),
        ("TASKPACK_MAX_RATIO", "a whole ratio"),
        ("TASKPACK_MAX_DECOMPRESS_SECONDS", "whole seconds"),
    ],
)
def test_a_setting_that_is_no_number_is_one_error_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, unit: str
) -> None:
    """Never read as its default: a limit mistyped would otherwise be no limit the user set."""
    source = tmp_path / "rows.jsonl.gz"
    source.write_bytes(gzip.compress((ROW + "\n").encode()))
    out = tmp_path / "out.taskset"
    monkeypatch.setenv(name, "1.5x")
    args = ["convert", str(source), "--from", "gsm8k", "-o", str(out), "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert result.output.strip() == f"Error: {name}='1.5x': expected {unit}", result.output
    assert not out.exists()
    monkeypatch.setenv(name, "")  # empty is unset: the default holds
    assert CliRunner().invoke(main, args).exit_code == 0
