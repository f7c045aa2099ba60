"""Pass rates as a version stores them: per split, one Parquet file of rows (task id, model,
sampling settings, rollouts, successes, mean reward), beside the tasks and not in them, so a
task's digest stays what it was while the version's digest covers what was measured.

A row holds counts, not rates: the pass rate is `correct / count`, and pass@k for any k up to
`count` follows from them (the unbiased estimator of Chen et al. 2021, `pass_at`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from math import comb
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from taskpack.base.arrow import STRING, numbers, texts
from taskpack.base.digests import canonical_json, content_digest
from taskpack.errors import TaskpackError

SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("model", pa.string()),
        ("settings", pa.string()),  # canonical JSON of the sampling settings
        ("count", pa.int64()),
        ("correct", pa.int64()),
        ("mean", pa.float64()),
    ]
)
FIELDS = tuple(SCHEMA.names)


def settings_key(settings: Mapping[str, Any]) -> str:
    """The one spelling of a sampling setup (n, temperature, max tokens, ...)."""
    return canonical_json(dict(settings)).decode()


def pass_at(count: int, correct: int, k: int) -> float | None:
    """The chance that at least one of k rollouts drawn from these succeeds; None for k
    larger than the rollouts there are."""
    if not 0 < k <= count:
        return None
    if count - correct < k:
        return 1.0
    return 1.0 - comb(count - correct, k) / comb(count, k)


def sorted_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows in their one order (id, model, settings), each once."""
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        key = (row["id"], row["model"], row["settings"])
        if key in out:
            raise TaskpackError(f"annotations: task {key[0]!r} twice for model {key[1]!r}")
        out[key] = {f: row[f] for f in FIELDS}
    return [out[key] for key in sorted(out)]


def digest(rows: list[dict[str, Any]]) -> str:
    """What the rows say, however they are stored: over their canonical JSON, sorted."""
    return content_digest([[row[f] for f in FIELDS] for row in rows])


def write(path: Path, rows: list[dict[str, Any]]) -> None:
    """The rows' columns built from their buffers (`taskpack.base.arrow`): `Table.from_pylist`
    would import pandas, where it is installed, into every command that rates or keeps tasks."""
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = []
    for field in SCHEMA:
        values = [row[field.name] for row in rows]
        columns.append(texts(values) if field.type == STRING else numbers(values, field.type))
    pq.write_table(pa.Table.from_arrays(columns, schema=SCHEMA), path, compression="zstd")


def read(path: Path) -> list[dict[str, Any]]:
    try:
        with pq.ParquetFile(path) as parquet:  # not `read_table`: its datasets import pandas
            table = parquet.read()
    except (pa.ArrowInvalid, OSError) as e:
        raise TaskpackError(f"{path}: pass rates do not read ({e}); taskpack validate") from None
    if table.schema.names != list(FIELDS):
        raise TaskpackError(f"{path}: not a taskpack annotations file")
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def problems(
    rows: list[dict[str, Any]], expected: str, ids: Iterable[str] | None = None
) -> list[str]:
    """Why stored annotations are not what their digest says, hold impossible counts or
    (given the split's `ids`) name tasks the split lacks. Every read checks the first two; the
    third needs the split's ids, which publish and `validate` read."""
    found = []
    if digest(rows) != expected:
        found.append(f"annotations digest differs from {expected}")
    if ids is not None:
        strangers = sorted({r["id"] for r in rows} - set(ids))
        if strangers:
            shown = strangers[:3]
            found.append(f"annotations of {len(strangers)} task(s) not in the split: {shown}")
    bad = [r["id"] for r in rows if not 0 <= r["correct"] <= r["count"] or r["count"] < 1]
    bad += [r["id"] for r in rows if not 0.0 <= r["mean"] <= 1.0]  # NaN fails both bounds
    if bad:
        found.append(f"annotations with impossible counts or means: {bad[:3]}")
    return found


def rate(row: Mapping[str, Any]) -> float:
    """A row's pass rate: the share of its rollouts that succeeded."""
    return float(row["correct"] / row["count"])


def rates(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], dict[str, float]]:
    """Per (model, settings key), in the order the rows name them: task id -> pass rate."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for row in rows:
        out.setdefault((row["model"], row["settings"]), {})[row["id"]] = rate(row)
    return out


def leaderboard(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per model and settings, in the order the rows name them: the tasks rated, the mean of
    their mean rewards, and pass@1 (the mean of their pass rates, the unbiased estimate)."""
    sums: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        kept = sums.setdefault((row["model"], row["settings"]), [0, 0.0, 0.0])
        kept[0] += 1
        kept[1] += row["mean"]
        kept[2] += rate(row)
    return [
        {
            "model": model,
            "settings": json.loads(settings),
            "tasks": int(n),
            "mean_reward": mean / n,
            "pass_at_1": passed / n,
        }
        for (model, settings), (n, mean, passed) in sums.items()
    ]


