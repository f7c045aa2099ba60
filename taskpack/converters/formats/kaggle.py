"""Any table (CSV, TSV, JSONL, Parquet, or one inside a .zip) mapped to tasks by column name.

Options (`taskpack formats kaggle` says each; also accepted as a YAML mapping file) name the
columns: the id, the prompt (a column, `prompt` by default, or a template over columns), the
answer, the choices. A multiple-choice answer may be a label, a 0-based index (an integer, as
MMLU's, or its digits) or a choice's text; the task's answer is its label, and a cell that was
not the label stays in metadata as it was. A number answer (27.0, 025, 1,080, \\frac{1}{2}) is
scored as a number, others as exact text, unless `reward` says otherwise.

Columns are matched by name, never by position. Every column not used verbatim stays in the
task's metadata, so the source row can be rebuilt exactly.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, cast

import pyarrow as pa
from pydantic import Field, field_validator, model_validator

from taskpack import records
from taskpack.base.arrow import repeated, scalar, texts
from taskpack.converters._columnar.fieldmap import FieldMap, IdOf, Ordinal, Own
from taskpack.converters._columnar.guards import refuse, text
from taskpack.converters._columnar.kinds import ABSENT, At, Kind, Maybe, Text, column
from taskpack.converters._columnar.template import ROW, Batch
from taskpack.converters._format import Format, Options
from taskpack.converters._sources.chunk import Lines, NotColumnar
from taskpack.converters._sources.records import Record, RowError
from taskpack.converters._sources.tables import iter_table_rows
from taskpack.errors import TaskpackError
from taskpack.model import Task

PRESETS: dict[str, dict[str, Any]] = {
    # Kaggle "LLM Science Exam": id, prompt, A-E, answer (a letter); test.csv has no answer.
    "multiple-choice": {
        "id_column": "id",
        "prompt_template": "{prompt}\n\nA. {A}\nB. {B}\nC. {C}\nD. {D}\nE. {E}",
        "choice_columns": ["A", "B", "C", "D", "E"],
        "answer_column": "answer",
        "answer_optional": True,
    },
    # MMLU (cais/mmlu and its kin): question, subject, choices (a list), answer (an index).
    "mmlu": {"prompt_column": "question", "choices_column": "choices", "answer_column": "answer"},
}


class KaggleOptions(Options):
    id_column: str | None = Field(
        default=None,
        description="The column holding each row's id; without it, ids are <split>-<row>.",
    )
    prompt_column: str | None = Field(
        default=None,
        description="The column used verbatim as the prompt (a column named `prompt` is taken "
        "when neither this nor prompt_template is given).",
    )
    prompt_template: str | None = Field(
        default=None,
        description='A template over columns making the prompt, as "{question}\\n\\nA. {A}".',
    )
    answer_column: str | None = Field(default=None, description="The column of reference answers.")
    answer_optional: bool = Field(
        default=False,
        description="Rows of a table without the answer column (a Kaggle test.csv) get no answer.",
    )
    choice_columns: list[str] = Field(
        default_factory=list,
        description="The columns holding the choices (comma-separated); their names are the "
        "labels unless choice_labels names them.",
    )
    choices_column: str | None = Field(
        default=None,
        description="Or one column holding the list of choices (MMLU's `choices`), labelled A, B, "
        "C, ... and listed under the prompt.",
    )
    choice_labels: list[str] = Field(
        default_factory=list, description="The labels of the choices, in order (comma-separated)."
    )
    reward: Literal["auto", "exact_match", "numeric_match", "math_match", "multiple_choice"] = (
        Field(
            default="auto",
            description="How an answer is scored: auto is multiple choice with choice "
            "columns, else numeric_match where the answer is a number, else exact_match; "
            "math_match compares LaTeX answers (MATH-500's `\\frac{14}{3}`).",
        )
    )
    strip_headers: bool = Field(
        default=False, description="Strip stray spaces around header names before matching."
    )
    member: str | None = Field(default=None, description="Which file inside a .zip to read.")
    delimiter: str | None = Field(
        default=None, description="The CSV delimiter (by default, from the file's suffix)."
    )

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, values: Any) -> Any:
        if not isinstance(values, dict):
            return values
        values = dict(values)
        preset = values.pop("preset", None)
        if preset is not None:
            if preset not in PRESETS:
                raise ValueError(f"unknown preset {preset!r}; known: {sorted(PRESETS)}")
            values = {**PRESETS[preset], **values}
        for key in ("choice_columns", "choice_labels"):
            if isinstance(values.get(key), str):
                values[key] = [c.strip() for c in values[key].split(",") if c.strip()]
        return values

    @field_validator("prompt_template")
    @classmethod
    def _template(cls, template: str | None) -> str | None:
        """Only `{column}` fields: `{a.b}` or `{a[0]}` would reach into Python objects."""
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(template or "")]
        except ValueError as e:
            raise ValueError(f"not a template: {e}") from None
        for name in fields:
            if name is not None and (name == "" or "." in name or "[" in name):
                raise ValueError(f"field {{{name}}}: name a column, as in {{question}}")
        return template

    @model_validator(mode="after")
    def _one_prompt(self) -> KaggleOptions:
        if self.prompt_column is not None and self.prompt_template is not None:
            raise ValueError("give one of prompt_column or prompt_template, not both")
        if self.prompt_column is None and self.prompt_template is None:
            self.prompt_column = "prompt"  # a table's own prompt column
        if self.choice_columns and self.choices_column:
            raise ValueError("give choice_columns or choices_column, not both")
        if (self.reward == "multiple_choice") != self.multiple_choice and self.reward != "auto":
            raise ValueError(
                "reward multiple_choice goes with choice_columns or choices_column, and only it"
            )
        if (
            self.choice_labels
            and self.choice_columns
            and (len(self.choice_labels) != len(self.choice_columns))
        ):
            raise ValueError("choice_labels: one label per choice column")
        if len(set(self.choice_labels)) != len(self.choice_labels):
            raise ValueError("choice_labels: labels must differ")
        return self

    @property
    def multiple_choice(self) -> bool:
        return bool(self.choice_columns or self.choices_column)


def reward_kind(options: KaggleOptions, answer: str | None) -> str | None:
    """The reward kind of a row whose answer is `answer` (see the module's doc)."""
    from taskpack.rewards.grader import exact_number

    if options.multiple_choice:
        return "multiple_choice"
    if answer is None:
        return None
    if options.reward == "auto":
        return "numeric_match" if exact_number(answer) is not None else "exact_match"
    if options.reward == "numeric_match" and exact_number(answer) is None:
        raise RowError(f"answer {answer[:40]!r}: not a number (reward numeric_match)")
    return options.reward


def _text(row: dict[str, Any], column: str, kept: dict[str, Any]) -> str:
    """A cell as text; a non-text cell (a number in JSONL) is also kept raw in `kept`."""
    value = row[column]
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (list, dict)):
        raise RowError(f"column {column!r}: expected text, got {type(value).__name__}")
    kept[column] = value
    return str(value)


