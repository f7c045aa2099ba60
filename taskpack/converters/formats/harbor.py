"""Harbor task folders: task.toml, instruction.md, environment/ (the Docker build context),
tests/ (copied in only to verify: test.sh writes /logs/verifier/reward.txt), solution/ (the
oracle), and for multi-step tasks steps/<name>/ with its own instruction.md, tests/, solution/
and workdir/.

instruction.md -> prompt; environment/, tests/, solution/ -> files with those roles (paths
relative to their folder), steps/<name>/workdir/ -> the step's workspace files, any other file
(a README) -> role `other`, kept where it was; task.toml: [metadata] -> metadata, timeouts and
resources -> environment and limits, `environment.env` -> environment variables,
`environment.mcp_servers` -> MCP tools, [[steps]] -> steps. The rest of task.toml stays in
`extras.harbor` and is written back in place.

A task from elsewhere gets what Harbor needs: its image, declared as `[environment]
docker_image` with /app its working folder, or, where its workspace files must be copied to
/app, a Dockerfile that builds it (a task's own Dockerfile is kept as it is); a tests/test.sh
made from its reward, a solution/solve.sh from its reference solution. Tests and solutions
never go into environment/.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tomli_w
from pydantic import Field, ValidationError

from taskpack import records
from taskpack.base.nesting import parse_json, parse_toml
from taskpack.converters._chat import instruction_text
from taskpack.converters._folders import (
    Files,
    WrittenSplit,
    file_entry,
    inside,
    json_text,
    read_folders,
    read_text,
    task_folders,
    walk,
    write_split,
)
from taskpack.converters._format import (
    CHECKED_FIELDS,
    Format,
    Options,
    Target,
    WriteOptions,
    report_uncarried,
)
from taskpack.converters._payload import PAYLOAD_KEY, task_from_payload, task_payload
from taskpack.converters._residue import apply, residue
from taskpack.converters._rows import STYLE, own_extras
from taskpack.converters._sources.records import Record, RowError
from taskpack.converters._verifier import complete, instruction_suffix
from taskpack.errors import TaskpackError, describe_error
from taskpack.layouts import HARBOR_ROLE_DIRS, HARBOR_STEP_DIRS, harbor_place
from taskpack.model import Task, TaskFile

if TYPE_CHECKING:
    from taskpack.storage.taskset import Later

MARKER = "task.toml"
INSTRUCTION = "instruction.md"
PAYLOAD_FILE = "tests/taskpack.json"  # the whole task, with the `embed` option
ROLE_DIRS, STEP_DIRS = HARBOR_ROLE_DIRS, HARBOR_STEP_DIRS
_RESOURCES = ("build_timeout_sec", "cpus", "memory_mb", "storage_mb", "gpus")
_MCP_FIELDS = ("transport", "url", "command", "args")
place = harbor_place  # role, path and step of a file of the folder (`taskpack.layouts`)


def _stored_path(f: TaskFile) -> str:
    """Where a task file goes in a Harbor folder: `place` inverted."""
    if f.step is not None:
        sub = STEP_DIRS.get(f.role)
        return f"steps/{f.step}/{sub}/{f.path}" if sub else f"steps/{f.step}/{f.path}"
    if f.role in ROLE_DIRS:
        return f"{ROLE_DIRS[f.role]}/{f.path}"
    if f.role == "workspace":
        return f"environment/workspace/{f.path}"
    return f.path


# --- reading -------------------------------------------------------------------------------


def _table(value: Any, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RowError(f"{MARKER}: [{name}] must be a table")
    return value


def _mapped(rel: str) -> bool:
    """Files that become task fields rather than task files."""
    parts = rel.split("/")
    return rel in (MARKER, INSTRUCTION) or (
        len(parts) == 3 and parts[0] == "steps" and parts[2] == INSTRUCTION
    )


def _check(tests: set[str]) -> dict[str, Any] | None:
    return (
        {"kind": "test_command", "command": "bash /tests/test.sh"} if "test.sh" in tests else None
    )


def to_task(task_id: str, folder: Path, config: dict[str, Any]) -> dict[str, Any]:
    files = []
    for rel, path, mode in walk(folder):
        if _mapped(rel):
            continue
        files.append(file_entry(path, mode, place(rel)))
    env = _table(config.get("environment"), "environment")
    names = [s.get("name") for s in config.get("steps") or [] if isinstance(s, dict)]
    names += sorted({f["step"] for f in files if f.get("step") and f["step"] not in names})
    steps = []
    for n, name in enumerate(names):
        if not isinstance(name, str):
            raise RowError(f"{MARKER}: steps[{n}] has no name")
        table = (
            (config.get("steps") or [{}] * len(names))[n]
            if n < len(config.get("steps") or [])
            else {}
        )
        agent = _table(table.get("agent"), f"steps.{name}.agent")
        step_tests = {f["path"] for f in files if f.get("step") == name and f["role"] == "tests"}
        steps.append(
            {
                "name": name,
                "prompt": read_text(folder, f"steps/{name}/{INSTRUCTION}"),
                "reward": _check(step_tests),
                "limits": {"timeout_sec": agent.get("timeout_sec")}
                if "timeout_sec" in agent
                else None,
            }
        )
    tests = {f["path"] for f in files if f["role"] == "tests" and not f.get("step")}
    verifier, agent = (
        _table(config.get("verifier"), "verifier"),
        _table(config.get("agent"), "agent"),
    )
    environment = {
        "dockerfile": "Dockerfile"
        if any(f["role"] == "environment" and f["path"] == "Dockerfile" for f in files)
        else None,
        "image": env.get("docker_image"),
        "workdir": env.get("workdir"),
        "env": env.get("env") or {},
        "internet": env.get("allow_internet"),
        "test_timeout_sec": verifier.get("timeout_sec"),
        **{k: env[k] for k in _RESOURCES if k in env},
    }
    servers = env.get("mcp_servers") or []
    if not isinstance(servers, list):
        raise RowError(f"{MARKER}: environment.mcp_servers must be a list")
    return {
        "id": task_id,
        "prompt": read_text(folder, INSTRUCTION),
        "reward": _check(tests),
        "tools": [
            {"type": "mcp", **{k: s.get(k) for k in ("name", *_MCP_FIELDS) if k in s}}
            for s in servers
        ],
        "files": files,
        "steps": steps,
        "environment": environment
        if any(v not in (None, {}) for v in environment.values())
        else None,
        "limits": {"timeout_sec": agent["timeout_sec"]} if "timeout_sec" in agent else None,
        "source": {"format": "harbor"},
        "metadata": _table(config.get("metadata"), "metadata"),
    }


def _embedded(folder: Path) -> dict[str, Any] | None:
    """The whole task `embed` wrote, if `tests/taskpack.json` is that: `{"taskpack": task}`,
    or the bare task object earlier exports wrote. Any other file of that name is the
    task's own, read as its other files are."""
    text = read_text(folder, PAYLOAD_FILE)
    if text is None:
        return None
    try:
        found = parse_json(text)
    except ValueError:
        return None
    if isinstance(found, dict) and set(found) == {PAYLOAD_KEY}:
        return task_from_payload(found[PAYLOAD_KEY], PAYLOAD_FILE)
    if isinstance(found, dict) and {"id", "prompt", "files"} <= set(found):
        return task_from_payload(found, PAYLOAD_FILE)
    return None


