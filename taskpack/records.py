"""Stored tasks as light objects, and the rules that need no validator.

An environment opening a pinned version and reading task `i` should pay for pyarrow and little
else. Validation (`taskpack.model`, pydantic) runs when a task is made or imported; a task read
back from a task set was validated when written and its rows are digest-checked, so it is built
here as a plain object instead: each class below carries a model class's behaviour (the
methods and properties of `Task`, `TaskFile`, `Message`, `Manifest`) and holds its fields as
attributes. The validated classes in `taskpack.model` inherit from these, so that behaviour is
written once and `isinstance(x, records.UnitTests)` holds for a stored reward and a validated
one alike; `tests/test_records.py` checks every field of every task of the shared data sets
equal both ways. Nothing here imports pydantic.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from taskpack.base.digests import FORMAT_VERSION as FORMAT_VERSION
from taskpack.base.digests import PINS_SOURCE, content_digest, listed_sizes, version_digest
from taskpack.errors import TaskpackError

# An episode's start imports this module: what only some calls need (hashing, copying, base64,
# dates, writing folders) is imported by those calls, and typing not at all.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal, TypeVar

    _R = TypeVar("_R", bound="LightRecord")

FORMAT_VERSIONS = (1, 2, 3)  # task sets of every version here open, verify and export
SEMVER = (
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$"
)
NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
DIGEST = r"^sha256:[0-9a-f]{64}$"
# A mixture source's label: its set's name, `-split` where one set gives two sources, and a
# `+` for each further repeat (`taskpack mix`); safe as a path segment and on a config's line.
LABEL = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\+{0,16}$"


def full_match(pattern: str, value: object) -> bool:
    """Whether the whole of `value` is a string `pattern` matches: Python's `$` also matches
    before a final newline (`"gsm8k\\n"` would pass as a name), the schema's ECMA `$` does not."""
    body = pattern.removeprefix("^").removesuffix("$")
    return isinstance(value, str) and re.fullmatch(body, value) is not None


# --- rules shared by the validator and the stored-row reader ---------------------------------


def utf8(value: str) -> str:
    # Strings decoded with surrogateescape (or JSON "\udc80" escapes) hold lone surrogates that
    # no UTF-8 file can store; reject them here rather than fail deep inside Parquet.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"not valid UTF-8 text (bad character at position {e.start})") from None
    return value


_DRIVE = re.compile(r"^[A-Za-z]:")


def rel_path(value: str) -> str:
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
    return utf8("/".join(parts))


IMAGE_PATTERN = r"^[^\s@]+(@sha256:[0-9a-f]{64})?$"


def image_ref(value: str) -> str:
    """An image reference, its pin (if any) whole: a digest cut short or mistyped would name
    no image, and only a sandbox pulling it would say so."""
    import re

    if not re.fullmatch(IMAGE_PATTERN, value):
        raise ValueError(
            f"image {value!r} is not an image reference: name[:tag], or pinned, "
            "name[:tag]@sha256:<64 lowercase hex digits>, without spaces"
        )
    return utf8(value)


def file_mode(value: int) -> int:
    """Stored rows are trusted, but a mode reaches the file system: checked again."""
    if not 0 <= value <= 0o777:
        raise TaskpackError(f"file mode {value:o} is more than permission bits")
    return value


def inline_problem(
    data: bytes | memoryview | None, sha256: str | None, size: int | None
) -> str | None:
    """Why a stored file's inline bytes are not the content its hash names, if they are not.

    A task's digest covers each file's sha256, not its bytes: only this check, made on every
    read of stored rows and by the row check, makes equal digests mean equal bytes."""
    if data is None:
        return None
    import hashlib

    if size != len(data) or hashlib.sha256(data).hexdigest() != sha256:
        return f"inline bytes do not match their sha256 {sha256} and size {size}"
    return None


# --- light objects -----------------------------------------------------------------------------


