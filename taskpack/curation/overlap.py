"""Which tasks' texts overlap: a benchmark's (decontamination) or each other's (duplicates).

Texts are compared as their words after normalising: lower case, whitespace collapsed
(`str.split`), as open-r1's `decontaminate.py` does, so a hit here is a hit there. A task's text is
its instruction (the last user message), the part of a prompt that differs between tasks: a
system prompt a whole set shares would otherwise make every task a hit.

Decontamination finds every word n-gram a text shares with any reference text, in arrays rather
than strings: every window of n words becomes a 64-bit polynomial hash of the words' hashes, and
a window whose hash the references hold is then compared word by word, so a hash collision never
makes a hit. Near duplicates are MinHash LSH over word
3-grams (`datasketch`, the `curate` extra; its band sizes, with buckets of at most `BUCKET`
texts); exact ones share their normalised text and answer.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from taskpack.errors import TaskpackError

_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd, so invertible modulo 2**64
_INVERSE = np.uint64(pow(int(_MULTIPLIER), -1, 2**64))
_BITMAP = 1 << 22  # bits of the references' window hashes, tested before any lookup
# Texts an LSH bucket keeps as candidates for later ones: texts that agree on a whole band are
# alike, so a full bucket's first members stand for the rest, and a set of texts all alike
# costs a bounded number of comparisons per text, not one per text before it.
BUCKET = 16


def words(text: str) -> list[str]:
    """A text's words once normalised (lower case, split on any whitespace)."""
    return text.lower().split()


def task_text(task: Any) -> str:
    """The text a task is compared by: its instruction, else its steps' instructions."""
    text: str = task.instruction
    if not text and task.steps:
        text = "\n".join(step.instruction for step in task.steps)
    return text


@dataclass(frozen=True)
class Hit:
    """A text that shares a word n-gram with a reference text: both keys and the first
    n-gram they share."""

    key: Any
    ref: Any
    ngram: str


