"""The digest rules, each written once: the canonical JSON of a value, a task's digest, a
split's (over its tasks'), a version's (over its splits'). The standard library alone: the
task-set reader and writer use them, and so does `taskpack.fetch`, a worker's client that
imports nothing else of taskpack.
"""

from __future__ import annotations

import hashlib
import json

TYPE_CHECKING = False  # as in taskpack/__init__.py: typing stays unimported
if TYPE_CHECKING:
    from typing import Any, Literal

FORMAT_VERSION: Literal[2] = 2  # the task-set format version written now

_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical_json(value: Any) -> bytes:
    """One byte string per JSON value: sorted keys, no spaces, UTF-8, no NaN."""
    return _ENCODER.encode(value).encode("utf-8")


def content_digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


class SplitDigest:
    """A split's digest: sha256 over its task digests, one per line, in row order. Written by
    the task-set writer, recomputed by every check; kept running so a million rows cost no
    list."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()

    def add(self, task_digest: str) -> None:
        self._hash.update(task_digest.encode("ascii", "replace") + b"\n")

    def add_all(self, task_digests: list[str]) -> None:
        """`add` each, in one update."""
        if task_digests:
            joined = "\n".join(task_digests).encode("ascii", "replace") + b"\n"
            self._hash.update(joined)

    @property
    def value(self) -> str:
        return "sha256:" + self._hash.hexdigest()


def chains_to(task_digests: list[str], split_digest: str) -> bool:
    """Whether task digests, in row order, give `split_digest`: stored digests checked
    against their split's without any row hashed again (each row's own check is elsewhere)."""
    chain = SplitDigest()
    chain.add_all(task_digests)
    return chain.value == split_digest


def version_digest(
    splits: dict[str, str],
    format_version: int = FORMAT_VERSION,
    annotations: dict[str, str] | None = None,
) -> str:
    """The Merkle root over split digests, and over the digests of the splits' annotations
    (pass rates: facts about the tasks, not part of them) when there are any: content only,
    not name, time or storage. A version without annotations keeps the digest it always had."""
    body: dict[str, Any] = {"format_version": format_version, "splits": splits}
    if annotations:
        body["annotations"] = annotations
    return "sha256:" + hashlib.sha256(canonical_json(body)).hexdigest()
