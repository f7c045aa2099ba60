"""Any table (CSV, TSV, JSONL, Parquet, or one inside a .zip) mapped to tasks by column name.

Options (also accepted as a YAML mapping file):
  id_column        column holding the id; without it ids are `<split>-<row>`
  prompt_column    column used verbatim as the prompt, or
  prompt_template  a template over columns, e.g. "{prompt}\\n\\nA. {A}\\nB. {B}"
  answer_column    reference answer; rows of a table without it (a test.csv) get no answer
                   when answer_optional is true
  choice_columns   columns holding the choices (comma-separated); their names are the labels
  reward           how an answer is scored: `auto` (the default: multiple choice with
                   choice_columns, else numeric_match where the answer is a number, as 27.0 or
                   025 or 1,080 or \frac{1}{2}, else exact_match), or one of exact_match,
                   numeric_match, multiple_choice
  strip_headers    strip stray spaces around header names before matching
  member, delimiter  which file inside a .zip, and the CSV delimiter (default by suffix)

Columns are matched by name, never by position. Every column not used verbatim stays in the
task's metadata, so the source row can be rebuilt exactly.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterator
from typing import Any, Literal

import pyarrow as pa
from pydantic import Field, field_validator, model_validator

from taskpack.converters._columnar import (
    ROW,
    Batch,
    NotColumnar,
    Template,
    mapped,
    ordinal_ids,
    refuse,
    row_numbers,
    slot,
    table_chunks,
    task_ids,
    text_columns,
)
from taskpack.converters._format import Format, Options
from taskpack.converters._source import Record, RowError, iter_table_rows, map_rows
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
    }
}


class KaggleOptions(Options):
    id_column: str | None = None
    prompt_column: str | None = None
    prompt_template: str | None = None
    answer_column: str | None = None
    answer_optional: bool = False
    choice_columns: list[str] = Field(default_factory=list)
    reward: Literal["auto", "exact_match", "numeric_match", "multiple_choice"] = "auto"
    strip_headers: bool = False
    member: str | None = None
    delimiter: str | None = None

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
        if isinstance(values.get("choice_columns"), str):
            values["choice_columns"] = [
                c.strip() for c in values["choice_columns"].split(",") if c.strip()
            ]
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
        if (self.prompt_column is None) == (self.prompt_template is None):
            raise ValueError("give exactly one of prompt_column or prompt_template")
        if (self.reward == "multiple_choice") != bool(self.choice_columns) and (
            self.reward != "auto"
        ):
            raise ValueError("reward multiple_choice goes with choice_columns, and only it")
        return self


def reward_kind(options: KaggleOptions, answer: str | None) -> str | None:
    """The reward kind of a row whose answer is `answer` (see the module's doc)."""
    from taskpack.converters._grade import exact_number

    if options.choice_columns:
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
    choices = options.choice_columns
    template_cols = [f for _, f, _, _ in string.Formatter().parse(template or "") if f]
    required = {c for c in [id_col, prompt_col, *choices, *template_cols] if c}
    if answer_col and not answer_optional:
        required.add(answer_col)
    verbatim = {c for c in [id_col, prompt_col, answer_col, *choices] if c}
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
        if answer_col and answer_col in row and row[answer_col] is not None:
            task["answer"] = _text(row, answer_col, kept)
        if choices:
            task["reward"] = {
                "kind": "multiple_choice",
                "choices": [{"label": c, "text": _text(row, c, kept)} for c in choices],
            }
        elif "answer" in task:
            task["reward"] = {"kind": kind or reward_kind(options, task["answer"])}
        task["metadata"] = {k: v for k, v in row.items() if k not in verbatim} | kept
        return task

    return convert


def read(uri: str, split: str, options: KaggleOptions) -> Iterator[Record]:
    rows = iter_table_rows(
        uri, member=options.member, delimiter=options.delimiter, strip_headers=options.strip_headers
    )
    return map_rows(rows, _mapping(uri, split, options))


def read_columns(
    uri: str, split: str, options: KaggleOptions
) -> Iterator[Batch | Iterator[Record]]:
    """`read`, a batch at a time (see `_columnar`), for tables of text cells."""
    import pyarrow.compute as pc

    answer, labels = options.answer_column, options.choice_columns
    templates: dict[str | None, Template] = {}
    unchecked: dict[str, str] = {}
    names: list[str] | None = None

    def template(kind: str | None, names: list[str]) -> Template:
        nonlocal unchecked
        if kind not in templates:
            try:
                row = {n: slot(n) for n in names}
                fields = _mapping(uri, split, options, kind)(row, ROW)
            except (TaskpackError, RowError) as e:
                raise NotColumnar(str(e)) from None  # the row path says it, at its row
            unchecked = {"answer": fields.pop("answer")} if "answer" in fields else {}
            templates[kind] = Template(fields, unchecked)
        return templates[kind]

    def batch(table: pa.Table, first: int, _: object) -> Batch:
        nonlocal names
        if names not in (None, table.schema.names):
            raise NotColumnar("fields that change between rows")
        names = table.schema.names
        columns = dict(zip(names, text_columns(table, names), strict=True))
        kind = None
        if answer in columns and not labels:
            kinds = _kinds(options, columns[answer])
            kind = kinds[0].as_py() if len(kinds) else None
            refuse(pc.not_equal(kinds, kind), "answers scored otherwise than the first")
        chosen = template(kind, names)
        if unchecked and labels:
            assert answer is not None
            chosen_label = pc.is_in(columns[answer], pa.array(labels))
            refuse(pc.invert(chosen_label), "an answer that is not one of the choices")
        rows = row_numbers(first, table.num_rows)
        id_col = options.id_column
        ids = task_ids(columns[id_col]) if id_col else ordinal_ids(split, rows)
        return chosen.fill(ids, columns, rows)

    convert = _mapping(uri, split, options)
    yield from mapped(
        table_chunks(uri, options.delimiter, options.strip_headers, keyed=True),
        batch,
        lambda rows, n: map_rows(rows, convert, n),
    )


def _kinds(options: KaggleOptions, answers: pa.Array) -> pa.Array:
    """Each answer's reward kind, as `reward_kind` says: Python looks only at answers that
    hold a digit and are not a plain decimal (which are numbers whatever else is true)."""
    import pyarrow.compute as pc

    plain = pc.fill_null(pc.match_substring_regex(answers, r"^-?[0-9]+(\.[0-9]+)?$"), False)
    if options.reward != "auto":
        if options.reward == "numeric_match":  # the row path checks the others, row by row
            refuse(pc.invert(plain), "an answer to check as a number")
        return pa.array([options.reward] * len(answers), pa.string())
    digits = pc.fill_null(pc.match_substring_regex(answers, r"[0-9]"), False)
    kinds = pc.if_else(plain, "numeric_match", "exact_match")
    unsure = pc.indices_nonzero(pc.and_(digits, pc.invert(plain))).to_pylist()
    if unsure:
        found = kinds.to_pylist()
        for i in unsure:
            found[i] = reward_kind(options, answers[i].as_py())
        kinds = pa.array(found, pa.string())
    return kinds


def source_row(task: Task, **values: Any) -> dict[str, Any]:
    """The table row a task came from, given the options it was imported with."""
    options = KaggleOptions.model_validate(values).model_dump()
    row: dict[str, Any] = {}
    if options.get("id_column"):
        row[options["id_column"]] = task.id
    if options.get("prompt_column"):
        row[options["prompt_column"]] = task.instruction
    if options.get("answer_column") and task.answer is not None:
        row[options["answer_column"]] = task.answer
    if task.reward is not None and task.reward.kind == "multiple_choice":
        row.update({c.label: c.text for c in task.reward.choices})
    row.update(task.metadata)
    return row


FORMAT = Format(
    name="kaggle",
    summary="Any table (CSV, TSV, JSONL, Parquet, zip) mapped to tasks by column name.",
    read=read,
    read_columns=read_columns,
    read_options=KaggleOptions,
)