def convert(task_id: str, folder: Path) -> Any:
    whole = _embedded(folder)
    if whole is not None:
        return whole
    try:
        config = parse_toml(read_text(folder, MARKER) or "")
    except ValueError as e:
        raise RowError(f"{MARKER}: {e}") from None
    try:
        task = Task.model_validate(to_task(task_id, folder, config))
    except ValidationError as e:
        raise RowError(describe_error(e)) from None
    extra = residue(config, to_toml(task, None))
    # task.toml and instruction.md become fields; their modes, when not the default, are a
    # style of the folder.
    modes = {rel: mode for rel, _, mode in walk(folder) if mode != 0o644 and _mapped(rel)}
    if modes:
        extra[STYLE] = {"modes": modes}
    if extra:
        task.extras["harbor"] = extra
    return task


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    """Task folders at `uri`; or the tasks a Harbor `dataset.toml` pins (each folder's digest
    must be the pinned one) or a `registry.json` lists (the dataset named `split`, or ending
    in `-split`, or the only one)."""
    path = Path(uri)
    if path.name == DATASET and path.is_file():
        pins = _pinned(path)

        def checked(task_id: str, folder: Path) -> Any:
            found, pinned = folder_digest(folder), pins[folder]
            if found != pinned:
                raise RowError(f"its digest {found} is not the one {DATASET} pins ({pinned})")
            return convert(task_id, folder)

        return read_folders(uri, MARKER, checked, _ids(pins))
    if path.name == REGISTRY and path.is_file():
        return read_folders(uri, MARKER, convert, _listed(path, split))
    return read_folders(uri, MARKER, convert)


