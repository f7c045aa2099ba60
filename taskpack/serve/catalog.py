"""The catalog of a registry (`taskpack serve --registry R`, or a mirror's): every set at its
highest release, found by words and narrowed by facets; each set's versions and tags; each
version's results (models x splits, from its pass rates).

What the catalog says of a version (its counts, reward kinds, models, results) is read from
the version itself, fetched through the mirror and checked as any client checks it, once: a
published version never changes, so its summary is kept in the mirror's cache, by name and
version, beside the version's digest. Listings move: the catalog is rebuilt from them at most
once per the mirror's `ttl`, one build at a time, from kept summaries; a registry of 1,000 sets
is then a thousand small files read (bench/catalog.py).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any
from urllib.parse import quote, urlencode

from taskpack.base import routes
from taskpack.base.fs import write_atomic
from taskpack.base.provenance import CHECK_KEY, check_status
from taskpack.registry.mirror import Mirror, NotFound
from taskpack.registry.refs import is_release, version_key
from taskpack.serve import viewer
from taskpack.serve.richtext import esc
from taskpack.serve.viewer import link

Query = dict[str, list[str]]
Answer = tuple[int, str, bytes]
FACETS = ("license", "reward", "tag")  # what a set is narrowed by, each one value
SHOWN = 200  # sets a catalog page lists; the JSON pages through all of them
# The shape of a kept summary: raised with each change to its fields, so that a server run by a
# newer taskpack over an older one's cache computes its summaries again rather than serve ones
# without the new fields.
SUMMARY_SHAPE = 2
# A search's work is bounded whatever it asks: words and bytes of a query, and of the text
# each set is searched by (its name and the start of its description).
MOST_WORDS = 16
MOST_QUERY = 512
SEARCHED = 2048
_HTML = "text/html; charset=utf-8"


def summary(mirror: Mirror, name: str, version: str) -> dict[str, Any]:
    """What the catalog says of `name@version`, computed once and kept (see the docstring).
    A publisher's sandbox check is shown as the hub can vouch for it (`check_status`): kept
    summaries are by the key the hub had, so a hub given another key judges again."""
    key = check_key()
    keyed = hashlib.sha256(key).hexdigest()[:12] if key else "nokey"
    kept = mirror.cache.root / "catalog" / f"v{SUMMARY_SHAPE}-{keyed}" / name / f"{version}.json"
    if kept.is_file():
        return json.loads(kept.read_text(encoding="utf-8"))  # type: ignore[no-any-return]
    from taskpack.registry.client import resolve
    from taskpack.storage.ratings import leaderboard

    ts = resolve(f"{name}@{version}", registry=mirror.location, cache=mirror.cache)
    m = ts.manifest
    results = {split: leaderboard(ts.annotations(split)) for split in m.annotations}
    found = {
        "name": m.name,
        "version": m.version,
        "digest": m.digest,
        "description": m.description,
        "license": m.license,
        "created": m.created.isoformat(),
        "tasks": {split: info.rows for split, info in m.splits.items()},
        "reward_kinds": ts.reward_kinds(),
        "images": sorted(i for i in ts.field_values("environment", "image") if i),
        "checked": check_status(m, key),  # `publish --check`'s record, as the hub vouches
        "models": sorted({row["model"] for rows in results.values() for row in rows}),
        "results": results,
    }
    write_atomic(kept, json.dumps(found, ensure_ascii=False).encode())
    return found


def check_key() -> bytes | None:
    """The key this hub verifies publish checks with (`TASKPACK_CHECK_KEY`), if it has one."""
    key = os.environ.get(CHECK_KEY)
    return key.encode() if key else None


def count_pull(mirror: Mirror, name: str, version: str) -> None:
    """One more pull of `name@version` (a client fetching its manifest through the server):
    a byte appended to a file of its own, so that every worker process counts into it without
    a lock (an append of one byte is atomic) and the count is the file's size."""
    import os

    path = mirror.cache.root / "pulls" / name / version
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, b".")
    finally:
        os.close(fd)


def pulls(mirror: Mirror, name: str, version: str | None = None) -> int:
    """How many times `name@version` (every version, when None) was pulled through here."""
    where = mirror.cache.root / "pulls" / name
    try:
        files = [where / version] if version else list(where.iterdir())
        return sum(f.stat().st_size for f in files if f.is_file())
    except FileNotFoundError:
        return 0


def highest(versions: list[str]) -> str | None:
    """The version a set is listed at: its highest release, else its highest version."""
    releases = [v for v in versions if is_release(v)]
    return max(releases or versions, key=version_key, default=None)


