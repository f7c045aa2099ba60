"""The HTML view of `taskpack serve`: what a split holds at a glance, each task whole, and what
changed between two versions. Plain HTML and one inline SVG per split; no script runs (the
server's Content-Security-Policy allows none), and every value from a task is escaped.

Pages (bodies; `serve` wraps them and answers the HTTP), each under the set's name, version,
description, license and its other versions with a link to what changed:
    /view/SPLIT?q=&where=&col=&sort=&order=&page=
                        a table of tasks (id, prompt, answer, reward kind, any chosen metadata
                        or environment field), searched (ids, prompts, answers), filtered,
                        sorted by any column; rows open in place; facet counts of the tasks
                        the search and filter keep; split stats
    /view/SPLIT/ID[?at=VERSION]
                        every field of one task (prompts as Markdown, patches coloured), its
                        files (text as text, images shown), previous and next
    /diff/OLD/NEW       tasks added and removed (each a link) and changed between two
                        versions, each changed field old and new, the changed words marked
An error on a page is a page: what went wrong, what to try, and the way back.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from taskpack import records
from taskpack.errors import TaskpackError
from taskpack.registry.refs import version_key
from taskpack.serve.browsing import Stats, prompt_text, search, sorted_ids
from taskpack.serve.richtext import esc, is_patch, markdown, patch, words
from taskpack.storage import ratings

if TYPE_CHECKING:
    from taskpack.changes import SplitDiff
    from taskpack.model import Task
    from taskpack.storage.taskset import Split

PAGE = 50
PREVIEW = 140  # characters of a prompt shown in the table
TEXT_MAX = 64 << 10  # a file shown inline as text up to this size
FACET_VALUES = 12  # values a facet lists (the most common; the rest counted)
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
.split .main{flex:3;min-width:0}.split aside{flex:1;min-width:16em;max-width:24em;
overflow-wrap:anywhere}.rows{overflow-x:auto}.rows td{max-width:36em;min-width:6em;
overflow-wrap:break-word}
.filter input[name=q],.filter input[name=where]{width:22em;max-width:100%}
.filter label{font-size:.85em;margin-left:.5em;white-space:nowrap}
.hist{width:100%;height:auto}.hist rect,.bar rect{fill:#4c8bf5}.hist text{font-size:10px;fill:#666}
td:first-child{white-space:nowrap}
details ul{margin:.2em 0 .6em;padding-left:1.2em;font-size:.9em}
.nav{margin:.8em 0}.files img{display:block;max-width:40em;margin:.4em 0}
table.diff td{width:33%}.ids{font-family:monospace;font-size:.9em}
.about{color:#444;margin:-.6em 0 1em}.about span{margin-right:1.2em}
pre.patch .add,pre.patch .del,pre.patch .hunk,pre.patch .file{display:inline-block;width:100%}
.add{background:#e6ffec}.del{background:#ffebe9}.hunk{color:#0550ae}.file{font-weight:bold}
ins{background:#abf2bc;text-decoration:none}del{background:#ffc1c0}
td details summary{cursor:pointer}td details .md{max-width:60em}
th a{color:inherit}.more{color:#666;font-size:.85em}
"""


@dataclass(frozen=True)
class About:
    """The served set as every page names it: its name, version, description and license, and
    the versions of it the registry holds (lowest first)."""

    name: str
    version: str
    description: str = ""
    license: str | None = None
    versions: tuple[str, ...] = ()

    def html(self) -> str:
        others = [v for v in self.versions if v != self.version]
        older = [v for v in others if version_key(v) < version_key(self.version)]
        parts = [f"<span><b>{esc(self.name)}@{esc(self.version)}</b></span>"]
        if self.license:
            parts.append(f"<span>license {esc(self.license)}</span>")
        if older:
            parts.append(
                f"<span>{link(diff_href(older[-1], 'this'), 'changes since ' + older[-1])}</span>"
            )
        if others:
            shown = ", ".join(
                f"{link('/?at=' + quote(v, safe=''), v)} ({link(diff_href(v, 'this'), 'changes')})"
                for v in others[-12:]
            )
            parts.append(f"<span>other versions: {shown}</span>")
        text = f"<p>{esc(self.description)}</p>" if self.description else ""
        return f'<div class="about">{"".join(parts)}{text}</div>'


def diff_href(old: str, new: str) -> str:
    return f"/diff/{quote(old, safe='')}/{quote(new, safe='')}"


def page(title: str, body: str, digest: str = "", about: About | None = None) -> bytes:
    """A whole HTML page: `body` under the title and the set's name, version and other
    versions, the version digest (of a page about one version) in the footer."""
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        '<link rel="stylesheet" href="/assets/style.css"></head><body>'
        f'<p><a href="/">home</a></p><h1>{html.escape(title)}</h1>'
        f"{about.html() if about else ''}{body}"
        + (
            f"<footer><p>version digest <code>{html.escape(digest)}</code></p></footer>"
            if digest
            else ""
        )
        + "</body></html>"
    ).encode()


