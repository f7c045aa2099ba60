"""A pin covers everything a trainer acts on: pass rates, mixture weights and environments,
lineage claims and listed sizes. Each is forged as someone with write access to a registry
would (a folder, a bucket, an HTTP registry, a mirror in front of one), in place under the
published digest or sealed under a new one, and read by digest and by name: every read refuses
what it would have acted on, in one line, and `validate` says what is wrong."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import taskpack
from taskpack.base.digests import version_digest
from taskpack.base.objects import file_sha256, sha256_relpath
from taskpack.cli import main
from taskpack.curation import Part, annotate, keep, mix
from taskpack.errors import TaskpackError
from taskpack.registry.cache import Cache
from taskpack.registry.mirror import Mirror
from taskpack.serve.app import App, Registered, background
from taskpack.storage import ratings

from .conftest import make_task

Manifest = dict[str, Any]


def _write(path: Path, name: str, count: int) -> Path:
    tasks = [make_task(i, id=f"{name}-{i}") for i in range(count)]
    taskpack.write(path, {"train": tasks, "test": tasks[:2]}, name=name, version="1.0.0")
    return path


@pytest.fixture
def published(tmp_path: Path) -> Path:
    """A local registry holding `rated@1.1.0` (10 tasks, 2 solved by m1) and the mixture
    `mixed@1.0.0` (0.9 of `a`, run in env-a; 0.1 of `b`, in env-b)."""
    reg = tmp_path / "reg"
    base = _write(tmp_path / "base", "rated", 10)
    rollouts = tmp_path / "rollouts.jsonl"
    rollouts.write_text(
        "".join(json.dumps({"id": f"rated-{i}", "reward": float(i < 2)}) + "\n" for i in range(10))
    )
    report = annotate(base, [str(rollouts)], model="m1")
    rated = tmp_path / "rated"
    keep(report.taskset, report.kept(), rated, version="1.1.0", source=report.record,
         annotations=report.annotations())  # fmt: skip
    taskpack.publish(rated, registry=str(reg))
    parts = [
        Part(str(_write(tmp_path / "a", "a", 50)), 0.9, env="env-a"),
        Part(str(_write(tmp_path / "b", "b", 50)), 0.1, env="env-b"),
    ]
    mix("mixed", parts, tmp_path / "mixed")
    taskpack.publish(tmp_path / "mixed", registry=str(reg))
    return reg


def _key(reg: Path, name: str, version: str) -> Path:
    return reg / "sets" / name / "versions" / f"{version}.json"


def _edit(reg: Path, name: str, version: str, change: Callable[[Manifest], None]) -> str:
    """Change `name@version`'s manifest in place; returns the digest it was published with."""
    key = _key(reg, name, version)
    manifest = json.loads(key.read_text())
    digest = str(manifest["digest"])
    change(manifest)
    key.write_text(json.dumps(manifest, indent=2))
    return digest


def _sealed(change: Callable[[Manifest], None]) -> Callable[[Manifest], None]:
    """The forger also seals the version digest over what they changed."""

    def both(manifest: Manifest) -> None:
        change(manifest)
        manifest["digest"] = version_digest(manifest)

    return both


def _solved_by_all(reg: Path, ghosts: int = 3) -> Callable[[Manifest], None]:
    """Every task of `rated`'s train split solved, and rows for ids it does not have, in a
    Parquet of their own that the manifest's sha256, bytes and rows now name (its digest, and
    so the version digest, left as published)."""

    def change(manifest: Manifest) -> None:
        notes = manifest["annotations"]["train"]
        rows = ratings.read(reg / "objects" / sha256_relpath(notes["sha256"]))
        rows = [{**r, "correct": r["count"], "mean": 1.0} for r in rows]
        rows += [{**rows[0], "id": f"ghost-{k}"} for k in range(ghosts)]
        forged = reg / "forged.parquet"
        ratings.write(forged, ratings.sorted_rows(rows))
        sha = file_sha256(forged)
        target = reg / "objects" / sha256_relpath(sha)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(forged, target)
        notes.update(sha256=sha, bytes=target.stat().st_size, rows=len(rows))

    return change


def _weights(manifest: Manifest) -> None:
    manifest["source"]["mixture"][0]["weight"] = 1e-6
    manifest["source"]["mixture"][1]["weight"] = 1e6


def _env(manifest: Manifest) -> None:
    manifest["source"]["mixture"][0]["env"] = "another-agent"