class Shelf:
    """The catalog's answers, over a mirror of the registry."""

    def __init__(self, mirror: Mirror) -> None:
        self.mirror = mirror

    def entries(self) -> list[dict[str, Any]]:
        """Every set at its highest version, with its tags, by name."""
        return self.mirror.recent(("catalog",), self._build)

    def _build(self) -> list[dict[str, Any]]:
        out = []
        for name in sorted(self.mirror.names()):
            version = highest(self.mirror.versions(name))
            if version is not None:
                tags = self.mirror.tags(name)
                out.append({**summary(self.mirror, name, version), "tags": tags})
        return out

    def search(self, query: Query) -> tuple[list[dict[str, Any]], dict[str, Counter[str]]]:
        """The sets whose name or description holds every word of `q` and that have each
        facet value asked for, and the facets' counts over the sets the words keep."""
        asked = _one(query, "q")
        words = asked.lower().split()
        if len(asked.encode()) > MOST_QUERY or len(words) > MOST_WORDS:
            raise ValueError(f"q: at most {MOST_WORDS} words and {MOST_QUERY} bytes")
        chosen = {key: _one(query, key) for key in FACETS if _one(query, key)}
        found = [e for e in self.entries() if all(w in _text(e) for w in words)]
        facets: dict[str, Counter[str]] = {key: Counter() for key in FACETS}
        for entry in found:
            for key in FACETS:
                facets[key].update(_values(entry, key))
        kept = [e for e in found if all(v in _values(e, k) for k, v in chosen.items())]
        return kept, facets

    # --- JSON -------------------------------------------------------------------------------

    def r_sets(self, query: Query) -> Answer:
        kept, facets = self.search(query)
        offset = _number(query, "offset", 0, 0, 10**9)
        limit = _number(query, "limit", 100, 1, 1000)
        body = {
            "total": len(kept),
            "offset": offset,
            "sets": [self._counted(e) for e in kept[offset : offset + limit]],
            "facets": {key: dict(counts.most_common()) for key, counts in facets.items()},
        }
        return _json(body)

    def _versions(self, name: str) -> list[str]:
        """The set's versions, lowest first; NotFound (a 404) for a set the registry lacks."""
        versions = self.mirror.versions(name)
        if not versions:
            raise NotFound(f"no task set {name!r} in {self.mirror.location.url}")
        return versions

    def r_set(self, query: Query, name: str) -> Answer:
        versions = self._versions(name)
        body = {
            "name": name,
            "tags": self.mirror.tags(name),
            "latest": highest(versions),
            "pulls": pulls(self.mirror, name),
            "versions": [
                {**_brief(summary(self.mirror, name, v)), "pulls": pulls(self.mirror, name, v)}
                for v in versions
            ],
        }
        return _json(body)

    def _counted(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        """A set as a listing gives it, with its pulls counted now (they move by the request)."""
        return {**_brief(entry), "pulls": pulls(self.mirror, entry["name"])}

    def r_results(self, query: Query, name: str, version: str) -> Answer:
        """A version's leaderboard: per split, per model and settings, the tasks rated, their
        mean reward and pass@1."""
        if version not in self.mirror.versions(name):
            raise NotFound(f"no version {name}@{version} in {self.mirror.location.url}")
        found = summary(self.mirror, name, version)
        return _json({"name": name, "version": version, "digest": found["digest"],
                      "results": found["results"]})  # fmt: skip

    def r_openapi(self, query: Query) -> Answer:
        title = f"taskpack catalog: {self.mirror.location.url}"
        return _json(routes.openapi(title, "1", routes.CATALOG))

    # --- HTML -------------------------------------------------------------------------------

    def r_home(self, query: Query) -> Answer:
        kept, facets = self.search(query)
        asked = {k: _one(query, k) for k in ("q", *FACETS) if _one(query, k)}
        form = (
            '<form method="get" action="/"><input type="search" name="q" value="'
            f'{esc(asked.get("q", ""))}" placeholder="words of a name or description">'
            + "".join(
                f'<input type="hidden" name="{k}" value="{esc(v)}">'
                for k, v in asked.items()
                if k != "q"
            )
            + '<button type="submit">search</button></form>'
        )
        panels = "".join(
            f"<details open><summary>{key}</summary><ul>"
            + "".join(
                f"<li>{link(_href(asked, **{key: value}), value)} {n}</li>"
                for value, n in counts.most_common(20)
            )
            + "</ul></details>"
            for key, counts in facets.items()
            if counts
        )
        rows = "".join(_row(self._counted(e)) for e in kept[:SHOWN])
        more = (
            f"<p>and {len(kept) - SHOWN} more (the JSON lists them all)</p>"
            if len(kept) > SHOWN
            else ""
        )
        clear = f"<p>{link('/', 'every set')}</p>" if asked else ""
        body = (
            f"{form}{clear}<p>{len(kept)} of {len(self.entries())} sets</p>"
            f'<section class="facets"><h2>facets</h2>{panels}</section>'
            "<table><thead><tr><th>set</th><th>version</th><th>description</th><th>license</th>"
            "<th>tags</th><th>tasks</th><th>rewards</th><th>images</th><th>models rated</th>"
            "<th>checked</th>"
            "<th>pulls</th>"
            "</tr></thead>"
            f"<tbody>{rows}</tbody></table>{more}"
        )
        return self._page(f"task sets of {self.mirror.location.url}", body)

    def r_set_page(self, query: Query, name: str) -> Answer:
        versions = self._versions(name)
        tags = self.mirror.tags(name)
        blocks = []
        for version in reversed(versions):
            found = summary(self.mirror, name, version)
            named = [t for t, v in tags.items() if v == version]
            title = f"{version}" + (f" ({', '.join(named)})" if named else "")
            title += f", pulled {pulls(self.mirror, name, version)} times"
            pages = f"/sets/{quote(name, safe='')}/versions/{quote(version, safe='')}/"
            blocks.append(
                f"<h2>{link(pages, title)}</h2><p>{esc(found['description'])}</p>"
                f"<p>{_counts(found['tasks'])}; rewards {esc(', '.join(found['reward_kinds']))};"
                f" images {esc(', '.join(found['images']) or 'none')};"
                f" sandbox check: {_checked(found['checked'])};"
                f" digest <code>{esc(found['digest'])}</code></p>"
                + viewer.results_table(found["results"])
            )
        return self._page(name, "".join(blocks))

    def _page(self, title: str, body: str) -> Answer:
        return HTTPStatus.OK, _HTML, viewer.page(title, body)


def _one(query: Query, key: str) -> str:
    return query.get(key, [""])[0].strip()


def _number(query: Query, key: str, default: int, low: int, high: int) -> int:
    text = _one(query, key)
    if not text:
        return default
    if not text.isdigit() or not low <= int(text) <= high:
        raise ValueError(f"{key} must be a whole number from {low} to {high}")
    return int(text)


def _text(entry: Mapping[str, Any]) -> str:
    return f"{entry['name']} {str(entry['description'])[:SEARCHED]}".lower()


def _values(entry: Mapping[str, Any], key: str) -> list[str]:
    if key == "license":
        return [entry["license"] or "none"]
    if key == "reward":
        return list(entry["reward_kinds"])
    return list(entry["tags"])


def _brief(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A set as a listing gives it: all but its results, and the models rated."""
    return {k: v for k, v in entry.items() if k != "results"}


def _json(body: Mapping[str, Any]) -> Answer:
    return HTTPStatus.OK, "application/json", json.dumps(body, ensure_ascii=False).encode()


def _href(asked: Mapping[str, str], **changes: str) -> str:
    kept = {k: v for k, v in {**asked, **changes}.items() if v}
    return "/" + (f"?{urlencode(kept)}" if kept else "")


def _counts(tasks: Mapping[str, int]) -> str:
    return esc(", ".join(f"{split} {n}" for split, n in tasks.items()))


def _row(e: Mapping[str, Any]) -> str:
    cells = (
        link(f"/sets/{quote(e['name'], safe='')}", e["name"]),
        esc(e["version"]),
        esc(e["description"]),
        esc(e["license"] or ""),
        esc(", ".join(e["tags"])),
        _counts(e["tasks"]),
        esc(", ".join(e["reward_kinds"])),
        ", ".join(_image(i) for i in e["images"]),
        esc(", ".join(e["models"])),
        _checked(e["checked"]),
        str(e["pulls"]),
    )
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _checked(status: Mapping[str, Any]) -> str:
    """`publish --check`'s record, as a cell: passed only where this hub verified it."""
    said = {
        "none": "no",
        "malformed": "malformed record (not shown)",
        "verified": "{checked} of {of} tasks passed (verified)",
        "claimed": "claimed by its publisher: {checked} of {of} (not verified here)",
        "forged": "a forged check record (its signature fails)",
    }
    return esc(said.get(status.get("status", ""), "no").format_map(status))


def _image(ref: str) -> str:
    """An image as a cell: a pin's digest cut to 12 digits, whole in the tooltip (and JSON)."""
    name, _, digest = ref.partition("@sha256:")
    shown = f"{name}@sha256:{digest[:12]}…" if digest else ref
    return f'<span title="{esc(ref)}">{esc(shown)}</span>'
