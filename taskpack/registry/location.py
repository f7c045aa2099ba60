"""Where a registry is: parsed once from what the user typed, then passed around as a value.

    /some/folder, ./reg, "my registry"   a local registry folder (any characters)
    file:///some/folder                  the same, as a URL (percent-escapes decoded)
    s3://bucket/prefix                   an S3 bucket (boto3's credential chain)
    hf://owner                           Hub dataset repos owner/<name>, a version per tag
    http://host:port, https://host/path  a mirror (`taskpack serve --mirror`): read-only

Anything else with a `scheme://` is refused: a typo must not become a folder named `gs:`.
`Location.parse(location.url) == location`, so a URL printed by taskpack reads back as itself.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlparse

from taskpack.base.settings import default_registry
from taskpack.errors import TaskpackError

SCHEMES = ("file", "s3", "hf", "http", "https")
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_BUCKET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,254}$")
_OWNER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Location:
    scheme: Literal["file", "s3", "hf", "http", "https"]
    path: Path | None = None  # file: an absolute folder
    bucket: str = ""  # s3
    prefix: str = ""  # s3: keys below this, no leading or trailing slash
    owner: str = ""  # hf: a user or organization
    base: str = ""  # http(s): the mirror's URL, no trailing slash

    @property
    def url(self) -> str:
        if self.scheme == "file":
            assert self.path is not None
            return self.path.as_uri()
        if self.scheme == "s3":
            return f"s3://{self.bucket}/{self.prefix}".rstrip("/")
        if self.scheme in ("http", "https"):
            return self.base
        return f"hf://{self.owner}"

    def __str__(self) -> str:
        return self.url

    @classmethod
    def parse(cls, text: str | os.PathLike[str] | Location | None = None) -> Location:
        """The registry `text` names (the default registry when None or empty)."""
        if isinstance(text, Location):
            return text
        text = os.fspath(text) if text else default_registry()
        match = _URL.match(text)
        if match is None:
            return cls("file", path=Path(text).expanduser().resolve())
        scheme = match.group(1).lower()
        if scheme == "file":
            parsed = urlparse(text)
            if parsed.netloc not in ("", "localhost") or not parsed.path:
                raise TaskpackError(f"registry {text!r}: expected file:///absolute/folder")
            return cls("file", path=Path(unquote(parsed.path)).resolve())
        # S3 keys and Hub owners are taken as written: no query, fragment or escapes.
        host, _, rest = text[match.end() :].partition("/")
        if scheme == "s3":
            if not _BUCKET.match(host):
                why = (
                    f"a bucket name is 3 to 63 characters, not {len(host)}"
                    if host and not 3 <= len(host) <= 63
                    else "a bucket name is lower-case letters, digits, dots and hyphens"
                )
                raise TaskpackError(f"registry {text!r}: expected s3://BUCKET[/PREFIX] ({why})")
            return cls("s3", bucket=host, prefix=rest.strip("/"))
        if scheme == "hf":
            if not _OWNER.match(host) or rest.strip("/"):
                raise TaskpackError(f"registry {text!r}: expected hf://OWNER (a user or org)")
            return cls("hf", owner=host)
        if scheme in ("http", "https"):
            parsed = urlparse(text)
            if not parsed.hostname or parsed.query or parsed.fragment or parsed.username:
                raise TaskpackError(f"registry {text!r}: expected {scheme}://HOST[:PORT][/PATH]")
            try:
                parsed.port  # noqa: B018 - a bad port raises here
            except ValueError:
                raise TaskpackError(f"registry {text!r}: bad port") from None
            web: Literal["http", "https"] = "https" if scheme == "https" else "http"
            return cls(web, base=f"{web}://{parsed.netloc}{parsed.path}".rstrip("/"))
        known = ", ".join(f"{s}://" for s in SCHEMES)
        raise TaskpackError(
            f"registry {text!r}: unknown scheme {scheme + '://'!r}; known: {known}, or a folder"
        )
