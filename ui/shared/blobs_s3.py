"""Saved chats' blobs in S3 (or an S3-compatible server), with S3's own conditional writes.

Why boto3 and not s3fs: s3fs needs aiobotocore, which pins an older botocore than the one installed here; the
conditional writes need only `PutObject`'s `IfMatch` (the ETag the writer read) and `IfNoneMatch="*"` (create
only), which S3 has honoured since 2024 (412 Precondition Failed, or 409 ConditionalRequestConflict while another
conditional write to the key is in progress). S3 checks the condition atomically with the write, so two replicas
cannot lose each other's update. moto's server (the tests' stand-in) checks and then writes without a lock, so it
runs behind deploy/cluster/s3_standin.py, one request at a time.
The endpoint comes from the standard AWS settings (`AWS_ENDPOINT_URL`, credentials, region).
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from ui.shared.blobs import ANY, Blob, BlobStoreError, BlobTooLarge, Expect, VersionConflict, _Any, bounded, check_key


class S3Blobs:
    def __init__(self, url: str, client: Any = None) -> None:
        parsed = urlparse(url)
        if parsed.scheme != "s3" or not parsed.netloc:
            raise BlobStoreError(f"AGENTDECK_CHAT_STORE={url!r} is not an s3://bucket/prefix URL.")
        self.url = url
        self.bucket = parsed.netloc
        self.prefix = parsed.path.strip("/")
        if client is None:
            import boto3  # type: ignore[import-untyped]

            client = boto3.client("s3")
        self.client = client
        from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]

        self._client_error = ClientError
        self._errors: tuple[type[BaseException], ...] = (ClientError, BotoCoreError)

    def _key(self, key: str) -> str:
        check_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def _fail(self, exc: BaseException, what: str) -> BlobStoreError:
        return BlobStoreError(f"The chat store {self.url} could not {what}: {exc}. Check AGENTDECK_CHAT_STORE, "
                              "AWS_ENDPOINT_URL and the credentials.")

    @staticmethod
    def _code(exc: Any) -> str:
        return str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))

    def get(self, key: str, max_bytes: int | None = None) -> Blob | None:
        try:
            reply = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
            body = reply["Body"]
            try:
                if max_bytes is not None and int(reply.get("ContentLength", 0)) > max_bytes:
                    raise BlobTooLarge(f"{key} is over the bound of {max_bytes:,} bytes")
                data = body.read() if max_bytes is None else body.read(max_bytes + 1)
            finally:
                body.close()  # the rest of a large body is dropped with the connection, not read
            return Blob(bounded(key, data, max_bytes), str(reply["ETag"]))
        except self._client_error as exc:
            if self._code(exc) in ("NoSuchKey", "404", "NotFound"):
                return None
            raise self._fail(exc, f"read {key}") from None
        except self._errors as exc:
            raise self._fail(exc, f"read {key}") from None

    def put(self, key: str, data: bytes, expect: Expect = ANY) -> str:
        extra: dict[str, str] = {}
        if expect is None:
            extra["IfNoneMatch"] = "*"
        elif not isinstance(expect, _Any):
            extra["IfMatch"] = expect
        try:
            reply = self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data, **extra)
        except self._client_error as exc:
            code = self._code(exc)
            if code in ("PreconditionFailed", "412", "ConditionalRequestConflict", "409") \
                    or ("IfMatch" in extra and code in ("NoSuchKey", "404")):  # the version's blob is gone
                raise VersionConflict(f"{key} changed since it was read (another tab or server saved it).") from None
            raise self._fail(exc, f"write {key}") from None
        except self._errors as exc:
            raise self._fail(exc, f"write {key}") from None
        return str(reply["ETag"])

    def delete(self, key: str) -> None:
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self._key(key))
        except self._errors as exc:
            raise self._fail(exc, f"delete {key}") from None

    def _list(self, prefix: str, delimiter: bool) -> tuple[list[str], list[str]]:
        base = self._key(prefix) + "/"
        keys: list[str] = []
        folders: list[str] = []
        token: dict[str, Any] = {}
        try:
            while True:
                reply = self.client.list_objects_v2(Bucket=self.bucket, Prefix=base,
                                                    **({"Delimiter": "/"} if delimiter else {}), **token)
                keys += [item["Key"][len(base):] for item in reply.get("Contents", [])]
                folders += [item["Prefix"][len(base):].rstrip("/") for item in reply.get("CommonPrefixes", [])]
                if not reply.get("IsTruncated"):
                    return keys, folders
                token = {"ContinuationToken": reply["NextContinuationToken"]}
        except self._errors as exc:
            raise self._fail(exc, f"list {prefix}") from None

    def children(self, prefix: str) -> list[str]:
        keys, folders = self._list(prefix, delimiter=True)
        return sorted(set(keys) | set(folders))

    def delete_tree(self, prefix: str) -> None:
        keys, _ = self._list(prefix, delimiter=False)
        for name in keys:
            self.delete(f"{prefix}/{name}")
