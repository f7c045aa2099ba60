"""Progress on stderr for long transfers, imports and exports: tqdm's bars, shown only on a
terminal, never with `-q`, and never when `TQDM_DISABLE` is set (tqdm's own switch)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from taskpack.base.settings import switch

T = TypeVar("T")


class Progress:
    """A tqdm bar that is also callable with an increment, so it plugs into boto3's transfer
    callbacks as it is."""

    def __init__(self, label: str, total: int | None = None, unit: str = "B") -> None:
        from tqdm import tqdm

        self._bar: Any = tqdm(
            total=total,
            desc=label,
            unit=unit,
            unit_scale=unit == "B",
            file=sys.stderr,
            dynamic_ncols=True,
            mininterval=0.1,
        )

    def __call__(self, amount: int) -> None:
        self._bar.update(amount)

    def close(self) -> None:
        self._bar.close()


def on_terminal() -> bool:
    return sys.stderr.isatty()


def progress(
    label: str, total: int | None = None, unit: str = "B", quiet: bool = False
) -> Progress | None:
    disabled = switch("TQDM_DISABLE")
    if quiet or disabled or not on_terminal():
        return None
    return Progress(label, total, unit)


def counted(
    items: Iterable[T], label: str, total: int | None = None, quiet: bool = False
) -> Iterator[T]:
    """`items` as they are, with a bar counting them (see `progress`)."""
    bar = progress(label, total=total, unit="tasks", quiet=quiet)
    try:
        for item in items:
            if bar:
                bar(1)
            yield item
    finally:
        if bar:
            bar.close()