def _harbor_file(path: Path) -> Any:
    try:
        text = read_text(path.parent, path.name) or ""
        return parse_toml(text) if path.suffix == ".toml" else parse_json(text)
    except (ValueError, RowError) as e:
        raise TaskpackError(f"{path}: {e}") from None


def _pinned(path: Path) -> dict[Path, str]:
    """Each task folder a dataset.toml pins, with its digest: found beside it by the name its
    task.toml gives (`[task] name`) or, failing that, by its folder's name."""
    manifest = _harbor_file(path)
    root = path.parent
    named: dict[str, Path] = {}
    for folder in sorted(root.iterdir()):
        if folder.is_symlink():  # named, never read through: a pin of it is refused below
            named[folder.name] = folder
            continue
        if not (folder / MARKER).is_file():
            continue
        config = _harbor_file(folder / MARKER)
        own = config.get("task", {}).get("name") if isinstance(config.get("task"), dict) else None
        named[folder.name] = folder
        if isinstance(own, str):
            named[own] = folder
    pins = {}
    for entry in manifest.get("tasks") or []:
        name, digest = str(entry.get("name", "")), str(entry.get("digest", ""))
        found = named.get(name) or named.get(name.split("/", 1)[-1])
        if found is None:
            raise TaskpackError(f"{path}: task {name!r} is not a task folder beside it")
        if found.is_symlink():
            raise TaskpackError(f"{path}: task {name!r} is a symbolic link; links are refused")
        pins[found] = digest
    if not pins:
        raise TaskpackError(f"{path}: it pins no tasks")
    return pins


def _ids(folders: Iterable[Path]) -> Iterator[tuple[str, Path]]:
    """Each folder with its task id: the one the index beside it (taskpack's) gives, else
    its name; as the folders come, so a registry's millionth entry costs nothing until the
    ones before it are read."""
    indexes: dict[Path, dict[str, str]] = {}
    for folder in folders:
        root = folder.parent
        if root not in indexes:
            pairs = task_folders(str(root), MARKER) if (root / "index.json").is_file() else []
            indexes[root] = {where.name: task_id for task_id, where in pairs}
        yield indexes[root].get(folder.name, folder.name), folder


def _listed(path: Path, split: str) -> Iterator[tuple[str, Path]]:
    """The task folders of the dataset of a registry.json that `split` names, each checked
    (no link, no `..`, no git repository) when it is reached: an error in one entry ends the
    read there, not after every entry was looked at."""
    specs = _harbor_file(path)
    if not isinstance(specs, list) or not all(isinstance(s, dict) for s in specs):
        raise TaskpackError(f"{path}: not a Harbor registry (a list of datasets)")
    names = [str(s.get("name")) for s in specs]
    chosen = [
        s for s in specs if s.get("name") == split or str(s.get("name")).endswith("-" + split)
    ]
    if not chosen and len(specs) == 1:
        chosen = specs
    if len(chosen) != 1:
        raise TaskpackError(
            f"{path}: no one dataset for split {split!r} (datasets: {', '.join(names)})"
        )
    entries = chosen[0].get("tasks") or []

    def folders() -> Iterator[Path]:
        for entry in entries:
            if not isinstance(entry, dict):
                raise TaskpackError(f"{path}: a task entry is not an object: {entry!r:.60}")
            if entry.get("git_url"):
                raise TaskpackError(f"{path}: task {entry.get('name')!r} is in a git repository")
            try:
                yield inside(path.parent, str(entry.get("path", "")), "task path")
            except RowError as e:
                raise TaskpackError(f"{path}: {e}") from None

    return _ids(folders())


# --- writing -------------------------------------------------------------------------------

