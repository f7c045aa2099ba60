"""Runs inside the harbor venv (Python 3.12): harbor's Task loads every exported folder, and
`harbor lint` (the CLI, its default rules) reports no findings.

    python check_harbor.py SPLIT_DIR  ->  JSON on stdout
"""

import json
import subprocess
import sys
from pathlib import Path

from harbor.models.task.task import Task

folders = sorted(p.parent for p in Path(sys.argv[1]).glob("*/task.toml"))
loaded = 0
for folder in folders:
    task = Task(folder)
    assert task.instruction.strip()
    loaded += 1
harbor = Path(sys.executable).parent / "harbor"
lint = subprocess.run(
    [str(harbor), "lint", "--json", *map(str, folders)], capture_output=True, text=True, check=False
)
findings = json.loads(lint.stdout or "[]") if lint.stdout.strip().startswith("[") else lint.stdout
print(
    json.dumps(
        {
            "folders": len(folders),
            "loaded": loaded,
            "lint_exit": lint.returncode,
            "findings": findings,
            "stderr": lint.stderr[-2000:],
        }
    )
)
