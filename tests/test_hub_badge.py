"""The hub gives the badge: a sandbox check a publisher wrote into its own manifest (sealed
with its own digest) is shown as claimed, never as passed; one signed with the key the hub
trusts (`TASKPACK_CHECK_KEY`, the gate signs with it) as verified for that version only; a
malformed record is shown as such and breaks no page; a search's work is bounded."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

import taskpack
from taskpack.base.digests import version_digest
from taskpack.base.provenance import CHECK_KEY, SANDBOX_CHECK, check_signature
from taskpack.registry.cache import Cache
from taskpack.registry.mirror import Mirror
from taskpack.serve.app import App, Registered
from taskpack.serve.server import background

from .conftest import make_task

KEY = "team-secret"


def _sealed(folder: Path, name: str, record: Any, sign: str | None = None, first: int = 0) -> Path:
    """A set whose manifest holds `record` as its check, sealed with its own digest, as any
    publisher can write it; signed with `sign` if given."""
    tasks = [make_task(i) for i in range(first, first + 3)]
    taskpack.write(folder, {"test": tasks}, name=name)
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    if sign is not None:
        record = {**record, "signature": check_signature(manifest, record, sign.encode())}
    manifest["source"][SANDBOX_CHECK] = record
    manifest["digest"] = version_digest(manifest)
    path.write_text(json.dumps(manifest))
    return folder


@pytest.fixture()
def hub(tmp_path: Path) -> Path:
    reg = tmp_path / "reg"
    fair = {"checked": 3, "of": 3, "by": "taskpack 0.1.0"}
    for name, record, sign in [
        ("claimed", fair, None),
        ("signed", fair, KEY),
        ("wrongkey", fair, "another"),
        ("junk", "not a record", None),
        ("negative", {"checked": 5, "of": 3}, None),
    ]:
        taskpack.publish(_sealed(tmp_path / name, name, record, sign), registry=str(reg))
    # a signed record moved onto a version of other tasks fails there
    moved = _sealed(tmp_path / "moved", "moved", fair, first=10)
    signed = json.loads((tmp_path / "signed" / "manifest.json").read_text())
    manifest = json.loads((moved / "manifest.json").read_text())
    manifest["source"][SANDBOX_CHECK] = signed["source"][SANDBOX_CHECK]
    manifest["digest"] = version_digest(manifest)
    (moved / "manifest.json").write_text(json.dumps(manifest))
    taskpack.publish(moved, registry=str(reg))
    return reg


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _listed(reg: Path, cache: Path) -> tuple[dict[str, str], str]:
    mirror = Mirror(str(reg), Cache(cache), ttl=60)
    with background(App(registered=Registered(mirror))) as url:
        status, body = _get(url + "/api/v1/sets")
        assert status == 200, body
        status, page = _get(url + "/")
        assert status == 200, page
    return {s["name"]: s["checked"]["status"] for s in json.loads(body)["sets"]}, page


def test_without_a_key_every_record_is_a_claim(
    hub: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CHECK_KEY, raising=False)
    found, page = _listed(hub, tmp_path / "cache")
    assert found == {
        "claimed": "claimed",
        "signed": "claimed",
        "wrongkey": "claimed",
        "moved": "claimed",
        "junk": "malformed",
        "negative": "malformed",
    }
    assert "tasks passed" not in page and "claimed by its publisher: 3 of 3" in page
    assert "malformed record" in page


def test_with_the_hubs_key_only_its_signature_on_this_version_is_verified(
    hub: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CHECK_KEY, KEY)
    found, page = _listed(hub, tmp_path / "cache")
    assert found == {
        "claimed": "claimed",
        "signed": "verified",
        "wrongkey": "forged",
        "moved": "forged",
        "junk": "malformed",
        "negative": "malformed",
    }
    assert page.count("tasks passed (verified)") == 1


def test_the_gate_signs_with_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What `publish --check` records is signed for the version it checked (the sandbox run
    itself is tests/test_publish_gate.py's): the signature verifies with the key."""
    from taskpack.base.provenance import check_status

    monkeypatch.setenv(CHECK_KEY, KEY)
    folder = tmp_path / "s"
    taskpack.write(folder, {"test": [make_task(0)]}, name="s")
    ts = taskpack.open(folder)
    record = {"checked": 1, "of": 1, "by": "taskpack"}
    record["signature"] = check_signature(ts.manifest, record, KEY.encode())
    sealed = ts.manifest.model_copy(update={"source": {SANDBOX_CHECK: record}})
    assert check_status(sealed, KEY.encode())["status"] == "verified"
    assert check_status(sealed, b"other")["status"] == "forged"
    assert check_status(sealed, None)["status"] == "claimed"


def test_a_search_is_bounded(hub: Path, tmp_path: Path) -> None:
    mirror = Mirror(str(hub), Cache(tmp_path / "cache"), ttl=60)
    with background(App(registered=Registered(mirror))) as url:
        words = "+".join("a" for _ in range(15_000))
        status, body = _get(f"{url}/api/v1/sets?q={words}")
        assert status == 400 and "at most 16 words" in body
        status, page = _get(f"{url}/?q={words}")
        assert status == 400 and "at most 16 words" in page
        status, body = _get(f"{url}/api/v1/sets?q=sign")
        assert status == 200 and [s["name"] for s in json.loads(body)["sets"]] == ["signed"]
