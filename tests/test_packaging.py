"""The wheel a user installs: schemas, catalog, LICENSE and py.typed inside, metadata set."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_carries_schemas_license_and_types(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("taskpack-*.whl")
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