def _mapping(
    uri: str, split: str, options: KaggleOptions, kind: str | None = None
) -> Callable[[dict[str, Any], int], dict[str, Any]]:
    """The task fields of a row (and its number): for every row on the row path, and once per
    reward `kind` for the columnar templates (whose answer is a slot, not a value)."""
    id_col, prompt_col, template = options.id_column, options.prompt_column, options.prompt_template
    answer_col, answer_optional = options.answer_column, options.answer_optional
    choices, listed = options.choice_columns, options.choices_column
    template_cols = [f for _, f, _, _ in string.Formatter().parse(template or "") if f]
    required = {c for c in [id_col, prompt_col, listed, *choices, *template_cols] if c}
    if answer_col and not answer_optional:
        required.add(answer_col)
    verbatim = {c for c in [id_col, prompt_col, answer_col, listed, *choices] if c}
    checked = False

    def convert(row: dict[str, Any], ordinal: int) -> dict[str, Any]:
        nonlocal checked
        if not checked:
            missing = sorted(required - set(row))
            if missing:
                raise TaskpackError(
                    f"{uri}: missing required column(s) {missing} (columns: {', '.join(row)})"
                )
            checked = True
        kept: dict[str, Any] = {}
        task: dict[str, Any] = {
            "id": _text(row, id_col, kept) if id_col else f"{split}-{ordinal:05d}",
            "source": {"format": "kaggle", "split": split, "row": ordinal},
        }
        if template is not None:
            try:
                task["prompt"] = template.format_map({k: row[k] for k in template_cols})
            except (ValueError, IndexError) as e:
                raise TaskpackError(f"kaggle: bad prompt_template: {e}") from None
        else:
            assert prompt_col is not None
            task["prompt"] = _text(row, prompt_col, kept)
        answered = answer_col is not None and row.get(answer_col) is not None
        if options.multiple_choice:
            labels, texts = _choices(row, options, kept)
            task["reward"] = {
                "kind": "multiple_choice",
                "choices": [{"label": a, "text": t} for a, t in zip(labels, texts, strict=True)],
            }
            if listed is not None:  # the choices are nowhere else in the prompt
                lines = "\n".join(f"{a}. {t}" for a, t in zip(labels, texts, strict=True))
                task["prompt"] = f"{task['prompt']}\n\n{lines}"
            if answered and answer_col is not None and ordinal == ROW:
                task["answer"] = row[answer_col]  # a template's slot: the batch checks it
            elif answered and answer_col is not None:
                task["answer"] = _label(row[answer_col], labels, texts)
                if task["answer"] != row[answer_col]:
                    kept[answer_col] = row[answer_col]
        elif answered:
            assert answer_col is not None
            task["answer"] = _text(row, answer_col, kept)
        if "answer" in task and not options.multiple_choice:
            task["reward"] = {"kind": kind or reward_kind(options, task["answer"])}
        task["metadata"] = {k: v for k, v in row.items() if k not in verbatim} | kept
        return task

    return convert


