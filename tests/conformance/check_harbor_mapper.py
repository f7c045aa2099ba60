"""Runs inside the harbor venv (Python 3.12): Harbor's own Terminal-Bench mapper on every
folder of task folders given, and the hash of each file it puts in environment/, tests/ and
solution/.

    python check_harbor_mapper.py OUT SOURCE_DIR...  ->  JSON on stdout
"""

import contextlib
import hashlib
import io
import json
import sys
from pathlib import Path

from harbor.mappers.terminal_bench import TerminalBenchMapper

out = Path(sys.argv[1])
mapped: dict[str, dict[str, str]] = {}
failed: dict[str, str] = {}
for n, source in enumerate(sys.argv[2:]):
    target = out / str(n)
    with contextlib.redirect_stdout(io.StringIO()):
        result = TerminalBenchMapper().map(Path(source), target)
    for name, error in result.failed:
        failed[f"{source}/{name}"] = str(error)[:200]
    for task in sorted(p for p in target.iterdir() if p.is_dir()):
        if f"{source}/{task.name}" in failed:
            continue  # a half-written folder Harbor left behind
        files = {}
        for path in sorted(task.rglob("*")):
            rel = path.relative_to(task).as_posix()
            if path.is_file() and rel.split("/")[0] in ("environment", "tests", "solution"):
                files[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        mapped[f"{source}/{task.name}"] = files
print(json.dumps({"mapped": mapped, "failed": failed}))
