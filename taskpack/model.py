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
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    PrivateAttr,
    Tag,
    model_validator,
)

from taskpack.errors import TaskpackError

FORMAT_VERSION: Literal[2] = 2
FORMAT_VERSIONS = (1, 2)  # task sets of every version here open, verify and export


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


# The same rule for tools in other languages (ECMA-262 regex; the validator above is the truth).
REL_PATH_PATTERN = r"^(?![A-Za-z]:)(?!.*(?:^|/)\.{1,2}(?:/|$))[^/\\\x00]+(?:/[^/\\\x00]+)*$"


def _mode(value: int) -> int:
    """Stored rows are trusted, but a mode reaches the file system: checked again."""
    if not 0 <= value <= 0o777:
        raise TaskpackError(f"file mode {value:o} is more than permission bits")
    return value


RelPath = Annotated[
    str, AfterValidator(_rel_path), Field(json_schema_extra={"pattern": REL_PATH_PATTERN})
]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
TaskId = Annotated[
    str, Field(min_length=1, max_length=512, pattern=r"^[^\x00-\x1f\x7f]+$"), AfterValidator(_utf8)
]


_M = TypeVar("_M", bound=BaseModel)


class _Model(BaseModel):
    # defer_build: schemas are built on first validation, not at import, so a process that
    # only reads stored tasks (episode start) never pays for them.
    model_config = ConfigDict(extra="forbid", defer_build=True)


# --- the conversation prefix ----------------------------------------------------------------
# Content parts and conversation items cover chat completions and the Responses API (the
# items NeMo Gym rows use). Formats keep their own spellings (`input_text`, `image_url`) in their
# modules; the model has one name per kind.


class TextPart(_Model):
    type: Literal["text"] = "text"
    text: Text


class ImagePart(_Model):
    """An image by URL (`data:` URLs included) or by a provider's file id."""

    type: Literal["image"] = "image"
    url: Text | None = None
    file_id: Text | None = None
    detail: Text | None = None


class AudioPart(_Model):
    type: Literal["audio"] = "audio"
    data: Text | None = Field(default=None, description="Base64 audio.")
    format: Text | None = None
    url: Text | None = None


class FilePart(_Model):
    type: Literal["file"] = "file"
    file_id: Text | None = None
    filename: Text | None = None
    data: Text | None = Field(default=None, description="Base64 content or a data: URL.")
    url: Text | None = None


Part = Annotated[TextPart | ImagePart | AudioPart | FilePart, Field(discriminator="type")]
Content = Text | list[Part]


class ToolCall(_Model):
    """An assistant's call of a function tool (chat-completions style); `arguments` is JSON text."""

    id: Text
    name: Text
    arguments: Text


class Message(_Model):
    type: Literal["message"] = "message"
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Content | None = None
    name: Text | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: Text | None = Field(
        default=None, description="For role 'tool': the call answered."
    )

    @property
    def text(self) -> str:
        """The message's text: its text parts joined, other parts left out."""
        if self.content is None or isinstance(self.content, str):
            return self.content or ""
        return "".join(p.text for p in self.content if isinstance(p, TextPart))


class FunctionCall(_Model):
    """A Responses-API function call item."""

    type: Literal["function_call"] = "function_call"
    call_id: Text
    name: Text
    arguments: Text


class FunctionCallOutput(_Model):
    type: Literal["function_call_output"] = "function_call_output"
    call_id: Text
    output: Content


class Reasoning(_Model):
    """A Responses-API reasoning item: summaries as text, or only the provider's encrypted blob."""

    type: Literal["reasoning"] = "reasoning"
    summary: list[Text] = Field(default_factory=list)
    encrypted_content: Text | None = None


def _item_type(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("type", "message"))
    return str(getattr(value, "type", "message"))


Item = Annotated[
    Annotated[Message, Tag("message")]
    | Annotated[FunctionCall, Tag("function_call")]
    | Annotated[FunctionCallOutput, Tag("function_call_output")]
    | Annotated[Reasoning, Tag("reasoning")],
    Discriminator(_item_type),
]


def _prompt_from_text(value: Any) -> Any:
    # A bare string is the common case in every source format: one user turn.
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return [] if value is None else value


Prompt = Annotated[list[Item], BeforeValidator(_prompt_from_text)]


# --- tools offered to the agent ------------------------------------------------------------


class FunctionTool(_Model):
    type: Literal["function"] = "function"
    name: Text
    description: Text | None = None
    parameters: dict[str, JsonValue] | None = Field(default=None, description="JSON Schema.")
    strict: bool | None = None


