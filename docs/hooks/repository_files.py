"""mkdocs hooks: the repository files the pages link to (SECURITY.md, ARCHITECTURE.md,
bench/RESULTS.md, the JSON Schemas) go on the site too, and every link between the pages and
those files (written as GitHub reads them from their own folders: `../SECURITY.md` from docs/,
`docs/internals.md` from the root) is pointed at the site's copy, so one Markdown source reads
right on GitHub and on the built site with no dead link."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
CARRIED = (
    "SECURITY.md",
    "ARCHITECTURE.md",
    "bench/RESULTS.md",
    *(f"schemas/{p.name}" for p in sorted((ROOT / "schemas").glob("*.json"))),
)
_LINK = re.compile(r"\]\(([^)#:\s]+)")


def on_files(files: Files, config: Any) -> Files:
    for rel in CARRIED:
        files.append(File(rel, str(ROOT), config["site_dir"], config["use_directory_urls"]))
    return files


def _on_site(repo_path: str) -> str | None:
    """Where a repository path is on the site: a page of docs/, a carried file, or None."""
    if repo_path.startswith("docs/"):
        return repo_path.removeprefix("docs/")
    if repo_path.rstrip("/") == "schemas":
        return "schemas/task.schema.json"
    return repo_path if repo_path in CARRIED else None


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    source = page.file.src_uri
    folder = posixpath.dirname(source if source in CARRIED else f"docs/{source}")
    here = posixpath.dirname(source)

    def pointed(found: re.Match[str]) -> str:
        target = _on_site(posixpath.normpath(posixpath.join(folder, found[1])))
        if target is None:
            return found[0]
        return "](" + posixpath.relpath(target, here or ".")

    return _LINK.sub(pointed, markdown)
