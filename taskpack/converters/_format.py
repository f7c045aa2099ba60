"""The typed record each format module declares, and the loss report writers share.

Like pandoc's readers and writers, a format is a reader, a writer, or both; each is optional,
options are typed models (validated, listed by `taskpack formats`), and `carries` names the task
fields the writer maps natively, so the exporter reports every other non-empty field as lost
through one mechanism (sqlglot's `unsupported`), whose strict mode makes a loss an error.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from taskpack.base.nesting import parse_json
from taskpack.converters._payload import PAYLOAD_KEY, payload_json, task_from_payload, task_payload
from taskpack.converters._sources.records import Record
from taskpack.errors import TaskpackError, describe_error, unknown
from taskpack.model import Task

if TYPE_CHECKING:
    from taskpack.converters._columnar.template import Batch
    from taskpack.storage.taskset import Later


class Options(BaseModel):
    """No options: the base of every format's option models."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when used


class WriteOptions(Options):
    embed: bool = Field(
        default=False,
        description="Also carry the whole task as JSON in the format's free field (opt-in; "
        "native fields and extras round-trip without it).",
    )
    order: Literal["easy-first", "hard-first"] | None = Field(
        default=None,
        description="Write each split's rows in curriculum order, by the pass rates of `model` "
        "(an annotated version's), and the trainers' configs that keep that order.",
    )
    model: str | None = Field(
        default=None, description="The model whose pass rates `order` sorts by."
    )
    unmeasured: Literal["first", "last"] = Field(
        default="last",
        description="With `order`: where the tasks the model has no pass rate for go.",
    )


@dataclass(frozen=True)
class Curriculum:
    """An export's rows in curriculum order (`order`, by `model`'s pass rates), and that
    model's mean reward per task (split -> task id -> mean): a sampler's warm start."""

    order: str
    model: str
    unmeasured: str
    means: Mapping[str, Mapping[str, float]]


_CHANGED, _EMBEDDED = "~", "="  # a count's kind, as its key's first character


class Losses:
    """Fields a target format could not carry, counted by field; and what it carries
    otherwise than the task has it (`changed`). With `embedded` (the whole task written into
    the format's free field) nothing is lost: a field the format's own fields cannot hold is
    reported as carried by the embedded copy alone."""

    def __init__(self, fmt: str, strict: bool = False, embedded: bool = False) -> None:
        self.fmt = fmt
        self.strict = strict
        self.embedded = embedded
        self.counts: Counter[str] = Counter()  # kept one Counter: it crosses processes whole

    def lost(self, what: str, task: Task) -> None:
        if self.embedded:
            self.counts[_EMBEDDED + what] += 1
            return
        if self.strict:
            raise TaskpackError(
                f"{self.fmt} cannot carry {what} (task {task.id!r}); --strict "
                "(--embed also writes the whole task into the format's free field, where "
                "a reader taking it back finds every field)"
            )
        self.counts[what] += 1

    def changed(self, what: str, task: Task) -> None:
        """Something carried, but not as the task has it (`what` says how)."""
        self.counts[_CHANGED + what] += 1

    def report(self) -> list[str]:
        lines = []
        for what, n in sorted(self.counts.items()):
            if what.startswith(_CHANGED):
                lines.append(f"{self.fmt}: {what[1:]} in {n} task(s)")
            elif what.startswith(_EMBEDDED):
                lines.append(f"{self.fmt}: {what[1:]} carried by the embedded task only, in {n}")
            else:
                lines.append(f"{self.fmt}: {what} lost in {n} task(s)")
        return lines


@dataclass
class Target:
    """What a writer gets besides the tasks: its options, the loss report, the name of the
    folder its output becomes (it writes into a temporary one beside it), and the task set's
    name, version and description, for a format whose output names them (a registry)."""

    options: Any
    losses: Losses
    name: str = "tasks"
    set_name: str = "tasks"
    version: str = "0.1.0"
    description: str = ""
    # the split's pass rates (an annotated version's), task id -> one entry per model
    pass_rates: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict)
    # a mixture's sources (`curation.mixture.sources`): each task's id starts with its label
    mixture: list[dict[str, Any]] = field(default_factory=list)
    # told of each n tasks written, where a writer writes them well after it reads them (the
    # folder formats' forked writers): the split's progress is then what is written
    written: Callable[[int], None] | None = None
    # rows in curriculum order (the `order` option), with the model's means
    curriculum: Curriculum | None = None

    def environment(self, task: Task) -> str | None:
        """The environment a mixture's task runs in, as `mix --env` named it for its source."""
        if not self.mixture:  # not a mixture: nothing to look up for each row
            return None
        label = task.id.split("/", 1)[0]
        return next((e.get("env") for e in self.mixture if e.get("label") == label), None)

    def note_pass_rates(self, row: dict[str, Any], key: str, task: Task) -> None:
        """Put `task`'s pass rates under `pass_rates` in the row's free field `key` (a dict,
        or JSON text), where a framework's reward functions and samplers read extra fields."""
        rates = self.pass_rates.get(task.id)
        if not rates:
            return
        value = row.get(key)
        if isinstance(value, str):
            row[key] = json.dumps({**json.loads(value), "pass_rates": rates}, ensure_ascii=False)
        else:
            row[key] = {**(value or {}), "pass_rates": rates}