class McpServer(_Model):
    """An MCP server whose tools the agent gets: by URL (`transport`) or by command (stdio)."""

    type: Literal["mcp"] = "mcp"
    name: Text
    transport: Text | None = None
    url: Text | None = None
    command: Text | None = None
    args: list[Text] = Field(default_factory=list)


Tool = Annotated[FunctionTool | McpServer, Field(discriminator="type")]


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


Role = Literal["environment", "workspace", "tests", "solution", "other"]
ROLES: tuple[Role, ...] = ("environment", "workspace", "tests", "solution", "other")
AGENT_HIDDEN: frozenset[str] = frozenset({"tests", "solution", "other"})


class TaskFile(_Model):
    """A file of the task, with the role that decides who may see it.

    `environment`: the container build context (Dockerfile and what it copies); `workspace`: what
    the agent finds when it starts; `tests`: the verifier, copied in only to verify; `solution`:
    the oracle; `other`: a file of the source folder outside those (a README), kept so the folder
    can be rebuilt and never shown to the agent. The path is relative to the role's folder, so
    `tests/test.sh` of a Harbor task is `test.sh` with role `tests`. `step` names the step a file
    belongs to in a multi-step task.

    `data` is present for files stored inline; a large file read from a task set carries only
    `sha256` and `size` until it is read, and then comes from the task set's blob store.
    Equality is by path, mode and content hash, so a file compares equal however it is stored.
    """

    model_config = ConfigDict(
        extra="forbid", defer_build=True, ser_json_bytes="base64", val_json_bytes="base64"
    )

    path: RelPath
    role: Role = "workspace"
    step: Text | None = None
    mode: int = Field(default=0o644, ge=0, le=0o777, description="Permission bits only.")
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
                "role": row.get("role") or "workspace",
                "step": row.get("step"),
                "mode": _mode(row["mode"]),
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
        return self.key == other.key and (self.mode, self.sha256, self.size) == (
            other.mode,
            other.sha256,
            other.size,
        )

    @property
    def key(self) -> tuple[str | None, str, str]:
        """(step, role, path): unique within a task."""
        return (self.step, self.role, self.path)

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
    env: dict[Text, Text] = Field(default_factory=dict, description="Environment variables.")
    build_timeout_sec: float | None = Field(default=None, gt=0)
    test_timeout_sec: float | None = Field(default=None, gt=0)
    cpus: int | float | None = Field(default=None, gt=0)
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


