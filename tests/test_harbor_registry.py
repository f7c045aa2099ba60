"""Harbor's registries: `export --to harbor` writes each split's dataset.toml (every task pinned
by the digest Harbor's own packager computes) and a legacy registry.json; `taskpack serve`
serves the registry.json; `--from harbor` reads both and refuses a folder that is not what
its dataset.toml pins. Harbor 0.26's own models and CLI judge the files (slow, its venv)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import taskpack
from taskpack.base.nesting import parse_toml
from taskpack.converters.formats.harbor import dataset_toml, folder_digest, harbor_digest
from taskpack.errors import TaskpackError
from taskpack.exporter import export
from taskpack.importer import import_sources
from taskpack.serve.app import Api, App, Catalog, background

from .conftest import DATA


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("harbor-registry")
    sources = {
        "gsm8k": ({"test": [str(DATA / "gsm8k" / "test.jsonl")]}, "gsm8k"),
        "cookbook": ({"train": [str(DATA / "peers" / "harbor_cookbook")]}, "harbor"),
    }
    out = {}
    for name, (splits, fmt) in sources.items():
        import_sources(root / name, splits, fmt, name=name, version="1.2.0")
        export(taskpack.open(root / name), "harbor", root / f"{name}.harbor")
        out[name] = root / f"{name}.harbor"
    return out


def test_the_digest_is_harbors_rule(tmp_path: Path) -> None:
    """sha256 over `path NUL sha256 LF` of what Harbor's packager collects, in path order:
    the root's task.toml, instruction.md, README.md and trajectory.json and whatever is
    under environment/, tests/, solution/ and steps/, less its default ignores."""
    files = {
        "task.toml": b"a",
        "instruction.md": b"b",
        "tests/test.sh": b"c",
        "notes.txt": b"not collected",
        "tests/__pycache__/x.pyc": b"ignored",
        "environment/.DS_Store": b"ignored",
    }
    wanted = hashlib.sha256()
    for rel in ("instruction.md", "task.toml", "tests/test.sh"):
        wanted.update(f"{rel}\0{hashlib.sha256(files[rel]).hexdigest()}\n".encode())
    assert harbor_digest(files) == "sha256:" + wanted.hexdigest()
    assert harbor_digest({**files, "tests/.harborignore": b"*.txt"}) is None


def test_dataset_toml_holds_what_tomli_w_would_write() -> None:
    """Pins of plain strings are written without tomli_w's per-character escaping, to the
    same bytes; a pin needing an escape (a quote, a tab), or none, goes through tomli_w."""
    import tomli_w

    pin = {"name": "local/train-00001", "digest": "sha256:" + "ab" * 32}
    manifest = {
        "schema_version": "1.0",
        "dataset": {"name": "local/set-train", "version": "1.0.0", "description": 'a "b"\n'},
        "tasks": [pin, {**pin, "name": "local/t"}],
    }
    assert dataset_toml(manifest) == tomli_w.dumps(manifest)
    odd = {**manifest, "tasks": [pin, {"name": 'own "name"\t', "digest": "sha256:00"}]}
    for each in (odd, {**manifest, "tasks": []}):
        assert parse_toml(dataset_toml(each)) == each


def test_a_dataset_toml_and_a_registry_json_read_back(exports: dict[str, Path]) -> None:
    for name, out in exports.items():
        split = "test" if name == "gsm8k" else "train"
        root = out.parent
        folder = root / f"{name}-folder"
        import_sources(folder, {split: [str(out / split)]}, "harbor", name=name)
        pinned = root / f"{name}-pinned"
        import_sources(pinned, {split: [str(out / split / "dataset.toml")]}, "harbor", name=name)
        listed = root / f"{name}-listed"
        import_sources(listed, {split: [str(out / "registry.json")]}, "harbor", name=name)
        digests = [[t.digest for t in taskpack.open(p).split(split)] for p in (folder, pinned)]
        assert digests[0] == digests[1] and len(digests[0]) > 1
        ids = [t.id for t in taskpack.open(listed).split(split)]
        assert ids == [t.id for t in taskpack.open(folder).split(split)]


def test_a_folder_that_is_not_the_pinned_one_is_refused(
    exports: dict[str, Path], tmp_path: Path
) -> None:
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(exports["cookbook"], copy)
    task = next(p for p in (copy / "train").iterdir() if (p / "task.toml").is_file())
    before = folder_digest(task)
    (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    with pytest.raises(TaskpackError, match=r"is not the one dataset.toml pins"):
        pinned = {"train": [str(copy / "train" / "dataset.toml")]}
        import_sources(tmp_path / "t", pinned, "harbor", name="t")
    assert folder_digest(task) != before


def test_a_linked_task_folder_is_refused_by_both_registries(
    exports: dict[str, Path], tmp_path: Path
) -> None:
    """A task folder that is a link to a host folder (holding files no Harbor digest covers)
    is refused in one line by dataset.toml and registry.json alike, never read through."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(exports["cookbook"], copy)
    task = next(p for p in sorted((copy / "train").iterdir()) if (p / "task.toml").is_file())
    host = tmp_path / "host"
    shutil.move(task, host)
    (host / "secret.txt").write_text("not the task's\n")
    task.symlink_to(host, target_is_directory=True)
    for entry in ("train/dataset.toml", "registry.json"):
        with pytest.raises(TaskpackError, match="symbolic link") as caught:
            import_sources(tmp_path / "t", {"train": [str(copy / entry)]}, "harbor", name="t")
        assert "\n" not in str(caught.value)
        assert not (tmp_path / "t").exists()