@dataclass(frozen=True)
class FreeField:
    """Where a row format's framework hands on what it does not read, and so where taskpack
    puts what it adds to a row: the task's pass rates, and with `embed` the whole task. `key`:
    a column holding an object (verl's `extra_info`), or None for the row itself; `whole`: the
    task is the column's whole value, as JSON text (Verifiers' `info`), which then holds no
    pass rates; `text`: the task as JSON text (Parquet) or as an object (JSON Lines). A format
    states it once (`Format.free`); its writer and its reader both go by it."""

    key: str | None
    whole: bool = False
    text: bool = True

    def put(self, row: dict[str, Any], task: Task, target: Target) -> None:
        """What taskpack adds to `task`'s native row, in place."""
        embed = bool(getattr(target.options, "embed", False))
        if embed:
            payload: Any = payload_json(task) if self.text else task_payload(task)
            if self.key is None:
                row[PAYLOAD_KEY] = payload
            elif self.whole:
                row[self.key] = payload
            else:
                row[self.key] = {**(row.get(self.key) or {}), PAYLOAD_KEY: payload}
        if self.key is not None and not (self.whole and embed):
            target.note_pass_rates(row, self.key, task)

    def embedded(self, row: dict[str, Any]) -> dict[str, Any] | None:
        """The whole task `row` carries (written with `embed`), if any."""
        if self.key is None:
            return task_from_payload(row[PAYLOAD_KEY]) if row.get(PAYLOAD_KEY) else None
        value = row.get(self.key)
        if not self.whole:
            if isinstance(value, dict) and value.get(PAYLOAD_KEY):
                return task_from_payload(value[PAYLOAD_KEY], f"{self.key}.{PAYLOAD_KEY}")
            return None
        if isinstance(value, str) and value.startswith("{"):
            try:
                whole = parse_json(value)
            except ValueError:
                return None
            if isinstance(whole, dict) and {"id", "prompt", "files"} <= whole.keys():
                return task_from_payload(whole, self.key)
        return None


Reader = Callable[[str, str, Any], Iterator[Record]]
# Stored rows (rows.SCHEMA) a batch at a time, or the row path's records for a batch the
# checks refused (see `_columnar.mapped`); raises `NotColumnar` for a source only the
# row reader maps exactly.
# Its last argument: only lines first..last of the source (a sharded import's part), or None.
ColumnReader = Callable[
    [str, str, Any, "tuple[int, int] | None"], Iterator["Batch | Iterator[Record]"]
]
Writer = Callable[[Iterable[Task], Path, str, Target], list[Path]]


# A writer that also takes tasks not built yet, building each where it writes it (a folder
# writer forks: its children build their own share, the parent reads only the ids).
LaterWriter = Callable[[Iterable["Task | Later"], Path, str, Target], list[Path]]


@dataclass(frozen=True)
class Format:
    name: str
    summary: str
    read: Reader | None = None
    read_columns: ColumnReader | None = None
    write: Writer | None = None
    write_later: LaterWriter | None = None  # the same writer, where it takes `Later` tasks
    read_options: type[Options] = Options
    write_options: type[WriteOptions] = WriteOptions
    # The task fields the writer maps natively; a function of the task where that depends on
    # the task (SkyRL's SWE-bench rows carry the whole instance).
    carries: frozenset[str] | Callable[[Task], frozenset[str]] = field(default_factory=frozenset)
    # What the writer leaves per split in its output folder, so that the folder reads back
    # whole, each split under its name: (glob below the folder, what the reader is given for
    # the split the match names): "file" (`<split>.parquet`), "folder" (`<split>/index.json`:
    # its folder), "root" (a package whose `*/data/<split>.jsonl` the reader picks by split).
    split_globs: tuple[tuple[str, str], ...] = ()
    # The split a source of this format is when nothing says otherwise: `test` for a set
    # published as a benchmark only (HumanEval), as the catalog names it.
    default_split: str = "train"
    # For an export whose order a trainer must keep (a mixture's draw, `taskpack mix`; rows in
    # curriculum order, `order`): the data configs of the trainers that read this format,
    # naming the files written: {file name: its text}, from ({split: files}, the mixture's
    # sources or [], the target, whose `curriculum` says the order).
    trainer_configs: (
        Callable[[Mapping[str, list[Path]], list[dict[str, Any]], Target], dict[str, str]] | None
    ) = None
    # A folder format's files of one task ({path: (bytes, mode)}): what an export is about to
    # write, told before it starts when it is large.
    task_files: Callable[[Task, Target], dict[str, tuple[bytes, int]]] | None = None
    # A row format's free field: where its rows carry pass rates and an embedded task.
    free: FreeField | None = None

    def carried(self, task: Task) -> frozenset[str]:
        return self.carries(task) if callable(self.carries) else self.carries

    @property
    def modes(self) -> str:
        return "/".join(m for m, f in (("read", self.read), ("write", self.write)) if f)


