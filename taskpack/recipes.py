"""Catalog recipes: how to build a well-known public task set from a local copy of its files.

A recipe names the upstream location and revision, the license, the importer and its options,
and the file (and, where pinned, the sha256) of each split. Building checks those hashes, so a
recipe builds the same task set, with the same digests, on every machine.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from taskpack.base.objects import file_sha256
from taskpack.errors import TaskpackError, describe_error, unknown
from taskpack.importer import ImportResult, import_sources


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Upstream(_Strict):
    url: str
    revision: str
    path: str = "."
    origin: str | None = None


class SplitFile(_Strict):
    file: str
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    # Lines first..last (1-based, inclusive) of the file, for a dataset that defines its
    # splits as ranges of one file (MBPP: task ids 1-10 prompt, 11-510 test, ...).
    lines: tuple[int, int] | None = None


class Recipe(_Strict):
    name: str
    version: str
    description: str
    license: str
    upstream: Upstream
    format: str
    options: dict[str, Any] = {}
    splits: dict[str, SplitFile]


def recipes() -> dict[str, Recipe]:
    """Every recipe shipped in the package, by name."""
    found = {}
    for entry in sorted(resources.files("taskpack.catalog").iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            try:
                recipe = Recipe.model_validate(yaml.safe_load(entry.read_text(encoding="utf-8")))
            except ValidationError as e:
                raise TaskpackError(f"catalog/{entry.name}: {describe_error(e)}") from None
            found[recipe.name] = recipe
    return found


def recipe(name: str) -> Recipe:
    known = recipes()
    if name not in known:
        raise unknown("recipe", name, list(known))
    return known[name]


def source_files(r: Recipe, source: Path, check: bool = True) -> dict[str, list[str]]:
    """Map each split to its local file: `source` is the folder of upstream files, or the one
    file of a single-split recipe. Pinned hashes are checked unless `check` is off."""
    if source.is_file():
        if len({s.file for s in r.splits.values()}) != 1:
            raise TaskpackError(
                f"{r.name} has splits {list(r.splits)}: give the folder holding them"
            )
        files = {split: source for split in r.splits}
    else:
        files = {split: source / s.file for split, s in r.splits.items()}
    for split, path in files.items():
        if not path.is_file():
            raise TaskpackError(f"{r.name}: split {split!r} needs {path}, which does not exist")
        pinned = r.splits[split].sha256
        if check and pinned and file_sha256(path) != pinned:
            raise TaskpackError(
                f"{path}: sha256 differs from the recipe's pinned upstream revision "
                f"{r.upstream.revision} (build anyway with --no-check)"
            )
    return {split: [str(path)] for split, path in files.items()}


def build(
    name: str,
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    *,
    check: bool = True,
    **options: Any,
) -> ImportResult:
    """Build the catalog task set `name` from local upstream files at `source` into `target`."""
    r = recipe(name)
    return import_sources(
        target,
        source_files(r, Path(source), check),
        r.format,
        options=r.options,
        lines={split: s.lines for split, s in r.splits.items() if s.lines is not None},
        name=r.name,
        version=r.version,
        description=r.description,
        license=r.license,
        source={"format": r.format, "recipe": r.name, "upstream": r.upstream.model_dump()},
        **options,
    )
