"""How a version's manifest `source` reads as lineage: what made it (an operation, its options),
from what (input versions, or files with their sha256), what it was checked against and what it
dropped. One wording for `taskpack lineage`, the viewer's home page and the Hub's data card."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def entries(source: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    """The records listed under `key` of a manifest's source (inputs, files, hits), if any."""
    value = source.get(key)
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def step_lines(source: Mapping[str, Any]) -> list[str]:
    """The version's own step: a headline (the operation and its options), then one line per
    input, reference set, drop count and source file."""
    if not source:
        return ["no lineage recorded"]
    options = source.get("options")
    shown = f" {json.dumps(options, sort_keys=True)}" if options else ""
    fmt = f" from {source['format']}" if source.get("format") else ""
    lines = [f"{source.get('operation', 'made')}{fmt}{shown}"]
    for entry in entries(source, "inputs"):
        lines.append(f"made from {entry.get('ref')} {entry.get('digest')}")
    for entry in entries(source, "checked_against"):
        splits = ",".join(entry.get("splits") or [])
        lines.append(f"checked against {entry.get('ref')}:{splits} {entry.get('digest')}")
    dropped = source.get("dropped")
    if isinstance(dropped, dict):
        gone = ", ".join(f"{s}: {len(i)}" for s, i in dropped.items() if isinstance(i, list))
        lines.append(f"dropped {gone or 'nothing'}")
    counted = source.get("counted")
    if isinstance(counted, dict):
        lines.append(", ".join(f"{k}: {v}" for k, v in counted.items()))
    for entry in entries(source, "rollouts"):
        sha = f" sha256:{entry['sha256']}" if entry.get("sha256") else ""
        lines.append(f"rollouts: {entry.get('uri')}{sha}")
    for entry in entries(source, "files"):
        sha = f" sha256:{entry['sha256']}" if entry.get("sha256") else ""
        lines.append(f"{entry.get('split')}: {entry.get('uri')}{sha}")
    return lines
