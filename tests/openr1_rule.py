"""open-r1's decontamination rule written plainly, as a user would from its
`decontaminate.py`: the reference the tests hold taskpack's hits to, and the baseline
`bench/decontaminate.py` times them against."""

from __future__ import annotations

from typing import Any


def plain_hits(texts: dict[Any, str], refs: dict[Any, str], n: int) -> dict[tuple[Any, Any], str]:
    """Normalise, every word n-gram as a string, a lookup of the references' n-grams:
    (text, ref) -> the text's first shared n-gram."""

    def grams(text: str) -> list[str]:
        words = " ".join(text.lower().strip().split()).split()
        return [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]

    lookup: dict[str, list[Any]] = {}
    for key, text in refs.items():
        for gram in grams(text):
            lookup.setdefault(gram, []).append(key)
    hits: dict[tuple[Any, Any], str] = {}
    for key, text in texts.items():
        for gram in grams(text):
            for ref in lookup.get(gram, ()):
                hits.setdefault((key, ref), gram)
    return hits
