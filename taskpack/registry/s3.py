"""An S3 bucket (or any S3-compatible server) as a registry store, through boto3.

Credentials come from boto3's standard chain; the endpoint from `AWS_ENDPOINT_URL_S3` when set.
Manifests use `If-None-Match: *` (create-only) and tags `If-Match: <etag>` (compare-and-swap),
so racing publishers cannot both win. Errors name the registry and never echo a secret.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from taskpack.base.fs import check_regular
from taskpack.base.objects import HashedSource, Progress, Sink
from taskpack.errors import TaskpackError, require
from taskpack.registry.location import Location
from taskpack.registry.store import (
    PAGE_BYTES,
    READ_BYTES,
    PreconditionFailed,
    Store,
    bounded,
    network_timeout,
)

_AUTH_CODES = {
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "AccessDenied",
    "InvalidToken",
    "ExpiredToken",
    "403",
}
_CONFLICT_CODES = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409"}
_MISSING_CODES = {"NoSuchKey", "404", "NotFound"}
_STREAM_ATTEMPTS = 3
_MULTIPART = 8 << 20  # boto3's own multipart threshold and part size: below it, one request
_MAX_PARTS = 10_000  # S3's limit of parts in one upload: a larger object takes larger parts
_PARTS_AT_ONCE = 4  # parts in flight, and in memory: 8 send no faster on loopback


class S3Store(Store):
    def __init__(self, where: Location) -> None:
        require("boto3", "s3")
        import boto3
        import botocore.session

        self.bucket = where.bucket
        self.prefix = where.prefix
        self.url = where.url
        # A session of its own: boto3's default session caches the credentials it first found.
        # Its data files (the S3 service model, endpoints) are parsed once per process.
        session = botocore.session.Session()
        session.register_component("data_loader", _data_loader())
        self._session = boto3.session.Session(botocore_session=session)
        self.client: Any = self._client()

    def _client(self, **s3: Any) -> Any:
        from botocore.config import Config

        return self._session.client(
            "s3",
            config=Config(
                s3={"addressing_style": "path", **s3},
                retries={"mode": "standard", "max_attempts": 5},
                connect_timeout=network_timeout(),
                read_timeout=network_timeout(),
            ),
        )

    @functools.cached_property
    def _sender(self) -> Any:
        """The client that uploads objects. Their bodies go unsigned, covered by the CRC32
        checksum S3 verifies, as boto3 sends every upload over HTTPS; over plain HTTP that
        spares botocore's SHA-256 of each part (and the server's). An object is its own
        signature: its key is the SHA-256 of its bytes, checked here before the upload
        completes and by every reader; manifests and tags stay signed."""
        return self._client(payload_signing_enabled=False)

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def _fail(self, err: Exception, key: str) -> TaskpackError:
        if isinstance(err, TaskpackError):  # `bounded` gave up on the call
            return err
        code = _code(err)
        where = f"{self.url}/{key}"
        if code in _AUTH_CODES:
            return TaskpackError(
                f"registry {self.url}: authentication failed ({code}); check the AWS credentials"
            )
        if code in ("EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError"):
            return TaskpackError(f"registry {self.url}: cannot connect ({code})")
        if code in ("NoCredentialsError", "PartialCredentialsError"):
            return TaskpackError(
                f"registry {self.url}: no AWS credentials found; set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), and AWS_ENDPOINT_URL_S3 for a server "
                "that is not AWS"
            )
        if code == "NoSuchBucket":
            return TaskpackError(f"registry {self.url}: bucket {self.bucket!r} does not exist")
        return TaskpackError(f"{where}: S3 error {code}")

    def read(self, key: str) -> tuple[bytes, str] | None:
        def get(tick: Callable[[int], None]) -> tuple[bytes, str]:
            response = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
            body = b"".join(_ticked(response["Body"].iter_chunks(1 << 16), tick))
            return body, response["ETag"]

        try:
            return bounded(f"{self.url}/{key}", get)
        except Exception as e:  # noqa: BLE001 - botocore raises many classes; sorted by code
            if _code(e) in _MISSING_CODES:
                return None
            raise self._fail(e, key) from None

    def write(
        self, key: str, data: bytes, *, create_only: bool = False, if_match: str | None = None
    ) -> None:
        extra: dict[str, str] = {}
        if create_only:
            extra["IfNoneMatch"] = "*"
        if if_match is not None:
            extra["IfMatch"] = if_match

        def put(tick: Callable[[int], None]) -> None:
            tick(len(data))  # its time, ahead: the bytes go out before any answer comes
            self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data, **extra)

        try:
            bounded(f"{self.url}/{key}", put)
        except Exception as e:  # noqa: BLE001
            if _code(e) in _CONFLICT_CODES:
                raise PreconditionFailed(f"{self.url}/{key}: precondition failed") from None
            raise self._fail(e, key) from None

    def sha256(self, key: str) -> str | None:
        import hashlib

        digest = hashlib.sha256()

        def hashed(tick: Callable[[int], None]) -> None:
            body = self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"]
            for chunk in _ticked(body.iter_chunks(READ_BYTES), tick):
                digest.update(chunk)

        try:
            bounded(f"{self.url}/{key}", hashed)
        except Exception as e:  # noqa: BLE001
            if _code(e) in _MISSING_CODES:
                return None
            raise self._fail(e, key) from None
        return digest.hexdigest()

    def list(self, prefix: str) -> list[str]:
        full = self._key(prefix).rstrip("/") + "/"
        keys: list[str] = []

        def listed(tick: Callable[[int], None]) -> None:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=full
            )
            for page in pages:
                tick(PAGE_BYTES)  # each page is a request of its own
                keys.extend(obj["Key"][len(full) :] for obj in page.get("Contents", []))

        try:
            bounded(f"{self.url}/{prefix}", listed)
        except Exception as e:  # noqa: BLE001
            raise self._fail(e, prefix) from None
        return sorted(keys)

    def upload(self, key: str, path: Path, sha: str, progress: Progress | None = None) -> None:
        """A file under boto3's multipart threshold is read, hashed and sent in one request; a
        larger one goes up in parts (`_in_parts`). Either way S3 shows the object only once its
        bytes hash to `sha`."""
        check_regular(path)
        size = path.stat().st_size
        full = self._key(key)

        def up(tick: Callable[[int], None]) -> None:
            tick(size)  # the bytes are counted as they are sent, not as they are answered
            with path.open("rb") as f:
                source = HashedSource(f)
                if size >= _MULTIPART:
                    self._in_parts(full, source, size, lambda: source.require(sha, path), progress)
                    return
                data = source.read()
                source.require(sha, path)
                self._sender.put_object(Bucket=self.bucket, Key=full, Body=data)
            if progress:
                progress(size)

        try:
            bounded(f"{self.url}/{key}", up)
        except Exception as e:  # noqa: BLE001
            raise self._fail(getattr(e, "last_exception", None) or e, key) from None

    def _in_parts(
        self,
        key: str,
        source: HashedSource,
        size: int,
        check: Callable[[], None],
        progress: Progress | None,
    ) -> None:
        """A multipart upload: parts read in order here, each once (and so hashed once), and
        sent from bytearrays on `_PARTS_AT_ONCE` threads; completed only once `check` holds,
        aborted on any failure. boto3's `upload_fileobj` sends each part as a file, a block at
        a time through botocore's checksum reader with a callback per block: 0.29 CPU-s for
        126 MB against 0.21 here, SHA-256 included, CPU that a publish shares with its row
        check and, on one machine, with the server (docs/internals.md)."""
        from concurrent.futures import Future, ThreadPoolExecutor

        where = {"Bucket": self.bucket, "Key": key}
        upload = {**where, "UploadId": self._sender.create_multipart_upload(**where)["UploadId"]}
        part_size = max(_MULTIPART, -(-size // _MAX_PARTS))

        def send(number: int, data: bytearray) -> dict[str, Any]:
            answer = self._sender.upload_part(**upload, PartNumber=number, Body=data)
            if progress:
                progress(len(data))
            return {"PartNumber": number, "ETag": answer["ETag"]}

        try:
            # No part waits in a queue: one is read only once the part _PARTS_AT_ONCE before
            # it is sent, so every part held is being sent, and leaving the pool (on success or
            # failure) waits for at most _PARTS_AT_ONCE requests before the abort.
            with ThreadPoolExecutor(_PARTS_AT_ONCE, thread_name_prefix="taskpack-part") as pool:
                sent: list[Future[dict[str, Any]]] = []
                for number in range(1, -(-size // part_size) + 1):
                    if len(sent) >= _PARTS_AT_ONCE:
                        sent[-_PARTS_AT_ONCE].result()
                    part = bytearray(part_size)
                    del part[source.readinto(part) :]
                    sent.append(pool.submit(send, number, part))
                parts = [f.result() for f in sent]
            check()
            self._sender.complete_multipart_upload(**upload, MultipartUpload={"Parts": parts})
        except BaseException:
            with contextlib.suppress(Exception):  # the upload's own error is the one to tell
                self._sender.abort_multipart_upload(**upload)
            raise

    def tail(self, key: str, size: int) -> bytes | None:
        def get(tick: Callable[[int], None]) -> bytes:
            tick(size)
            response = self.client.get_object(
                Bucket=self.bucket, Key=self._key(key), Range=f"bytes=-{size}"
            )
            data = bytes(response["Body"].read(size + 1))
            if len(data) > size:
                raise TaskpackError(f"{self.url}/{key}: more than the {size} bytes asked for")
            return data

        try:
            return bounded(f"{self.url}/{key}", get)
        except Exception as e:  # noqa: BLE001
            raise self._fail(e, key) from None

    def download(self, key: str, out: Sink, progress: Progress | None = None) -> None:
        """One streamed GET, written as it arrives (so hashed once, by `out`), where boto3's
        `download_file` fetches ranges on threads into a file that must then be read again to
        be hashed. A stream broken part way is fetched again from the start, a few times."""
        from botocore.exceptions import BotoCoreError

        def down(tick: Callable[[int], None]) -> None:
            for attempt in range(_STREAM_ATTEMPTS):
                out.seek(0)
                out.truncate()
                try:
                    body = self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"]
                    for chunk in _ticked(body.iter_chunks(READ_BYTES), tick):
                        out.write(chunk)
                        if progress:
                            progress(len(chunk))
                    return
                except (BotoCoreError, OSError):
                    if attempt + 1 == _STREAM_ATTEMPTS:
                        raise

        try:
            bounded(f"{self.url}/{key}", down)
        except Exception as e:  # noqa: BLE001
            raise self._fail(e, key) from None


@functools.cache
def _data_loader() -> Any:
    import botocore.loaders

    return botocore.loaders.create_loader()


def _ticked(chunks: Iterator[bytes], tick: Callable[[int], None]) -> Iterator[bytes]:
    for chunk in chunks:
        tick(len(chunk))
        yield chunk


def _code(err: Exception) -> str:
    response = getattr(err, "response", None)
    if isinstance(response, dict):
        error = response.get("Error", {})
        return str(error.get("Code") or response.get("ResponseMetadata", {}).get("HTTPStatusCode"))
    return type(err).__name__