def of_model(
    measured: Mapping[str, list[dict[str, Any]]],
    model: str,
    settings: Mapping[str, Any] | None,
    ref: str,
) -> tuple[str, dict[str, dict[str, dict[str, Any]]]]:
    """The one setup of `model` (named by `settings` where it was measured with several) and,
    per split of `measured` (split -> its annotation rows), task id -> that setup's row. An
    error names what was measured instead."""
    setups = {r["settings"] for rows in measured.values() for r in rows if r["model"] == model}
    if settings is not None:
        setup = settings_key(settings)
    elif len(setups) == 1:
        setup = next(iter(setups))
    elif not setups:
        known = sorted({r["model"] for rows in measured.values() for r in rows})
        raise TaskpackError(f"{ref} has no pass rates of {model!r} (it has: {known or 'none'})")
    else:
        raise TaskpackError(
            f"{model!r} was measured with several settings; name one with -S: {sorted(setups)}"
        )
    return setup, {
        name: {r["id"]: r for r in rows if (r["model"], r["settings"]) == (model, setup)}
        for name, rows in measured.items()
    }


ORDERS = ("easy-first", "hard-first")


def by_difficulty(
    ids: Iterable[str], rates: Mapping[str, float], order: str, unmeasured: str = "last"
) -> list[int]:
    """Row positions in curriculum order: by pass rate, highest first (`easy-first`) or lowest
    first (`hard-first`), ties and the unmeasured in their stored order, the unmeasured all
    `first` or `last`."""
    if order not in ORDERS or unmeasured not in ("first", "last"):
        raise TaskpackError(
            f"order {order!r} (easy-first or hard-first), unmeasured {unmeasured!r} (first or last)"
        )
    ids = list(ids)
    sign = -1.0 if order == "easy-first" else 1.0
    measured = sorted(
        (i for i, t in enumerate(ids) if t in rates), key=lambda i: sign * rates[ids[i]]
    )
    rest = [i for i, t in enumerate(ids) if t not in rates]
    return rest + measured if unmeasured == "first" else measured + rest


# --- bands -----------------------------------------------------------------------------------

Edges = tuple[float, float, bool, bool]  # low, high, low open, high open

BANDS: dict[str, Edges] = {  # low, high, low open, high open
    "unsolved": (0.0, 0.0, False, False),
    "hard": (0.0, 0.3, True, True),
    "medium": (0.3, 0.7, False, False),
    "easy": (0.7, 1.0, True, True),
    "solved": (1.0, 1.0, False, False),
}


def band(text: str) -> Edges:
    """A pass-rate band: a name of `BANDS`, or `LOW..HIGH` (both included; `LOW<..` leaves
    LOW out, `..<HIGH` leaves HIGH out, as the histogram's bins do)."""
    if text in BANDS:
        return BANDS[text]
    low, sep, high = text.partition("..")
    low_open, high_open = low.endswith("<"), high.startswith("<")
    try:
        lo, hi = float(low.removesuffix("<")), float(high.removeprefix("<"))
    except ValueError:
        lo = hi = float("nan")
    if not sep or not 0 <= lo <= hi <= 1:
        names = ", ".join(BANDS)
        raise TaskpackError(f"pass-rate band {text!r}: LOW..HIGH within 0..1, or one of {names}")
    return lo, hi, low_open, high_open


def inside(rate: float, edges: Edges) -> bool:
    lo, hi, lo_open, hi_open = edges
    above = rate > lo if lo_open else rate >= lo
    below = rate < hi if hi_open else rate <= hi
    return above and below


BIN_LABELS = ["0"] + [f"{k / 10:.1f}-{(k + 1) / 10:.1f}" for k in range(10)] + ["1"]
BIN_BANDS = ["0..0", "0<..<0.1"] + [f"{k / 10:.1f}..<{(k + 1) / 10:.1f}" for k in range(1, 10)]
BIN_BANDS += ["1..1"]  # each bin of BIN_LABELS as a band


def bins(rates: Iterable[float], edges: Edges | None = None) -> list[tuple[int, int]]:
    """Per bin of `BIN_LABELS` (exactly 0, each tenth, exactly 1): how many rates fall in it
    and how many of those the band `edges` keeps."""
    counts = [[0, 0] for _ in BIN_LABELS]
    for rate in rates:
        b = 0 if rate == 0 else len(BIN_LABELS) - 1 if rate == 1 else 1 + min(int(rate * 10), 9)
        counts[b][0] += 1
        counts[b][1] += edges is not None and inside(rate, edges)
    return [(n, k) for n, k in counts]


def histogram(rates: Iterable[float], edges: Edges | None = None, width: int = 40) -> list[str]:
    """`bins` as text lines: the bin, its tasks, (with a band) how many it keeps, a bar."""
    counted = bins(rates, edges)
    top = max(n for n, _ in counted) or 1
    return [
        f"{label:>7} {n:>7}"
        + (f" {k:>7} kept" if edges is not None else "")
        + f"  {'#' * round(width * n / top)}"
        for label, (n, k) in zip(BIN_LABELS, counted, strict=True)
    ]
