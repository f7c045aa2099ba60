"""How a version's manifest `source` names what made it, and how it reads as lineage: what made
it (an operation, its options), from what (input versions, or files with their sha256), what it
was checked against and what it dropped. One wording for `taskpack lineage`, the viewer's home
page and the Hub's data card; one rule (`located`) for naming a file, folder or URL in it."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from taskpack.base.settings import switch

PATHS = "TASKPACK_LINEAGE_PATHS"  # on: lineage also records local paths, relative to the cwd


# Where `publish --check` records its passing check in a version's `source` (`taskpack.gate`):
# under the version digest, read by the lineage and the catalog.
SANDBOX_CHECK = "sandbox_check"
# A secret shared by the machines that run `publish --check` and the hub that shows their
# checks: the gate signs its record with it, and a hub given it shows a signed record as
# verified. A record anyone else wrote into a manifest is shown as claimed, never as passed.
CHECK_KEY = "TASKPACK_CHECK_KEY"


def check_signature(manifest: Any, record: Mapping[str, Any], key: bytes) -> str:
    """HMAC-SHA256 of a check's record (less its signature) and the digest of the version it
    checked (the manifest without the record): a record signed for one version, or altered,
    fails on any other."""
    import hashlib
    import hmac

    from taskpack.base.digests import canonical_json, version_digest

    fields = manifest if isinstance(manifest, Mapping) else manifest.model_dump(mode="json")
    source = {k: v for k, v in (fields.get("source") or {}).items() if k != SANDBOX_CHECK}
    checked = version_digest({**fields, "source": source})
    body = {k: v for k, v in record.items() if k != "signature"}
    message = checked.encode() + b"\n" + canonical_json(body)
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def check_status(manifest: Any, key: bytes | None) -> dict[str, Any]:
    """What a hub may say of a version's sandbox check: `none`; `malformed` (the record is
    not one the gate writes); `claimed` (a record the hub cannot vouch for: unsigned, or no
    key here); `verified` (signed with the hub's key for this very version); `forged` (a
    signature that does not match). With the record's counts where it has them."""
    import hmac

    source = manifest.get("source") if isinstance(manifest, Mapping) else manifest.source
    record = source.get(SANDBOX_CHECK) if isinstance(source, Mapping) else None
    if record is None:
        return {"status": "none"}
    if not isinstance(record, Mapping):
        return {"status": "malformed"}
    checked, of = record.get("checked"), record.get("of")
    if not (
        isinstance(checked, int)
        and isinstance(of, int)
        and not isinstance(checked, bool)
        and not isinstance(of, bool)
        and 0 <= checked <= of
        and isinstance(record.get("signature", ""), str)
    ):
        return {"status": "malformed"}
    out = {"checked": checked, "of": of, "by": str(record.get("by", ""))[:80]}
    signature = record.get("signature")
    if key is None or not signature:
        return {"status": "claimed", **out}
    good = hmac.compare_digest(signature, check_signature(manifest, record, key))
    return {"status": "verified" if good else "forged", **out}


def asked_path(path: str | os.PathLike[str]) -> str | None:
    """A local path as lineage may record it: relative to the working folder, and only when
    `TASKPACK_LINEAGE_PATHS` asks; None otherwise (never a host's absolute path)."""
    return os.path.relpath(path) if switch(PATHS) else None


def located(uri: str | os.PathLike[str], sha256: str | None = None) -> dict[str, Any]:
    """How lineage names a source (a file, a folder, a URL): a URL as given, less any user
    and password; a local one by its name (and its bytes' sha256, for a file), with its path
    relative to the working folder only when `TASKPACK_LINEAGE_PATHS` asks. A manifest is
    published and served: it never carries a host's absolute path."""
    text = os.fspath(uri)
    if "://" in text:
        parts = urlsplit(text)
        netloc = parts.netloc.rpartition("@")[2]
        return {"uri": urlunsplit(parts._replace(netloc=netloc))}
    entry: dict[str, Any] = {"name": os.path.basename(os.path.normpath(text))}
    if sha256 is not None:
        entry["sha256"] = sha256
    path = asked_path(text)
    if path is not None:
        entry["path"] = path
    return entry


def _where(entry: Mapping[str, Any]) -> str:
    """A located source as one phrase: its URL, or its name and (if recorded) its path.
    Versions written before `located` recorded a local file's absolute path as its `uri`:
    only its name is shown."""
    uri = str(entry.get("uri") or "")
    if uri:
        return uri if "://" in uri else os.path.basename(uri)
    path = f" ({entry['path']})" if entry.get("path") else ""
    return f"{entry.get('name')}{path}"


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
    check = source.get(SANDBOX_CHECK)
    if isinstance(check, dict):
        signed = "signed" if check.get("signature") else "unsigned"
        lines.append(
            f"sandbox check ({check.get('by')}, {signed}): {check.get('checked')} of "
            f"{check.get('of')} tasks: reference 1, no solution 0, no forger above 0"
        )
    dropped = source.get("dropped")
    if isinstance(dropped, dict):
        gone = ", ".join(f"{s}: {len(i)}" for s, i in dropped.items() if isinstance(i, list))
        lines.append(f"dropped {gone or 'nothing'}")
    counted = source.get("counted")
    if isinstance(counted, dict):
        lines.append(", ".join(f"{k}: {v}" for k, v in counted.items()))
    for entry in entries(source, "rollouts"):
        sha = f" sha256:{entry['sha256']}" if entry.get("sha256") else ""
        lines.append(f"rollouts: {_where(entry)}{sha}")
    for entry in entries(source, "files"):
        sha = f" sha256:{entry['sha256']}" if entry.get("sha256") else ""
        lines.append(f"{entry.get('split')}: {_where(entry)}{sha}")
    return lines