class LightRecord:
    """A model object without a validator: its fields are its attributes.

    On a validated object (a `taskpack.model` class, which puts pydantic's `BaseModel` first in
    its bases) pydantic's own `__eq__`, `__repr__` and `model_dump` win; these serve stored
    ones, and produce what pydantic would.
    """

    __slots__ = ()

    def _fields(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def __eq__(self, other: object) -> bool:
        kind = _kind(type(self))
        if not isinstance(other, kind):
            return NotImplemented
        return bool(LightRecord._fields(self) == LightRecord._fields(other))  # type: ignore[arg-type]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self._fields().items())
        return f"{type(self).__name__}({fields})"

    def model_dump(
        self,
        *,
        mode: Literal["python", "json"] = "python",
        exclude: set[str] | dict[str, Any] | None = None,
        exclude_none: bool = False,
    ) -> dict[str, Any]:
        """The fields as plain data, as pydantic's `model_dump` gives them (JSON mode: bytes as
        URL-safe base64, times in ISO 8601)."""
        dumped = _dump(self, mode == "json", exclude, exclude_none)
        assert isinstance(dumped, dict)
        return dumped

    def model_copy(self: _R, *, update: dict[str, Any] | None = None, deep: bool = False) -> _R:
        """A copy with `update` applied, unvalidated, as pydantic's `model_copy`."""
        import copy

        values = copy.deepcopy(vars(self)) if deep else dict(vars(self))
        return _new(type(self), {**values, **(update or {})})

    def model_dump_json(self, *, indent: int | None = None) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=indent, ensure_ascii=False)


_KINDS: dict[type, type] = {}


def _kind(cls: type) -> type:
    """The record class `cls` is (a stored object) or validates into (a model class)."""
    found = _KINDS.get(cls)
    if found is None:
        found = next(c for c in cls.__mro__ if LightRecord in c.__bases__)
        _KINDS[cls] = found
    return found


def _dump(value: Any, json_mode: bool, exclude: Any, exclude_none: bool) -> Any:
    if isinstance(value, LightRecord):
        out = {}
        for k, v in value._fields().items():
            sub = None
            if isinstance(exclude, dict):
                sub = exclude.get(k)
                if sub is True:
                    continue
            elif exclude and k in exclude:
                continue
            if exclude_none and v is None:
                continue
            out[k] = _dump(v, json_mode, sub, exclude_none)
        return out
    if isinstance(value, list):
        every = exclude.get("__all__") if isinstance(exclude, dict) else None
        return [_dump(v, json_mode, every, exclude_none) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v, json_mode, None, exclude_none) for k, v in value.items()}
    if json_mode and isinstance(value, bytes):
        import base64

        return base64.urlsafe_b64encode(value).decode("ascii")
    if json_mode and hasattr(value, "isoformat"):  # a datetime (the manifest's `created`)
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    return value


def _new(cls: type[_R], values: dict[str, Any]) -> _R:
    obj = object.__new__(cls)
    obj.__dict__ = values
    return obj


# Each class stands for the `taskpack.model` class of the same name; its fields are documented
# there. Only what the behaviour below reads is declared, for the type checker.


class TextPart(LightRecord):
    if TYPE_CHECKING:
        text: str


class ImagePart(LightRecord):
    pass


class AudioPart(LightRecord):
    pass


class FilePart(LightRecord):
    pass


class ToolCall(LightRecord):
    pass


class Message(LightRecord):
    if TYPE_CHECKING:
        role: str
        content: str | Sequence[Any] | None

    @property
    def text(self) -> str:
        """The message's text: its text parts joined, other parts left out."""
        if self.content is None or isinstance(self.content, str):
            return self.content or ""
        return "".join(p.text for p in self.content if isinstance(p, TextPart))


class FunctionCall(LightRecord):
    pass


class FunctionCallOutput(LightRecord):
    pass


class Reasoning(LightRecord):
    pass


class FunctionTool(LightRecord):
    pass


class McpServer(LightRecord):
    pass


class ExactMatch(LightRecord):
    pass


class NumericMatch(LightRecord):
    pass


class MathMatch(LightRecord):
    pass


class Choice(LightRecord):
    pass


class MultipleChoice(LightRecord):
    pass


class UnitTests(LightRecord):
    pass


class IoTests(LightRecord):
    pass


class SweTests(LightRecord):
    pass


class WeightedTests(LightRecord):
    pass


class TestCommand(LightRecord):
    __test__ = False  # not a pytest class


class Criterion(LightRecord):
    pass


class Rubric(LightRecord):
    pass


class Judge(LightRecord):
    pass


