"""The HTML view of `taskpack serve`: what a split holds at a glance, each task whole, and what
changed between two versions. Plain HTML and one inline SVG per split; no script runs (the
server's Content-Security-Policy allows none), and every value from a task is escaped.

Pages (bodies; `serve` wraps them and answers the HTTP):
    /view/SPLIT?page=&q=&where=&cols=   a table of tasks (id, prompt, answer, reward kind, chosen
                                        metadata columns), a filter, facet counts, split stats
    /view/SPLIT/ID                      every field of one task, its files (text as text,
                                        images shown), previous and next
    /diff/OLD/NEW                       tasks added, removed and changed between two versions,
                                        each changed field old and new side by side
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from taskpack import passrates, records
from taskpack.errors import TaskpackError
from taskpack.nesting import parse_json

if TYPE_CHECKING:
    from taskpack.changes import SplitDiff
    from taskpack.model import Task
    from taskpack.taskset import Split

PAGE = 50
PREVIEW = 140  # characters of a prompt shown in the table
TEXT_MAX = 64 << 10  # a file shown inline as text up to this size
FACET_VALUES = 12  # a metadata field is a facet when it takes at most this many values
IMAGES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
FIELDS = (  # a task page's sections, in this order (files and prompt apart)
    "answer",
    "solution",
    "reward",
    "environment",
    "tools",
    "limits",
    "steps",
    "source",
    "extras",
    "metadata",
)


STYLE = b"""body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:90em;padding:0 1em;
color:#222}h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.4em}h3{font-size:1em}
a{color:#0550ae}pre{background:#f6f8fa;padding:.5em;white-space:pre-wrap;
overflow-wrap:anywhere;max-height:40em;overflow:auto}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #e1e4e8;
padding:.35em .5em;text-align:left;vertical-align:top}th{background:#f6f8fa}
tbody tr:hover{background:#fafbfc}.error{color:#a00;background:#fff0f0;padding:.5em}
footer{margin-top:2em;color:#666;font-size:.85em}.split{display:flex;gap:2em}
.split .main{flex:3;min-width:0}.split aside{flex:1;min-width:16em}
.filter input[name=where]{width:22em}.filter label{font-size:.85em;margin-left:.5em}
.hist{width:100%;height:auto}.hist rect,.bar rect{fill:#4c8bf5}.hist text{font-size:10px;fill:#666}
td:first-child{white-space:nowrap}
details ul{margin:.2em 0 .6em;padding-left:1.2em;font-size:.9em}
.nav{margin:.8em 0}.files img{display:block;max-width:40em;margin:.4em 0}
table.diff td{width:33%}.ids{font-family:monospace;font-size:.9em}
"""


def page(title: str, body: str, digest: str) -> bytes:
    """A whole HTML page: `body` under the title, the version digest in the footer."""
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        '<link rel="stylesheet" href="/assets/style.css"></head><body>'
        f'<p><a href="/">home</a></p><h1>{html.escape(title)}</h1>{body}'
        f"<footer><p>version digest <code>{html.escape(digest)}</code></p></footer></body></html>"
    ).encode()


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def link(href: str, text: Any) -> str:
    """An anchor; `href` is built here from quoted parts, `text` escaped."""
    return f'<a href="{esc(href)}">{esc(text)}</a>'


def pre(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    return f"<pre>{esc(text)}</pre>"


# --- a split at a glance ----------------------------------------------------------------------


@dataclass
class Stats:
    """What a split holds, read once from its stored columns (no task is built)."""

    rows: int
    prompt_chars: list[int]
    reward_kinds: Counter[str] = field(default_factory=Counter)
    facets: dict[str, Counter[str]] = field(default_factory=dict)  # `metadata.k` -> counts
    roles: dict[str, tuple[int, int]] = field(default_factory=dict)  # role -> (files, bytes)

    @classmethod
    def of(cls, split: Split) -> Stats:
        import pyarrow as pa
        import pyarrow.compute as pc

        table = split.columns(["prompt", "reward", "metadata", "environment", "files"])
        # A prompt's length as the characters of its stored JSON: counted by Arrow, no row
        # decoded (a plain question's JSON adds about 40 to its text).
        lengths = pc.utf8_length(table.column("prompt").fill_null(""))
        stats = cls(rows=len(split), prompt_chars=lengths.to_pylist())
        for text, n in _counts(table.column("reward")):
            reward = _decoded(text)
            stats.reward_kinds[reward.get("kind", "?") if isinstance(reward, dict) else "none"] += n
        values: dict[str, Counter[str]] = {}
        for column in ("metadata", "environment"):
            for text, n in _counts(table.column(column)):
                item = _decoded(text)
                for key, value in item.items() if isinstance(item, dict) else ():
                    if isinstance(value, (str, int, float, bool)):
                        values.setdefault(f"{column}.{key}", Counter())[str(value)] += n
        stats.facets = {
            k: c for k, c in sorted(values.items()) if 1 < len(c) <= FACET_VALUES or _repo(k)
        }
        files = pc.list_flatten(table.column("files"))
        if len(files):
            flat = pa.table(
                {"role": pc.struct_field(files, "role"), "size": pc.struct_field(files, "size")}
            )
            grouped = flat.group_by("role").aggregate([("size", "count"), ("size", "sum")])
            stats.roles = {
                row["role"]: (row["size_count"], row["size_sum"] or 0)
                for row in sorted(grouped.to_pylist(), key=lambda r: r["role"])
            }
        return stats

    def example_filter(self) -> str:
        """A filter that matches some of this split's tasks (the filter box's placeholder)."""
        for key, counts in self.facets.items():
            value, _ = counts.most_common(1)[0]
            return f"{key}={value}"
        kind = self.reward_kinds.most_common(1)
        return f"reward.kind={kind[0][0]}" if kind else "id=..."


def _counts(column: Any) -> list[tuple[Any, int]]:
    """Each distinct value of a column with its count: Arrow counts, so each distinct text
    is decoded once however many rows share it."""
    import pyarrow.compute as pc

    counted = pc.value_counts(column)
    return list(
        zip(counted.field("values").to_pylist(), counted.field("counts").to_pylist(), strict=True)
    )


def _repo(key: str) -> bool:
    return key in ("environment.repo", "metadata.repo")


def _decoded(text: str | None) -> Any:
    return None if text is None else parse_json(text)


def _prompt_text(prompt: Any) -> str:
    """A prompt's text, its messages joined (a string prompt as it is)."""
    if isinstance(prompt, str):
        return prompt
    parts = []
    for item in prompt or ():
        if isinstance(item, dict):
            content = item.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts += [c.get("text", "") for c in content if isinstance(c, dict)]
    return "\n".join(parts)


def histogram(values: Sequence[int], bins: int = 24, width: int = 480, height: int = 90) -> str:
    """An inline SVG histogram (numbers only reach the markup)."""
    if not values:
        return "<p>no tasks</p>"
    low, high = min(values), max(values)
    span = max(high - low, 1)
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, (v - low) * bins // span)] += 1
    top = max(counts)
    bar = width / bins
    rects = []
    for k, n in enumerate(counts):
        h = round((height - 14) * n / top) if top else 0
        start, end = low + span * k // bins, low + span * (k + 1) // bins
        rects.append(
            f'<rect x="{k * bar:.1f}" y="{height - 14 - h}" width="{bar - 1:.1f}" height="{h}">'
            f"<title>{start}-{end} characters: {n} tasks</title></rect>"
        )
    label = (
        f'<text x="0" y="{height - 2}">{low}</text>'
        f'<text x="{width}" y="{height - 2}" text-anchor="end">{high} characters</text>'
    )
    return (
        f'<svg class="hist" role="img" aria-label="prompt lengths" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}">{"".join(rects)}{label}</svg>'
    )


def stats_panel(stats: Stats) -> str:
    kinds = ", ".join(f"{esc(k)} {n}" for k, n in stats.reward_kinds.most_common())
    roles = ", ".join(
        f"{esc(role)}: {n} files, {_size(size)}" for role, (n, size) in stats.roles.items()
    )
    lengths = sorted(stats.prompt_chars)
    median = lengths[len(lengths) // 2] if lengths else 0
    return (
        '<section class="stats"><h2>split</h2>'
        f"<p><b>{stats.rows}</b> tasks; prompt length median {median} characters (of its"
        " JSON)</p>"
        f"{histogram(stats.prompt_chars)}"
        f"<p>reward kinds: {kinds or 'none'}</p><p>files: {roles or 'none'}</p></section>"
    )


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    raise AssertionError


def facets_panel(name: str, stats: Stats, query: Mapping[str, str]) -> str:
    blocks = []
    groups = {"reward.kind": stats.reward_kinds, **stats.facets}
    for key, counts in groups.items():
        items = "".join(
            f"<li>{link(_href(name, query, where=f'{key}={value}', page='1'), value)} {n}</li>"
            for value, n in counts.most_common(FACET_VALUES)
        )
        blocks.append(f"<details open><summary>{esc(key)}</summary><ul>{items}</ul></details>")
    return f'<section class="facets"><h2>facets</h2>{"".join(blocks)}</section>'


def passrates_panel(
    name: str, rates: Mapping[str, Mapping[str, float]], query: Mapping[str, str]
) -> str:
    """Per model and settings, the histogram of pass rates (exactly 0, tenths, exactly 1),
    each bin a link that keeps its tasks."""
    if not rates:
        return ""
    blocks = []
    for label, mine in rates.items():
        counted = passrates.bins(mine.values())
        top = max(n for n, _ in counted) or 1
        rows = "".join(
            f"<tr><td>{link(_href(name, query, rated=label, band=b, page='1'), text)}</td>"
            f'<td>{n}</td><td><svg class="bar" width="100" height="10">'
            f'<rect width="{round(100 * n / top)}" height="10"/></svg></td></tr>'
            for text, b, (n, _) in zip(
                passrates.BIN_LABELS, passrates.BIN_BANDS, counted, strict=True
            )
        )
        blocks.append(
            f"<details open><summary>{esc(label)}: {len(mine)} tasks</summary>"
            f"<table>{rows}</table></details>"
        )
    return f'<section class="passrates"><h2>pass rates</h2>{"".join(blocks)}</section>'


def _href(name: str, query: Mapping[str, str], **changes: str) -> str:
    kept = {k: v for k, v in {**query, **changes}.items() if v}
    return f"/view/{quote(name, safe='')}" + (f"?{urlencode(kept)}" if kept else "")


def split_page(
    name: str,
    split: Split,
    stats: Stats,
    query: Mapping[str, str],
    filtered: Any,
    rates: Mapping[str, Mapping[str, float]] | None = None,
) -> str:
    """The table of a split's tasks. `filtered(where)`: the ids a `where` filter keeps (raises
    a TaskpackError or ValueError that is shown, not thrown). `rates`: per model and settings,
    each measured task's pass rate; `rated` and `band` in the query keep a band of one."""
    q, where = query.get("q", ""), query.get("where", "")
    columns = [c for c in query.get("cols", "").split(",") if c in stats.facets]
    ids, problem = split.ids(), ""
    if where:
        try:
            ids = filtered(where)
        except (TaskpackError, ValueError, KeyError) as e:
            problem = f'<p class="error">filter {esc(where)}: {esc(e)}</p>'
    rated, wanted = query.get("rated", ""), query.get("band", "")
    if rated or wanted:
        try:
            if rated not in (rates or {}):
                raise ValueError(f"no pass rates of {rated!r} here")
            edges = passrates.band(wanted)
            mine = (rates or {})[rated]
            ids = [i for i in ids if i in mine and passrates.inside(mine[i], edges)]
        except (TaskpackError, ValueError) as e:
            ids, problem = [], problem + f'<p class="error">pass rates: {esc(e)}</p>'
    if q:
        ids = [i for i in ids if q.lower() in i.lower()]
    pages = max(1, -(-len(ids) // PAGE))
    page = min(max(1, _number(query.get("page", "1"))), pages)
    shown = ids[(page - 1) * PAGE : page * PAGE]
    form = (
        '<form method="get" class="filter">'
        f'<input name="q" value="{esc(q)}" placeholder="id contains">'
        f' <input name="where" value="{esc(where)}" placeholder="{esc(stats.example_filter())}">'
        + "".join(
            f' <label><input type="checkbox" name="col" value="{esc(c)}"'
            f"{' checked' if c in columns else ''}> {esc(c)}</label>"
            for c in stats.facets
        )
        + ' <button type="submit">filter</button></form>'
    )
    head = "".join(f"<th>{esc(c)}</th>" for c in ("id", "prompt", "answer", "reward", *columns))
    rows = []
    for tid in shown:
        task = split.get(tid)
        assert task is not None
        cells = [
            link(f"/view/{quote(name, safe='')}/{quote(tid, safe='')}", tid),
            esc(_preview(task.instruction or _prompt_text(task.canonical()["prompt"]))),
            esc(_preview(task.answer if task.answer is not None else "")),
            esc(task.reward.kind if task.reward is not None else ""),
            *(esc(_dig(task, c)) for c in columns),
        ]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    nav = " ".join(
        link(_href(name, query, page=str(p)), label)
        for p, label in ((1, "first"), (page - 1, "previous"), (page + 1, "next"), (pages, "last"))
        if 1 <= p <= pages and p != page
    )
    count = f"<p>{len(ids)} of {len(split)} tasks, page {page} of {pages}</p>"
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    side = stats_panel(stats) + passrates_panel(name, rates or {}, query)
    side += facets_panel(name, stats, query)
    return (
        f'<div class="split"><div class="main">{form}{problem}{count}{table}'
        f'<p class="nav">{nav}</p></div><aside>{side}</aside></div>'
    )


def _number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 1


def _preview(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"


def _dig(task: Task, key: str) -> Any:
    value: Any = task.canonical()
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "" if value is None else value


# --- one task ---------------------------------------------------------------------------------


def task_page(name: str, split: Split, task: Task, index: int) -> str:
    split_url = f"/view/{quote(name, safe='')}"
    ids = split.ids()
    around = " ".join(
        f"{label} " + link(split_url + "/" + quote(ids[i], safe=""), ids[i])
        for i, label in ((index - 1, "previous"), (index + 1, "next"))
        if 0 <= i < len(ids)
    )
    parts = [
        f'<p class="nav">{link(split_url, f"split {name}")} · task {index + 1} of {len(ids)} · '
        f"{around}</p>",
        "<h2>prompt</h2>",
    ]
    for item in task.prompt:
        if isinstance(item, records.Message):
            parts.append(f"<h3>{esc(item.role)}</h3>{pre(item.text)}")
        else:
            parts.append(f"<h3>{esc(item.type)}</h3>{pre(item.model_dump(mode='json'))}")
    shown = task.model_dump(mode="json", exclude_none=True, exclude={"files", "prompt", "id"})
    for key in FIELDS:
        value = shown.pop(key, None)
        if value not in (None, {}, []):
            parts.append(f"<h2>{esc(key)}</h2>{pre(value)}")
    for key, value in shown.items():  # a field added to the model later still shows
        if value not in (None, {}, []):
            parts.append(f"<h2>{esc(key)}</h2>{pre(value)}")
    parts += _files(task)
    return "".join(parts)


def _files(task: Task) -> list[str]:
    parts = []
    for role in sorted({f.role for f in task.files}):
        items = []
        for f in task.files:
            if f.role != role:
                continue
            where = "/".join(filter(None, (f.step, f.path)))
            href = f"/api/v1/files/{quote(str(f.sha256), safe='')}?name={quote(f.path, safe='')}"
            about = f"{f.size} bytes, mode {f.mode:o}"
            body = ""
            if f.path.lower().endswith(IMAGES):
                body = f'<img src="{esc(href)}" alt="{esc(where)}">'
            elif (f.size or 0) <= TEXT_MAX:
                try:
                    body = pre(f.read_bytes().decode("utf-8"))
                except (UnicodeDecodeError, TaskpackError, OSError):
                    body = ""
            items.append(f"<li>{link(href, where)} ({about}){body}</li>")
        parts.append(f"<h2>files: {esc(role)}</h2><ul class='files'>{''.join(items)}</ul>")
    return parts


# --- two versions -----------------------------------------------------------------------------


def diff_page(old_ref: str, new_ref: str, changes: Mapping[str, SplitDiff]) -> str:
    parts = [f"<p>from <b>{esc(old_ref)}</b> to <b>{esc(new_ref)}</b></p>"]
    for name, d in changes.items():
        parts.append(
            f"<h2>{esc(name)}</h2><p>{len(d.added)} added, {len(d.removed)} removed, "
            f"{len(d.changed)} changed</p>"
        )
        for title, ids in (("added", d.added), ("removed", d.removed)):
            if ids:
                shown = ", ".join(esc(i) for i in ids[:200])
                more = f" and {len(ids) - 200} more" if len(ids) > 200 else ""
                parts.append(f"<h3>{title}</h3><p class='ids'>{shown}{more}</p>")
        for tid in d.changed[:200]:
            rows = "".join(
                f"<tr><td>{esc(c.path)}</td><td>{_cell(c.old)}</td><td>{_cell(c.new)}</td></tr>"
                for c in d.fields.get(tid, [])
            )
            parts.append(
                f"<h3>changed: {esc(tid)}</h3><table class='diff'><thead><tr><th>field</th>"
                f"<th>{esc(old_ref)}</th><th>{esc(new_ref)}</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>"
            )
    return "".join(parts)


def _cell(value: Any) -> str:
    return "<i>absent</i>" if value is None else pre(value)


def diff_json(changes: Mapping[str, SplitDiff]) -> dict[str, Any]:
    """The same, for the API (`/api/v1/diff/OLD/NEW`): each changed task's fields under its id."""
    return {
        name: {
            "added": d.added,
            "removed": d.removed,
            "changed": {
                tid: [{"field": c.path, "old": c.old, "new": c.new} for c in d.fields[tid]]
                for tid in d.changed
            },
        }
        for name, d in changes.items()
    }
