"""Shell scripts, Dockerfiles and config comments written from a task set's values. A value a
set author chose (an instance's repository, a patch, a workdir, a mixture's label) reaches
those files only through these helpers: fenced in a here-document no line of it can close,
quoted as JSON on a comment line, or refused, so no value becomes an instruction."""

from __future__ import annotations

import hashlib
import json
import re

from taskpack.errors import TaskpackError

# A Dockerfile argument or a shell word on one line: no control character, no line break of
# any kind (Unicode's among them), no space.
_ONE_WORD = re.compile(r"[^\s\x00-\x1f\x7f\x85\u2028\u2029]+")


def heredoc(tag: str, body: str | bytes) -> tuple[str, bytes]:
    """(delimiter, body ending in a newline) for `<<'DELIMITER'`: the delimiter ends in the
    first 16 hex digits of the body's own sha256, so no line of the body can be it."""
    data = body.encode("utf-8") if isinstance(body, str) else body
    if data and not data.endswith(b"\n"):
        data += b"\n"
    return f"{tag}_{hashlib.sha256(data).hexdigest()[:16]}", data


def quoted(value: object) -> str:
    """A value as it may stand on a comment line of a shell script or a YAML or TOML config:
    JSON with every non-ASCII character escaped, so no line break of any syntax's reaches it."""
    return json.dumps(value, ensure_ascii=True)


def dockerfile(image: str, workdir: str, copy_workspace: bool = False) -> bytes:
    """`FROM image`, `WORKDIR workdir` and the workspace copied in; an image or workdir that is
    not one word on one line is refused rather than written as a Dockerfile's next line."""
    for what, value in (("image", image), ("workdir", workdir)):
        if not _ONE_WORD.fullmatch(value):
            raise TaskpackError(
                f"environment {what} {quoted(value)}: one word on one line was expected"
            )
    copy = "COPY workspace/ /app/\n" if copy_workspace else ""
    return f"FROM {image}\nWORKDIR {workdir}\n{copy}".encode()
