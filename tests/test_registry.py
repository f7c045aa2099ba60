"""The registry on a local folder and on a real S3 server (SeaweedFS): immutable versions,
resolution, tags, the cache, offline mode and lockfiles."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import taskpack
from taskpack.cli import main
from taskpack.errors import TaskpackError
from taskpack.registry import VersionExists, open_registry
from taskpack.registry.cache import Cache
from taskpack.registry.client import load, publish, pull, write_lockfile
from taskpack.registry.objectstore import ObjectStoreRegistry
from taskpack.storage.rows import INLINE_MAX

from .conftest import make_task


def build(
    path: Path, version: str, n: int = 5, name: str = "arith", salt: str = "", **kw: Any
) -> Path:
    tasks = [make_task(i, answer=str(i + 1) + salt) for i in range(n)]
    tests = [make_task(100 + i) for i in range(2)]
    big = make_task(
        999, files=[{"path": "big.bin", "data": b"z" * (INLINE_MAX + 5) + salt.encode()}]
    )
    taskpack.write(path, {"train": [*tasks, big], "test": tests}, name=name, version=version, **kw)
    return path


@pytest.fixture(params=["local", "s3"])
def registry_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "local":
        return str(tmp_path / "registry")
    return str(request.getfixturevalue("bucket"))


def test_publish_resolve_every_ref_form(tmp_path: Path, registry_url: str) -> None:
    digests = {}
    for version in ("1.0.0", "1.2.0", "1.2.3", "2.0.0-rc.1", "0.9.0"):
        path = build(tmp_path / version, version, salt=version)
        m, created = publish(path, registry=registry_url)
        assert created
        digests[version] = m.digest
    reg = open_registry(registry_url)
    got = {
        ref: reg.resolve(ref).version
        for ref in [
            "arith",
            "arith@latest",
            "arith@1",
            "arith@1.2",
            "arith@1.0",
            "arith@0",
            "arith@1.2.3",
            "arith@2.0.0-rc.1",
            f"arith@{digests['1.2.0']}",
        ]
    }
    assert got == {
        "arith": "1.2.3",
        "arith@latest": "1.2.3",
        "arith@1": "1.2.3",
        "arith@1.2": "1.2.3",
        "arith@1.0": "1.0.0",
        "arith@0": "0.9.0",
        "arith@1.2.3": "1.2.3",
        "arith@2.0.0-rc.1": "2.0.0-rc.1",
        f"arith@{digests['1.2.0']}": "1.2.0",
    }
    with pytest.raises(TaskpackError, match="no version of 'arith' matches '3'"):
        reg.resolve("arith@3")
    with pytest.raises(TaskpackError, match="no task set 'other'"):
        reg.resolve("other@1")
    assert reg.names() == ["arith"]


def test_republish_is_noop_and_different_content_is_refused(
    tmp_path: Path, registry_url: str
) -> None:
    path = build(tmp_path / "a", "1.0.0")
    assert publish(path, registry=registry_url)[1] is True
    assert publish(path, registry=registry_url)[1] is False
    other = build(tmp_path / "b", "1.0.0", salt="x")
    with pytest.raises(VersionExists, match=r"arith@1\.0\.0 already exists with different content"):
        publish(other, registry=registry_url)
    assert (
        open_registry(registry_url).resolve("arith@1.0.0").digest
        == taskpack.open(path).manifest.digest
    )


def test_tags_move_by_rules(tmp_path: Path, registry_url: str) -> None:
    publish(build(tmp_path / "a", "1.1.0"), registry=registry_url, tags=("stable",))
    publish(build(tmp_path / "b", "1.0.5", salt="b"), registry=registry_url, tags=("stable",))
    reg = open_registry(registry_url)
    assert reg.tags("arith") == {"latest": "1.1.0", "stable": "1.0.5"}
    assert reg.resolve("arith@stable").version == "1.0.5"


def test_publish_uploads_only_what_is_missing(tmp_path: Path, registry_url: str) -> None:
    reg = open_registry(registry_url)
    assert isinstance(reg, ObjectStoreRegistry)
    uploaded: list[str] = []
    real = reg.store.upload
    reg.store.upload = lambda key, path, sha, progress=None: (  # type: ignore[method-assign]
        uploaded.append(key),
        real(key, path, sha),
    )[1]
    reg.publish(taskpack.open(build(tmp_path / "a", "1.0.0")))
    assert len(uploaded) == 3  # two splits and one large file
    uploaded.clear()
    # Same tests split and large file, different train split:
    v2 = tmp_path / "b"
    taskpack.write(
        v2,
        {"train": [make_task(7)], "test": [make_task(100 + i) for i in range(2)]},
        name="arith",
        version="1.1.0",
    )
    reg.publish(taskpack.open(v2))
    assert uploaded == [
        f"objects/sha256/{taskpack.open(v2).manifest.splits['train'].sha256[:2]}/"
        f"{taskpack.open(v2).manifest.splits['train'].sha256}"
    ]


def test_interrupted_publish_leaves_no_version_and_rerun_completes(
    tmp_path: Path, registry_url: str
) -> None:
    reg = open_registry(registry_url)
    assert isinstance(reg, ObjectStoreRegistry)
    real_write = reg.store.write

    def crash(key: str, data: bytes, **kw: Any) -> None:
        if "/versions/" in key:
            raise KeyboardInterrupt  # killed between the data upload and the manifest
        real_write(key, data, **kw)

    reg.store.write = crash  # type: ignore[method-assign]
    path = build(tmp_path / "a", "1.0.0")
    with pytest.raises(KeyboardInterrupt):
        reg.publish(taskpack.open(path))
    fresh = open_registry(registry_url)
    assert fresh.versions("arith") == []
    with pytest.raises(TaskpackError):
        fresh.resolve("arith@1.0.0")
    assert publish(path, registry=registry_url)[1] is True
    assert len(load("arith@1.0.0", registry=registry_url)) == 6


def test_load_reads_only_the_split_and_files_on_materialize(tmp_path: Path, bucket: str) -> None:
    path = build(tmp_path / "a", "1.0.0")
    publish(path, registry=bucket)
    m = taskpack.open(path).manifest
    cache = Cache(tmp_path / "cache")
    split = load("arith@1", split="test", registry=bucket, cache=cache)
    assert (len(split), split[0].id, split.get("t101").id) == (2, "t100", "t101")  # type: ignore[union-attr]
    cached = {p.name for p in (tmp_path / "cache" / "objects").rglob("*") if p.is_file()}
    assert cached == {m.splits["test"].sha256}
    train = load("arith@1.0.0", split="train", registry=bucket, cache=cache)
    big = train.get("t999")
    assert big is not None and m.splits["train"].blobs[0] not in {
        p.name for p in (tmp_path / "cache" / "objects").rglob("*")
    }
    out = big.materialize(tmp_path / "sandbox")
    assert (out / "big.bin").read_bytes() == b"z" * (INLINE_MAX + 5)
    assert [t.id for t in train] == [t.id for t in taskpack.open(path).split("train")]


def test_pinned_version_in_cache_needs_no_network(
    tmp_path: Path, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish(build(tmp_path / "a", "1.0.0"), registry=bucket)
    cache = Cache(tmp_path / "cache")
    assert len(load("arith@1.0.0", registry=bucket, cache=cache)) == 6
    pull("arith@1.0.0", ("test",), registry=bucket, cache=cache)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")  # nothing listens there
    assert load("arith@1.0.0", registry=bucket, cache=cache)[0].id == "t0"
    digest = taskpack.open(tmp_path / "a").manifest.digest
    assert len(load(f"arith@{digest}", split="test", registry=bucket, cache=cache)) == 2
    with pytest.raises(TaskpackError):
        load("arith@1", registry=bucket, cache=cache)  # a range must be resolved: fails loudly


def test_offline_serves_pinned_versions_only(
    tmp_path: Path, registry_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish(build(tmp_path / "a", "1.0.0"), registry=registry_url)
    publish(build(tmp_path / "b", "1.1.0", salt="b"), registry=registry_url)
    cache = Cache(tmp_path / "cache")
    pull("arith@1.0.0", ("train",), registry=registry_url, cache=cache, files=True)
    monkeypatch.setenv("TASKPACK_OFFLINE", "1")
    split = load("arith@1.0.0", registry=registry_url, cache=cache)
    assert split[1].answer == "2"
    with pytest.raises(TaskpackError, match=r"offline: arith@1 is not in the cache.*only exact"):
        load("arith@1", registry=registry_url, cache=cache)
    with pytest.raises(TaskpackError, match=r"offline: arith@1\.1\.0 is not in the cache"):
        load("arith@1.1.0", registry=registry_url, cache=cache)


def test_lockfile_pins_without_resolution(
    tmp_path: Path, registry_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish(build(tmp_path / "a", "1.0.0"), registry=registry_url)
    lockfile = tmp_path / "taskpack.lock"
    write_lockfile(["arith@1"], lockfile, registry=registry_url)
    publish(build(tmp_path / "b", "1.5.0", salt="b"), registry=registry_url)

    def no_resolving(*args: Any, **kw: Any) -> Any:
        raise AssertionError("resolution request made")

    monkeypatch.setattr(ObjectStoreRegistry, "versions", no_resolving)
    monkeypatch.setattr(ObjectStoreRegistry, "tags", no_resolving)
    split = load("arith@1", registry=registry_url, lockfile=lockfile, cache=Cache(tmp_path / "c"))
    assert split[0].answer == "1"  # 1.0.0's content, not 1.5.0's


def test_corrupted_cache_object_is_fetched_again(tmp_path: Path, bucket: str) -> None:
    publish(build(tmp_path / "a", "1.0.0"), registry=bucket)
    cache = Cache(tmp_path / "cache")
    sha = taskpack.open(tmp_path / "a").manifest.splits["test"].sha256
    load("arith@1.0.0", split="test", registry=bucket, cache=cache)
    obj = cache.object_path(sha)
    data = bytearray(obj.read_bytes())
    data[len(data) // 2] ^= 0xFF
    obj.write_bytes(bytes(data))
    split = load("arith@1.0.0", split="test", registry=bucket, cache=cache)
    assert [t.id for t in split] == ["t100", "t101"]
    assert obj.read_bytes() == (tmp_path / "a" / "splits" / "test.parquet").read_bytes()


def test_wrong_credentials_name_the_registry_not_the_secret(
    tmp_path: Path, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from taskpack.cli import main

    path = build(tmp_path / "a", "1.0.0")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-value")
    result = CliRunner().invoke(main, ["publish", str(path), "--registry", bucket])
    assert result.exit_code == 1
    assert f"registry {bucket}: authentication failed" in result.output
    assert "wrong-secret-value" not in result.output
    assert os.environ["AWS_SECRET_ACCESS_KEY"] not in result.output


def test_cli_publish_ls_info_pull_diff(tmp_path: Path, registry_url: str) -> None:
    from click.testing import CliRunner

    from taskpack.cli import main

    def run(*args: str) -> str:
        result = CliRunner().invoke(main, [*args, "--registry", registry_url])
        assert result.exit_code == 0, result.output
        return result.output

    assert "published arith@1.0.0" in run(
        "publish", str(build(tmp_path / "a", "1.0.0")), "--tag", "gold"
    )
    v2 = tmp_path / "b"
    taskpack.write(
        v2,
        {
            "train": [make_task(0), make_task(1, answer="changed"), make_task(50)],
            "test": [make_task(100), make_task(101)],
        },
        name="arith",
        version="1.1.0",
    )
    run("publish", str(v2), "-q")
    assert run("ls").split() == ["NAME", "LATEST", "arith", "1.1.0"]
    assert run("ls", "arith").splitlines() == [
        "VERSION      TAGS",
        "arith@1.0.0  gold",
        "arith@1.1.0  latest",
    ]
    assert taskpack.open(v2).manifest.digest in run("info", "arith@1.1")
    assert run("ls", "arith@1.0.0", "-s", "test").split() == ["t100", "t101"]
    assert "arith@1.1.0" in run("pull", "arith", "--split", "test")
    out = run("diff", "arith@1.0.0", "arith@1.1.0")
    assert "train: +1 -4 ~1" in out and "  + t50" in out and "  ~ t1" in out
    assert "test: +0 -0 ~0" in out


def test_cached_pinned_load_imports_no_network_or_dataframe_library(
    tmp_path: Path, bucket: str
) -> None:
    import json
    import subprocess
    import sys

    publish(build(tmp_path / "a", "1.0.0"), registry=bucket)
    cache = tmp_path / "cache"
    pull("arith@1.0.0", ("train",), registry=bucket, cache=Cache(cache))
    probe = (
        "import json, sys, taskpack\n"
        "split = taskpack.load('arith@1.0.0', split='train', registry=sys.argv[1])\n"
        "t = split[2]\n"
        "mods = [m for m in ('boto3', 'botocore', 'datasets', 'pandas') if m in sys.modules]\n"
        "print(json.dumps([t.id, mods]))\n"
    )
    env = {**os.environ, "TASKPACK_CACHE": str(cache), "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9"}
    out = subprocess.run(
        [sys.executable, "-c", probe, bucket], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out) == ["t2", []]


def test_publish_refuses_bytes_that_do_not_match_the_manifest(tmp_path: Path) -> None:
    path = build(tmp_path / "a", "1.0.0")
    parquet = path / "splits" / "test.parquet"
    parquet.write_bytes(parquet.read_bytes() + b"tampered")
    with pytest.raises(TaskpackError, match=r"not published, invalid: .*does not hash to"):
        publish(path, registry=str(tmp_path / "reg"))
    assert open_registry(str(tmp_path / "reg")).versions("arith") == []


def _with_blob(path: Path, size: int) -> tuple[Path, Path]:
    """A task set with one large file of `size` bytes; (its folder, the blob's file)."""
    rng = __import__("random").Random(size)
    task = make_task(1, files=[{"path": "big.bin", "data": rng.randbytes(size)}])
    taskpack.write(path, {"train": [make_task(0), task]}, name="blobby", version="1.0.0")
    sha = next(iter(taskpack.open(path).manifest.splits["train"].blobs))
    return path, path / "blobs" / "sha256" / sha[:2] / sha


@pytest.mark.parametrize("size", [INLINE_MAX + 5, (8 << 20) + 5], ids=["one-request", "multipart"])
def test_publish_hashes_each_object_once_as_it_is_sent(
    tmp_path: Path, registry_url: str, size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every object file is read once, front to back, by the upload that hashes it; no pass
    of its own reads it before (the hash of a local file is taken only for objects not sent)."""
    import taskpack.base.objects as objects

    path, blob = _with_blob(tmp_path / "a", size)
    read: dict[str, int] = {}
    real_take = objects.HashedSource._take

    def counted(self: objects.HashedSource, at: int, data: bytes | memoryview) -> None:
        real_take(self, at, data)
        name = self._file.name
        read[name] = read.get(name, 0) + len(data)

    monkeypatch.setattr(objects.HashedSource, "_take", counted)
    monkeypatch.setattr(objects, "file_sha256", lambda p: pytest.fail(f"{p} hashed apart"))
    publish(path, registry=registry_url)
    ts = taskpack.open(path)
    files = [ts.object(sha) for sha in ts.manifest.objects()]
    assert read == {str(f): f.stat().st_size for f in files}
    got = taskpack.load("blobby@1.0.0", registry=registry_url).get("t1")
    assert got is not None and got.file("big.bin").read_bytes() == blob.read_bytes()


@pytest.mark.parametrize("size", [INLINE_MAX + 5, (8 << 20) + 5], ids=["one-request", "multipart"])
def test_an_object_with_wrong_bytes_never_lands(
    tmp_path: Path, registry_url: str, size: int
) -> None:
    """Bytes that do not hash to their address are refused before the store shows them: the
    key stays empty (a multipart upload is aborted, not completed), and no version appears."""
    from taskpack.base.objects import object_key

    path, blob = _with_blob(tmp_path / "a", size)
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 1  # same size: only the hash can tell
    blob.chmod(0o644)
    blob.write_bytes(bytes(data))
    with pytest.raises(
        TaskpackError,
        match=rf"not published, invalid: .*{blob.name}.* does not hash to {blob.name}",
    ):
        publish(path, registry=registry_url)
    reg = open_registry(registry_url)
    assert isinstance(reg, ObjectStoreRegistry)
    assert reg.store.sha256(object_key(blob.name)) is None
    assert reg.versions("blobby") == []
    if registry_url.startswith("s3://"):
        import boto3

        bucket = registry_url.removeprefix("s3://").split("/")[0]
        assert boto3.client("s3").list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


def test_a_part_s3_refuses_aborts_the_whole_upload(
    tmp_path: Path, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A multipart upload whose second part of three fails: the publish fails with the
    registry's error, the upload is aborted (S3 holds no parts), nothing lands at the key, no
    version appears; a re-run publishes it whole."""
    import boto3
    import botocore.client
    from botocore.exceptions import ClientError

    from taskpack.base.objects import object_key

    path, blob = _with_blob(tmp_path / "a", (16 << 20) + 5)
    real = botocore.client.BaseClient._make_api_call
    parts: list[int] = []

    def failing(self: Any, operation: str, params: dict[str, Any]) -> Any:
        if operation == "UploadPart":
            parts.append(params["PartNumber"])
            if params["PartNumber"] == 2:
                raise ClientError({"Error": {"Code": "SlowDown"}}, operation)
        return real(self, operation, params)

    with monkeypatch.context() as patched, pytest.raises(TaskpackError, match="S3 error SlowDown"):
        patched.setattr(botocore.client.BaseClient, "_make_api_call", failing)
        publish(path, registry=bucket)
    assert 2 in parts
    name = bucket.removeprefix("s3://").split("/")[0]
    assert boto3.client("s3").list_multipart_uploads(Bucket=name).get("Uploads", []) == []
    reg = open_registry(bucket)
    assert isinstance(reg, ObjectStoreRegistry)
    assert reg.store.sha256(object_key(blob.name)) is None
    assert reg.versions("blobby") == []
    publish(path, registry=bucket)
    got = taskpack.load("blobby@1.0.0", registry=bucket).get("t1")
    assert got is not None and got.file("big.bin").read_bytes() == blob.read_bytes()


def test_a_source_hashed_out_of_order_or_in_part_is_never_believed(tmp_path: Path) -> None:
    import hashlib

    from taskpack.base.objects import HashedSource, WrongBytes

    f = tmp_path / "x"
    f.write_bytes(b"abcdef")
    sha = hashlib.sha256(b"abcdef").hexdigest()
    with f.open("rb") as fh:
        source = HashedSource(fh)
        assert source.read(3) + source.read() == b"abcdef"
        source.require(sha, f)
    for reads in ([(0, 3), (0, 6)], [(3, 3), (0, 3)], [(0, 3)]):  # again, skipped, short
        with f.open("rb") as fh:
            source = HashedSource(fh)
            for at, n in reads:
                fh.seek(at)
                source.read(n)
            with pytest.raises(WrongBytes, match=f"does not hash to {sha}"):
                source.require(sha, f)


def test_publish_full_check_revalidates_rows(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from taskpack.base.objects import MANIFEST, file_sha256
    from taskpack.model import SplitInfo

    path = build(tmp_path / "a", "1.0.0")
    parquet = path / "splits" / "test.parquet"
    table = pq.read_table(parquet)
    table = table.set_column(
        table.schema.get_field_index("answer"), "answer", pa.array(['"edited"', "not json"])
    )
    pq.write_table(table, parquet)
    manifest = taskpack.open(path).manifest  # re-point the manifest at the edited bytes
    info = manifest.splits["test"]
    manifest.splits["test"] = SplitInfo(
        **{**info.model_dump(), "sha256": file_sha256(parquet), "bytes": parquet.stat().st_size}
    )
    (path / MANIFEST).write_text(manifest.model_dump_json())
    with pytest.raises(TaskpackError, match="does not match content") as info:
        publish(path, registry=str(tmp_path / "reg"), full_check=True)
    assert "row 1 (id 't101'): unreadable: column answer is not JSON" in str(info.value)


def test_progress_is_silent_off_a_terminal_and_drawn_on_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from click.testing import CliRunner

    from taskpack.base.progress import progress
    from taskpack.cli import main

    path = build(tmp_path / "a", "1.0.0")
    result = CliRunner().invoke(main, ["publish", str(path), "--registry", str(tmp_path / "r")])
    assert result.exit_code == 0 and "\r" not in result.output  # not a terminal: no bar
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    assert progress("pull", 100, quiet=True) is None
    bar = progress("pull", 2_000_000)
    assert bar is not None
    bar(1_000_000)
    bar.close()
    drawn = capsys.readouterr().err
    assert "pull:  50%" in drawn and "1.00M/2.00M" in drawn, drawn
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert progress("pull", 100) is None


def test_a_manifest_must_be_what_its_key_says(tmp_path: Path) -> None:
    """A manifest stored as aaa@1.0.1 that says it is bbb@2.0.0, or whose digest is not its
    splits' digest, is refused; nothing of it enters the cache."""
    reg = tmp_path / "reg"
    publish(build(tmp_path / "a", "1.0.0", name="aaa"), registry=str(reg))
    publish(build(tmp_path / "b", "2.0.0", name="bbb", salt="x"), registry=str(reg))
    real = json.loads((reg / "sets/bbb/versions/2.0.0.json").read_text())
    (reg / "sets/aaa/versions/1.0.1.json").write_text(json.dumps(real))
    with pytest.raises(TaskpackError, match=r"aaa@1.0.1 says it is bbb@2.0.0; refused"):
        taskpack.load("aaa@1.0.1", split="test", registry=str(reg))
    claimed = {**real, "name": "aaa", "version": "1.0.2", "digest": "sha256:" + "0" * 64}
    (reg / "sets/aaa/versions/1.0.2.json").write_text(json.dumps(claimed))
    with pytest.raises(TaskpackError, match="does not cover what it lists; refused"):
        taskpack.load("aaa@1.0.2", split="test", registry=str(reg))
    escaping = {**real, "name": "aaa", "version": "1.0.3"}
    escaping["splits"]["test"]["path"] = "../../../etc/passwd"
    (reg / "sets/aaa/versions/1.0.3.json").write_text(json.dumps(escaping))
    with pytest.raises(TaskpackError, match=r"contains '\.\.'"):
        taskpack.load("aaa@1.0.3", split="test", registry=str(reg))
    assert len(taskpack.load("bbb@2.0.0", split="test", registry=str(reg))) == 2


def test_stray_keys_and_hostile_tags_do_not_break_listing(tmp_path: Path) -> None:
    reg = tmp_path / "reg"
    publish(build(tmp_path / "a", "1.0.0"), registry=str(reg))
    (reg / "sets/arith/versions/notes.json").write_text("{}")
    (reg / "sets/arith/tags/broken.json").write_text("not json")
    (reg / "sets/arith/tags/evil.json").write_text('{"version": "../../x"}')
    out = CliRunner().invoke(main, ["ls", "arith", "--registry", str(reg)])
    assert out.exit_code == 0, out.output
    assert "1.0.0" in out.output and "notes" not in out.output and "evil" not in out.output
    assert len(taskpack.load("arith@latest", split="test", registry=str(reg))) == 2
    with pytest.raises(TaskpackError, match="no version or tag 'evil'"):
        taskpack.load("arith@evil", split="test", registry=str(reg))


def test_a_corrupt_cached_manifest_is_fetched_again(tmp_path: Path) -> None:
    reg = tmp_path / "reg"
    publish(build(tmp_path / "a", "1.0.0"), registry=str(reg))
    assert len(taskpack.load("arith@1.0.0", split="test", registry=str(reg))) == 2
    cached = list((Path(os.environ["TASKPACK_CACHE"]) / "manifests").rglob("1.0.0.json"))
    assert len(cached) == 1
    cached[0].write_text("{ truncated")
    assert len(taskpack.load("arith@1.0.0", split="test", registry=str(reg))) == 2
    assert json.loads(cached[0].read_text())["version"] == "1.0.0"


def _repoint(path: Path, table: Any) -> None:
    """Write `table` as the test split and make the manifest name its bytes (so only reading it
    can tell it is broken)."""
    import pyarrow.parquet as pq

    from taskpack.base.objects import MANIFEST, file_sha256
    from taskpack.model import SplitInfo

    parquet = path / "splits" / "test.parquet"
    pq.write_table(table, parquet)
    manifest = taskpack.open(path).manifest
    info = manifest.splits["test"]
    manifest.splits["test"] = SplitInfo(
        **{**info.model_dump(), "sha256": file_sha256(parquet), "bytes": parquet.stat().st_size}
    )
    (path / MANIFEST).write_text(manifest.model_dump_json())


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        ("extra row", "3 rows, the manifest says 2"),
        ("missing column", "columns ['reward'] missing"),
        ("bad json", "column metadata is not JSON"),
        ("escaping path", "files: path '../x' contains '..'"),
        ("setuid mode", "mode 4755 is not permission bits"),
        ("edited digest", "does not match content"),
    ],
)
def test_publish_refuses_what_a_reader_could_not_read(
    tmp_path: Path, breakage: str, message: str
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = build(tmp_path / "a", "1.0.0")
    table = pq.read_table(path / "splits" / "test.parquet")
    rows = table.to_pylist()
    if breakage == "extra row":
        rows.append({**rows[0], "id": "extra"})
    elif breakage == "missing column":
        table = table.drop(["reward"])
    elif breakage == "bad json":
        rows[1]["metadata"] = "{not json"
    elif breakage == "escaping path":
        rows[0]["files"][0]["path"] = "../x"
    elif breakage == "setuid mode":
        rows[0]["files"][0]["mode"] = 0o4755
    elif breakage == "edited digest":
        rows[0]["digest"] = "sha256:" + "1" * 64
    if breakage != "missing column":
        table = pa.Table.from_pylist(rows, schema=table.schema)
    _repoint(path, table)
    with pytest.raises(TaskpackError, match="not published, invalid") as info:
        publish(path, registry=str(tmp_path / "reg"))
    assert message in str(info.value)
    assert not (tmp_path / "reg" / "sets").exists()  # nothing uploaded, no version
