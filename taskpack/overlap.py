"""Which tasks' texts overlap: a benchmark's (decontamination) or each other's (duplicates).

Texts are compared as their words after normalising: lower case, whitespace collapsed
(`str.split`), as open-r1's `decontaminate.py` does, so a hit here is a hit there. A task's text is
its instruction (the last user message), the part of a prompt that differs between tasks: a
system prompt a whole set shares would otherwise make every task a hit.

Decontamination finds every word n-gram a text shares with any reference text, in arrays rather
than strings: every window of n words becomes a 64-bit polynomial hash of the words' hashes, and
a window whose hash the references hold is then compared word by word, so a hash collision never
makes a hit. Near duplicates are MinHash LSH over word
3-grams (`datasketch`, the `curate` extra); exact ones share their normalised text and answer.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from taskpack.errors import TaskpackError

_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd: each word moves the hash by a distinct step


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


class _Windows:
    """Every window of `n` words lying inside one text of a list of texts: where it starts,
    which text it is in, and its hash (a polynomial over the words' hashes)."""

    def __init__(self, texts: Sequence[list[str]], n: int) -> None:
        self.words = list(chain.from_iterable(texts))
        lengths = np.fromiter(map(len, texts), np.int64, len(texts))
        count = max(len(self.words) - n + 1, 0)
        word_hashes = np.fromiter(map(hash, self.words), np.int64, len(self.words))
        word_hashes = word_hashes.view(np.uint64)
        hashes = np.zeros(count, np.uint64)
        with np.errstate(over="ignore"):
            for k in range(n):
                hashes = hashes * _MULTIPLIER + word_hashes[k : k + count]
        doc = np.repeat(np.arange(len(texts)), lengths)[:count]
        ends = np.cumsum(lengths)
        whole = np.nonzero(np.arange(count) + n <= ends[doc])[0] if count else doc
        self.starts, self.doc, self.hashes = whole, doc[whole], hashes[whole]

    def ngram(self, i: int, n: int) -> list[str]:
        start = int(self.starts[i])
        return self.words[start : start + n]


def contamination(texts: Mapping[Any, str], refs: Mapping[Any, str], n: int = 8) -> list[Hit]:
    """Every (text, reference) pair sharing a word n-gram, with the first such n-gram of the
    text, in the order of `texts` then of `refs`."""
    if n < 1:
        raise TaskpackError(f"n-grams of {n} words: n must be at least 1")
    theirs = _Windows([words(t) for t in refs.values()], n)
    ours = _Windows([words(t) for t in texts.values()], n)
    order = np.argsort(theirs.hashes, kind="stable")
    sorted_hashes = theirs.hashes[order]
    lo = np.searchsorted(sorted_hashes, ours.hashes)
    found = np.nonzero(sorted_hashes[np.minimum(lo, len(order) - 1)] == ours.hashes)[0]
    if not len(order):
        found = found[:0]
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
    try:
        from datasketch import MinHash, MinHashLSH
    except ImportError:
        raise TaskpackError(
            "near duplicates need datasketch: pip install 'taskpack[curate]'"
        ) from None
    keys = list(texts)
    shingles = []
    for text in texts.values():
        w = words(text)
        grams = {" ".join(w[i : i + 3]) for i in range(max(len(w) - 2, 1))}
        shingles.append([g.encode() for g in grams])
    hashes = MinHash.bulk(shingles, num_perm=num_perm, seed=seed)
    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    parent = list(range(len(keys)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, h in enumerate(hashes):
        for j in lsh.query(h):
            if h.jaccard(hashes[j]) >= threshold:
                a, b = sorted((root(i), root(j)))
                parent[b] = a
        lsh.insert(i, h)
    clusters: dict[int, list[Any]] = {}
    for i, key in enumerate(keys):
        clusters.setdefault(root(i), []).append(key)
    return [c for c in clusters.values() if len(c) > 1]
