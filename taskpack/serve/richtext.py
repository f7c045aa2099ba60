"""Task text as the viewer shows it, always as safe HTML: prompts as Markdown (raw HTML in them
shown as text, links only to http, https and mailto), unified diffs with their added and
removed lines coloured and the changed words of each changed line marked, and two versions of
a text with the words that changed between them marked."""

from __future__ import annotations

import difflib
import functools
import html
import re
from collections.abc import Sequence
from typing import Any

_WORDS = re.compile(r"\s+|\w+|[^\w\s]")
MATCHED = 4_000_000  # word pairs a text diff compares at most
_SAFE_LINK = re.compile(r"^(https?:|mailto:|#|/)", re.IGNORECASE)


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


@functools.cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    class Safe(MarkdownIt):
        def validateLink(self, url: str) -> bool:
            return bool(_SAFE_LINK.match(url.strip()))

    return Safe("commonmark", {"html": False, "linkify": False}).enable("table")


def markdown(text: str) -> str:
    """`text` rendered as CommonMark (with tables); its own HTML is escaped, never passed."""
    return f'<div class="md">{_markdown().render(text)}</div>'


def is_patch(text: Any) -> bool:
    """Whether `text` is a unified diff (a git patch or `diff -u` output)."""
    if not isinstance(text, str):
        return False
    head = text.lstrip()[:2000]
    return head.startswith("diff --git") or ("\n+++ " in head and "\n@@ " in text)


def patch(text: str) -> str:
    """A unified diff: added lines green, removed red, hunk heads blue; where a run of removed
    lines is followed by added ones, each pair's changed words marked."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("-") and not line.startswith("---"):
            removed = _run(lines, i, "-")
            added = _run(lines, i + len(removed), "+")
            for k, old in enumerate(removed):
                if k < len(added):
                    marked_old, _ = words(old[1:], added[k][1:])
                    out.append(f'<span class="del">-{marked_old}</span>')
                else:
                    out.append(f'<span class="del">{esc(old)}</span>')
            for k, new in enumerate(added):
                if k < len(removed):
                    _, marked_new = words(removed[k][1:], new[1:])
                    out.append(f'<span class="add">+{marked_new}</span>')
                else:
                    out.append(f'<span class="add">{esc(new)}</span>')
            i += len(removed) + len(added)
            continue
        if line.startswith("+") and not line.startswith("+++"):
            out.append(f'<span class="add">{esc(line)}</span>')
        elif line.startswith("@@"):
            out.append(f'<span class="hunk">{esc(line)}</span>')
        elif line.startswith(("diff ", "--- ", "+++ ", "index ")):
            out.append(f'<span class="file">{esc(line)}</span>')
        else:
            out.append(esc(line))
        i += 1
    return '<pre class="patch">' + "\n".join(out) + "</pre>"


def _run(lines: list[str], start: int, sign: str) -> list[str]:
    """The lines from `start` on that begin with `sign` (and are no file header)."""
    found = []
    for line in lines[start:]:
        if not line.startswith(sign) or line.startswith(sign * 3 + " "):
            break
        found.append(line)
    return found


def words(old: str, new: str) -> tuple[str, str]:
    """`old` and `new` escaped, the words only `old` has in <del>, only `new` has in <ins>."""
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    # the common head and tail apart, so the matcher (quadratic at worst) sees only the middle
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    left, right = [esc("".join(a[:head]))], [esc("".join(b[:head]))]
    a_mid, b_mid = a[head : len(a) - tail], b[head : len(b) - tail]
    opcodes: Sequence[tuple[str, int, int, int, int]]
    if len(a_mid) * len(b_mid) > MATCHED:  # too long to match word by word: the middle whole
        opcodes = [("replace", 0, len(a_mid), 0, len(b_mid))]
    else:
        opcodes = difflib.SequenceMatcher(None, a_mid, b_mid, autojunk=False).get_opcodes()
    for op, i1, i2, j1, j2 in opcodes:
        gone, came = esc("".join(a_mid[i1:i2])), esc("".join(b_mid[j1:j2]))
        if op == "equal":
            left.append(gone)
            right.append(came)
            continue
        if gone:
            left.append(f"<del>{gone}</del>")
        if came:
            right.append(f"<ins>{came}</ins>")
    left.append(esc("".join(a[len(a) - tail :])))
    right.append(esc("".join(b[len(b) - tail :])))
    return "".join(left), "".join(right)
