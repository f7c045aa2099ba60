"""The canonical task model, validated: the hub every format reader and writer goes through.

Every class here is a pydantic model over the `taskpack.records` class of the same name, which
holds its behaviour (a task's digest, `materialize`, a file's hash-checked bytes): a task made
or imported is validated here, a task read back from a task set is built as the record alone,
without importing pydantic (see `records`). Check a kind with the record class
(`isinstance(reward, records.UnitTests)`): it holds for both.

Annotations here are evaluated when each class is created (no `from __future__ import
annotations`): pydantic then has no strings to resolve. Forward references are quoted.

A `Task` is data an environment can run, never code taskpack runs. Its `digest` is computed over
canonical content (sorted keys, files by hash), so the same task gives the same digest whichever
format or library it came through.
"""

import hashlib
import math
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    Tag,
    model_serializer,
    model_validator,
)

from taskpack import records
from taskpack.records import (
    DIGEST,
    FORMAT_VERSION,
    IMAGE_PATTERN,
    NAME,
    SEMVER,
    image_ref,
    rel_path,
    utf8,
)

Text = Annotated[str, AfterValidator(utf8)]


# The same rule for tools in other languages (ECMA-262 regex; the validator above is the truth).
REL_PATH_PATTERN = r"^(?![A-Za-z]:)(?!.*(?:^|/)\.{1,2}(?:/|$))[^/\\\x00]+(?:/[^/\\\x00]+)*$"


RelPath = Annotated[
    str, AfterValidator(rel_path), Field(json_schema_extra={"pattern": REL_PATH_PATTERN})
]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
TaskId = Annotated[
    str, Field(min_length=1, max_length=512, pattern=r"^[^\x00-\x1f\x7f]+$"), AfterValidator(utf8)
]


class _Model(BaseModel):
    # defer_build: schemas are built on first validation, not at import.
    model_config = ConfigDict(extra="forbid", defer_build=True)


# --- the conversation prefix ----------------------------------------------------------------
# Content parts and conversation items cover chat completions and the Responses API (the
# items NeMo Gym rows use). Formats keep their own spellings (`input_text`, `image_url`) in their
# modules; the model has one name per kind.


class TextPart(_Model, records.TextPart):
    type: Literal["text"] = "text"
    text: Text


class ImagePart(_Model, records.ImagePart):
    """An image by URL (`data:` URLs included) or by a provider's file id."""

    type: Literal["image"] = "image"
    url: Text | None = None
    file_id: Text | None = None
    detail: Text | None = None


class AudioPart(_Model, records.AudioPart):
    type: Literal["audio"] = "audio"
    data: Text | None = Field(default=None, description="Base64 audio.")
    format: Text | None = None
    url: Text | None = None


class FilePart(_Model, records.FilePart):
    type: Literal["file"] = "file"
    file_id: Text | None = None
    filename: Text | None = None
    data: Text | None = Field(default=None, description="Base64 content or a data: URL.")
    url: Text | None = None


Part = Annotated[TextPart | ImagePart | AudioPart | FilePart, Field(discriminator="type")]
Content = Text | list[Part]


class ToolCall(_Model, records.ToolCall):
    """An assistant's call of a function tool (chat-completions style); `arguments` is JSON text."""

    id: Text
    name: Text
    arguments: Text


class Message(_Model, records.Message):
    type: Literal["message"] = "message"
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: Content | None = None
    name: Text | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: Text | None = Field(
        default=None, description="For role 'tool': the call answered."
    )


class FunctionCall(_Model, records.FunctionCall):
    """A Responses-API function call item."""

    type: Literal["function_call"] = "function_call"
    call_id: Text
    name: Text
    arguments: Text


class FunctionCallOutput(_Model, records.FunctionCallOutput):
    type: Literal["function_call_output"] = "function_call_output"
    call_id: Text
    output: Content


class Reasoning(_Model, records.Reasoning):
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


class FunctionTool(_Model, records.FunctionTool):
    type: Literal["function"] = "function"
    name: Text
    description: Text | None = None
    parameters: dict[str, JsonValue] | None = Field(default=None, description="JSON Schema.")
    strict: bool | None = None


class McpServer(_Model, records.McpServer):
    """An MCP server whose tools the agent gets: by URL (`transport`) or by command (stdio)."""

    type: Literal["mcp"] = "mcp"
    name: Text
    transport: Text | None = None
    url: Text | None = None
    command: Text | None = None
    args: list[Text] = Field(default_factory=list)


Tool = Annotated[FunctionTool | McpServer, Field(discriminator="type")]


# --- reward specs: what decides success, declared, never executed by taskpack -----------------


class ExactMatch(_Model, records.ExactMatch):
    kind: Literal["exact_match"] = "exact_match"
    case_sensitive: bool = True
    strip: bool = True