def test_a_registry_json_of_a_million_entries_ends_at_its_first_bad_one(tmp_path: Path) -> None:
    """Entries are checked as they are reached: the first missing folder ends the read
    before the other 999,999 are looked at (each was checked first: 2 minutes, 815 MiB)."""
    tasks = [{"name": f"t{i}", "path": f"tasks/t{i}"} for i in range(10**6)]
    (tmp_path / "registry.json").write_text(json.dumps([{"name": "big", "tasks": tasks}]))
    looked: list[Path] = []
    from taskpack.converters import _folders

    real = _folders.inside

    def counted(root: Path, rel: str, what: str = "path") -> Path:
        looked.append(root / rel)
        return real(root, rel, what)

    import taskpack.converters.formats.harbor as harbor

    original, harbor.inside = harbor.inside, counted
    try:
        with pytest.raises(TaskpackError, match=r"tasks/t0\b"):
            registry = {"big": [str(tmp_path / "registry.json")]}
            import_sources(tmp_path / "t", registry, "harbor", name="t")
    finally:
        harbor.inside = original
    assert len(looked) <= 2


@pytest.mark.slow
@pytest.mark.conformance
def test_harbors_own_models_read_the_registries(exports: dict[str, Path]) -> None:
    from .test_conformance import run_check

    for name, out in exports.items():
        served = taskpack.open(out.parent / name)
        with background(App(api=Api(Catalog(served)))) as url:
            found = run_check(
                "harbor", "check_harbor_registry.py", str(out), url + "/harbor/registry.json"
            )
        split, count = ("test", 1319) if name == "gsm8k" else ("train", 10)
        dataset = f"local/{name}-{split}"
        assert found["datasets"] == {
            dataset: {
                "version": "1.2.0",
                "tasks": count,
                "mismatched": [],
                "content_hash": found["datasets"][dataset]["content_hash"],
            }
        }
        assert found["registry"] == {
            f"{name}-{split}": {"version": "1.2.0", "tasks": count, "missing": []}
        }
        assert found["listed"] == found["served"] == [[f"{name}-{split}", "1.2.0"]]
        index = json.loads((out / split / "index.json").read_text())["tasks"]
        assert len(index) == count