def error_body(message: str, suggestion: str, back: Sequence[tuple[str, str]]) -> str:
    """An error as a page's body: what went wrong, what to try, the way back (href, text)."""
    ways = " · ".join(link(href, text) for href, text in back)
    return f'<p class="error">{esc(message)}</p><p>{esc(suggestion)}</p><p class="nav">{ways}</p>'


def link(href: str, text: Any) -> str:
    """An anchor; `href` is built here from quoted parts, `text` escaped."""
    return f'<a href="{esc(href)}">{esc(text)}</a>'


def pre(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    return f"<pre>{esc(text)}</pre>"


# --- a split at a glance ----------------------------------------------------------------------


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


def facets_panel(name: str, split: Stats, kept: Stats, query: Mapping[str, str]) -> str:
    """The split's facets, each counting the tasks the page's search and filter keep."""
    blocks = []
    groups = {"reward.kind": kept.reward_kinds}
    groups |= {key: kept.values.get(key, Counter()) for key in split.facets}
    for key, counts in groups.items():
        items = "".join(
            f"<li>{link(_href(name, query, where=f'{key}={value}', page='1'), value)} {n}</li>"
            for value, n in counts.most_common(FACET_VALUES)
        )
        rest = len(counts) - FACET_VALUES
        more = f'<p class="more">and {rest} more values</p>' if rest > 0 else ""
        blocks.append(
            f"<details open><summary>{esc(key)}</summary><ul>{items}</ul>{more}</details>"
        )
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
        counted = ratings.bins(mine.values())
        top = max(n for n, _ in counted) or 1
        rows = "".join(
            f"<tr><td>{link(_href(name, query, rated=label, band=b, page='1'), text)}</td>"
            f'<td>{n}</td><td><svg class="bar" width="100" height="10">'
            f'<rect width="{round(100 * n / top)}" height="10"/></svg></td></tr>'
            for text, b, (n, _) in zip(ratings.BIN_LABELS, ratings.BIN_BANDS, counted, strict=True)
        )
        blocks.append(
            f"<details open><summary>{esc(label)}: {len(mine)} tasks</summary>"
            f"<table>{rows}</table></details>"
        )
    return f'<section class="passrates"><h2>pass rates</h2>{"".join(blocks)}</section>'


def _href(name: str, query: Mapping[str, str], **changes: str) -> str:
    kept = {k: v for k, v in {**query, **changes}.items() if v}
    return f"/view/{quote(name, safe='')}" + (f"?{urlencode(kept)}" if kept else "")


SORTS = ("id", "prompt", "answer", "reward")  # the table's own columns, each sortable


Problem = tuple[str, str, str]  # what went wrong, the query field, what to try


def chosen(
    split: Split,
    stats: Stats,
    query: Mapping[str, str],
    filtered: Any,
    rates: Mapping[str, Mapping[str, float]] | None = None,
) -> tuple[list[str], list[Problem]]:
    """The ids a split page lists, in order, and what was wrong with the query. `filtered(where)`:
    the ids a `where` filter keeps (raises a TaskpackError or ValueError that is shown, not
    thrown: the table is then empty, never the unfiltered split). `rates`: per model and
    settings, each measured task's pass rate; `rated` and `band` in the query keep a band of
    one. The page number and the columns shown play no part: one choice serves every page."""
    q, where = query.get("q", "").strip(), query.get("where", "")
    ids, problems = split.ids(), list[Problem]()
    if where:
        try:
            ids = filtered(where)
        except (TaskpackError, ValueError, KeyError) as e:
            ids = []
            problems.append((f"filter {where}: {e}", "where", "a filter is KEY=VALUE"))
    rated, wanted = query.get("rated", ""), query.get("band", "")
    if rated or wanted:
        try:
            if rated not in (rates or {}):
                raise ValueError(f"no pass rates of {rated!r} here")
            edges = ratings.band(wanted)
            mine = (rates or {})[rated]
            ids = [i for i in ids if i in mine and ratings.inside(mine[i], edges)]
        except (TaskpackError, ValueError) as e:
            ids = []
            problems.append((f"pass rates: {e}", "band", "a band is LOW..HIGH or a name"))
    if q:
        found = search(split, q)
        ids = [i for i in ids if i in found]
    sort, descending = query.get("sort", ""), query.get("order", "") == "desc"
    if sort and sort not in (*SORTS, *stats.values):
        ids = []
        problems.append((f"no column {sort!r} to sort by", "sort", "sort by a column's heading"))
    elif sort:
        ids = sorted_ids(split, ids, sort, descending)
    return ids, problems


def split_page(
    name: str,
    split: Split,
    stats: Stats,
    query: Mapping[str, str],
    choice: tuple[list[str], list[Problem]],
    rates: Mapping[str, Mapping[str, float]] | None = None,
) -> str:
    """The table of a split's tasks: a page of the ids `chosen` gave (`choice`), with what the
    split and those tasks hold, its pass rates, and what was wrong with the query."""
    q, where = query.get("q", "").strip(), query.get("where", "")
    columns = [c for c in query.get("cols", "").split(",") if c in stats.values]
    ids, problems = choice
    sort, descending = query.get("sort", ""), query.get("order", "") == "desc"
    pages = max(1, -(-len(ids) // PAGE))
    page = min(max(1, _number(query.get("page", "1"))), pages)
    shown = ids[(page - 1) * PAGE : page * PAGE]
    keep = "".join(
        f'<input type="hidden" name="{k}" value="{esc(query[k])}">'
        for k in ("sort", "order", "rated", "band")
        if query.get(k)
    )
    form = (
        f'<form method="get" class="filter">{keep}'
        f'<input name="q" value="{esc(q)}" placeholder="search ids, prompts, answers">'
        f' <input name="where" value="{esc(where)}" placeholder="{esc(stats.example_filter())}">'
        + "".join(
            f' <label><input type="checkbox" name="col" value="{esc(c)}"'
            f"{' checked' if c in columns else ''}> {esc(c)}</label>"
            for c in stats.values
        )
        + ' <button type="submit">search</button></form>'
    )
    head = "".join(
        f"<th>{_sort_link(name, query, c, sort, descending)}</th>" for c in (*SORTS, *columns)
    )
    rows = []
    for tid in shown:
        task = split.get(tid)
        assert task is not None
        text = task.instruction or prompt_text(task.canonical()["prompt"])
        answer = task.answer if task.answer is not None else ""
        cells = [
            link(f"/view/{quote(name, safe='')}/{quote(tid, safe='')}", tid),
            _opening(text, markdown(text)),
            _opening(answer, pre(answer)),
            esc(task.reward.kind if task.reward is not None else ""),
            *(esc(_dig(task, c)) for c in columns),
        ]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    nav = " ".join(
        link(_href(name, query, page=str(p)), label)
        for p, label in ((1, "first"), (page - 1, "previous"), (page + 1, "next"), (pages, "last"))
        if 1 <= p <= pages and p != page
    )
    problem = "".join(
        error_body(
            message,
            f"Nothing is listed until it is fixed: {hint}.",
            [
                (_href(name, query, **{key: "", "page": "1"}), f"drop the {key}"),
                (_href(name, {}), f"all of {name}"),
            ],
        )
        for message, key, hint in problems
    )
    count = f"<p>{len(ids)} of {len(split)} tasks, page {page} of {pages}</p>"
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    # the tasks kept, by row: the split's own id index (read once per split)
    places = [row for tid in ids if (row := split.position(tid)) is not None]
    kept = stats if len(ids) == len(split) else Stats.of(split, places)
    side = stats_panel(stats) + passrates_panel(name, rates or {}, query)
    side += facets_panel(name, stats, kept, query)
    return (
        f'<div class="split"><div class="main">{form}{problem}{count}'
        f'<div class="rows">{table}</div>'
        f'<p class="nav">{nav}</p></div><aside>{side}</aside></div>'
    )


def _opening(value: Any, whole: str) -> str:
    """A cell's preview that opens in place to `whole` when the value is longer than it."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    short = _preview(value)
    if short == " ".join(text.split()):
        return esc(short)
    return f"<details><summary>{esc(short)}</summary>{whole}</details>"


def _sort_link(name: str, query: Mapping[str, str], column: str, sort: str, desc: bool) -> str:
    again = column == sort and not desc  # a second click on the sorted column reverses it
    mark = (" ▼" if desc else " ▲") if column == sort else ""
    href = _href(name, query, sort=column, order="desc" if again else "", page="1")
    return link(href, column + mark)


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


def results_table(results: Mapping[str, list[dict[str, Any]]]) -> str:
    """Models x splits: the tasks rated, mean reward and pass@1 of each model on each split."""
    if not results:
        return "<p>no results: no pass rates were recorded for this version</p>"
    rows = "".join(
        f"<tr><td>{esc(r['model'])}</td><td>{esc(json.dumps(r['settings']))}</td>"
        f"<td>{esc(split)}</td><td>{r['tasks']}</td><td>{r['mean_reward']:.3f}</td>"
        f"<td>{r['pass_at_1']:.3f}</td></tr>"
        for split, board in results.items()
        for r in sorted(board, key=lambda r: -r["pass_at_1"])
    )
    return (
        '<table class="results"><thead><tr><th>model</th><th>settings</th><th>split</th>'
        "<th>tasks rated</th><th>mean reward</th><th>pass@1</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


# --- one task ---------------------------------------------------------------------------------


def task_page(
    name: str,
    split: Split,
    task: Task,
    index: int,
    at: str = "",
    rated: Sequence[Mapping[str, Any]] = (),
) -> str:
    """Every field of one task, and each model's pass rate on it (`rated`: its annotation
    rows); `at`: the version it is of, when not the served one."""
    split_url = f"/view/{quote(name, safe='')}"
    version = f"?at={quote(at, safe='')}" if at else ""
    ids = split.ids()
    around = " ".join(
        f"{label} " + link(split_url + "/" + quote(ids[i], safe="") + version, ids[i])
        for i, label in ((index - 1, "previous"), (index + 1, "next"))
        if 0 <= i < len(ids)
    )
    of = f" of version {esc(at)}" if at else ""
    parts = [
        f'<p class="nav">{link(split_url, f"split {name}")} · task {index + 1} of {len(ids)}'
        f"{of} · {around}</p>",
        "<h2>prompt</h2>",
    ]
    for item in task.prompt:
        if isinstance(item, records.Message):
            text = item.text
            parts.append(
                f"<h3>{esc(item.role)}</h3>{markdown(text)}"
                f"<details><summary>as text</summary>{pre(text)}</details>"
            )
        else:
            parts.append(f"<h3>{esc(item.type)}</h3>{pre(item.model_dump(mode='json'))}")
    shown = task.model_dump(mode="json", exclude_none=True, exclude={"files", "prompt", "id"})
    ordered = [(k, shown.pop(k, None)) for k in FIELDS]
    for key, value in [*ordered, *shown.items()]:  # a field added to the model later shows too
        if value in (None, {}, []):
            continue
        parts.append(f"<h2>{esc(key)}</h2>{patch(value) if is_patch(value) else pre(value)}")
        if isinstance(value, dict):  # a patch among the metadata (SWE-bench's test_patch)
            parts += [
                f"<h3>{esc(key)}.{esc(k)}</h3>{patch(v)}" for k, v in value.items() if is_patch(v)
            ]
    parts += _files(task)
    if rated:
        rows = "".join(
            f"<tr><td>{esc(r['model'])}</td><td>{esc(r['settings'])}</td><td>{r['count']}</td>"
            f"<td>{r['correct']}</td><td>{r['mean']:.3f}</td>"
            f"<td>{ratings.rate(r):.3f}</td></tr>"
            for r in rated
        )
        parts.append(
            '<h2>pass rates</h2><table class="results"><thead><tr><th>model</th>'
            "<th>settings</th><th>rollouts</th><th>succeeded</th><th>mean reward</th>"
            f"<th>pass rate</th></tr></thead><tbody>{rows}</tbody></table>"
        )
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


def diff_page(
    old_ref: str, new_ref: str, changes: Mapping[str, SplitDiff], at: tuple[str, str] = ("", "")
) -> str:
    """`at`: for each side, the version its task pages are viewed at ('' for the served one),
    so every added and removed id is a link to its task."""
    parts = [f"<p>from <b>{esc(old_ref)}</b> to <b>{esc(new_ref)}</b></p>"]
    for name, d in changes.items():
        parts.append(
            f"<h2>{esc(name)}</h2><p>{len(d.added)} added, {len(d.removed)} removed, "
            f"{len(d.changed)} changed</p>"
        )
        for title, ids, side in (("added", d.added, at[1]), ("removed", d.removed, at[0])):
            if ids:
                shown = ", ".join(link(_task_href(name, i, side), i) for i in ids[:200])
                more = f" and {len(ids) - 200} more" if len(ids) > 200 else ""
                parts.append(f"<h3>{title}</h3><p class='ids'>{shown}{more}</p>")
        for tid in d.changed[:200]:
            rows = "".join(
                f"<tr><td>{esc(c.path)}</td>{_changed(c.old, c.new)}</tr>"
                for c in d.fields.get(tid, [])
            )
            parts.append(
                f"<h3>changed: {link(_task_href(name, tid, at[1]), tid)}</h3>"
                f"<table class='diff'><thead><tr><th>field</th>"
                f"<th>{esc(old_ref)}</th><th>{esc(new_ref)}</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>"
            )
    return "".join(parts)


def _task_href(split: str, tid: str, at: str) -> str:
    version = f"?at={quote(at, safe='')}" if at else ""
    return f"/view/{quote(split, safe='')}/{quote(tid, safe='')}{version}"


def _changed(old: Any, new: Any) -> str:
    """A changed field's two cells: two texts with the words that changed marked."""
    if isinstance(old, str) and isinstance(new, str):
        before, after = words(old, new)
        return f"<td><pre>{before}</pre></td><td><pre>{after}</pre></td>"
    return f"<td>{_cell(old)}</td><td>{_cell(new)}</td>"


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