def _choices(
    row: dict[str, Any], options: KaggleOptions, kept: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """The choices' labels and texts: from their columns, or from the one column listing them."""
    if options.choices_column is None:
        texts = [_text(row, c, kept) for c in options.choice_columns]
        return options.choice_labels or list(options.choice_columns), texts
    listed = row[options.choices_column]
    if not isinstance(listed, list) or len(listed) < 2:
        raise RowError(f"column {options.choices_column!r}: expected a list of 2 or more choices")
    if not all(isinstance(t, (str, int, float)) and not isinstance(t, bool) for t in listed):
        raise RowError(f"column {options.choices_column!r}: choices must be text or numbers")
    if any(not isinstance(t, str) for t in listed):
        kept[options.choices_column] = listed  # numbers: the row keeps them as they were
    labels = options.choice_labels or list(string.ascii_uppercase[: len(listed)])
    if len(labels) != len(listed):
        raise RowError(f"{len(listed)} choices, {len(labels)} choice_labels")
    return labels, [str(t) for t in listed]


def _label(answer: Any, labels: list[str], texts: list[str]) -> str:
    """A multiple-choice answer as its choice's label: given as the label, a 0-based index,
    or the choice's text."""
    if isinstance(answer, str) and answer in labels:
        return answer
    index = answer if isinstance(answer, int) and not isinstance(answer, bool) else None
    if isinstance(answer, str) and answer.strip().isdigit():
        index = int(answer.strip())
    if index is not None and 0 <= index < len(labels):
        return labels[index]
    if isinstance(answer, str) and answer in texts:
        return labels[texts.index(answer)]
    raise RowError(
        f"answer {answer!r}: none of the choices (labels {', '.join(labels)}, their 0-based "
        "index, or a choice's text)"
    )


def read(uri: str, split: str, options: KaggleOptions) -> Iterator[Record]:
    rows = iter_table_rows(
        uri, member=options.member, delimiter=options.delimiter, strip_headers=options.strip_headers
    )
    return _fields(uri, options).rows(rows, split)


def read_columns(
    uri: str, split: str, options: KaggleOptions, lines: Lines = None
) -> Iterator[Batch | Iterator[Record]]:
    if options.choices_column or options.choice_labels:
        raise NotColumnar("choices in a list, or labelled otherwise than their columns")
    return _fields(uri, options).read_columns(uri, split, options, lines)


def _fields(uri: str, options: KaggleOptions) -> FieldMap:
    """The field map the options make: a table of text cells, choices in their own columns
    named as their labels, an answer among them (the template takes it as it is) or scored as
    the first row's is (a template per reward kind)."""
    answer, labels = options.answer_column, options.choice_columns
    fields: dict[str, Kind] = {}
    if answer and labels:
        fields[answer] = Maybe(Text(among=tuple(labels)))
    elif answer:
        fields["#reward"] = _Scored(answer, options)

    def convert(
        split: str, shapes: Mapping[str, Hashable] | None
    ) -> Callable[[dict[str, Any], int], dict[str, Any]]:
        kind = shapes.get("#reward") if shapes else None
        return _mapping(uri, split, options, cast("str | None", kind))

    return FieldMap(
        fields,
        id=IdOf(options.id_column) if options.id_column else Ordinal(),
        mapping=Own(convert, unchecked=("answer",)),
        rest=True,
        rest_kind=Text(),
        same_fields=True,
        keyed=True,
        delimiter=options.delimiter,
        strip_headers=options.strip_headers,
    )


@dataclass(frozen=True)
class _Scored(Kind):
    """The reward kind of the answers (`reward_kind`), a constant of the template: rows scored
    otherwise than a batch's first go row by row."""

    answer: str
    options: KaggleOptions
    source: ClassVar[bool] = False

    def take(self, at: At, key: str) -> tuple[Hashable, dict[str, pa.Array]]:
        import pyarrow.compute as pc

        if self.answer not in at.table.schema.names:
            return None, {}
        kinds = _kinds(self.options, text(column(at.table, self.answer)))
        if not len(kinds):
            return None, {}
        refuse(pc.not_equal(kinds, kinds[0]), "answers scored otherwise than the first")
        return kinds[0].as_py(), {}

    def stand_in(self, key: str, shape: Hashable) -> Any:
        return ABSENT


def _kinds(options: KaggleOptions, answers: pa.Array) -> pa.Array:
    """Each answer's reward kind, as `reward_kind` says: Python looks only at answers that
    hold a digit and are not a plain decimal (which are numbers whatever else is true)."""
    import pyarrow.compute as pc

    plain = pc.match_substring_regex(answers, r"^-?[0-9]+(\.[0-9]+)?$")
    plain = pc.fill_null(plain, scalar(False))
    if options.reward != "auto":
        if options.reward == "numeric_match":  # the row path checks the others, row by row
            refuse(pc.invert(plain), "an answer to check as a number")
        return repeated(options.reward, len(answers))
    digits = pc.fill_null(pc.match_substring_regex(answers, r"[0-9]"), scalar(False))
    kinds = pc.if_else(plain, scalar("numeric_match"), scalar("exact_match"))
    unsure = pc.indices_nonzero(pc.and_(digits, pc.invert(plain))).to_pylist()
    if unsure:
        found = kinds.to_pylist()
        for i in unsure:
            found[i] = reward_kind(options, answers[i].as_py())
        kinds = texts(found)
    return kinds


def source_row(task: Task, **values: Any) -> dict[str, Any]:
    """The table row a task came from, given the options it was imported with."""
    options = KaggleOptions.model_validate(values).model_dump()
    row: dict[str, Any] = {}
    if options.get("id_column"):
        row[options["id_column"]] = task.id
    if options.get("prompt_column"):
        text = task.instruction
        if options.get("choices_column") and isinstance(task.reward, records.MultipleChoice):
            listed = "\n".join(f"{c.label}. {c.text}" for c in task.reward.choices)
            text = text.removesuffix(f"\n\n{listed}")  # the choices the reader listed
        row[options["prompt_column"]] = text
    if options.get("answer_column") and task.answer is not None:
        row[options["answer_column"]] = task.answer
    if task.reward is not None and task.reward.kind == "multiple_choice":
        texts = [c.text for c in task.reward.choices]
        if options.get("choices_column"):
            row[options["choices_column"]] = texts
        else:
            columns = options.get("choice_columns") or [c.label for c in task.reward.choices]
            row.update(zip(columns, texts, strict=True))
    row.update(task.metadata)
    return row


FORMAT = Format(
    name="kaggle",
    summary="Any table (CSV, TSV, JSONL, Parquet, zip) mapped to tasks by column name.",
    read=read,
    read_columns=read_columns,
    read_options=KaggleOptions,
)
