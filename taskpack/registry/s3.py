"""An S3 bucket (or any S3-compatible server) as a registry store, through boto3.

Credentials come from boto3's standard chain; the endpoint from `AWS_ENDPOINT_URL_S3` when set.
Manifests use `If-None-Match: *` (create-only) and tags `If-Match: <etag>` (compare-and-swap),
so racing publishers cannot both win. Errors name the registry and never echo a secret.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taskpack.errors import TaskpackError, require
from taskpack.objects import Progress
from taskpack.registry.location import Location
from taskpack.registry.store import PreconditionFailed, Store, network_timeout

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


class S3Store(Store):
    def __init__(self, where: Location) -> None:
        require("boto3", "s3")
        import boto3
        from botocore.config import Config

        self.bucket = where.bucket
        self.prefix = where.prefix
        self.url = where.url
        # A session of its own: boto3's default session caches the credentials it first found.
        self.client: Any = boto3.session.Session().client(
            "s3",
            config=Config(
                s3={"addressing_style": "path"},
                retries={"mode": "standard", "max_attempts": 5},
                connect_timeout=network_timeout(),
                read_timeout=network_timeout(),
            ),
        )

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def _fail(self, err: Exception, key: str) -> TaskpackError:
        code = _code(err)
        where = f"{self.url}/{key}"
        if code in _AUTH_CODES:
            return TaskpackError(
                f"registry {self.url}: authentication failed ({code}); check the AWS credentials"
            )
        if code in ("EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError"):
            return TaskpackError(f"registry {self.url}: cannot connect ({code})")
        if code == "NoSuchBucket":
            return TaskpackError(f"registry {self.url}: bucket {self.bucket!r} does not exist")
        return TaskpackError(f"{where}: S3 error {code}")

    def read(self, key: str) -> tuple[bytes, str] | None:
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
        except Exception as e:  # noqa: BLE001 - botocore raises many classes; sorted by code
            if _code(e) in _MISSING_CODES:
                return None
            raise self._fail(e, key) from None
        return response["Body"].read(), response["ETag"]

    def write(
        self, key: str, data: bytes, *, create_only: bool = False, if_match: str | None = None
    ) -> None:
        extra: dict[str, str] = {}
        if create_only:
            extra["IfNoneMatch"] = "*"
        if if_match is not None:
            extra["IfMatch"] = if_match
        try:
            self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data, **extra)
        except Exception as e:  # noqa: BLE001
            if _code(e) in _CONFLICT_CODES:
                raise PreconditionFailed(f"{self.url}/{key}: precondition failed") from None
            raise self._fail(e, key) from None

    def sha256(self, key: str) -> str | None:
        import hashlib

        digest = hashlib.sha256()
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self._key(key))["Body"]
            for chunk in body.iter_chunks(1 << 20):
                digest.update(chunk)
        except Exception as e:  # noqa: BLE001
            if _code(e) in _MISSING_CODES:
                return None
            raise self._fail(e, key) from None
        return digest.hexdigest()

    def list(self, prefix: str) -> list[str]:
        full = self._key(prefix).rstrip("/") + "/"
        keys: list[str] = []
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=full
            ):
                keys.extend(obj["Key"][len(full) :] for obj in page.get("Contents", []))
        except Exception as e:  # noqa: BLE001
            raise self._fail(e, prefix) from None
        return sorted(keys)

    def upload(self, key: str, path: Path, progress: Progress | None = None) -> None:
        try:
            self.client.upload_file(str(path), self.bucket, self._key(key), Callback=progress)
        except Exception as e:  # noqa: BLE001
            raise self._fail(getattr(e, "last_exception", None) or e, key) from None

    def download(self, key: str, dest: Path, progress: Progress | None = None) -> None:
        try:
            self.client.download_file(self.bucket, self._key(key), str(dest), Callback=progress)
        except Exception as e:  # noqa: BLE001
            raise self._fail(e, key) from None


def _code(err: Exception) -> str:
    response = getattr(err, "response", None)
    if isinstance(response, dict):
        error = response.get("Error", {})
        return str(error.get("Code") or response.get("ResponseMetadata", {}).get("HTTPStatusCode"))
    return type(err).__name__