class NumericMatch(_Model, records.NumericMatch):
    kind: Literal["numeric_match"] = "numeric_match"
    tolerance: float = Field(default=0.0, ge=0.0)


class MathMatch(_Model, records.MathMatch):
    """The final answer (the last `\\boxed{}` of a reply) equals the reference as mathematics:
    compared after LaTeX normalization (fractions, roots, spacing, units, degrees), or as the
    same number; MATH-style sets (verl's `math_reward`, Verifiers' math rubric) grade so."""

    kind: Literal["math_match"] = "math_match"


class Choice(_Model, records.Choice):
    label: Text
    text: Text


class MultipleChoice(_Model, records.MultipleChoice):
    kind: Literal["multiple_choice"] = "multiple_choice"
    choices: list[Choice] = Field(min_length=2)

    @model_validator(mode="after")
    def _unique_labels(self) -> "MultipleChoice":
        labels = [c.label for c in self.choices]
        if len(set(labels)) != len(labels):
            raise ValueError(f"choice labels must be unique, got {labels}")
        return self


class UnitTests(_Model, records.UnitTests):
    """Run `test_file` against the solution's `entry_point` (HumanEval, MBPP style)."""

    kind: Literal["unit_tests"] = "unit_tests"
    language: Text = "python"
    entry_point: Text
    test_file: RelPath


class IoTests(_Model, records.IoTests):
    """A program judged on input/output tests, as contest problems are (CodeContests, TACO,
    APPS, LiveCodeBench, DeepCoder). `test_file` is JSON Lines, one test a line: the program's
    standard input and the standard output expected (`{"input": ..., "output": ...}`), or with
    `call`, the arguments of one call of that function (or `Solution` method) and the value
    expected (`{"args": [...], "output": ...}`). Each run may take `time_limit_sec`; outputs
    are compared by `compare` (`lcb`: LiveCodeBench's rule, the whole output and each line
    stripped, then each line equal as text or as numbers; the program runs under the standard
    imports LiveCodeBench gives it). `special_judge`: more than one
    output is right and no checker is given, so no comparison may score it."""

    kind: Literal["io_tests"] = "io_tests"
    language: Text = "python"
    test_file: RelPath
    call: Text | None = None
    time_limit_sec: float = Field(default=6.0, gt=0, le=3600)
    compare: Literal["lcb"] = "lcb"
    special_judge: bool = False


class SweTests(_Model, records.SweTests):
    """SWE-bench style: these tests must go from failing to passing, those must keep passing."""

    kind: Literal["swe_tests"] = "swe_tests"
    fail_to_pass: list[Text]
    pass_to_pass: list[Text] = Field(default_factory=list)
    test_patch: RelPath | None = None


class WeightedTests(_Model, records.WeightedTests):
    """Named tests with weights (OpenReward style); the score is the weight of those passing."""

    kind: Literal["weighted_tests"] = "weighted_tests"
    weights: dict[Text, Annotated[float, Field(gt=0)]] = Field(min_length=1)
    command: Text | None = None


class TestCommand(_Model, records.TestCommand):
    """A command inside the sandbox decides success (Terminal-Bench's run-tests.sh)."""

    kind: Literal["test_command"] = "test_command"
    command: Text
    parser: Text | None = None


class Criterion(_Model, records.Criterion):
    description: Text
    weight: float = Field(default=1.0, gt=0)


class Rubric(_Model, records.Rubric):
    kind: Literal["rubric"] = "rubric"
    criteria: list[Criterion] = Field(min_length=1)


class Judge(_Model, records.Judge):
    kind: Literal["judge"] = "judge"
    instructions: Text
    model: Text | None = None


