"""The canonical task model: the hub every format reader and writer goes through.

Annotations here are evaluated when each class is created (no `from __future__ import
annotations`): pydantic then has no strings to resolve, which makes `import taskpack` about
10 ms cheaper on the episode-start path. Forward references are quoted.

A `Task` is data an environment can run, never code taskpack runs. Its `digest` is computed over
canonical content (sorted keys, files by hash), so the same task gives the same digest whichever
format or library it came through.
"""

import hashlib
import json
import math
import os
import re
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    PrivateAttr,
    model_validator,
)

from taskpack.errors import TaskpackError

FORMAT_VERSION: Literal[1] = 1


def _utf8(value: str) -> str:
    # Strings decoded with surrogateescape (or JSON "\udc80" escapes) hold lone surrogates that
    # no UTF-8 file can store; reject them here rather than fail deep inside Parquet.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"not valid UTF-8 text (bad character at position {e.start})") from None
    return value


Text = Annotated[str, AfterValidator(_utf8)]

_DRIVE = re.compile(r"^[A-Za-z]:")


def _rel_path(value: str) -> str:
    """Accept only paths that stay inside the task folder on every OS, in one spelling."""
    if not value:
        raise ValueError("empty path")
    if "\x00" in value:
        raise ValueError("path contains a NUL byte")
    if "\\" in value:
        raise ValueError(f"path {value!r} contains a backslash; use '/'")
    if value.startswith("/") or _DRIVE.match(value):
        raise ValueError(f"path {value!r} is absolute; task file paths are relative")
    parts = value.split("/")
    while parts and parts[0] == ".":
        parts.pop(0)
    if any(p == ".." for p in parts):
        raise ValueError(f"path {value!r} contains '..' and could escape the task folder")
    if not parts or any(p in ("", ".") for p in parts):
        raise ValueError(f"path {value!r} is not normalized (empty or '.' segment)")
    return _utf8("/".join(parts))


