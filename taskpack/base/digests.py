"""The digest rules, each written once: the canonical JSON of a value, a task's digest, a
split's (over its tasks'), a version's (over its splits'). The standard library alone: the
task-set reader and writer use them, and so does `taskpack.fetch`, a worker's client that
imports nothing else of taskpack.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # as in taskpack/__init__.py: typing stays unimported
if TYPE_CHECKING:
    from hashlib import _Hash
    from typing import Any, Literal

FORMAT_VERSION: Literal[3] = 3  # the task-set format version written now
# The first format version whose version digest covers the manifest's source and listed sizes
# (rows are the same from version 2 on).
PINS_SOURCE = 3

_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical_json(value: Any) -> bytes:
    """One byte string per JSON value: sorted keys, no spaces, UTF-8, no NaN."""
    return _ENCODER.encode(value).encode("utf-8")


def _sha256(data: bytes = b"") -> _Hash:
    """hashlib's sha256, imported on first use: a warm episode start hashes nothing, and
    hashlib's OpenSSL start is a tenth of it."""
    import hashlib

    return hashlib.sha256(data)


def content_digest(value: Any) -> str:
    return "sha256:" + _sha256(canonical_json(value)).hexdigest()


class SplitDigest:
    """A split's digest: sha256 over its task digests, one per line, in row order. Written by
    the task-set writer, recomputed by every check; kept running so a million rows cost no
    list."""

    def __init__(self) -> None:
        self._hash = _sha256()

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


def _field(value: Any, key: str) -> Any:
    """A manifest's field, whether it is parsed JSON (`fetch`) or a manifest object."""
    return value.get(key) if isinstance(value, dict) else getattr(value, key, None)


def listed_sizes(manifest: Any) -> dict[str, int]:
    """Bytes hash -> size, of every object a manifest lists a size for: each split's Parquet
    files and each split's annotations (large files are listed by hash alone; their sizes are
    in the rows, under the split digest). What a reader downloads at most, and from format
    version 3 on, covered by the version digest."""
    found: dict[str, int] = {}
    for info in _field(manifest, "splits").values():
        for part in _field(info, "parts") or [info]:
            found[_field(part, "sha256")] = _field(part, "bytes")
    for notes in (_field(manifest, "annotations") or {}).values():
        found[_field(notes, "sha256")] = _field(notes, "bytes")
    return found


def version_digest(manifest: Any) -> str:
    """The Merkle root of a manifest (parsed JSON or a manifest object): over its split
    digests, the digests of its splits' annotations (pass rates: facts about the tasks, not
    part of them) when there are any, and from format version 3 on, everything else a reader
    acts on: the `source` (lineage, mixture weights and environments) and every listed
    object's size. Never over name, version, description, license or time. Versions of format
    1 and 2 keep the digest they were published with; it pins neither source nor sizes."""
    format_version = _field(manifest, "format_version")
    splits = {n: _field(info, "digest") for n, info in _field(manifest, "splits").items()}
    body: dict[str, Any] = {"format_version": format_version, "splits": splits}
    notes = {n: _field(a, "digest") for n, a in (_field(manifest, "annotations") or {}).items()}
    if notes:
        body["annotations"] = notes
    if format_version >= PINS_SOURCE:
        body["source"] = _field(manifest, "source") or {}
        body["sizes"] = listed_sizes(manifest)
    return "sha256:" + _sha256(canonical_json(body)).hexdigest()