class TaskFile(LightRecord):
    """A task's file; equality is by path, mode and content hash, however it is stored."""

    if TYPE_CHECKING:
        path: str
        role: str
        step: str | None
        mode: int
        data: bytes | None
        sha256: str | None
        size: int | None
        _fetch: Callable[[str, int], bytes] | None
        _checked: bool

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TaskFile):
            return NotImplemented
        return self.key == other.key and (self.mode, self.sha256, self.size) == (
            other.mode,
            other.sha256,
            other.size,
        )

    __hash__ = None

    @property
    def key(self) -> tuple[str | None, str, str]:
        """(step, role, path): unique within a task."""
        return (self.step, self.role, self.path)

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
            # its size is in the row, under the split digest: a download is held to it
            from taskpack.base.objects import MAX_BLOB

            data = self._fetch(self.sha256, MAX_BLOB if self.size is None else self.size)
        import hashlib

        if hashlib.sha256(data).hexdigest() != self.sha256:
            raise TaskpackError(f"file {self.path!r}: content {self.sha256} failed its hash check")
        return data


class Environment(LightRecord):
    pass


class Limits(LightRecord):
    pass


class Source(LightRecord):
    pass


class Step(LightRecord):
    pass


class Task(LightRecord):
    if TYPE_CHECKING:
        id: str
        prompt: Sequence[Any]
        files: Sequence[TaskFile]

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

    def file(self, path: str, role: str | None = None) -> TaskFile:
        for f in self.files:
            if f.path == path and f.step is None and role in (None, f.role):
                return f
        raise KeyError(f"task {self.id!r} has no file {path!r}")

    def files_of(self, role: str, step: str | None = None) -> list[TaskFile]:
        return [f for f in self.files if f.role == role and f.step == step]

    def materialize(
        self, directory: str | os.PathLike[str], role: str = "workspace", step: str | None = None
    ) -> Path:
        """Write the task's files of one role (the agent's workspace by default) into
        `directory`, each hash-checked, with its permission bits.

        Nothing is created outside `directory`: folders are made and opened one level at a
        time through directory descriptors, so a symbolic link anywhere on the way is refused
        even if it appears while this runs, and a mode that could harm the machine (setuid,
        setgid, sticky, world-writable) is refused rather than applied. A task with no file
        of the role still gets its (empty) folder, with a warning naming the roles it has."""
        root = Path(directory)
        chosen = self.files_of(role, step)
        if not chosen:
            import warnings

            held = sorted({f.role for f in self.files if f.step == step})
            where = f" of step {step!r}" if step is not None else ""
            warnings.warn(
                f"task {self.id!r} has no {role} file{where} (it has: {', '.join(held) or 'none'})"
                f"; {root} is left empty",
                stacklevel=2,
            )
        from taskpack.base.fs import DirWriter

        with DirWriter(root) as out:
            for f in chosen:
                if f.mode & ~0o777 or f.mode & 0o002:
                    raise TaskpackError(f"file {f.path!r}: refusing mode {f.mode:o}")
                try:
                    out.write(f.path, f.read_bytes(), f.mode)
                except IsADirectoryError:
                    raise TaskpackError(f"file {f.path!r}: {root / f.path} is a folder") from None
                except NotADirectoryError as e:
                    raise TaskpackError(f"file {f.path!r}: {e}") from None
                except FileNotFoundError:
                    raise TaskpackError(
                        f"file {f.path!r}: its folder under {root} was removed while written"
                    ) from None
        return root


class SplitPart(LightRecord):
    if TYPE_CHECKING:
        path: str
        rows: int
        bytes: int
        sha256: str


class SplitInfo(LightRecord):
    if TYPE_CHECKING:
        path: str | None
        rows: int
        digest: str
        bytes: int
        sha256: str | None
        parts: Sequence[SplitPart]
        blobs: Sequence[str]

    def files(self) -> Sequence[SplitPart]:
        """The split's Parquet files in row order: its `parts`, or the one file that `path`
        and `sha256` name (how every split up to `PART_GROUPS` row groups is stored)."""
        if self.parts:
            return self.parts
        one = {"path": self.path, "rows": self.rows, "bytes": self.bytes, "sha256": self.sha256}
        return [_new(SplitPart, one)]

    def _fields(self) -> dict[str, Any]:
        # The layout the split has, as the model serializes it.
        drop = ("path", "sha256") if self.parts else ("parts",)
        return {k: v for k, v in super()._fields().items() if k not in drop}


class Annotations(LightRecord):
    if TYPE_CHECKING:
        path: str
        rows: int
        bytes: int
        sha256: str
        digest: str