# What a task from elsewhere gets in task.toml beyond its own fields.
_DEFAULTS: dict[str, Any] = {
    "version": "1.0",
    # The verifier runs in a fresh container (never the agent's) and sees the agent's /app.
    "artifacts": ["/app"],
    "verifier": {"timeout_sec": 600.0, "environment_mode": "separate"},
    "agent": {"timeout_sec": 600.0},
}


def _no_nulls(value: Any) -> Any:
    """TOML has no null: None values are left out (the caller reports it)."""
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_nulls(v) for v in value if v is not None]
    return value


def to_toml(task: Task, target: Target | None) -> dict[str, Any]:
    """task.toml's content from the task's own fields."""
    env, limits = task.environment, task.limits
    config: dict[str, Any] = {}
    if task.metadata:
        clean = _no_nulls(task.metadata)
        if clean != task.metadata and target is not None:
            target.losses.lost("metadata null values (TOML has no null)", task)
        config["metadata"] = clean
    if env and env.test_timeout_sec is not None:
        config["verifier"] = {"timeout_sec": env.test_timeout_sec}
    if limits and limits.timeout_sec is not None:
        config["agent"] = {"timeout_sec": limits.timeout_sec}
    table: dict[str, Any] = {}
    if env is not None:
        table.update({k: getattr(env, k) for k in _RESOURCES if getattr(env, k) is not None})
        for key, value in (
            ("docker_image", env.image),
            ("workdir", env.workdir),
            ("allow_internet", env.internet),
        ):
            if value is not None:
                table[key] = value
        if env.env:
            table["env"] = dict(env.env)
    servers = [t for t in task.tools if isinstance(t, records.McpServer)]
    if len(servers) < len(task.tools) and target is not None:
        target.losses.lost("function tools (Harbor offers tools through MCP servers)", task)
    if servers:
        table["mcp_servers"] = [
            {
                "name": s.name,
                **{k: getattr(s, k) for k in _MCP_FIELDS if getattr(s, k) not in (None, [])},
            }
            for s in servers
        ]
    if table:
        config["environment"] = table
    if task.steps:
        config["steps"] = []
        for step in task.steps:
            entry: dict[str, Any] = {"name": step.name}
            if step.limits and step.limits.timeout_sec is not None:
                entry["agent"] = {"timeout_sec": step.limits.timeout_sec}
            config["steps"].append(entry)
    return config


def _task_files(task: Task, target: Target) -> Files:
    report_uncarried(FORMAT, task, target.losses)
    extra, hints = own_extras(task, "harbor")
    modes: dict[str, int] = hints.get("modes", {})
    native = "harbor" in task.extras or (task.source is not None and task.source.format == "harbor")
    files = {_stored_path(f): (f.read_bytes(), f.mode) for f in task.files}
    if task.prompt or not task.steps:
        text = instruction_text(task.prompt, task, target)
        if not native:
            text += instruction_suffix(task)
        files[INSTRUCTION] = (text.encode("utf-8"), modes.get(INSTRUCTION, 0o644))
    for step in task.steps:
        if step.prompt:
            rel = f"steps/{step.name}/{INSTRUCTION}"
            text = instruction_text(step.prompt, task, target)
            files[rel] = (text.encode("utf-8"), modes.get(rel, 0o644))
    declared = None
    if not native:
        declared = complete(task, files, target, "reward", copy_workspace=True, declare_image=True)
    if target.options.embed:
        if PAYLOAD_FILE in files:
            raise TaskpackError(
                f"task {task.id!r}: its own file {PAYLOAD_FILE} is where `embed` puts the whole "
                "task; export it without embed"
            )
        whole = {PAYLOAD_KEY: task_payload(task)}
        files[PAYLOAD_FILE] = (json.dumps(whole, ensure_ascii=False).encode(), 0o644)
    config = to_toml(task, target)
    if declared is not None:  # a plain image: declared, not built
        table = config.setdefault("environment", {})
        table.setdefault("docker_image", declared)
        table.setdefault("workdir", "/app")
    if not native:
        config = {**_DEFAULTS, **config}
    config = apply(config, extra)
    files[MARKER] = (_toml(config), modes.get(MARKER, 0o644))
    return files


