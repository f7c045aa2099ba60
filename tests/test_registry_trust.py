"""Registry locations parsed once, one TaskSet over any object source, copies between
registries, and nothing from a registry believed before it is checked."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import taskpack
from taskpack.base.digests import version_digest
from taskpack.base.objects import file_sha256
from taskpack.cli import main
from taskpack.errors import TaskpackError
from taskpack.registry import Location, open_registry
from taskpack.registry.client import RegistryObjects, publish, write_lockfile
from taskpack.storage.taskset import FolderObjects, TaskSet

from .test_registry import build


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


# --- locations ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["my registry", "100% done", "régistre 登録", "a%20b"])
def test_folders_with_any_name_publish_and_load(tmp_path: Path, name: str) -> None:
    where = tmp_path / name
    publish(build(tmp_path / "a", "1.0.0"), registry=str(where))
    assert (where / "sets" / "arith" / "versions" / "1.0.0.json").is_file()
    assert len(taskpack.load("arith@1.0.0", split="test", registry=str(where))) == 2
    # The URL taskpack prints for it reads back as the same folder.
    url = Location.parse(str(where)).url
    assert url.startswith("file:///") and Location.parse(url).path == where.resolve()
    assert len(taskpack.load("arith@1.0.0", split="test", registry=url)) == 2
    assert not list(tmp_path.glob("*%25*")), "a folder name was escaped twice"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="/\x00", codec="utf-8"), min_size=1))
def test_location_parse_is_idempotent(name: str) -> None:
    if name in (".", ".."):
        return
    first = Location.parse(f"/tmp/reg/{name}")
    assert Location.parse(first.url) == first
    assert Location.parse(first) is first


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("s3://bucket/a/b/", Location("s3", bucket="bucket", prefix="a/b")),
        ("s3://bucket", Location("s3", bucket="bucket", prefix="")),
        ("hf://someone", Location("hf", owner="someone")),
        ("HF://someone/", Location("hf", owner="someone")),
        ("file://localhost/srv/reg", Location("file", path=Path("/srv/reg"))),
        ("file:///srv/my%20reg", Location("file", path=Path("/srv/my reg"))),
        ("http://10.0.0.5:8000/", Location("http", base="http://10.0.0.5:8000")),
        ("https://mirror.example/reg", Location("https", base="https://mirror.example/reg")),
    ],
)
def test_location_spellings(text: str, expected: Location) -> None:
    assert Location.parse(text) == expected
    assert Location.parse(expected.url) == expected


@pytest.mark.parametrize(
    "text",
    ["gs://bucket/p", "ftp://example.com/reg", "s3://", "hf://owner/extra", "file://host/x"],
)
def test_unknown_or_malformed_locations_are_refused(tmp_path: Path, text: str) -> None:
    os.chdir(tmp_path)
    with pytest.raises(TaskpackError, match="registry") as info:
        open_registry(text)
    if text.startswith(("gs", "http")):
        assert "known: file://, s3://, hf://" in str(info.value)
    assert list(tmp_path.iterdir()) == [], "nothing may be created for a refused location"
    code, out = cli("ls", "--registry", text)
    assert code == 1 and out.count("\n") == 1


# --- one TaskSet ---------------------------------------------------------------------------


def test_a_folder_and_a_published_version_are_one_class(tmp_path: Path) -> None:
    reg = str(tmp_path / "reg")
    path = build(tmp_path / "a", "1.0.0")
    publish(path, registry=reg)
    folder, published = taskpack.open(path), taskpack.open("arith@1", registry=reg)
    assert type(folder) is type(published) is TaskSet
    assert isinstance(folder.objects, FolderObjects)
    assert isinstance(published.objects, RegistryObjects)
    assert folder.manifest.digest == published.manifest.digest
    assert list(folder.split("train")) == list(published.split("train"))
    assert taskpack.verify(published) == []
    assert taskpack.diff(folder, published)["train"].changed == []
    code, out = cli("validate", "arith@1.0.0", "--registry", reg)
    assert code == 0 and "arith@1.0.0 is valid: 8 tasks" in out
    for args in (
        ["info", "arith@1"],
        ["ls", "arith@1", "-s", "test"],
        ["show", "arith@1", "t100", "-s", "test"],
    ):
        code, out = cli(*args, "--registry", reg)
        assert code == 0 and out, args


def test_validate_of_a_published_version_hashes_every_object_again(tmp_path: Path) -> None:
    """A stamp may say a cached object was checked; `validate NAME@VER` reads the bytes."""
    bucket_reg = tmp_path / "reg"
    publish(build(tmp_path / "a", "1.0.0"), registry=str(bucket_reg))
    ts = taskpack.open("arith@1.0.0", registry=str(bucket_reg))
    taskpack.pull("arith@1.0.0", registry=str(bucket_reg), files=True)
    blob = next(iter(ts.manifest.splits["train"].blobs))
    stored = ts.object(blob)
    st = stored.stat()
    stored.write_bytes(b"Z" * st.st_size)  # same size, same mtime: only a hash can tell
    os.utime(stored, ns=(st.st_atime_ns, st.st_mtime_ns))
    code, out = cli("validate", "arith@1.0.0", "--registry", str(bucket_reg))
    assert code == 1 and f"does not hash to {blob}" in out


def test_library_equivalents_of_the_cli(tmp_path: Path) -> None:
    reg = str(tmp_path / "reg")
    publish(build(tmp_path / "a", "1.0.0"), registry=reg)
    publish(build(tmp_path / "b", "1.1.0", salt="b"), registry=reg, tags=("gold",))
    assert taskpack.listing(reg) == {"arith": "1.1.0"}
    assert taskpack.versions("arith", reg) == {"1.0.0": [], "1.1.0": ["gold", "latest"]}
    d = taskpack.diff(
        taskpack.open("arith@1.0.0", registry=reg), taskpack.open("arith@1.1.0", registry=reg)
    )
    assert d["train"].changed == [f"t{i}" for i in range(5)] + ["t999"]
    assert d["test"].added == d["test"].removed == d["test"].changed == []
    from taskpack.importer import sources_by_split, split_of

    assert split_of("data/gsm8k-test.jsonl.gz") == "test" and split_of("x.jsonl") == "train"
    assert sources_by_split(["a_valid.csv", "dev=b.csv", "c.csv"], None) == {
        "valid": ["a_valid.csv"],
        "dev": ["b.csv"],
        "train": ["c.csv"],
    }


# --- copies between registries --------------------------------------------------------------


def test_copy_local_to_s3_to_hub(tmp_path: Path, bucket: str, hub: Any) -> None:
    local = str(tmp_path / "reg")
    hf = f"hf://{hub.owner}"
    m, _ = publish(build(tmp_path / "a", "1.0.0"), registry=local)
    code, out = cli("publish", "arith@1.0.0", "--from-registry", local, "--registry", bucket, "-q")
    assert code == 0 and f"published arith@1.0.0 ({m.digest}) to {bucket}" in out
    code, out = cli("publish", "arith@1", "--from-registry", bucket, "--registry", hf, "-q")
    assert code == 0 and f"({m.digest})" in out
    for where in (bucket, hf):
        copied = open_registry(where).resolve("arith@1.0.0")
        assert copied.digest == m.digest and copied.created == m.created
    split = taskpack.load(f"arith@{m.digest}", split="train", registry=hf)
    big = split.get("t999")
    assert big is not None and len(big.file("big.bin").read_bytes()) > 64 * 1024
    assert publish("arith@1.0.0", source_registry=local, registry=hf)[1] is False


def test_a_copy_between_registries_checks_each_split_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fetch checks the source's rows (once per machine); the publish does not again,
    and `validate` does."""
    from taskpack.storage import integrity, rows

    source, dest = str(tmp_path / "from"), str(tmp_path / "to")
    m, _ = publish(build(tmp_path / "a", "1.0.0"), registry=source)
    checked: list[str] = []

    def counted(parquets: Any, name: str, *args: Any, **kwargs: Any) -> list[str]:
        checked.append(name)
        return check_split(parquets, name, *args, **kwargs)

    check_split = rows.check_split
    for module in (rows, integrity):  # the fetch's and the publish's
        monkeypatch.setattr(module, "check_split", counted)
    copied, created = publish("arith@1.0.0", source_registry=source, registry=dest)
    assert created and copied.digest == m.digest
    assert sorted(checked) == sorted(m.splits)  # each split once: was twice
    checked.clear()
    assert integrity.verify(taskpack.open("arith@1.0.0", registry=source)) == []
    assert sorted(checked) == sorted(m.splits)  # `validate` checks again, by today's rules
    assert taskpack.load("arith@1.0.0", split="train", registry=dest).get("t1") is not None