def _claim(manifest: Manifest) -> None:
    manifest["source"]["checked_against"] = [{"ref": "humaneval@1", "digest": "sha256:" + "0" * 64}]


def _size(manifest: Manifest) -> None:
    manifest["splits"]["train"]["bytes"] = 2 << 30


FORGERIES: dict[str, tuple[str, Callable[[Path], Callable[[Manifest], None]]]] = {
    "pass rates with ghost ids": ("rated@1.1.0", _solved_by_all),
    "mixture weights": ("mixed@1.0.0", lambda reg: _weights),
    "a mixture's environment": ("mixed@1.0.0", lambda reg: _env),
    "a lineage claim": ("rated@1.1.0", lambda reg: _claim),
    "a listed size": ("rated@1.1.0", lambda reg: _size),
}
REFUSED = r"does not cover what it lists; refused"
# A mirror refuses for its clients what its upstream answered: they are told the upstream failed.
UPSTREAM = r"HTTP 502 Bad Gateway"


def _to_bucket(reg: Path, bucket: str) -> None:
    import boto3

    name, prefix = bucket.removeprefix("s3://").split("/", 1)
    for path in reg.rglob("*"):
        if path.is_file():
            key = f"{prefix}/{path.relative_to(reg).as_posix()}"
            boto3.client("s3").put_object(Bucket=name, Key=key, Body=path.read_bytes())


@pytest.fixture(params=["local", "s3", "http", "mirrored s3"])
def where(request: pytest.FixtureRequest, published: Path, tmp_path: Path) -> Iterator[Any]:
    """A function that makes the forged local registry readable as the kind asked for (a
    folder, a bucket, an HTTP registry over the folder, a mirror over the bucket) and gives
    its location."""
    kind = request.param
    bucket = request.getfixturevalue("bucket") if "s3" in kind else None
    with contextlib.ExitStack() as stack:

        def location() -> str:
            if bucket is not None:
                _to_bucket(published, bucket)
            upstream = bucket or str(published)
            if kind in ("local", "s3"):
                return upstream
            app = App(registered=Registered(Mirror(upstream, Cache(tmp_path / "m"), ttl=0)))
            return stack.enter_context(background(app))

        yield location