class Manifest(LightRecord):
    if TYPE_CHECKING:
        format_version: int
        name: str
        version: str
        digest: str
        splits: Mapping[str, SplitInfo]
        annotations: Mapping[str, Annotations]
        source: Mapping[str, Any]

    def _fields(self) -> dict[str, Any]:
        # As the model serializes it: a version without annotations has no such key.
        fields = super()._fields()
        if not fields.get("annotations"):
            fields.pop("annotations", None)
        return fields

    def expected_digest(self) -> str:
        """The digest this manifest chains to (its `digest`, if whole): see `version_digest`."""
        return version_digest(self)

    @property
    def pins_source(self) -> bool:
        """Whether the version digest covers the source and listed sizes (format 3 on)."""
        return self.format_version >= PINS_SOURCE

    def unpinned(self) -> str | None:
        """The one line that says what this version's digest leaves unpinned, if anything."""
        if self.pins_source:
            return None
        return (
            f"{self.ref}: format version {self.format_version}: its digest does not pin its "
            "source (lineage, mixture weights and environments) or listed sizes; "
            "`taskpack merge` writes it anew, pinned"
        )

    def mixture(self) -> list[dict[str, Any]]:
        """The sources a mixture version lists (`source.mixture`; none for a plain set), each
        checked as `taskpack mix` writes it: label and split by the name grammar, weight a
        finite number 0 or more, environment text. A label names the files an export writes
        and fills its trainers' configs, and a set's author writes the manifest: it is checked
        here, where every reader takes it, not only where a publish would have."""
        import math

        found = self.source.get("mixture") if isinstance(self.source, Mapping) else None
        if found is None:
            return []
        if not isinstance(found, list):
            raise TaskpackError(f"{self.ref}: source.mixture: expected a list of sources")
        out = []
        for n, entry in enumerate(found):
            where = f"{self.ref}: source.mixture[{n}]"
            if not isinstance(entry, dict):
                raise TaskpackError(f"{where}: expected a record")
            label, weight, env = entry.get("label"), entry.get("weight"), entry.get("env")
            if not full_match(LABEL, label):
                raise TaskpackError(f"{where}: label {json.dumps(label)} is not a NAME")
            split = entry.get("split", "train")
            if not full_match(NAME, split):
                raise TaskpackError(f"{where}: split {json.dumps(split)} is not a NAME")
            if (
                isinstance(weight, bool)
                or not isinstance(weight, (int, float))
                or not 0 <= weight < math.inf
            ):
                raise TaskpackError(f"{where}: weight {json.dumps(weight)}: a finite number >= 0")
            if env is not None and not isinstance(env, str):
                raise TaskpackError(f"{where}: env {json.dumps(env)}: expected text")
            if not isinstance(entry.get("evaluation_only", False), bool):
                raise TaskpackError(f"{where}: evaluation_only: expected true or false")
            out.append(dict(entry))
        return out

    def objects(self, splits: Iterable[str] | None = None, *, blobs: bool = True) -> dict[str, str]:
        """Bytes hash -> path inside the version, of every object a reader may fetch (split
        files, and with `blobs` the large files), each once, sorted by hash: the one list that
        publish, pull, verify and every registry backend go by."""
        from taskpack.base.objects import blob_relpath

        found: dict[str, str] = {}
        for name in self.splits if splits is None else splits:
            info = self.splits[name]
            for part in info.files():
                found[part.sha256] = part.path
            for sha in info.blobs if blobs else ():
                found[sha] = blob_relpath(sha)
            if name in self.annotations:
                found[self.annotations[name].sha256] = self.annotations[name].path
        return dict(sorted(found.items()))

    def sizes(self) -> dict[str, int]:
        """Bytes hash -> size, of every object the manifest lists a size for: what a reader
        reads at most (see `listed_sizes`)."""
        return listed_sizes(self)

    def most_bytes(self, sha: str) -> int:
        """What a download of object `sha` may hold at most: its listed size, else MAX_BLOB."""
        from taskpack.base.objects import MAX_BLOB

        return self.sizes().get(sha, MAX_BLOB)

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


# --- building stored objects ---------------------------------------------------------------