Reward = Annotated[
    ExactMatch
    | NumericMatch
    | MathMatch
    | MultipleChoice
    | UnitTests
    | IoTests
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


class TaskFile(_Model, records.TaskFile):
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
    _fetch: Callable[[str, int], bytes] | None = PrivateAttr(default=None)
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

    __eq__ = records.TaskFile.__eq__
    __hash__ = None


# --- environment, limits, provenance -----------------------------------------------------------


# An image reference; one pinned by digest (`name@sha256:<64 hex>`) is checked whole, so a
# mistyped pin is refused when the task is written, not when a sandbox fails to pull it.
ImageRef = Annotated[
    str,
    AfterValidator(image_ref),
    Field(
        description="A container image: `name[:tag]`, or pinned, `name[:tag]@sha256:<64 hex>`.",
        json_schema_extra={"pattern": IMAGE_PATTERN},
    ),
]


class Environment(_Model, records.Environment):
    image: ImageRef | None = None
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


class Limits(_Model, records.Limits):
    """Limits on the agent's episode (not on the sandbox, see `Environment`)."""

    max_turns: int | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    timeout_sec: float | None = Field(default=None, gt=0)


class Source(_Model, records.Source):
    """Where a task came from, precisely enough to find the original row again."""

    format: Text | None = None
    uri: Text | None = None
    revision: Text | None = None
    split: Text | None = None
    row: int | None = Field(default=None, ge=0)


def _check_json(value: Any, path: str) -> None:
    if isinstance(value, str):
        try:
            utf8(value)
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


class Step(_Model, records.Step):
    """One step of a multi-step task: its own instruction, check and limits; its files are the
    task's files with `step` set to this step's name."""

    name: TaskId
    prompt: Prompt = Field(default_factory=list)
    reward: Reward | None = None
    limits: Limits | None = None


class Task(_Model, records.Task):
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
            "reward.test_file": (
                reward.test_file if isinstance(reward, (UnitTests, IoTests)) else None
            ),
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


# --- the task-set manifest ---------------------------------------------------------------


class SplitPart(_Model, records.SplitPart):
    path: RelPath
    rows: int = Field(ge=0)
    bytes: int = Field(ge=0, description="Size of this Parquet file.")
    sha256: Sha256 = Field(description="Hash of the Parquet file's bytes: its storage address.")


class SplitInfo(_Model, records.SplitInfo):
    path: RelPath | None = Field(None, description="The split's Parquet file, if it has one.")
    rows: int = Field(ge=0)
    digest: Annotated[str, Field(pattern=DIGEST)]
    bytes: int = Field(ge=0, description="Size of the split's Parquet files together.")
    sha256: Sha256 | None = Field(
        None, description="Hash of the Parquet file's bytes (its storage address), if one file."
    )
    parts: list[SplitPart] = Field(
        default=[],
        description="A large split's Parquet files in row order, instead of `path` and `sha256`:"
        " each file's footer holds an entry per column of each of its row groups, and a bounded"
        " file keeps what opening one costs a reader bounded too.",
    )
    blobs: list[Sha256] = Field(
        default=[], description="Large files stored by hash that this split's tasks use."
    )

    @model_validator(mode="after")
    def _one_layout(self) -> "SplitInfo":
        if self.parts:
            if self.path is not None or self.sha256 is not None:
                raise ValueError("a split has `parts` or `path` and `sha256`, not both")
            for what in ("rows", "bytes"):
                total = sum(getattr(p, what) for p in self.parts)
                if total != getattr(self, what):
                    raise ValueError(
                        f"parts hold {total} {what}, the split says {getattr(self, what)}"
                    )
        elif self.path is None or self.sha256 is None:
            raise ValueError("a split needs `path` and `sha256`, or `parts`")
        return self

    @model_serializer(mode="wrap")
    def _layout_only(self, dump: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Only the layout the split has: a one-file split's manifest entry stays as it was."""
        data: dict[str, Any] = dump(self)
        drop = ("path", "sha256") if self.parts else ("parts",)
        return {k: v for k, v in data.items() if k not in drop}


class Annotations(_Model, records.Annotations):
    """A split's annotations: per task and per model and sampling settings, the rollouts'
    count, how many succeeded and their mean reward, in one Parquet file. They are covered by
    the version's digest and by none of the tasks': the tasks did not change."""

    path: RelPath
    rows: int = Field(ge=0)
    bytes: int = Field(ge=0)
    sha256: Sha256 = Field(description="Hash of the Parquet file's bytes: its storage address.")
    digest: Annotated[str, Field(pattern=DIGEST)] = Field(
        description="sha256 over the canonical JSON of the rows, sorted: what they say, not "
        "how they are stored."
    )


class Manifest(_Model, records.Manifest):
    format_version: Literal[1, 2, 3] = FORMAT_VERSION
    name: Annotated[str, Field(pattern=NAME)]
    version: Annotated[str, Field(pattern=SEMVER)]
    description: str = ""
    license: str | None = None
    created: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    digest: Annotated[str, Field(pattern=DIGEST)]
    splits: dict[Annotated[str, Field(pattern=NAME)], SplitInfo]
    source: dict[str, JsonValue] = Field(default_factory=dict)
    annotations: dict[Annotated[str, Field(pattern=NAME)], Annotations] = Field(
        default_factory=dict,
        description="Per split, pass rates from rollouts (`taskpack annotate`), if any.",
    )

    @model_validator(mode="after")
    def _annotates_its_splits(self) -> "Manifest":
        unknown = sorted(set(self.annotations) - set(self.splits))
        if unknown:
            raise ValueError(f"annotations of split(s) it does not have: {', '.join(unknown)}")
        return self

    @model_serializer(mode="wrap")
    def _no_empty_annotations(self, dump: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A version without annotations keeps the manifest it always had."""
        data: dict[str, Any] = dump(self)
        if not data.get("annotations"):
            data.pop("annotations", None)
        return data