def _fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / f"cache-{len(list(tmp_path.glob('cache-*')))}"
    monkeypatch.setenv("TASKPACK_CACHE", str(cache))
    return cache


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_a_forgery_in_place_is_refused_by_digest_and_by_name(
    forgery: str, published: Path, where: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref, make = FORGERIES[forgery]
    name, version = ref.split("@")
    digest = _edit(published, name, version, make(published))
    url = where()
    for pinned in (f"{name}@{digest}", ref):
        _fresh_cache(tmp_path, monkeypatch)
        refused = rf"{REFUSED}|no version of '{name}' matches|{UPSTREAM}"
        with pytest.raises(TaskpackError, match=refused):
            taskpack.load(pinned, split="train", registry=url)


def test_validate_names_each_forgery(published: Path, tmp_path: Path) -> None:
    for forgery, (ref, make) in sorted(FORGERIES.items()):
        name, version = ref.split("@")
        shutil.copytree(published, tmp_path / forgery)
        reg = tmp_path / forgery
        _edit(reg, name, version, make(reg))
        code, out = _cli("validate", ref, "--registry", str(reg))
        assert code == 1 and "does not cover what it lists" in out, (forgery, out)
    # Sealed under a new digest, the pass rates still name tasks the split lacks.
    reg = tmp_path / "sealed"
    shutil.copytree(published, reg)

    def resealed(manifest: Manifest) -> None:
        _solved_by_all(reg)(manifest)
        notes = manifest["annotations"]["train"]
        rows = ratings.read(reg / "objects" / sha256_relpath(notes["sha256"]))
        notes["digest"] = ratings.digest(rows)

    _edit(reg, "rated", "1.1.0", _sealed(resealed))
    code, out = _cli("validate", "rated@1.1.0", "--registry", str(reg))
    assert code == 1 and "annotations of 3 task(s) not in the split" in out, out


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_rows_that_are_not_their_digest_are_refused_on_every_read(
    published: Path, where: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forger who seals the version digest over new annotation bytes but cannot give them
    the published annotations digest: the rows are checked against it wherever they are read
    (open, annotations, filter, info, an export, serve's pages, pull), never used."""
    _edit(published, "rated", "1.1.0", _sealed(_solved_by_all(published)))
    url = where()
    wanted = r"annotations of split 'train' \(\w+\): annotations digest differs .*; refused"
    _fresh_cache(tmp_path, monkeypatch)
    ts = taskpack.open("rated@1.1.0", registry=url)
    with pytest.raises(TaskpackError, match=wanted):
        ts.annotations("train")
    reads = {
        "info": ("info", "rated@1.1.0"),
        "filter": ("filter", "rated@1.1.0", "--pass-rate", "solved", "--model", "m1"),
        "export": ("export", "rated@1.1.0", "--to", "verl", "-o", str(tmp_path / "verl")),
        "pull": ("pull", "rated@1.1.0"),
    }
    for what, args in reads.items():
        _fresh_cache(tmp_path, monkeypatch)
        code, out = _cli(*args, "--registry", url)
        assert code == 1 and "annotations digest differs" in out, (what, out)
    assert not (tmp_path / "verl").exists()


def test_serve_refuses_forged_pass_rates(published: Path) -> None:
    """The split page's pass-rate histogram is never drawn from rows that are not their
    digest: the page says why, and the task routes still answer."""
    import httpx

    from taskpack.serve.app import Api, Catalog

    _edit(published, "rated", "1.1.0", _sealed(_solved_by_all(published)))
    ts = taskpack.open("rated@1.1.0", registry=str(published))
    with background(App(api=Api(Catalog(ts)))) as url:
        page = httpx.get(url + "/view/train")
        assert page.status_code == 400 and "annotations digest differs" in page.text
        assert httpx.get(url + "/api/v1/splits/train/tasks/0").json()["task"]["id"] == "rated-0"


def test_a_lying_server_never_fills_the_cache(
    published: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An HTTP registry that raises one object's listed size to 2 GiB and sends that much:
    pinned, the client refuses the manifest before it downloads a byte, sealed or not."""
    app = App(registered=Registered(Mirror(str(published), Cache(tmp_path / "m"), ttl=0)))
    mirror = app.registered.mirror  # type: ignore[union-attr]
    real = json.loads(_key(published, "rated", "1.1.0").read_text())
    digest, sha = real["digest"], real["splits"]["train"]["sha256"]
    size = real["splits"]["train"]["bytes"]

    huge = tmp_path / "huge"  # sparse: 2 GiB that take no disk, sent for the split file
    with huge.open("wb") as f:
        f.truncate(2 << 30)
    asked: list[str] = []
    monkeypatch.setattr(mirror, "object", lambda n, v, wanted: asked.append(wanted) or huge)
    for seal in (False, True):
        lying = json.loads(json.dumps(real))
        (_sealed(_size) if seal else _size)(lying)
        body = json.dumps(lying).encode()
        monkeypatch.setattr(mirror, "manifest_bytes", lambda n, v, body=body: body)
        cache = _fresh_cache(tmp_path, monkeypatch)
        refused = rf"{REFUSED}|no version of 'rated' matches"
        with background(app) as url, pytest.raises(TaskpackError, match=refused):
            taskpack.load(f"rated@{digest}", split="train", registry=url)
        held = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
        assert held <= size + (1 << 20), held  # no object byte: one manifest at most
        assert not any(sha in p.name for p in cache.rglob("*")) and asked == []


def test_versions_of_format_2_open_and_say_their_source_is_unpinned(
    published: Path, tmp_path: Path
) -> None:
    """A version written before format 3 keeps its digest (over splits and annotations) and
    opens, verifies and exports; `info` and `validate` say in one line what it leaves out."""
    folder = tmp_path / "old"
    shutil.copytree(tmp_path / "rated", folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["format_version"] = 2
    manifest["digest"] = version_digest(manifest)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    without = {k: v for k, v in manifest.items() if k not in ("source",)}
    assert version_digest(without) == manifest["digest"]  # source not in it
    for command in ("info", "validate"):
        code, out = _cli(command, str(folder))
        assert code == 0 and "its digest does not pin its source" in out, out
    assert taskpack.verify(taskpack.open(folder)) == []
    taskpack.publish(folder, registry=str(tmp_path / "reg2"))
    split = taskpack.load("rated@1.1.0", split="train", registry=str(tmp_path / "reg2"))
    assert len(split) == 10
    code, out = _cli("merge", str(folder), "-o", str(tmp_path / "new"))
    assert code == 0, out
    code, out = _cli("info", str(tmp_path / "new"))
    assert code == 0 and "does not pin" not in out
    assert pq.ParquetFile(folder / "annotations" / "train.parquet").metadata.num_rows == 10
    assert os.path.isdir(tmp_path / "new")


# --- no host path in a manifest; lineage of any size ------------------------------------------


def test_no_host_path_leaves_the_machine(
    tmp_path: Path, published: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Imports, annotations and curation steps record files by name and sha256 and inputs by
    ref and digest; a path, relative to the working folder, only when asked."""
    from taskpack.importer import import_sources

    from .conftest import DATA

    src = tmp_path / "deep" / "gsm8k.jsonl"
    src.parent.mkdir()
    src.write_bytes((DATA / "gsm8k" / "test.jsonl").read_bytes()[:20_000].rsplit(b"\n", 1)[0])
    monkeypatch.chdir(tmp_path)
    made = import_sources(tmp_path / "g", {"test": [str(src)]}, "gsm8k", name="g").manifest
    assert made.source["files"] == [
        {"split": "test", "name": "gsm8k.jsonl", "sha256": file_sha256(src)}
    ]
    for folder in (tmp_path / "g", tmp_path / "rated", tmp_path / "mixed"):
        text = (folder / "manifest.json").read_text()
        assert str(tmp_path) not in text and "/root" not in text and "/home" not in text, text
    code, out = _cli("lineage", str(tmp_path / "rated"))
    assert code == 0 and "rollouts: rollouts.jsonl sha256:" in out and str(tmp_path) not in out
    monkeypatch.setenv("TASKPACK_LINEAGE_PATHS", "1")
    again = import_sources(tmp_path / "h", {"test": [str(src)]}, "gsm8k", name="g").manifest
    assert again.source["files"][0]["path"] == "deep/gsm8k.jsonl"


def _chain(tmp_path: Path, depth: int) -> Path:
    """`depth` versions, each recorded as made from the one before (by a relative path)."""
    base = _write(tmp_path / "v0", "chain", 1)
    previous = taskpack.open(base).manifest
    for k in range(1, depth + 1):
        folder = tmp_path / f"v{k}"
        shutil.copytree(base, folder)
        manifest = json.loads((folder / "manifest.json").read_text())
        entry = {"ref": "chain@1.0.0", "digest": previous.digest, "path": f"v{k - 1}"}
        manifest["source"] = {"operation": "filter", "inputs": [entry]}
        manifest["digest"] = version_digest(manifest)
        (folder / "manifest.json").write_text(json.dumps(manifest))
        previous = taskpack.open(folder).manifest
    return tmp_path / f"v{depth}"


def test_a_lineage_of_any_depth_and_breadth_is_walked_each_input_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from taskpack.curation import steps

    monkeypatch.chdir(tmp_path)
    links = list(steps.lineage(_chain(tmp_path, 1200)))
    assert len(links) == 1201 and links[-1].depth == 1200 and links[-1].manifest is not None
    wide = tmp_path / "wide"
    shutil.copytree(tmp_path / "v1", wide)
    manifest = json.loads((wide / "manifest.json").read_text())
    manifest["source"]["inputs"] *= 100_000
    manifest["digest"] = version_digest(manifest)
    (wide / "manifest.json").write_text(json.dumps(manifest))
    opened: list[Any] = []
    real = steps.open_target
    monkeypatch.setattr(steps, "open_target", lambda t, r: opened.append(t) or real(t, r))
    links = list(steps.lineage(wide))
    assert len(links) == 100_001 and all(link.manifest is not None for link in links)
    # the version; then its one input, named 100,000 times, looked for once (by digest, then path)
    assert len(opened) == 3


# --- curation inputs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reward, said",
    [
        ("NaN", "reward nan is not a number from 0 to 1"),
        ("Infinity", "reward inf is not a number from 0 to 1"),
        ("1" + "0" * 400, "reward 1000000000000000000000000000000000000... is not a number"),
        ("1.5", "reward 1.5 is not a number from 0 to 1"),
        ("-0.5", "reward -0.5 is not a number from 0 to 1"),
    ],
)
def test_rewards_out_of_range_are_one_line(
    reward: str, said: str, published: Path, tmp_path: Path
) -> None:
    rollouts = tmp_path / "bad.jsonl"
    rollouts.write_text(
        '{"id": "rated-1", "reward": 1}\n{"id": "rated-2", "reward": ' + reward + "}\n"
    )
    out = tmp_path / "o"
    code, text = _cli(
        "annotate", str(tmp_path / "base"), str(rollouts), "--model", "m", "-o", str(out)
    )
    assert code == 1 and f"bad.jsonl:2: {said}" in text and "Traceback" not in text, text
    assert not out.exists()


@pytest.mark.parametrize("success", ["nan", "inf", "0", "1.5", "-1"])
def test_a_success_value_out_of_range_is_one_line(success: str, tmp_path: Path) -> None:
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text('{"id": "x-1", "reward": 1}\n')
    _write(tmp_path / "x", "x", 3)
    code, text = _cli("annotate", str(tmp_path / "x"), str(rollouts), "--model", "m",
                      "--success", success)  # fmt: skip
    assert code == 1 and "--success" in text and "a reward above 0 and at most 1" in text, text


def test_mixture_weights_and_sources_are_checked(tmp_path: Path) -> None:
    a, b = _write(tmp_path / "a", "a", 20), _write(tmp_path / "b", "b", 20)
    code, text = _cli("mix", "m", f"{a}:inf", f"{b}:1", "-o", str(tmp_path / "m1"))
    assert code in (1, 2) and "a finite weight" in text and "Traceback" not in text, text
    # Weights near the largest float: the shares are what they say, no overflow.
    made = mix("m", [Part(str(a), 1e308), Part(str(b), 1e308)], tmp_path / "m2")
    ids = taskpack.open(tmp_path / "m2").split("train").ids()
    assert made.source["mixture"][0]["weight"] == 1e308 and {i[0] for i in ids} == {"a", "b"}
    with pytest.raises(TaskpackError, match=r"split 'train' is named twice \(also as"):
        mix("m", [Part(str(a), 0.5), Part(str(a), 0.5)], tmp_path / "m3")
    assert not (tmp_path / "m3").exists()


def test_dedup_of_texts_all_alike_compares_each_text_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("datasketch")
    from datasketch import MinHash

    from taskpack.curation.overlap import BUCKET, near_duplicates

    compared = 0
    real = MinHash.jaccard

    def counted(self: Any, other: Any) -> float:
        nonlocal compared
        compared += 1
        return float(real(self, other))

    monkeypatch.setattr(MinHash, "jaccard", counted)
    texts = {
        k: f"the same long question about apples and pears number {k % 3}" for k in range(2000)
    }
    clusters = near_duplicates(texts, 0.5)
    assert sorted(len(c) for c in clusters) == [2000]
    assert compared <= 2000 * BUCKET, compared  # once per text here; 2 million before


def test_an_ngram_longer_than_every_text_finds_nothing_at_once(published: Path) -> None:
    from taskpack.curation import decontaminate

    report = decontaminate(published.parent / "base", [published.parent / "a"], ngram=10**9)
    assert report.hits == [] and report.dropped == {}


def test_a_large_file_is_read_no_further_than_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manifest lists large files by hash alone; their size is in the task's row, under the
    split digest, and a download of one is held to it: a server sending 2 GiB for a 70 KiB
    file is cut off one buffer past it."""
    data = b"z" * 70_000
    folder = tmp_path / "big"
    task = make_task(0, files=[{"path": "big.bin", "data": data}])
    taskpack.write(folder, {"train": [task]}, name="big", version="1.0.0")
    reg = tmp_path / "reg"
    m, _ = taskpack.publish(folder, registry=str(reg))
    app = App(registered=Registered(Mirror(str(reg), Cache(tmp_path / "m"), ttl=0)))
    mirror = app.registered.mirror  # type: ignore[union-attr]
    huge = tmp_path / "huge"
    with huge.open("wb") as f:
        f.truncate(2 << 30)
    real = mirror.object
    blob = m.splits["train"].blobs[0]
    monkeypatch.setattr(
        mirror, "object", lambda n, v, sha: huge if sha == blob else real(n, v, sha)
    )
    _fresh_cache(tmp_path, monkeypatch)
    with background(app) as url:
        got = taskpack.load(f"big@{m.digest}", split="train", registry=url)[0]
        with pytest.raises(TaskpackError, match="more than the 70000 bytes listed for it"):
            got.file("big.bin").read_bytes()
