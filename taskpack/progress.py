"""Progress on stderr for long transfers and imports; silent off a terminal or when quiet."""

from __future__ import annotations

import sys
import threading
import time


class Progress:
    """Counts units (bytes or tasks) and redraws one stderr line at most ten times a second.

    Callable with an increment, so it plugs into boto3's transfer callbacks (called from
    several threads, hence the lock).
    """

    def __init__(self, label: str, total: int | None = None, unit: str = "B") -> None:
        self.label, self.total, self.unit = label, total, unit
        self.done = 0
        self._last = 0.0
        self._lock = threading.Lock()

    def __call__(self, amount: int) -> None:
        with self._lock:
            self.done += amount
            now = time.monotonic()
            if now - self._last >= 0.1:
                self._last = now
                self._draw()

    def _fmt(self, n: int) -> str:
        return f"{n / 1e6:.1f} MB" if self.unit == "B" else f"{n} {self.unit}"

    def _draw(self) -> None:
        text = f"\r{self.label}: {self._fmt(self.done)}"
        if self.total:
            text += f" / {self._fmt(self.total)} ({100 * self.done / self.total:.0f}%)"
        sys.stderr.write(text)
        sys.stderr.flush()

    def close(self) -> None:
        with self._lock:
            self._draw()
            sys.stderr.write("\n")


def progress(
    label: str, total: int | None = None, unit: str = "B", quiet: bool = False
) -> Progress | None:
    if quiet or not sys.stderr.isatty():
        return None
    return Progress(label, total, unit)
