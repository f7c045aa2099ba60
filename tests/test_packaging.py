"""The wheel a user installs: schemas, catalog, LICENSE and py.typed inside, metadata set."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("taskpack-*.whl")
    return built


def test_the_wheel_carries_schemas_license_and_types(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for schema in (ROOT / "schemas").glob("*.json"):
        assert f"taskpack/schemas/{schema.name}" in names
    for recipe in (ROOT / "catalog").glob("*.yaml"):
        assert f"taskpack/catalog/{recipe.name}" in names
    assert "taskpack/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "License-Expression: Apache-2.0" in text
    assert "Classifier: Typing :: Typed" in text and "Requires-Python: >=3.10" in text


def resolve(tmp_path: Path, *requirements: str) -> dict[str, str]:
    """What pip would install for `requirements` in an empty environment (name -> version)."""
    report = tmp_path / "report.json"
    pip = [sys.executable, "-m", "pip", "install", "--dry-run", "-q", "--ignore-installed"]
    run = subprocess.run(
        [*pip, "--report", str(report), *requirements], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-3000:]
    installs = json.loads(report.read_text())["install"]
    return {
        i["metadata"]["name"].lower().replace("_", "-"): i["metadata"]["version"] for i in installs
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("transformers", "major", "hub_0x"),
    [("transformers>=4.40,<5", "4.", True), ("transformers>=5", "5.", False)],
)
def test_taskpack_all_installs_beside_transformers_4_and_5(
    wheel: Path, tmp_path: Path, transformers: str, major: str, hub_0x: bool
) -> None:
    """transformers 4.x excludes huggingface_hub 1.x and later; 5.x needs them."""
    got = resolve(tmp_path, f"{wheel}[all]", transformers)
    assert got["transformers"].startswith(major)
    assert got["huggingface-hub"].startswith("0.") == hub_0x
    assert {"boto3", "datasets", "httpx", "tenacity"} <= got.keys()


@pytest.mark.slow
def test_the_core_install_brings_only_what_local_task_sets_need(
    wheel: Path, tmp_path: Path
) -> None:
    got = resolve(tmp_path, str(wheel))
    for extra in ("boto3", "huggingface-hub", "datasets", "pandas", "multiprocess", "torch"):
        assert extra not in got
    assert {"pyarrow", "pydantic", "numpy", "filelock", "tqdm"} <= got.keys()
