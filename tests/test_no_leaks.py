"""Tests and solutions never reach the agent: in every folder export (Harbor, OpenReward) of
every data set in ../shared/data and its peers, no verifier file, test patch or reference
solution is in the build context, the workspace or the instruction."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskpack.exporter import convert_format

from .conftest import REAL_SETS

SOURCES = REAL_SETS
AGENT_SIDE = ("environment", "workspace")
HIDDEN = ("tests", "solution")


def files_under(folder: Path, top: str) -> dict[str, bytes]:
    root = folder / top
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
    }


@pytest.mark.parametrize("fmt", ["harbor", "openreward"])
@pytest.mark.parametrize("name", sorted(SOURCES))
def test_no_verifier_or_solution_where_the_agent_can_read_it(
    tmp_path: Path, fmt: str, name: str
) -> None:
    reader, source, options = SOURCES[name]
    convert_format({"s": [str(source)]}, reader, fmt, tmp_path / "out", options=options)
    folders = [
        p.parent for p in (tmp_path / "out" / "s").rglob("task.*") if p.parent.parent.name == "s"
    ]
    assert folders
    for folder in folders:
        hidden = {k: v for top in HIDDEN for k, v in files_under(folder, top).items()}
        hidden.update(
            {k: v for k, v in files_under(folder, "steps").items() if "/workdir/" not in k}
        )
        visible = {k: v for top in AGENT_SIDE for k, v in files_under(folder, top).items()}
        instruction = (
            (folder / "instruction.md").read_bytes()
            if (folder / "instruction.md").exists()
            else b""
        )
        if fmt == "openreward":
            instruction = (folder / "task.yaml").read_bytes()
        secrets = {k: v for k, v in hidden.items() if len(v.strip()) >= 40}
        for path, data in visible.items():
            inner = path.split("/")[1:]
            assert len(inner) == 1 or inner[0] not in HIDDEN, (folder.name, path)
            leaked = [k for k, v in secrets.items() if v == data]
            assert not leaked, (folder.name, path, leaked)
        for path, data in secrets.items():
            assert data.strip() not in instruction, (folder.name, path)