RelPath = Annotated[str, AfterValidator(_rel_path)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
TaskId = Annotated[
    str, Field(min_length=1, max_length=512, pattern=r"^[^\x00-\x1f\x7f]+$"), AfterValidator(_utf8)
]


_M = TypeVar("_M", bound=BaseModel)


class _Model(BaseModel):
    # defer_build: schemas are built on first validation, not at import, so a process that
    # only reads stored tasks (episode start) never pays for them.
    model_config = ConfigDict(extra="forbid", defer_build=True)


class Message(_Model):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Text


def _prompt_from_text(value: Any) -> Any:
    # A bare string is the common case in every source format: one user turn.
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return value


Prompt = Annotated[list[Message], BeforeValidator(_prompt_from_text), Field(min_length=1)]


# --- reward specs: what decides success, declared, never executed by taskpack -----------------


class ExactMatch(_Model):
    kind: Literal["exact_match"] = "exact_match"
    case_sensitive: bool = True
    strip: bool = True


class NumericMatch(_Model):
    kind: Literal["numeric_match"] = "numeric_match"
    tolerance: float = Field(default=0.0, ge=0.0)


class Choice(_Model):
    label: Text
    text: Text


class MultipleChoice(_Model):
    kind: Literal["multiple_choice"] = "multiple_choice"
    choices: list[Choice] = Field(min_length=2)

    @model_validator(mode="after")
    def _unique_labels(self) -> "MultipleChoice":
        labels = [c.label for c in self.choices]
        if len(set(labels)) != len(labels):
            raise ValueError(f"choice labels must be unique, got {labels}")
        return self


class UnitTests(_Model):
    """Run `test_file` against the solution's `entry_point` (HumanEval, MBPP style)."""

    kind: Literal["unit_tests"] = "unit_tests"
    language: Text = "python"
    entry_point: Text
    test_file: RelPath


class SweTests(_Model):
    """SWE-bench style: these tests must go from failing to passing, those must keep passing."""

    kind: Literal["swe_tests"] = "swe_tests"
    fail_to_pass: list[Text]
    pass_to_pass: list[Text] = Field(default_factory=list)
    test_patch: RelPath | None = None


class WeightedTests(_Model):
    """Named tests with weights (OpenReward style); the score is the weight of those passing."""

    kind: Literal["weighted_tests"] = "weighted_tests"
    weights: dict[Text, Annotated[float, Field(gt=0)]] = Field(min_length=1)
    command: Text | None = None


class TestCommand(_Model):
    """A command inside the sandbox decides success (Terminal-Bench's run-tests.sh)."""

    kind: Literal["test_command"] = "test_command"
    command: Text
    parser: Text | None = None


class Criterion(_Model):
    description: Text
    weight: float = Field(default=1.0, gt=0)


class Rubric(_Model):
    kind: Literal["rubric"] = "rubric"
    criteria: list[Criterion] = Field(min_length=1)


class Judge(_Model):
    kind: Literal["judge"] = "judge"
    instructions: Text
    model: Text | None = None


Reward = Annotated[
    ExactMatch
    | NumericMatch
    | MultipleChoice
    | UnitTests
    | SweTests
    | WeightedTests
    | TestCommand
    | Rubric
    | Judge,
    Field(discriminator="kind"),
]


# --- files ---------------------------------------------------------------------------------


class TaskFile(_Model):
    """A file the task brings into the sandbox.

    `data` is present for files stored inline; a large file read from a task set carries only
    `sha256` and `size` until it is read, and then comes from the task set's blob store.
    Equality is by path, mode and content hash, so a file compares equal however it is stored.
    """

    model_config = ConfigDict(
        extra="forbid", defer_build=True, ser_json_bytes="base64", val_json_bytes="base64"
    )

    path: RelPath
    mode: int = Field(default=0o644, ge=0, le=0o7777)
    data: bytes | None = None
    sha256: Sha256 | None = None
    size: int | None = Field(default=None, ge=0)
    _fetch: Callable[[str], bytes] | None = PrivateAttr(default=None)
    _checked: bool = PrivateAttr(default=False)  # data known to match sha256

    @model_validator(mode="after")
    def _hash(self) -> "TaskFile":
        if self.data is None:
            if self.sha256 is None or self.size is None:
                raise ValueError("a file needs either data or both sha256 and size")
            return self
        digest = hashlib.sha256(self.data).hexdigest()
        if self.sha256 is not None and self.sha256 != digest:
            raise ValueError(f"sha256 {self.sha256} does not match the data ({digest})")
        if self.size is not None and self.size != len(self.data):
            raise ValueError(f"size {self.size} does not match the data ({len(self.data)} bytes)")
        self.sha256, self.size = digest, len(self.data)
        self._checked = True
        return self

    @classmethod
    def stored(cls, row: dict[str, Any], fetch: Callable[[str], bytes] | None) -> "TaskFile":
        """A file as a task set stores it; its path is re-checked, its bytes when read."""
        f = _make(
            cls,
            {
                "path": _rel_path(row["path"]),
                "mode": row["mode"],
                "data": row["data"],
                "sha256": row["sha256"],
                "size": row["size"],
            },
        )
        f._fetch = fetch
        return f

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TaskFile):
            return NotImplemented
        return (self.path, self.mode, self.sha256, self.size) == (
            other.path,
            other.mode,
            other.sha256,
            other.size,
        )

    __hash__ = None  # type: ignore[assignment]

    def read_bytes(self) -> bytes:
        """The file's content, fetched from the blob store if stored there, and hash-checked."""
        if self.data is not None and self._checked:
            return self.data
        if self.data is not None:
            data = self.data
        elif self._fetch is None:
            raise TaskpackError(f"file {self.path!r}: content not available (no blob store)")
        else:
            assert self.sha256 is not None
            data = self._fetch(self.sha256)
        if hashlib.sha256(data).hexdigest() != self.sha256:
            raise TaskpackError(f"file {self.path!r}: content {self.sha256} failed its hash check")
        return data


# --- environment, limits, provenance -----------------------------------------------------------