def _check_json(value: Any, path: str) -> None:
    if isinstance(value, str):
        try:
            _utf8(value)
        except ValueError as e:
            raise ValueError(f"{path}: {e}" if path else str(e)) from None
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{path or 'value'}: {value} is not representable in JSON")
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_json(k, path)
            _check_json(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_json(v, f"{path}[{i}]")


def _json_data(value: Any) -> Any:
    _check_json(value, "")
    return value


JsonData = Annotated[JsonValue, AfterValidator(_json_data)]


def _metadata(value: dict[str, JsonValue]) -> dict[str, JsonValue]:
    _check_json(value, "metadata")
    return value


Extras = dict[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]*$")], dict[str, JsonValue]]


class Step(_Model):
    """One step of a multi-step task: its own instruction, check and limits; its files are the
    task's files with `step` set to this step's name."""

    name: TaskId
    prompt: Prompt = Field(default_factory=list)
    reward: Reward | None = None
    limits: Limits | None = None


class Task(_Model):
    id: TaskId
    prompt: Prompt = Field(
        default_factory=list, description="The conversation prefix; empty when the agent builds it."
    )
    answer: JsonData = Field(default=None, description="Reference answer: any JSON value.")
    solution: Text | None = Field(
        default=None, description="Reference solution (gold patch, canonical code); never shown."
    )
    reward: Reward | None = None
    rewards: dict[Text, Reward] = Field(
        default_factory=dict, description="Further named rewards, reported beside `reward`."
    )
    tools: list[Tool] = Field(default_factory=list)
    files: list[TaskFile] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    environment: Environment | None = None
    limits: Limits | None = None
    source: Source | None = None
    metadata: Annotated[dict[str, JsonValue], AfterValidator(_metadata)] = Field(
        default_factory=dict
    )
    extras: Annotated[Extras, AfterValidator(_json_data)] = Field(
        default_factory=dict,
        description="Per format: fields only that framework understands, put back by its writer.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> "Task":
        keys = [f.key for f in self.files]
        if len(set(keys)) != len(keys):
            dupes = sorted({"/".join(filter(None, k)) for k in keys if keys.count(k) > 1})
            raise ValueError(f"files: duplicate paths {dupes}")
        folders = {
            (f.step, f.role, f.path.rsplit("/", i)[0])
            for f in self.files
            for i in range(1, f.path.count("/") + 1)
        }
        clash = next((f.path for f in self.files if f.key in folders), None)
        if clash is not None:
            raise ValueError(f"files: {clash!r} is both a file and a folder of other files")
        steps = [s.name for s in self.steps]
        if len(set(steps)) != len(steps):
            raise ValueError(f"steps: duplicate names {steps}")
        for f in self.files:
            if f.step is not None and f.step not in steps:
                raise ValueError(f"files: {f.path!r} belongs to an unknown step {f.step!r}")
        task_level = {(f.role, f.path) for f in self.files if f.step is None}
        paths = {p for _, p in task_level}
        reward = self.reward
        referenced = {
            "reward.test_file": reward.test_file if isinstance(reward, UnitTests) else None,
            "reward.test_patch": reward.test_patch if isinstance(reward, SweTests) else None,
        }
        for field, path in referenced.items():
            if path is not None and path not in paths:
                raise ValueError(f"{field}: {path!r} is not one of the task's files")
            if path is not None and ("tests", path) not in task_level:
                raise ValueError(
                    f"{field}: {path!r} must have role 'tests' (the agent would see it otherwise)"
                )
        dockerfile = self.environment.dockerfile if self.environment else None
        if dockerfile is not None and ("environment", dockerfile) not in task_level:
            raise ValueError(
                f"environment.dockerfile: {dockerfile!r} is not one of the task's environment files"
            )
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
        return _make(
            cls,
            {
                "id": row["id"],
                "prompt": _items(row["prompt"]),
                "answer": row["answer"],
                "solution": row["solution"],
                "reward": _reward(row["reward"]),
                "rewards": {k: _reward(v) for k, v in (row["rewards"] or {}).items()},
                "tools": [_make(TOOL_KINDS[t["type"]], t) for t in row["tools"] or ()],
                "files": [TaskFile.stored(f, fetch) for f in row["files"]],
                "steps": [_step(s) for s in row["steps"] or ()],
                "environment": _construct(Environment, row["environment"]),
                "limits": _construct(Limits, row["limits"]),
                "source": _construct(Source, row["source"]),
                "metadata": row["metadata"] or {},
                "extras": row["extras"] or {},
            },
        )

    @property
    def instruction(self) -> str:
        """What a single-question framework shows: the last user message's text."""
        users = [m for m in self.prompt if isinstance(m, Message) and m.role == "user"]
        return users[-1].text if users else ""

    def canonical(self) -> dict[str, Any]:
        """The content the digest covers: every field, files by hash, not by bytes."""
        return self.model_dump(mode="json", exclude={"files": {"__all__": {"data"}}})

    @property
    def digest(self) -> str:
        return content_digest(self.canonical())

    def file(self, path: str, role: str | None = None) -> "TaskFile":
        for f in self.files:
            if f.path == path and f.step is None and role in (None, f.role):
                return f
        raise KeyError(f"task {self.id!r} has no file {path!r}")

    def files_of(self, role: str, step: str | None = None) -> list["TaskFile"]:
        return [f for f in self.files if f.role == role and f.step == step]

    def materialize(
        self, directory: str | os.PathLike[str], role: str = "workspace", step: str | None = None
    ) -> Path:
        """Write the task's files of one role (the agent's workspace by default) into
        `directory`, each hash-checked, with its permission bits.

        Nothing is created outside `directory`: folders are made one level at a time and a
        symbolic link anywhere on the way is refused, and a mode that could harm the machine
        (setuid, setgid, sticky, world-writable) is refused rather than applied."""
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        for f in self.files_of(role, step):
            if f.mode & ~0o777 or f.mode & 0o002:
                raise TaskpackError(f"file {f.path!r}: refusing mode {f.mode:o}")
            parent = root
            for part in f.path.split("/")[:-1]:
                parent = parent / part
                if parent.is_symlink():
                    raise TaskpackError(f"file {f.path!r}: {parent} is a symbolic link")
                if not parent.exists():
                    parent.mkdir()
                elif not parent.is_dir():
                    raise TaskpackError(f"file {f.path!r}: {parent} is a file, not a folder")
            target = parent / f.path.rsplit("/", 1)[-1]
            if target.is_dir() and not target.is_symlink():
                raise TaskpackError(f"file {f.path!r}: {target} is a folder")
            fd, tmp = tempfile.mkstemp(dir=parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(f.read_bytes())
                os.chmod(tmp, f.mode)
                os.replace(tmp, target)  # replaces a link at `target` itself, never follows it
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


PART_KINDS: dict[str, type[BaseModel]] = {
    cls.model_fields["type"].default: cls for cls in (TextPart, ImagePart, AudioPart, FilePart)
}
ITEM_KINDS: dict[str, type[BaseModel]] = {
    cls.model_fields["type"].default: cls
    for cls in (Message, FunctionCall, FunctionCallOutput, Reasoning)
}
TOOL_KINDS: dict[str, type[BaseModel]] = {
    cls.model_fields["type"].default: cls for cls in (FunctionTool, McpServer)
}


def _content(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    return [_make(PART_KINDS[p["type"]], p) for p in value]


def _items(values: list[dict[str, Any]] | None) -> list[Any]:
    """Stored conversation items as models (the episode-start path: no validation)."""
    items = []
    for v in values or ():
        kind = v["type"]
        if kind == "message":
            v["content"] = _content(v["content"])
            if v["tool_calls"] is not None:
                v["tool_calls"] = [_make(ToolCall, c) for c in v["tool_calls"]]
        elif kind == "function_call_output":
            v["output"] = _content(v["output"])
        items.append(_make(ITEM_KINDS[kind], v))
    return items


def _reward(reward: dict[str, Any] | None) -> Any:
    if reward is None:
        return None
    kind = REWARD_KINDS[reward["kind"]]
    nested = _NESTED.get(kind)
    if nested:
        field, item = nested
        reward[field] = [_make(item, x) for x in reward[field]]
    return _make(kind, reward)


def _step(value: dict[str, Any]) -> "Step":
    value["prompt"] = _items(value["prompt"])
    value["reward"] = _reward(value["reward"])
    value["limits"] = _construct(Limits, value["limits"])
    return _make(Step, value)


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
    path: RelPath
    rows: int = Field(ge=0)
    digest: Annotated[str, Field(pattern=DIGEST)]
    bytes: int = Field(ge=0, description="Size of the split's Parquet file.")
    sha256: Sha256 = Field(description="Hash of the Parquet file's bytes: its storage address.")
    blobs: list[Sha256] = Field(
        default=[], description="Large files stored by hash that this split's tasks use."
    )


class Manifest(_Model):
    format_version: Literal[1, 2] = FORMAT_VERSION
    name: Annotated[str, Field(pattern=NAME)]
    version: Annotated[str, Field(pattern=SEMVER)]
    description: str = ""
    license: str | None = None
    created: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    digest: Annotated[str, Field(pattern=DIGEST)]
    splits: dict[Annotated[str, Field(pattern=NAME)], SplitInfo]
    source: dict[str, JsonValue] = Field(default_factory=dict)

    def objects(self, splits: Iterable[str] | None = None, *, blobs: bool = True) -> dict[str, str]:
        """Bytes hash -> path inside the version, of every object a reader may fetch (split
        files, and with `blobs` the large files), each once, sorted by hash: the one list that
        publish, pull, verify and every registry backend go by."""
        from taskpack.objects import blob_relpath

        found: dict[str, str] = {}
        for name in self.splits if splits is None else splits:
            info = self.splits[name]
            found[info.sha256] = info.path
            for sha in info.blobs if blobs else ():
                found[sha] = blob_relpath(sha)
        return dict(sorted(found.items()))

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


def stored_manifest(data: bytes) -> "Manifest":
    """A manifest from the local cache, which holds only manifests validated when fetched.

    Skips pydantic validation on the episode-start path: validating would build the schema and
    scan installed packages for pydantic plugins, costing more than reading the task itself.
    """
    raw = json.loads(data)
    raw["created"] = datetime.fromisoformat(raw["created"].replace("Z", "+00:00"))
    raw["splits"] = {name: _make(SplitInfo, info) for name, info in raw["splits"].items()}
    return _make(Manifest, raw)


class SplitDigest:
    """A split's digest: sha256 over its task digests, one per line, in row order. Written by
    the task-set writer, recomputed by every check; kept running so a million rows cost no
    list."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()

    def add(self, task_digest: str) -> None:
        self._hash.update(task_digest.encode("ascii", "replace") + b"\n")

    @property
    def value(self) -> str:
        return "sha256:" + self._hash.hexdigest()


def version_digest(splits: dict[str, str], format_version: int = FORMAT_VERSION) -> str:
    """The Merkle root over split digests: content only, not name, time or storage."""
    body = canonical_json({"format_version": format_version, "splits": splits})
    return "sha256:" + hashlib.sha256(body).hexdigest()