# str.split()'s whitespace: ASCII's (and \x1c-\x1f) as bytes; the rest, rare, made spaces first
_SPACE_BYTES = np.zeros(256, bool)
_SPACE_BYTES[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True
_WIDE_SPACE = re.compile("[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")


class _Windows:
    """Every window of `n` words lying inside one text of a list of texts: where it starts,
    which text it is in, and its hash. The texts are read as one UTF-8 buffer, never as word
    strings: a word's hash is a polynomial over its bytes (prefix sums times powers of an odd
    multiplier and its inverse modulo 2**64), a window's a polynomial over its words'."""

    def __init__(self, texts: Sequence[str], n: int) -> None:
        lowered = [t.lower() for t in texts]
        lowered = [t if t.isascii() else _WIDE_SPACE.sub(" ", t) for t in lowered]
        joined = "\n".join(lowered)
        self.data = joined.encode()
        if len(self.data) == len(joined):
            sizes = np.fromiter(map(len, lowered), np.int64, len(lowered))
        else:
            sizes = np.fromiter((len(t.encode()) for t in lowered), np.int64, len(lowered))
        text_starts = np.concatenate([[0], np.cumsum(sizes + 1)[:-1]])
        raw = np.frombuffer(self.data, np.uint8)
        space = np.concatenate([[True], _SPACE_BYTES[raw], [True]])
        self.word_starts = np.nonzero(space[:-2] & ~space[1:-1])[0]
        self.word_ends = np.nonzero(~space[1:-1] & space[2:])[0] + 1
        word_hashes = _hash_spans(raw, self.word_starts, self.word_ends)
        # how many texts start at each byte (empty ones share one): a word's text is their sum
        begun = np.bincount(text_starts[1:], minlength=len(raw) + 1)
        text = np.cumsum(begun)[self.word_starts]
        count = max(len(word_hashes) - n + 1, 0)
        hashes = np.zeros(count, np.uint64)
        with np.errstate(over="ignore"):
            for k in range(n if count else 0):  # no window of n words: nothing to hash
                hashes = hashes * _MULTIPLIER + word_hashes[k : k + count]
        whole = np.nonzero(text[:count] == text[n - 1 : n - 1 + count])[0]
        self.starts, self.doc, self.hashes = whole, text[whole], hashes[whole]

    def ngram(self, i: int, n: int) -> list[str]:
        first = int(self.starts[i])
        span = self.data[self.word_starts[first] : self.word_ends[first + n - 1]]
        return span.decode().split()


def _hash_spans(raw: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """sum(raw[j] * M**(end-1-j) for j in span) mod 2**64 for every span: with I the
    inverse of M, that is M**(end-1) * (C[end] - C[start]) where C is the prefix sum of
    raw[j] * I**j."""
    size = len(raw) + 1
    with np.errstate(over="ignore"):
        powers = np.cumprod(np.full(size, _MULTIPLIER, np.uint64))  # M**(j+1)
        inverses = np.cumprod(np.full(size, _INVERSE, np.uint64))  # I**(j+1)
        scaled = np.concatenate([[np.uint64(0)], np.cumsum(raw * inverses[:-1]) * _MULTIPLIER])
        # scaled[j] = sum(raw[:j] * I**(0..j-1)); M**(end-1) = powers[end-2] (M**0 = 1)
        lead = np.where(ends >= 2, powers[np.maximum(ends - 2, 0)], np.uint64(1))
        hashes: np.ndarray = (scaled[ends] - scaled[starts]) * lead
    return hashes


def contamination(texts: Mapping[Any, str], refs: Mapping[Any, str], n: int = 8) -> list[Hit]:
    """Every (text, reference) pair sharing a word n-gram, with the first such n-gram of the
    text, in the order of `texts` then of `refs`."""
    if n < 1:
        raise TaskpackError(f"n-grams of {n} words: n must be at least 1")
    theirs, ours = _Windows(list(refs.values()), n), _Windows(list(texts.values()), n)
    order = np.argsort(theirs.hashes, kind="stable")
    sorted_hashes = theirs.hashes[order]
    # A bitmap of the references' hashes' low bits first: most windows are no candidate, and
    # only the candidates are looked up in the sorted hashes.
    seen = np.zeros(_BITMAP, bool)
    seen[theirs.hashes & np.uint64(_BITMAP - 1)] = True
    found = np.nonzero(seen[ours.hashes & np.uint64(_BITMAP - 1)])[0]
    lo = np.zeros(len(ours.hashes), np.int64)
    lo[found] = np.searchsorted(sorted_hashes, ours.hashes[found])
    found = found[sorted_hashes[np.minimum(lo[found], len(order) - 1)] == ours.hashes[found]]
    names, ref_names = list(texts), list(refs)
    first: dict[tuple[int, int], str] = {}  # (text, ref) -> the first n-gram they share
    for i in found.tolist():
        mine = ours.ngram(i, n)
        j = int(lo[i])
        while j < len(order) and sorted_hashes[j] == ours.hashes[i]:
            pair = (int(ours.doc[i]), int(theirs.doc[order[j]]))
            if pair not in first and theirs.ngram(int(order[j]), n) == mine:
                first[pair] = " ".join(mine)
            j += 1
    return [Hit(names[t], ref_names[r], gram) for (t, r), gram in sorted(first.items())]


def exact_duplicates(items: Iterable[tuple[Any, str, Any]]) -> list[list[Any]]:
    """Groups (of two or more keys, first seen first) of `(key, text, answer)` items with the
    same normalised text and the same answer."""
    groups: dict[str, list[Any]] = {}
    for key, text, answer in items:
        body = json.dumps([" ".join(words(text)), answer], sort_keys=True, default=str)
        groups.setdefault(hashlib.sha256(body.encode()).hexdigest(), []).append(key)
    return [keys for keys in groups.values() if len(keys) > 1]


def near_duplicates(
    texts: Mapping[Any, str], threshold: float = 0.8, num_perm: int = 128, seed: int = 1
) -> list[list[Any]]:
    """Clusters (of two or more keys, in the order of `texts`) of texts whose word-3-gram sets
    are estimated to have Jaccard similarity `threshold` or more, linked transitively."""
    from taskpack.errors import require

    require("datasketch", "curate")  # near duplicates: MinHash LSH
    from datasketch import MinHash, MinHashLSH

    keys = list(texts)
    shingles = []
    for text in texts.values():
        w = words(text)
        grams = {" ".join(w[i : i + 3]) for i in range(max(len(w) - 2, 1))}
        shingles.append([g.encode() for g in grams])
    hashes = MinHash.bulk(shingles, num_perm=num_perm, seed=seed)
    bands = MinHashLSH(threshold=threshold, num_perm=num_perm).hashranges  # its bands alone
    buckets: dict[tuple[int, bytes], list[int]] = {}
    parent = list(range(len(keys)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, h in enumerate(hashes):
        mine = [(band, h.hashvalues[a:b].tobytes()) for band, (a, b) in enumerate(bands)]
        for j in dict.fromkeys(j for key in mine for j in buckets.get(key, ())):
            if root(j) != root(i) and h.jaccard(hashes[j]) >= threshold:
                a, b = sorted((root(i), root(j)))
                parent[b] = a
        for key in mine:
            members = buckets.setdefault(key, [])
            if len(members) < BUCKET:
                members.append(i)
    clusters: dict[int, list[Any]] = {}
    for i, key in enumerate(keys):
        clusters.setdefault(root(i), []).append(key)
    return [c for c in clusters.values() if len(c) > 1]