# Task fields every writer is asked about; `id` is always carried (a row key or folder name).
CHECKED_FIELDS = (
    "prompt",
    "answer",
    "solution",
    "reward",
    "rewards",
    "tools",
    "files",
    "steps",
    "environment",
    "limits",
    "metadata",
)


def config_note(sources: list[dict[str, Any]], target: Target) -> str:
    """The comment a trainer config opens with: the weights a mixture's training file holds
    its sources in (drawn by `taskpack mix`, so no trainer needs to weigh them again), and the
    curriculum order its rows are in (so no trainer may shuffle them)."""
    from taskpack.converters._scripts import quoted

    lines = []
    mixed = [s for s in sources if not s.get("evaluation_only")]
    total = sum(int(s.get("drawn") or 0) for s in mixed)

    def held(s: dict[str, Any]) -> str:
        drawn = s.get("drawn")
        if not isinstance(drawn, int) or not total:  # a mixture written before `drawn`
            return ""
        return f" (drawn: {drawn} tasks, {drawn / total:.0%})"

    weights = ", ".join(f"{quoted(s['label'])} {s['weight']:g}{held(s)}" for s in mixed)
    if weights:
        lines.append(
            "# taskpack mix: the train files hold the sources drawn by these weights until one "
            f"ran out: {weights}"
        )
    if (c := target.curriculum) is not None:
        lines.append(
            f"# taskpack export: rows {c.order} by the pass rates of {quoted(c.model)} "
            f"(unmeasured {c.unmeasured}); shuffling is off to keep that order"
        )
    return "".join(line + "\n" for line in lines)


def report_uncarried(fmt: Format, task: Task, losses: Losses) -> None:
    """Report each non-empty task field `fmt` does not carry, and other formats' extras."""
    carried = fmt.carried(task)
    for name in CHECKED_FIELDS:
        if name not in carried and getattr(task, name) not in (None, [], {}):
            losses.lost(name, task)
    for other, extra in task.extras.items():
        if other != fmt.name:
            for key in extra_fields(extra):
                losses.lost(f"extras.{other}.{key}", task)


def extra_fields(extra: Any) -> list[str]:
    """The fields a format's extras hold, by name: a residue's own markers (`$style`, `$drop`:
    spellings and absences, not data) left out, a `$`-escaped key unescaped."""
    if not isinstance(extra, dict):
        return ["(value)"]
    names = [
        k[1:] if k.startswith("$$") else k
        for k in extra
        if not k.startswith("$") or k.startswith("$$")
    ]
    return names or []


def options(fmt: Format, values: dict[str, Any], write: bool = False) -> Any:
    """`values` checked against the format's typed options, as one readable error."""
    model = fmt.write_options if write else fmt.read_options
    if not values and _defaults_only(model):  # nothing to check: no schema is built for it
        return model.model_construct()
    try:
        return model.model_validate(values)
    except ValidationError as e:
        typo = next((err["loc"] for err in e.errors() if err["type"] == "extra_forbidden"), None)
        if typo:  # named with its nearest option, not in pydantic's words
            what = "write option" if write else "option"
            raise unknown(what, str(typo[-1]), sorted(model.model_fields), where=fmt.name) from None
        raise TaskpackError(f"{fmt.name}: {describe_error(e)}") from None


def _defaults_only(model: type[BaseModel]) -> bool:
    """Whether validating no values gives the model's defaults and nothing else (no validator
    runs, no default is validated): then they are set without building its schema, which is
    most of a small import's start (pydantic builds it on first use, ~25 ms)."""
    found = model.__pydantic_decorators__
    return not (
        found.model_validators
        or found.field_validators
        or model.model_config.get("validate_default")
        or any(f.validate_default for f in model.model_fields.values())
    )