# --- verified reads ------------------------------------------------------------------------


def test_a_replaced_object_in_a_local_registry_is_refused(tmp_path: Path) -> None:
    """Whatever reads the replaced object refuses it; a warm start, which reads the decoded
    copy a checked load left in the cache, goes on giving the checked tasks."""
    reg = tmp_path / "reg"
    publish(build(tmp_path / "a", "1.0.0"), registry=str(reg))
    before = taskpack.load("arith@1.0.0", split="train", registry=str(reg))
    checked = [t.model_dump() for t in before]
    assert len(checked) == 6
    sha = open_registry(str(reg)).resolve("arith@1.0.0").splits["train"].sha256
    obj = reg / "objects" / "sha256" / sha[:2] / sha
    other = build(tmp_path / "b", "1.0.0", salt="evil") / "splits" / "train.parquet"
    st = obj.stat()
    obj.unlink()
    shutil.copy2(other, obj)  # like `cp -p`: the old mtime comes along
    os.utime(obj, ns=(st.st_atime_ns, st.st_mtime_ns))
    warm = taskpack.load("arith@1.0.0", split="train", registry=str(reg))
    assert [t.model_dump() for t in warm] == checked
    with pytest.raises(TaskpackError, match="does not hash to"):
        taskpack.open("arith@1.0.0", registry=str(reg)).split("train")[0]
    with pytest.raises(TaskpackError, match="does not hash to"):
        warm.filter(id=["x"])  # what the copy does not answer reads the registry's object
    code, out = cli("pull", "arith@1.0.0", "--registry", str(reg))
    assert code == 1 and "does not hash to" in out