PART_KINDS: dict[str, type[LightRecord]] = {
    "text": TextPart,
    "image": ImagePart,
    "audio": AudioPart,
    "file": FilePart,
}
ITEM_KINDS: dict[str, type[LightRecord]] = {
    "message": Message,
    "function_call": FunctionCall,
    "function_call_output": FunctionCallOutput,
    "reasoning": Reasoning,
}
TOOL_KINDS: dict[str, type[LightRecord]] = {"function": FunctionTool, "mcp": McpServer}
REWARD_KINDS: dict[str, type[LightRecord]] = {
    "exact_match": ExactMatch,
    "numeric_match": NumericMatch,
    "math_match": MathMatch,
    "multiple_choice": MultipleChoice,
    "unit_tests": UnitTests,
    "io_tests": IoTests,
    "swe_tests": SweTests,
    "weighted_tests": WeightedTests,
    "test_command": TestCommand,
    "rubric": Rubric,
    "judge": Judge,
}
# The reward kinds whose reply is code, run in the sandbox (the rest are answers, compared as
# text): Python unit tests, and programs judged on input/output tests.
CODE_KINDS = (UnitTests, IoTests)
# Reward kinds holding lists of objects: field -> item class.
_NESTED: dict[str, tuple[str, type[LightRecord]]] = {
    "multiple_choice": ("choices", Choice),
    "rubric": ("criteria", Criterion),
}


def _content(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    return [_new(PART_KINDS[p["type"]], p) for p in value]


def _items(values: list[dict[str, Any]] | None) -> list[Any]:
    items = []
    for v in values or ():
        kind = v["type"]
        if kind == "message":
            v["content"] = _content(v["content"])
            if v["tool_calls"] is not None:
                v["tool_calls"] = [_new(ToolCall, c) for c in v["tool_calls"]]
        elif kind == "function_call_output":
            v["output"] = _content(v["output"])
        items.append(_new(ITEM_KINDS[kind], v))
    return items


def _reward(reward: dict[str, Any] | None) -> Any:
    if reward is None:
        return None
    nested = _NESTED.get(reward["kind"])
    if nested:
        field, item = nested
        reward[field] = [_new(item, x) for x in reward[field]]
    return _new(REWARD_KINDS[reward["kind"]], reward)


def _step(value: dict[str, Any]) -> Step:
    value["prompt"] = _items(value["prompt"])
    value["reward"] = _reward(value["reward"])
    value["limits"] = _optional(Limits, value["limits"])
    return _new(Step, value)


def _optional(cls: type[_R], data: dict[str, Any] | None) -> _R | None:
    return None if data is None else _new(cls, data)


def stored_file(row: dict[str, Any], fetch: Callable[[str, int], bytes] | None) -> TaskFile:
    """A file as a task set stores it; its path is re-checked, its bytes when read."""
    return _new(
        TaskFile,
        {
            "path": rel_path(row["path"]),
            "role": row.get("role") or "workspace",
            "step": row.get("step"),
            "mode": file_mode(row["mode"]),
            "data": row["data"],
            "sha256": row["sha256"],
            "size": row["size"],
            "_fetch": fetch,
            "_checked": False,
        },
    )


def stored_task(row: dict[str, Any], fetch: Callable[[str, int], bytes] | None = None) -> Task:
    """A task from a task set's own row (JSON columns decoded), without validation.

    Rows were validated when written and storage is hash-checked, so reading trusts them
    (`taskpack validate` re-checks everything); file paths, which guard the file system, are
    checked again, and file contents are hash-checked when read.
    """
    return _new(
        Task,
        {
            "id": row["id"],
            "prompt": _items(row["prompt"]),
            "answer": row["answer"],
            "solution": row["solution"],
            "reward": _reward(row["reward"]),
            "rewards": {k: _reward(v) for k, v in (row["rewards"] or {}).items()},
            "tools": [_new(TOOL_KINDS[t["type"]], t) for t in row["tools"] or ()],
            "files": [stored_file(f, fetch) for f in row["files"]],
            "steps": [_step(s) for s in row["steps"] or ()],
            "environment": _optional(Environment, row["environment"]),
            "limits": _optional(Limits, row["limits"]),
            "source": _optional(Source, row["source"]),
            "metadata": row["metadata"] or {},
            "extras": row["extras"] or {},
        },
    )


def stored_manifest(data: bytes) -> Manifest:
    """A manifest from the local cache, which holds only manifests validated when fetched."""
    from datetime import datetime

    raw = json.loads(data)
    raw["created"] = datetime.fromisoformat(raw["created"].replace("Z", "+00:00"))
    for info in raw["splits"].values():
        info.setdefault("path", None)
        info.setdefault("sha256", None)
        info["parts"] = [_new(SplitPart, part) for part in info.get("parts", ())]  # as the model
    raw["splits"] = {name: _new(SplitInfo, info) for name, info in raw["splits"].items()}
    raw["annotations"] = {n: _new(Annotations, a) for n, a in raw.get("annotations", {}).items()}
    return _new(Manifest, raw)