class Environment(_Model):
    image: Text | None = None
    dockerfile: RelPath | None = None
    repo: Text | None = None
    commit: Text | None = None
    setup_commit: Text | None = None
    setup: list[Text] = Field(default_factory=list)
    workdir: Text | None = None
    build_timeout_sec: float | None = Field(default=None, gt=0)
    test_timeout_sec: float | None = Field(default=None, gt=0)
    cpus: float | None = Field(default=None, gt=0)
    memory_mb: int | None = Field(default=None, gt=0)
    storage_mb: int | None = Field(default=None, gt=0)
    gpus: int | None = Field(default=None, ge=0)
    internet: bool | None = None


class Limits(_Model):
    """Limits on the agent's episode (not on the sandbox, see `Environment`)."""

    max_turns: int | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    timeout_sec: float | None = Field(default=None, gt=0)


class Source(_Model):
    """Where a task came from, precisely enough to find the original row again."""

    format: Text | None = None
    uri: Text | None = None
    revision: Text | None = None
    split: Text | None = None
    row: int | None = Field(default=None, ge=0)


def _check_json(value: Any, path: str = "metadata") -> None:
    if isinstance(value, str):
        try:
            _utf8(value)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{path}: {value} is not representable in JSON")
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_json(k, path)
            _check_json(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_json(v, f"{path}[{i}]")


def _metadata(value: dict[str, JsonValue]) -> dict[str, JsonValue]:
    _check_json(value)
    return value


class Task(_Model):
    id: TaskId
    prompt: Prompt
    answer: Text | None = None
    solution: Text | None = Field(
        default=None, description="Reference solution (gold patch, canonical code); never shown."
    )
    reward: Reward | None = None
    files: list[TaskFile] = Field(default_factory=list)
    environment: Environment | None = None
    limits: Limits | None = None
    source: Source | None = None
    metadata: Annotated[dict[str, JsonValue], AfterValidator(_metadata)] = Field(
        default_factory=dict
    )

    @model_validator(mode="after")
    def _consistent(self) -> "Task":
        paths = [f.path for f in self.files]
        if len(set(paths)) != len(paths):
            dupes = sorted({p for p in paths if paths.count(p) > 1})
            raise ValueError(f"files: duplicate paths {dupes}")
        known = set(paths)
        reward = self.reward
        referenced = {
            "reward.test_file": reward.test_file if isinstance(reward, UnitTests) else None,
            "reward.test_patch": reward.test_patch if isinstance(reward, SweTests) else None,
            "environment.dockerfile": self.environment.dockerfile if self.environment else None,
        }
        for field, path in referenced.items():
            if path is not None and path not in known:
                raise ValueError(f"{field}: {path!r} is not one of the task's files")
        if isinstance(self.reward, MultipleChoice) and self.answer is not None:
            labels = [c.label for c in self.reward.choices]
            if self.answer not in labels:
                raise ValueError(f"answer {self.answer!r} is not one of the choices {labels}")
        return self

    @classmethod
    def stored(cls, row: dict[str, Any], fetch: Callable[[str], bytes] | None = None) -> "Task":
        """A task from a task set's own row, built without re-running validation.

        Rows were validated when written and storage is hash-checked, so reading trusts them
        (`taskpack validate` re-checks everything); file paths, which guard the file system,
        are checked again, and file contents are hash-checked when read.
        """
        reward = row["reward"]
        if reward is not None:
            kind = REWARD_KINDS[reward["kind"]]
            nested = _NESTED.get(kind)
            if nested:
                field, item = nested
                reward[field] = [_make(item, x) for x in reward[field]]
            reward = _make(kind, reward)
        return _make(
            cls,
            {
                "id": row["id"],
                "prompt": [_make(Message, m) for m in row["prompt"]],
                "answer": row["answer"],
                "solution": row["solution"],
                "reward": reward,
                "files": [TaskFile.stored(f, fetch) for f in row["files"]],
                "environment": _construct(Environment, row["environment"]),
                "limits": _construct(Limits, row["limits"]),
                "source": _construct(Source, row["source"]),
                "metadata": row["metadata"] or {},
            },
        )

    def canonical(self) -> dict[str, Any]:
        """The content the digest covers: every field, files by hash, not by bytes."""
        return self.model_dump(mode="json", exclude={"files": {"__all__": {"data"}}})

    @property
    def digest(self) -> str:
        return content_digest(self.canonical())

    def file(self, path: str) -> "TaskFile":
        for f in self.files:
            if f.path == path:
                return f
        raise KeyError(f"task {self.id!r} has no file {path!r}")

    def materialize(self, directory: str | os.PathLike[str]) -> Path:
        """Write the task's files into `directory`, each hash-checked, with its mode."""
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        real_root = root.resolve()
        for f in self.files:
            target = root / f.path
            # The path rules already forbid escapes; this also stops symlinks left in the folder.
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.parent.resolve().is_relative_to(real_root):
                raise TaskpackError(f"file {f.path!r} would be written outside {root}")
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(f.read_bytes())
                os.chmod(tmp, f.mode)
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        return root


_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


REWARD_KINDS: dict[str, type[BaseModel]] = {
    cls.model_fields["kind"].default: cls
    for cls in (
        ExactMatch,
        NumericMatch,
        MultipleChoice,
        UnitTests,
        SweTests,
        WeightedTests,
        TestCommand,
        Rubric,
        Judge,
    )
}
# Reward kinds holding lists of models: (field, item model), for `Task.stored`.
_NESTED: dict[type[BaseModel], tuple[str, type[BaseModel]]] = {
    MultipleChoice: ("choices", Choice),
    Rubric: ("criteria", Criterion),
}


def _make(model: type[_M], values: dict[str, Any]) -> "_M":
    """`model_construct` without its per-field bookkeeping, for rows that name every field.

    Building a stored task is the episode-start hot path; pydantic's generic constructor
    costs about ten microseconds a model, this well under one. The property tests check that
    tasks built this way equal validated ones.
    """
    obj = model.__new__(model)
    object.__setattr__(obj, "__dict__", values)
    object.__setattr__(obj, "__pydantic_fields_set__", set(values))
    object.__setattr__(obj, "__pydantic_extra__", None)
    private = model.__private_attributes__
    object.__setattr__(
        obj,
        "__pydantic_private__",
        {name: attr.get_default() for name, attr in private.items()} if private else None,
    )
    return obj


def _construct(model: type[_M], data: dict[str, Any] | None) -> _M | None:
    return None if data is None else _make(model, data)


def canonical_json(value: Any) -> bytes:
    """One byte string per JSON value: sorted keys, no spaces, UTF-8, no NaN."""
    return _ENCODER.encode(value).encode("utf-8")


def content_digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


# --- the task-set manifest ---------------------------------------------------------------

SEMVER = (
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$"
)
NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
DIGEST = r"^sha256:[0-9a-f]{64}$"


class SplitInfo(_Model):
    path: str
    rows: int = Field(ge=0)
    digest: Annotated[str, Field(pattern=DIGEST)]
    bytes: int = Field(ge=0, description="Size of the split's Parquet file.")
    sha256: Sha256 = Field(description="Hash of the Parquet file's bytes: its storage address.")
    blobs: list[Sha256] = Field(
        default=[], description="Large files stored by hash that this split's tasks use."
    )


class Manifest(_Model):
    format_version: Literal[1] = FORMAT_VERSION
    name: Annotated[str, Field(pattern=NAME)]
    version: Annotated[str, Field(pattern=SEMVER)]
    description: str = ""
    license: str | None = None
    created: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    digest: Annotated[str, Field(pattern=DIGEST)]
    splits: dict[Annotated[str, Field(pattern=NAME)], SplitInfo]
    source: dict[str, JsonValue] = Field(default_factory=dict)


def stored_manifest(data: bytes) -> "Manifest":
    """A manifest from the local cache, which holds only manifests validated when fetched.

    Skips pydantic validation on the episode-start path: validating would build the schema and
    scan installed packages for pydantic plugins, costing more than reading the task itself.
    """
    raw = json.loads(data)
    raw["created"] = datetime.fromisoformat(raw["created"].replace("Z", "+00:00"))
    raw["splits"] = {name: _make(SplitInfo, info) for name, info in raw["splits"].items()}
    return _make(Manifest, raw)


def version_digest(splits: dict[str, str]) -> str:
    """The Merkle root over split digests: content only, not name, time or storage."""
    body = canonical_json({"format_version": FORMAT_VERSION, "splits": splits})
    return "sha256:" + hashlib.sha256(body).hexdigest()