def _toml(config: dict[str, Any]) -> bytes:
    """task.toml's bytes. Most tasks of a set share one config (the defaults, a timeout), so
    each distinct config, told apart by its JSON (key order, ints and floats kept), is written
    by tomli_w once; a config JSON cannot hold (a date) is written every time."""
    try:
        key = json.dumps(config, ensure_ascii=False)
    except (TypeError, ValueError):
        return tomli_w.dumps(config).encode("utf-8")
    return _toml_of(key)


@functools.lru_cache(maxsize=1024)
def _toml_of(key: str) -> bytes:
    return tomli_w.dumps(json.loads(key)).encode("utf-8")


# --- Harbor's own registries: dataset.toml (tasks pinned by digest) and registry.json --------

DATASET = "dataset.toml"
REGISTRY = "registry.json"
# What Harbor's packager leaves out of a task's digest when the task has no .gitignore
# (`harbor.publisher.packager.DEFAULT_IGNORES`).
_IGNORED_DIRS = ("__pycache__",)
_IGNORED_FILES = re.compile(  # file names Harbor's packager leaves out, as one pattern
    "|".join(fnmatch.translate(p) for p in ("*.pyc", ".DS_Store", "*.swp", "*.swo", "*~"))
)
_DIGESTED_FILES = ("task.toml", "instruction.md", "README.md", "trajectory.json")
_DIGESTED_DIRS = ("environment", "tests", "solution", "steps")
_OWN_IGNORES = (".gitignore", ".harborignore")
_TASK_TABLE = re.compile(rb"^[ \t]*(?:\[task\]|task[ \t]*=)", re.M)


class HarborWriteOptions(WriteOptions):
    org: str = Field(
        default="local",
        pattern=r"^[a-zA-Z0-9][a-zA-Z0-9._-]*$",
        description="The organization in Harbor's `org/name` names of the datasets and tasks "
        "that dataset.toml and registry.json list.",
    )
    git_url: str | None = Field(
        default=None,
        description="The git repository this export will be pushed to: registry.json names "
        "each task by it and its path there, so `harbor download` (and Verifiers' Harbor "
        "taskset) fetch the tasks; without it, the tasks are local paths Harbor uses in place.",
    )


def harbor_digest(files: Mapping[str, bytes]) -> str | None:
    """The digest Harbor pins a task folder by (`Packager.compute_content_hash`): sha256 over
    `relpath NUL sha256(file) LF` of the files it collects, in path order. None for a task
    with ignore rules of its own (`.gitignore`, `.harborignore`): Harbor's packager, which
    reads them, pins it (`harbor sync`)."""
    if any(rel.rsplit("/", 1)[-1] in _OWN_IGNORES for rel in files):
        return None
    lines = [
        f"{rel}\0{_file_sha(files[rel]) if len(files[rel]) <= _SMALL else _sha(files[rel])}\n"
        for rel in sorted(files)
        if _digested(rel)
    ]
    return "sha256:" + _sha("".join(lines).encode())


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# An export's folders mostly share their small files (the grader, test.sh, a Dockerfile): each
# distinct one is hashed once (the grader, 26 KB, was half an export's hashing). Only files up
# to 64 KiB are kept, 256 of them, so the memo holds at most 16 MiB.
_SMALL = 64 * 1024
_file_sha = functools.lru_cache(maxsize=256)(_sha)


@functools.lru_cache(maxsize=4096)
def _digested(rel: str) -> bool:
    """Whether Harbor's packager collects the file at `rel` (the same few paths recur)."""
    parts = rel.split("/")
    top = rel in _DIGESTED_FILES or (len(parts) > 1 and parts[0] in _DIGESTED_DIRS)
    return top and not (
        any(p in _IGNORED_DIRS for p in parts[:-1]) or _IGNORED_FILES.match(parts[-1])
    )


def folder_digest(folder: Path) -> str | None:
    """Harbor's digest of a task folder on disk (links refused, as everywhere)."""
    return harbor_digest({rel: path.read_bytes() for rel, path, _ in walk(folder)})


def task_name(org: str, folder: str) -> str:
    """A task folder's Harbor name, `org/name` (a name must start with a letter or digit)."""
    return f"{org}/{folder if folder[:1].isalnum() else 't' + folder}"


