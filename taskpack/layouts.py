"""Where the folder formats put a file of each role: the one rule, shared by their readers
(`converters.harbor`, `converters.terminal_bench`) and by the upgrade of version-1 task sets,
which gives old rows the roles those readers give today. It lives beside the model, not among
the formats, so that reading a task set never imports a format.
"""

from __future__ import annotations

from typing import Any

HARBOR_ROLE_DIRS = {"environment": "environment", "tests": "tests", "solution": "solution"}
HARBOR_STEP_DIRS = {"tests": "tests", "solution": "solution", "workspace": "workdir"}
TERMINAL_BENCH_MARKER = "task.yaml"
# Terminal-Bench source path -> (role, path in the model), for files not placed by their folder.
TERMINAL_BENCH_SPECIAL = {
    "run-tests.sh": ("tests", "test.sh"),
    "solution.sh": ("solution", "solve.sh"),
    TERMINAL_BENCH_MARKER: ("other", TERMINAL_BENCH_MARKER),
    "docker-compose.yaml": ("other", "docker-compose.yaml"),
}


def harbor_place(rel: str) -> dict[str, Any]:
    """Role, path and step of the file at `rel` in a Harbor task folder."""
    head, _, rest = rel.partition("/")
    for role, folder in HARBOR_ROLE_DIRS.items():
        if head == folder and rest:
            return {"role": role, "path": rest}
    if head == "steps" and rest.count("/") >= 1:
        step, _, inner = rest.partition("/")
        sub, _, path = inner.partition("/")
        for role, folder in HARBOR_STEP_DIRS.items():
            if sub == folder and path:
                return {"role": role, "path": path, "step": step}
        return {"role": "other", "path": inner, "step": step}
    return {"role": "other", "path": rel}


def terminal_bench_place(rel: str) -> dict[str, Any]:
    """Role and path of the file at `rel` in a Terminal-Bench folder."""
    if rel in TERMINAL_BENCH_SPECIAL:
        role, path = TERMINAL_BENCH_SPECIAL[rel]
        return {"role": role, "path": path}
    if rel.startswith("tests/"):
        return {"role": "tests", "path": rel.removeprefix("tests/")}
    return {"role": "environment", "path": rel}
