"""Reading task sets written by format version 1, whose tasks had no roles for files, plain
string answers and text-only messages.

A version-1 row becomes a version-2 task: a file its reward runs as a test gets role `tests`,
the Dockerfile role `environment`, and files of Terminal-Bench and Harbor folders the roles the
readers of those formats give them today; any other file keeps version 1's meaning (brought into
the sandbox: `workspace`). The digest stays the row's own (`rows.row_digest`, one rule for
both versions), so published version-1 sets keep verifying.
"""

from __future__ import annotations

from typing import Any

from taskpack.layouts import harbor_place, terminal_bench_place
from taskpack.model import Task


def _placer(source_format: str | None) -> Any:
    return {"terminal-bench": terminal_bench_place, "harbor": harbor_place}.get(source_format or "")


def task_from_v1(row: dict[str, Any]) -> Task:
    reward = row.get("reward") or {}
    tests = {reward.get("test_file"), reward.get("test_patch")} - {None}
    dockerfile = (row.get("environment") or {}).get("dockerfile")
    place = _placer((row.get("source") or {}).get("format"))
    files = []
    for f in row["files"]:
        entry = {k: f[k] for k in ("mode", "data", "sha256", "size")}
        if place is not None:
            entry.update(place(f["path"]))
        else:
            entry["path"] = f["path"]
            entry["role"] = (
                "tests"
                if f["path"] in tests
                else "environment"
                if f["path"] == dockerfile
                else "workspace"
            )
        files.append(entry)
    upgraded = {**row, "files": files}
    if place is not None and dockerfile is not None:
        upgraded["environment"] = {**row["environment"], "dockerfile": place(dockerfile)["path"]}
    return Task.model_validate(upgraded)