def _forge(reg: Path, name: str, version: str, mutate: Any) -> None:
    """Rewrite `name@version`'s test split in a local registry with `mutate(rows)` and make its
    manifest name the new bytes, keeping its split digests and sealing the version digest over
    the new sizes: what a hostile registry writer can do. The version digest then differs from
    the published one, so a pin refuses the forgery before any row is read; by name, the row
    checks must."""
    from taskpack.base.objects import sha256_relpath

    key = reg / "sets" / name / "versions" / f"{version}.json"
    manifest = json.loads(key.read_text())
    info = manifest["splits"]["test"]
    table = pq.read_table(reg / "objects" / sha256_relpath(info["sha256"]))
    rows = table.to_pylist()
    mutate(rows)
    tmp = reg / "forged.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), tmp)
    sha = file_sha256(tmp)
    target = reg / "objects" / sha256_relpath(sha)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp.rename(target)
    info.update(sha256=sha, bytes=target.stat().st_size)
    manifest["digest"] = version_digest(manifest)
    key.write_text(json.dumps(manifest))


def test_rows_that_do_not_chain_to_the_digest_are_never_served(tmp_path: Path) -> None:
    """Swapped split bytes under kept digests pass every manifest check; the rows do not."""
    reg = tmp_path / "reg"
    m, _ = publish(build(tmp_path / "a", "1.0.0"), registry=str(reg))
    lock = tmp_path / "taskpack.lock"
    write_lockfile(["arith@1.0.0"], lock, registry=str(reg))
    shutil.rmtree(os.environ["TASKPACK_CACHE"])

    def edit_answer(rows: list[dict[str, Any]]) -> None:
        rows[0]["answer"] = json.dumps("forged")

    _forge(reg, "arith", "1.0.0", edit_answer)
    with pytest.raises(TaskpackError, match=r"refused: split 'test' row 0 .*does not match"):
        taskpack.load("arith@1.0.0", split="test", registry=str(reg))

    def edit_answer_and_digest(rows: list[dict[str, Any]]) -> None:
        from taskpack.storage.rows import decoded, row_digest

        rows[0]["answer"] = json.dumps("forged")
        rows[0]["digest"] = row_digest(decoded(dict(rows[0]), 2))

    shutil.rmtree(os.environ["TASKPACK_CACHE"])
    _forge(reg, "arith", "1.0.0", edit_answer_and_digest)
    with pytest.raises(TaskpackError, match=r"split 'test': digest .* does not match its tasks"):
        taskpack.load("arith@1.0.0", split="test", registry=str(reg))
    # A digest reference or a lockfile pins the listed sizes too, so neither the untouched
    # train split nor anything else of the forged version is served.
    refused = r"differs from the lockfile|no version of 'arith' matches|not in the cache"
    for kwargs in ({"lockfile": lock}, {}):
        ref = "arith@1.0.0" if kwargs else f"arith@{m.digest}"
        with pytest.raises(TaskpackError, match=refused):
            taskpack.load(ref, split="train", registry=str(reg), **kwargs)
    # Offline, from the manifest the cache now holds: still refused.
    with pytest.raises(TaskpackError, match=refused):
        taskpack.load(f"arith@{m.digest}", split="train", registry=str(reg), offline=True)