def _registry_json(registry: Path, split: str, folders: list[str], target: Target) -> None:
    """The export's registry.json: a Harbor `DatasetSpec` per split, appended as each split is
    written (it needs only the folders' names)."""
    about = (target.set_name, target.version, target.description)
    specs = parse_json(registry.read_bytes()) if registry.exists() else []
    specs.append(registry_entry(about, split, folders, target.options.org, target.options.git_url))
    registry.write_text(json_text(specs))


def _dataset_toml(out: Path, split: str, written: WrittenSplit, target: Target) -> Path:
    """dataset.toml in the split's folder: the split's tasks pinned by digest."""
    org = target.options.org
    pins = {f: written.digests[f].split(" ", 1) for f in written.folders if written.digests[f]}
    if len(pins) < len(written.folders):
        what = "a pin in dataset.toml (tasks with their own ignore rules: `harbor sync` pins them)"
        target.losses.counts[what] += len(written.folders) - len(pins)
    manifest = {
        "schema_version": "1.0",
        "dataset": {
            "name": task_name(org, f"{target.set_name}-{split}"),
            "version": target.version,
            "description": target.description,
        },
        "tasks": [
            {"name": pin[1] if len(pin) > 1 else task_name(org, f), "digest": pin[0]}
            for f, pin in pins.items()
        ],
    }
    toml_path = out / split / DATASET
    toml_path.write_bytes(dataset_toml(manifest).encode())
    return toml_path


# A string TOML holds between quotes as it is: no quote, backslash or control character.
_PLAIN = re.compile(r'[^"\\\x00-\x1f\x7f]*')


def dataset_toml(manifest: dict[str, Any]) -> str:
    """dataset.toml's text. tomli_w escapes strings a character at a time in Python: 0.13 s
    for 20,000 pins, after the writers are done. Where no pin's name or digest needs an escape,
    tomli_w writes the rest and each pin is a `[[tasks]]` table of two plain strings (what
    tomli_w writes for pins too long for one line, as sha256 pins are)."""
    tasks = manifest["tasks"]
    if not tasks or not all(_PLAIN.fullmatch(t["name"] + t["digest"]) for t in tasks):
        return tomli_w.dumps(manifest)
    head = tomli_w.dumps({k: v for k, v in manifest.items() if k != "tasks"})
    pins = (f'\n[[tasks]]\nname = "{t["name"]}"\ndigest = "{t["digest"]}"\n' for t in tasks)
    return head + "".join(pins)


def registry_entry(
    about: tuple[str, str, str],
    split: str,
    folders: Iterable[str],
    org: str = "local",
    git_url: str | None = None,
) -> dict[str, Any]:
    """A split as a Harbor `DatasetSpec` of a legacy registry.json: the set's name, version
    and description, and its task folders by path (`split/folder`, in `git_url` if given)."""
    name, version, description = about
    where = {"git_url": git_url} if git_url else {}
    return {
        "name": f"{name}-{split}",
        "version": version,
        "description": description,
        "tasks": [{"name": task_name(org, f), **where, "path": f"{split}/{f}"} for f in folders],
    }


def write(tasks: Iterable[Task | Later], out: Path, split: str, target: Target) -> list[Path]:
    def files(task: Task) -> Files:
        return _task_files(task, target)

    def pin(files: Files) -> str:
        """The folder's digest and, if its task.toml names the task (`[task] name`), that
        name: what dataset.toml lists it by."""
        digest = harbor_digest({rel: data for rel, (data, _) in files.items()}) or ""
        config = files[MARKER][0]
        own = None
        if _TASK_TABLE.search(config):  # parsed only where a name may be: most have none
            table = parse_toml(config.decode("utf-8")).get("task")
            own = table.get("name") if isinstance(table, dict) else None
        return f"{digest} {own}" if isinstance(own, str) and digest else digest

    registry = out / REGISTRY
    written = write_split(
        tasks,
        out,
        split,
        files,
        target.losses,
        pin,
        lambda folders: _registry_json(registry, split, folders, target),
        target.written,
    )
    return [written.index, _dataset_toml(out, split, written, target), registry]


FORMAT = Format(
    name="harbor",
    summary="Harbor task folders: task.toml, instruction.md, environment/, tests/, solution/.",
    read=read,
    write=write,
    write_later=write,
    task_files=_task_files,
    split_globs=(("*/index.json", "folder"),),
    write_options=HarborWriteOptions,
    carries=frozenset(CHECKED_FIELDS) - {"rewards"},
)
