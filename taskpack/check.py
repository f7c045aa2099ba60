"""Does an exported task work? For each task of a folder export (Harbor, OpenReward), run its
reference solution, then its verifier, and read the reward; then the verifier alone, with no
solution applied. A working task scores 1 and 0.

Tasks run in a bubblewrap sandbox with no network: /app (the workdir, built from the
Dockerfile's COPY steps), /tests, /solution and /logs are temporary folders, and the root
file system is this machine's /usr, read-only. That stands in for `python:*` base images only;
a task that needs any other image, a build step (RUN), or several containers cannot be run here
and is counted as "not run" with the reason, never as passed.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from taskpack.errors import TaskpackError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

STAND_IN = re.compile(r"^(?:docker\.io/)?(?:library/)?python:[\w.-]+$")
_IGNORED = {"CMD", "ENTRYPOINT", "EXPOSE", "LABEL", "USER", "SHELL", "STOPSIGNAL", "ARG"}
Status = Literal["ok", "failed", "not run"]


class NotRunnable(Exception):
    """The task needs something this machine cannot give it; the message says what."""


@dataclass
class TaskCheck:
    folder: Path
    status: Status
    oracle: float | None = None
    null: float | None = None
    reason: str = ""


@dataclass
class _Image:
    workdir: str
    env: dict[str, str]
    copies: list[tuple[Path, str]]  # (source in the build context, destination)


def _instructions(text: str) -> list[tuple[str, str]]:
    joined = re.sub(r"\\\n", " ", text)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _image(folder: Path) -> _Image:
    context = folder / "environment"
    if (context / "docker-compose.yaml").exists() or (context / "docker-compose.yml").exists():
        raise NotRunnable("several containers (docker-compose): no container runtime here")
    dockerfile = context / "Dockerfile"
    if not dockerfile.is_file():
        raise NotRunnable("no environment/Dockerfile to build the environment from")
    image = _Image(workdir="/", env={}, copies=[])
    for word, rest in _instructions(dockerfile.read_text(encoding="utf-8")):
        if word == "FROM":
            base = rest.split()[0]
            if not STAND_IN.match(base):
                raise NotRunnable(f"needs image {base}, which cannot be pulled or built here")
        elif word == "WORKDIR":
            image.workdir = os.path.normpath(os.path.join(image.workdir, rest))
        elif word == "ENV":
            pairs = shlex.split(rest)
            if len(pairs) == 2 and "=" not in pairs[0]:
                image.env[pairs[0]] = pairs[1]
            else:
                image.env.update(p.split("=", 1) for p in pairs if "=" in p)  # type: ignore[misc]
        elif word in ("COPY", "ADD"):
            args = [a for a in shlex.split(rest) if not a.startswith("--")]
            dest = os.path.normpath(os.path.join(image.workdir, args[-1]))
            for src in args[:-1]:
                path = (context / src).resolve()
                if not path.is_relative_to(context.resolve()):
                    raise NotRunnable(f"Dockerfile copies {src} from outside its build context")
                image.copies.append((path, dest + ("/" if args[-1].endswith("/") else "")))
        elif word not in _IGNORED:
            raise NotRunnable(f"Dockerfile has a {word} step, and no image can be built here")
    if image.workdir != "/app" or any(not d.startswith("/app") for _, d in image.copies):
        raise NotRunnable(f"works in {image.workdir}, not /app (only /app is set up here)")
    return image


def _lay_out(image: _Image, folder: Path, app: Path) -> None:
    for src, dest in image.copies:
        target = app / os.path.relpath(dest.rstrip("/"), "/app")
        if src.is_dir():
            shutil.copytree(src, target, dirs_exist_ok=True, symlinks=False)
        else:
            target = target / src.name if dest.endswith("/") else target
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    workspace = folder / "workspace"  # OpenReward: the agent's starting files
    if workspace.is_dir():
        shutil.copytree(workspace, app, dirs_exist_ok=True)


def _bwrap() -> str:
    found = shutil.which("bwrap")
    if found is None:
        raise TaskpackError("bubblewrap is not installed (apt-get install bubblewrap)")
    return found


def _run(
    root: Path, image: _Image, script: str, timeout: float
) -> subprocess.CompletedProcess[bytes]:
    binds = []
    for name in ("app", "tests", "solution", "logs"):
        binds += ["--bind", str(root / name), f"/{name}"]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TEST_DIR": "/tests"}
    env.update(image.env)
    setenv = [x for k, v in env.items() for x in ("--setenv", k, v)]
    args = [
        _bwrap(),
        "--unshare-all",
        "--die-with-parent",
        "--ro-bind", "/usr", "/usr",
        "--symlink", "usr/bin", "/bin",
        "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64",
        "--symlink", "usr/sbin", "/sbin",
        "--proc", "/proc",
        "--dev", "/dev",
        "--tmpfs", "/tmp",
        *binds,
        "--chdir", image.workdir,
        "--clearenv",
        *setenv,
        "bash", script,
    ]  # fmt: skip
    return subprocess.run(args, capture_output=True, timeout=timeout, check=False)


def _reward(logs: Path) -> float:
    import json

    text_file, json_file = logs / "verifier" / "reward.txt", logs / "verifier" / "reward.json"
    if text_file.is_file():
        return float(text_file.read_text().strip())
    if json_file.is_file():
        data = json.loads(json_file.read_text())
        if isinstance(data, dict) and "reward" in data:
            return float(data["reward"])
        values = [float(v) for v in data.values()] if isinstance(data, dict) else []
        return sum(values) / len(values) if values else 0.0
    return 0.0  # the verifier wrote nothing: no reward


def _attempt(folder: Path, image: _Image, oracle: bool, timeout: float) -> float:
    with tempfile.TemporaryDirectory(prefix="taskpack-check-") as tmp:
        root = Path(tmp)
        for name in ("app", "tests", "solution", "logs/verifier", "logs/agent"):
            (root / name).mkdir(parents=True)
        _lay_out(image, folder, root / "app")
        for name in ("tests", "solution"):
            if (folder / name).is_dir():
                shutil.copytree(folder / name, root / name, dirs_exist_ok=True)
        if oracle:
            _run(root, image, "/solution/solve.sh", timeout)
        _run(root, image, "/tests/test.sh", timeout)
        return _reward(root / "logs")


def check_task(folder: Path, timeout: float = 120.0) -> TaskCheck:
    """Run one task folder's oracle and null attempts; see the module's docstring."""
    try:
        if (folder / "steps").is_dir():
            raise NotRunnable("multi-step tasks are not checked yet")
        if not (folder / "tests" / "test.sh").is_file():
            raise NotRunnable("no tests/test.sh verifier")
        if not (folder / "solution" / "solve.sh").is_file():
            raise NotRunnable("no solution/solve.sh reference solution")
        if (folder / "task.toml").is_file():
            config = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
            if not (folder / "environment" / "Dockerfile").is_file():
                image_name = config.get("environment", {}).get("docker_image")
                if image_name and not STAND_IN.match(image_name):
                    raise NotRunnable(f"needs image {image_name}, which cannot be pulled here")
        image = _image(folder)
        oracle = _attempt(folder, image, True, timeout)
        null = _attempt(folder, image, False, timeout)
    except NotRunnable as e:
        return TaskCheck(folder, "not run", reason=str(e))
    except subprocess.TimeoutExpired:
        return TaskCheck(folder, "failed", reason=f"timed out after {timeout:g} s")
    except (ValueError, OSError) as e:
        return TaskCheck(folder, "failed", reason=f"unreadable reward or folder ({e})")
    ok = oracle == 1.0 and null == 0.0
    reason = "" if ok else f"oracle scored {oracle:g}, no solution scored {null:g}"
    return TaskCheck(folder, "ok" if ok else "failed", oracle, null, reason)


def check_export(
    root: str | os.PathLike[str],
    timeout: float = 120.0,
    jobs: int | None = None,
    progress: Callable[[Iterator[TaskCheck], int], Iterator[TaskCheck]] | None = None,
) -> list[TaskCheck]:
    """Check every task folder below `root`, `jobs` at a time (default: one per CPU)."""
    from concurrent.futures import ThreadPoolExecutor

    _bwrap()
    from taskpack.converters._folders import task_folders

    folders = [folder for _, folder in task_folders(os.fspath(root), ("task.toml", "task.yaml"))]
    with ThreadPoolExecutor(jobs or os.cpu_count() or 1) as pool:
        results = pool.map(lambda folder: check_task(folder, timeout), folders)
        return list(progress(results, len(folders)) if progress else results)


def summary(results: list[TaskCheck]) -> list[str]:
    """One line of counts, then one line per reason a task did not run or failed."""
    from collections import Counter

    counts = Counter(r.status for r in results)
    lines = [
        f"{len(results)} tasks: {counts['ok']} ok (oracle 1, no solution 0), "
        f"{counts['failed']} failed, {counts['not run']} not run"
    ]
    reasons = Counter((r.status, r.reason) for r in results if r.status != "ok")
    lines += [f"  {status}: {reason} ({n})" for (status, reason), n in sorted(reasons.items())]
    return lines