def _to_bucket(reg: Path, bucket: str) -> None:
    """Every key of a local registry folder, put as it is under an S3 registry."""
    import boto3

    name, prefix = bucket.removeprefix("s3://").split("/", 1)
    for path in reg.rglob("*"):
        if path.is_file() and not path.name.startswith("."):
            key = f"{prefix}/{path.relative_to(reg).as_posix()}"
            boto3.client("s3").put_object(Bucket=name, Key=key, Body=path.read_bytes())


def _sources(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kinds of source each row check reads (a file, or a download as it grows)."""
    import taskpack.storage.rows

    seen: list[str] = []
    check = taskpack.storage.rows.check_split

    def spy(parquets: Any, *args: Any, **kwargs: Any) -> list[str]:
        seen.extend(type(p).__name__ for p in parquets)
        return check(parquets, *args, **kwargs)

    monkeypatch.setattr(taskpack.storage.rows, "check_split", spy)
    return seen


def test_rows_checked_as_they_download_are_refused_as_after(
    tmp_path: Path, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From S3 a split's rows are checked while its bytes arrive, and forged rows are refused
    there as they are from a finished file."""
    reg = tmp_path / "reg"
    publish(build(tmp_path / "a", "1.0.0"), registry=str(reg))
    _forge(reg, "arith", "1.0.0", lambda rows: rows[0].update(answer=json.dumps("forged")))
    _to_bucket(reg, bucket)
    seen = _sources(monkeypatch)
    with pytest.raises(TaskpackError, match=r"refused: split 'test' row 0 .*does not match"):
        taskpack.load("arith@1.0.0", split="test", registry=bucket, cache=_cache(tmp_path / "c"))
    assert seen == ["GrowingReader"]
    train = taskpack.load(
        "arith@1.0.0", split="train", registry=bucket, cache=_cache(tmp_path / "c")
    )
    assert len(train) == 6 and seen == ["GrowingReader", "GrowingReader"]


def test_a_check_of_bytes_not_kept_does_not_count(
    tmp_path: Path, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A footer fetched apart that is not the file's own end (a server answering a range
    otherwise than the whole) leaves the verdict to a check of the file kept."""
    from taskpack.registry.s3 import S3Store

    publish(build(tmp_path / "a", "1.0.0"), registry=bucket)
    tail = S3Store.tail

    def lying(self: S3Store, key: str, size: int) -> bytes | None:
        data = tail(self, key, size)
        assert data
        return bytes([data[0] ^ 1]) + data[1:]

    monkeypatch.setattr(S3Store, "tail", lying)
    seen = _sources(monkeypatch)
    split = taskpack.load(
        "arith@1.0.0", split="train", registry=bucket, cache=_cache(tmp_path / "c")
    )
    assert len(split) == 6
    assert seen == ["GrowingReader", "PosixPath"]


def test_an_object_longer_than_its_manifest_lists_is_refused_as_it_streams(
    tmp_path: Path, bucket: str
) -> None:
    """Every download is bounded by the size its manifest lists, whichever backend sends it."""
    import boto3

    from taskpack.base.objects import object_key

    m, _ = publish(build(tmp_path / "a", "1.0.0"), registry=bucket)
    info = m.splits["train"]
    name, prefix = bucket.removeprefix("s3://").split("/", 1)
    key = f"{prefix}/{object_key(info.sha256)}"
    body = boto3.client("s3").get_object(Bucket=name, Key=key)["Body"].read()
    boto3.client("s3").put_object(Bucket=name, Key=key, Body=body + b"\0" * (1 << 20))
    with pytest.raises(TaskpackError, match=f"more than the {info.bytes} bytes"):
        taskpack.load("arith@1.0.0", split="train", registry=bucket, cache=_cache(tmp_path / "c"))


def test_a_download_started_over_is_not_what_a_reader_saw(tmp_path: Path) -> None:
    """A retried transfer may have written other bytes under the reader: its verdict is void.
    A read waits for the bytes it needs, and one past a download that ended fails."""
    import threading

    from taskpack.base.objects import HashedFile
    from taskpack.registry.growing import Growing

    data = bytes(range(256)) * 64
    path = tmp_path / "f"
    with path.open("wb", buffering=0) as f:
        growing = Growing(HashedFile(f, len(data)), path, len(data), data[-100:])
        with growing.reader() as reader:
            got: list[bytes] = []
            waiting = threading.Thread(target=lambda: got.append(reader.read(len(data))))
            waiting.start()
            growing.write(data[:5000])
            waiting.join(0.2)
            assert waiting.is_alive()  # the first 5000 bytes are not enough
            growing.write(data[5000:])
            waiting.join(5)
            assert got == [data]
        assert growing.faithful()
        growing.seek(0)
        growing.truncate()
        growing.write(data)
        assert not growing.faithful()
    with path.open("wb", buffering=0) as f:
        growing = Growing(HashedFile(f, len(data)), path, len(data), data[-100:])
        growing.write(data[:10])
        growing.end()
        with growing.reader() as reader, pytest.raises(OSError, match="ended at byte 10"):
            reader.read(1000)


def test_publish_repairs_an_object_key_holding_wrong_bytes(tmp_path: Path, bucket: str) -> None:
    import boto3

    from taskpack.base.objects import object_key

    path = build(tmp_path / "a", "1.0.0")
    m = taskpack.open(path).manifest
    sha = m.splits["train"].sha256
    name, prefix = bucket.removeprefix("s3://").split("/", 1)
    boto3.client("s3").put_object(Bucket=name, Key=f"{prefix}/{object_key(sha)}", Body=b"junk")
    local = tmp_path / "reg"
    (local / "objects" / "sha256" / sha[:2]).mkdir(parents=True)
    (local / object_key(sha)).write_bytes(b"junk")
    for where in (bucket, str(local)):
        publish(path, registry=where)
        cache = tmp_path / f"cache-{len(where)}"
        split = taskpack.load("arith@1.0.0", split="train", registry=where, cache=_cache(cache))
        assert len(split) == 6


def _cache(root: Path) -> Any:
    from taskpack.registry.cache import Cache

    return Cache(root)


def test_a_shared_registry_folder_is_readable_as_the_umask_allows(tmp_path: Path) -> None:
    """With the usual umask 022, everything a publish writes is 0644 (folders 0755), so a
    registry folder shared by a team is readable to it; with 027, to the group only."""
    import stat

    for umask, file_mode, dir_mode in ((0o022, 0o644, 0o755), (0o027, 0o640, 0o750)):
        old = os.umask(umask)
        try:
            reg = tmp_path / f"reg-{umask:o}"
            path = build(tmp_path / f"a-{umask:o}", "1.0.0")
            publish(path, registry=str(reg))
        finally:
            os.umask(old)
        written = [p for p in [*reg.rglob("*"), *path.rglob("*"), path] if ".locks" not in p.parts]
        modes = {
            p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in written
        }
        wrong = {
            p: f"{m:o}"
            for p, m in modes.items()
            if m != (dir_mode if (tmp_path / p).is_dir() else file_mode)
        }
        assert wrong == {}, wrong


def test_diff_names_the_fields_that_changed(tmp_path: Path) -> None:
    from taskpack.changes import FieldChange

    a = build(tmp_path / "a", "1.0.0")
    b = build(tmp_path / "b", "1.1.0", salt="x")
    d = taskpack.diff(taskpack.open(a), taskpack.open(b))["train"]
    assert d.fields["t0"] == [FieldChange("answer", "1", "1x")]
    big = d.fields["t999"]
    assert [c.path for c in big] == [
        "files.workspace/big.bin.sha256",
        "files.workspace/big.bin.size",
    ]
    code, out = cli("diff", str(a), str(b))
    assert code == 0 and "  ~ t0\n      answer: '1' → '1x'\n" in out
    code, out = cli("diff", str(a), str(b), "--json")
    assert json.loads(out)["train"]["fields"]["t0"] == [{"path": "answer", "old": "1", "new": "1x"}]


def _swap_inline(rows: list[dict[str, Any]]) -> None:
    """Row 0's inline file gets other bytes of the same length; its sha256 and size stay."""
    f = rows[0]["files"][0]
    f["data"] = f["data"].replace(b"assert", b"1 or  ")


def test_inline_bytes_are_content(tmp_path: Path) -> None:
    """Inline bytes swapped under their kept hash (row digests, split and version digests all
    unchanged) are refused by every reader: a lockfile, a digest reference, a local folder's
    tasks and Arrow views, and publish."""
    reg = tmp_path / "reg"
    m, _ = publish(build(tmp_path / "a", "1.0.0"), registry=str(reg))
    lock = tmp_path / "taskpack.lock"
    write_lockfile(["arith@1.0.0"], lock, registry=str(reg))
    shutil.rmtree(os.environ["TASKPACK_CACHE"])
    _forge(reg, "arith", "1.0.0", _swap_inline)
    forged = open_registry(str(reg)).resolve("arith@1.0.0")
    assert forged.splits["test"].digest == m.splits["test"].digest  # split digests held
    wanted = r"row 0\b.*file 'tests/check.py': inline bytes do not match their sha256"
    with pytest.raises(TaskpackError, match=wanted):
        taskpack.load("arith@1.0.0", split="test", registry=str(reg))
    pinned = r"differs from the lockfile|no version of 'arith' matches"
    for ref, kwargs in (("arith@1.0.0", {"lockfile": lock}), (f"arith@{m.digest}", {})):
        with pytest.raises(TaskpackError, match=pinned):
            taskpack.load(ref, split="test", registry=str(reg), **kwargs)
    code, out = cli("show", "arith@1.0.0", "t100", "--format", "json", "--registry", str(reg))
    assert code == 1 and "inline bytes do not match" in out, out

    # The same swap in a task-set folder, which no row check guards: every read refuses.
    folder = build(tmp_path / "b", "1.0.0")
    path = folder / "splits" / "test.parquet"
    table = pq.read_table(path)
    rows = table.to_pylist()
    _swap_inline(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["splits"]["test"].update(sha256=file_sha256(path), bytes=path.stat().st_size)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    split = taskpack.open(folder).split("test")
    reads = {
        "task": lambda: split[0].files[0].data,
        "iteration": lambda: [t.model_dump() for t in split],
        "arrow": split.to_arrow,
        "pandas": split.to_pandas,
        "rows": lambda: list(split.rows()),
    }
    for what, read in reads.items():
        with pytest.raises(TaskpackError, match=wanted):
            read()
            pytest.fail(what)
    with pytest.raises(TaskpackError, match=r"not published, invalid: .*inline bytes"):
        publish(folder, registry=str(tmp_path / "reg2"))


def _checked_as_written(path: Path, info: Any, arriving: Path) -> tuple[list[str], list[int]]:
    """`check_split`'s verdict on the file at `path` read as its bytes are written in small
    pieces (the first few only once the check waits), and the byte counts it waited for."""
    import threading
    import time

    from taskpack.base.objects import HashedFile
    from taskpack.registry.growing import Growing
    from taskpack.storage.rows import check_split

    data = path.read_bytes()
    asked: list[tuple[int, int]] = []
    verdict: list[list[str]] = []
    with arriving.open("wb", buffering=0) as f:
        # The tail a download fetches first, as much as Arrow reads to find the footer
        growing = Growing(HashedFile(f, len(data)), arriving, len(data), data[-65536:])
        with growing.reader() as reader:
            upto = reader.upto

            def spied(end: int) -> str:
                asked.append((end, growing._written))
                return upto(end)

            reader.upto = spied  # type: ignore[method-assign]
            checking = threading.Thread(
                target=lambda: verdict.append(check_split([reader], "train", info, 2))
            )
            checking.start()
            growing.write(data[:4])
            deadline = time.monotonic() + 10
            while not asked and time.monotonic() < deadline:
                time.sleep(0.01)
            for start in range(4, len(data), 200):
                growing.write(data[start : start + 200])
            growing.end()
            checking.join(10)
    assert asked and asked[0][1] < asked[0][0]  # the check asked before the bytes were there
    return verdict[0], [end for end, _ in asked]


def test_a_split_checked_as_it_arrives_reads_each_row_group_once_it_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A split of several row groups checked while its bytes are written (Arrow reading each
    group from disk once the download has passed its end) gets the verdict of its finished
    file: clean, and with a row forged in a later group."""
    import taskpack.storage.writer
    from taskpack.storage.rows import check_split

    monkeypatch.setattr(taskpack.storage.writer, "ROW_GROUP_ROWS", 4)
    noise = random.Random(0)
    tasks = [
        {"id": f"t{i}", "prompt": noise.randbytes(4096).hex(), "answer": str(i)} for i in range(22)
    ]
    m = taskpack.write(tmp_path / "a", {"train": tasks}, name="groups")
    info = m.splits["train"]
    source = tmp_path / "a" / "splits" / "train.parquet"
    table = pq.read_table(source)
    rows = table.to_pylist()
    rows[19]["answer"] = json.dumps("forged")
    forged = tmp_path / "forged.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), forged, row_group_size=4)
    for path in (source, forged):
        assert pq.ParquetFile(path).metadata.num_row_groups == 6
        verdict, ends = _checked_as_written(path, info, tmp_path / "arriving")
        assert verdict == check_split([path], "train", info, 2)
        assert len(ends) == 6 and ends == sorted(ends) and ends[-1] <= path.stat().st_size
    assert verdict and "row 19 (id 't19')" in verdict[0]


def test_inline_bytes_hashed_apart_are_reported_in_the_last_row_group_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check hashes a batch's inline bytes on a thread of its own: a file whose bytes are
    not its hash's, in the last row group, is still reported, under its row, finished or
    arriving."""
    import taskpack.storage.writer
    from taskpack.storage.rows import check_split

    monkeypatch.setattr(taskpack.storage.writer, "ROW_GROUP_ROWS", 4)
    noise = random.Random(1)
    tasks = [
        {"id": f"t{i}", "prompt": "p", "files": [{"path": "a.bin", "data": noise.randbytes(9000)}]}
        for i in range(11)
    ]
    m = taskpack.write(tmp_path / "a", {"train": tasks}, name="inline")
    info = m.splits["train"]
    table = pq.read_table(tmp_path / "a" / "splits" / "train.parquet")
    rows = table.to_pylist()
    rows[10]["files"][0]["data"] = noise.randbytes(9000)  # its sha256 and size kept
    forged = tmp_path / "forged.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), forged, row_group_size=4)
    wanted = "split 'train' row 10 (id 't10'): file 'a.bin': inline bytes do not match"
    finished = check_split([forged], "train", info, 2)
    assert [p for p in finished if "inline" in p] == [p for p in finished if p.startswith(wanted)]
    assert any(p.startswith(wanted) for p in finished)
    arriving, _ = _checked_as_written(forged, info, tmp_path / "arriving")
    assert arriving == finished
