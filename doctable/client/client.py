"""DocClient: documents with blobs, written so that no item ever lists a missing blob and two writers never lose
each other's work.

A write uploads each blob under a fresh key in the record's prefix, then writes the item with its manifest and
the next version, conditionally (a new document: none exists; a replace or delete: the version is the one
expected). A write that fails after its uploads deletes them again. Old blobs are never deleted here: the stack's
consumer deletes the keys an item dropped when it sees the MODIFY or REMOVE.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import boto3
from boto3.dynamodb.types import TypeSerializer
from botocore.config import Config

from doctable.client import rules
from doctable.client.blobs import BlobSource, BlobStore, Source, source_of
from doctable.client.deployment import Deployment
from doctable.client.document import (
    BlobEntry,
    BlobReader,
    Document,
    document_of,
    manifest_attribute,
    manifest_of,
    version_of,
)
from doctable.client.errors import (
    CONFIGURE,
    DELETE_ITEM,
    GET_ITEM,
    PUT_ITEM,
    READ_BLOB,
    READ_VERSION,
    UPDATE_ITEM,
    VALIDATE,
    AwsError,
    ConfigurationError,
    ConflictError,
    DocTableError,
    NotFoundError,
    ValidationError,
)
from doctable.client.indexes import IndexKeys, IndexQueries, KnownIndexes, index_keys_of
from doctable.client.retry import RetryPolicy, applied_maybe

CONDITION_FAILED = "ConditionalCheckFailedException"
_SERIALIZER = TypeSerializer()


@dataclass(frozen=True)
class _Write:
    """A validated put or replace: nothing of it has reached AWS yet."""

    pk: str
    sk: str
    attributes: dict[str, Any]  # DynamoDB's JSON
    uploads: list[tuple[Source, str]]  # each blob's source and its fresh key
    expires_at: int | None


class _OutcomeUnknown(Exception):
    """The item write failed without an answer and the item could not be read: the uploads must stay."""

    def __init__(self, error: AwsError) -> None:
        super().__init__(str(error))
        self.error = error


class DocClient(IndexQueries):
    """The application's client of one deployed doctable environment.

    Configure it from the stack (``DocClient.from_stack(env=..., table_base=...)``) or explicitly
    (``DocClient(table_name, blob_bucket, blob_root=...)``). AWS access comes from ``session`` (a
    boto3.session.Session; default: a new one, which reads the usual environment, AWS_ENDPOINT_URL included), or
    from ready ``dynamodb`` and ``s3`` clients. Thread-safe.
    """

    def __init__(
        self,
        table_name: str,
        blob_bucket: str | None = None,
        *,
        blob_root: str = rules.DEFAULT_BLOB_ROOT,
        session: Any = None,
        dynamodb: Any = None,
        s3: Any = None,
        endpoint_url: str | None = None,
        region_name: str | None = None,
        verify: bool | str | None = None,
        retry: RetryPolicy | None = None,
        upload_concurrency: int = 4,
        bucket_owner: str | None = None,
        indexes: Mapping[str, Any] | tuple[IndexKeys, ...] = (),
    ) -> None:
        if not isinstance(table_name, str) or not table_name:
            raise ConfigurationError("table_name must be a non-empty string", step=CONFIGURE)
        if upload_concurrency < 1:
            raise ConfigurationError("upload_concurrency must be at least 1", step=CONFIGURE)
        # The indexes query_index knows without DescribeTable: index name -> its declaration as the settings file
        # writes it ({"partition": ["tenant:S", "region:S"], "sort": "year:N"}), or the deployment's.
        known = indexes if isinstance(indexes, tuple) else index_keys_of(indexes, where="indexes=")
        self.deployment = Deployment(table_name, blob_bucket or None, blob_root, bucket_owner, known)
        self._indexes = KnownIndexes(table_name, {i.name: i for i in known})
        self.retry = retry or RetryPolicy()
        self.upload_concurrency = upload_concurrency
        self._session = session
        self._options = {"endpoint_url": endpoint_url, "region_name": region_name, "verify": verify}
        self._clients: dict[str, Any] = {
            k: v for k, v in (("dynamodb", dynamodb), ("s3", s3)) if v is not None
        }
        self._lock = threading.Lock()
        bucket = self.deployment.blob_bucket
        self._store = None if bucket is None else BlobStore(self._client, bucket, self.retry, bucket_owner)

    @classmethod
    def from_deployment(cls, deployment: Deployment, **options: Any) -> DocClient:
        """The client of ``deployment``; its bucket must be the stack's account's unless ``bucket_owner`` says."""
        options.setdefault("bucket_owner", deployment.bucket_owner)
        options.setdefault("indexes", deployment.indexes)
        return cls(deployment.table_name, deployment.blob_bucket, blob_root=deployment.blob_root, **options)

    @classmethod
    def from_stack(
        cls,
        env: str | None = None,
        *,
        table_base: str = rules.DEFAULT_TABLE_BASE,
        stack_name: str | None = None,
        blob_root: str | None = None,
        session: Any = None,
        endpoint_url: str | None = None,
        region_name: str | None = None,
        verify: bool | str | None = None,
        retry: RetryPolicy | None = None,
        **options: Any,
    ) -> DocClient:
        """The client of the environment ``env``: its stack ``doctable-<table_base>-<env>`` (or ``stack_name``)
        read with DescribeStacks for the table, the blob bucket and the blob root it was deployed with."""
        if stack_name is None:
            if not env:
                raise ConfigurationError("give env (and table_base) or stack_name", step=CONFIGURE)
            stack_name = rules.stack_name(env, table_base)
        session = session or boto3.session.Session()
        connection = {"endpoint_url": endpoint_url, "region_name": region_name, "verify": verify}
        cloudformation = session.client("cloudformation", config=_config(1), **connection)
        deployment = Deployment.from_stack(cloudformation, stack_name, blob_root=blob_root, retry=retry)
        return cls.from_deployment(deployment, session=session, retry=retry, **connection, **options)

    def __repr__(self) -> str:
        d = self.deployment
        return f"DocClient(table={d.table_name!r}, bucket={d.blob_bucket!r}, blob_root={d.blob_root!r})"

    # ---- the operations ----
    def put(
        self,
        pk: str,
        sk: str,
        attributes: Mapping[str, Any] | None = None,
        blobs: Mapping[str, BlobSource] | None = None,
        *,
        expires_at: int | datetime | None = None,
    ) -> Document:
        """Create the document (ConflictError if it exists: use replace) with its blobs, at version 1."""
        return self._write(self._validated(pk, sk, attributes, blobs, expires_at), expected=None)

    def replace(
        self,
        pk: str,
        sk: str,
        attributes: Mapping[str, Any] | None = None,
        blobs: Mapping[str, BlobSource] | None = None,
        *,
        expected_version: int | None = None,
        expires_at: int | datetime | None = None,
    ) -> Document:
        """Replace the whole document (attributes, blobs, expiry) if its version is ``expected_version``
        (default: the version read now; pass the one you read to protect a read-modify-write). Every blob gets
        a new key; the consumer deletes the old ones. ConflictError if another writer came first."""
        write = self._validated(pk, sk, attributes, blobs, expires_at)
        expected = rules.check_version(pk, sk, expected_version)
        if expected is None:
            expected = self._current_version(pk, sk)
        return self._write(write, expected=expected)

    def delete(self, pk: str, sk: str, *, expected_version: int | None = None) -> None:
        """Delete the document if its version is ``expected_version`` (default: the version read now); the
        consumer deletes its blobs."""
        rules.check_key(pk, sk)
        expected = rules.check_version(pk, sk, expected_version)
        if expected is None:
            expected = self._current_version(pk, sk)
        condition, names, values = _version_condition(expected)
        try:
            self._call(
                "delete_item",
                DELETE_ITEM,
                pk,
                sk,
                Key=_key(pk, sk),
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                **({"ExpressionAttributeValues": values} if values else {}),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except AwsError as exc:
            if exc.code == CONDITION_FAILED:
                raise self._refusal(exc, DELETE_ITEM, pk, sk, expected) from exc
            raise

    def get(self, pk: str, sk: str, *, consistent: bool = True) -> Document:
        """The document, its blobs as lazy readers (NotFoundError if it does not exist)."""
        rules.check_key(pk, sk)
        item = self._get_item(pk, sk, GET_ITEM, consistent=consistent)
        if item is None:
            raise NotFoundError("no such document", step=GET_ITEM, pk=pk, sk=sk)
        return self._document(item)

    def expire(
        self, pk: str, sk: str, at: int | datetime | None, *, expected_version: int | None = None
    ) -> int:
        """Set the document's expiresAt (epoch seconds; None removes it), which DynamoDB's TTL acts on, and
        return its new version: an expiry is a change another writer must not overwrite unknowingly."""
        rules.check_key(pk, sk)
        seconds = rules.epoch_seconds(pk, sk, at)
        expected = rules.check_version(pk, sk, expected_version)
        names = {"#pk": rules.PARTITION_KEY, "#v": rules.VERSION_ATTRIBUTE, "#ttl": rules.TTL_ATTRIBUTE}
        values: dict[str, Any] = {":zero": {"N": "0"}, ":one": {"N": "1"}}
        bump = "#v = if_not_exists(#v, :zero) + :one"
        if seconds is None:
            update = f"REMOVE #ttl SET {bump}"
        else:
            update = f"SET #ttl = :at, {bump}"
            values[":at"] = {"N": str(seconds)}
        condition = "attribute_exists(#pk)"
        if expected is not None:
            more, _, more_values = _version_condition(expected)
            condition = f"{condition} AND {more}"
            values.update(more_values)
        try:
            reply = self._call(
                "update_item",
                UPDATE_ITEM,
                pk,
                sk,
                Key=_key(pk, sk),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="UPDATED_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except AwsError as exc:
            if exc.code == CONDITION_FAILED:
                raise self._refusal(exc, UPDATE_ITEM, pk, sk, expected) from exc
            raise
        return version_of(reply.get("Attributes", {}))

    # ---- a write ----
    def _validated(self, pk: Any, sk: Any, attributes: Any, blobs: Any, expires_at: Any) -> _Write:
        rules.check_key(pk, sk)
        own = rules.check_attributes(pk, sk, attributes)
        seconds = rules.epoch_seconds(pk, sk, expires_at)
        serialized = {}
        for name, value in own.items():
            try:
                serialized[name] = _SERIALIZER.serialize(value)
            except (TypeError, ValueError) as exc:
                raise ValidationError(f"attribute {name!r}: {exc}", step=VALIDATE, pk=pk, sk=sk) from None
        uploads: list[tuple[Source, str]] = []
        if blobs:
            if not isinstance(blobs, Mapping):
                raise ValidationError(
                    f"blobs must be a mapping of name to content, got {type(blobs).__name__}",
                    step=VALIDATE,
                    pk=pk,
                    sk=sk,
                )
            if self._store is None:
                raise ValidationError(
                    f"the deployment of table {self.deployment.table_name} has no blob bucket",
                    step=VALIDATE,
                    pk=pk,
                    sk=sk,
                )
            rules.check_blob_key_parts(pk, sk)
            root = self.deployment.blob_root
            for name, value in blobs.items():
                rules.check_blob_name(pk, sk, name)
                uploads.append((source_of(pk, sk, name, value), rules.fresh_key(root, pk, sk, name)))
        return _Write(pk, sk, serialized, uploads, seconds)

    def _write(self, write: _Write, *, expected: int | None) -> Document:
        attempted: list[str] = []  # every key an upload request was sent for
        try:
            entries = self._upload(write, attempted)
            item = {
                **write.attributes,
                rules.PARTITION_KEY: {"S": write.pk},
                rules.SORT_KEY: {"S": write.sk},
                rules.VERSION_ATTRIBUTE: {"N": str((expected or 0) + 1)},
                rules.BLOBS_ATTRIBUTE: manifest_attribute(entries),
            }
            if write.expires_at is not None:
                item[rules.TTL_ATTRIBUTE] = {"N": str(write.expires_at)}
            self._put_item(write, item, expected, entries)
        except _OutcomeUnknown as unknown:
            error = unknown.error
            error.orphans = tuple(attempted)
            error.detail += "; the item may or may not have been written, so its uploads were kept"
            raise error from error.__cause__
        except DocTableError as error:
            error.orphans = tuple(self._undo(write, attempted))
            raise
        except BaseException as exc:  # an interrupt or a bug: still take the uploads back
            left = self._undo(write, attempted)
            if left:
                exc.add_note(f"doctable: uploaded blobs left behind (orphans): {', '.join(left)}")
            raise
        return self._document(item)

    def _upload(self, write: _Write, attempted: list[str]) -> list[BlobEntry]:
        if not write.uploads:
            return []
        assert self._store is not None
        store = self._store
        if len(write.uploads) == 1 or self.upload_concurrency == 1:
            return [store.upload(write.pk, write.sk, s, key, attempted) for s, key in write.uploads]
        self._client("s3")  # built once, before the threads share it
        workers = min(self.upload_concurrency, len(write.uploads))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="doctable-upload") as pool:
            futures = [
                pool.submit(store.upload, write.pk, write.sk, s, key, attempted) for s, key in write.uploads
            ]
            done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            for future in pending:
                future.cancel()  # not started yet: never sent
        # Leaving the pool waited for the uploads in flight; report the first failure in the caller's order.
        for future in futures:
            if not future.cancelled() and future.exception() is not None:
                raise future.exception()  # type: ignore[misc]
        return [future.result() for future in futures]

    def _undo(self, write: _Write, attempted: list[str]) -> list[str]:
        if not attempted or self._store is None:
            return []
        return self._store.delete(write.pk, write.sk, list(attempted))

    def _put_item(
        self, write: _Write, item: dict[str, Any], expected: int | None, entries: list[BlobEntry]
    ) -> None:
        pk, sk = write.pk, write.sk
        values: dict[str, Any]
        if expected is None:
            condition, names, values = "attribute_not_exists(#pk)", {"#pk": rules.PARTITION_KEY}, {}
        else:
            condition, names, values = _version_condition(expected)
        try:
            self._call(
                "put_item",
                PUT_ITEM,
                pk,
                sk,
                Item=item,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                **({"ExpressionAttributeValues": values} if values else {}),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except AwsError as exc:
            ours = {entry.key for entry in entries}
            if exc.code == CONDITION_FAILED:
                current = exc.response.get("Item")
                if current is None:
                    try:
                        current = self._get_item(pk, sk, PUT_ITEM)
                    except AwsError:
                        if ours:  # our own earlier attempt may be the item that refused this one
                            raise _OutcomeUnknown(exc) from None
                        raise
                if current is not None and ours & _keys_of(current, pk, sk):
                    return  # an earlier attempt of ours was written and its answer lost
                raise self._refusal(
                    exc, PUT_ITEM, pk, sk, expected, current, creating=expected is None
                ) from exc
            if exc.__cause__ is not None and applied_maybe(exc.__cause__) and ours:
                try:  # no definite answer: was it written?
                    current = self._get_item(pk, sk, PUT_ITEM)
                except AwsError:
                    raise _OutcomeUnknown(exc) from None
                if current is not None and ours & _keys_of(current, pk, sk):
                    return
            raise

    def _refusal(
        self,
        exc: AwsError,
        step: str,
        pk: str,
        sk: str,
        expected: int | None,
        current: Mapping[str, Any] | None = None,
        *,
        creating: bool = False,
    ) -> DocTableError:
        """What a failed condition means: the document is missing, exists already, or has another version."""
        if current is None:
            current = exc.response.get("Item") or self._get_item(pk, sk, step)
        if current is None:
            if creating:  # created, then deleted, between the check and the read
                return ConflictError(
                    "another writer changed the document meanwhile",
                    step=step, pk=pk, sk=sk, expected_version=None, current_version=None,
                )  # fmt: skip
            return NotFoundError("no such document (deleted by another writer?)", step=step, pk=pk, sk=sk)
        found = version_of(current)
        if creating:
            detail = f"the document exists already (version {found}): replace it instead"
        elif expected is None:
            detail = f"another writer changed the document (now version {found})"
        else:
            detail = f"version {expected} expected, {found} found: another writer changed the document"
        return ConflictError(
            detail, step=step, pk=pk, sk=sk, expected_version=expected, current_version=found
        )

    # ---- reads ----
    def _current_version(self, pk: str, sk: str) -> int:
        item = self._get_item(pk, sk, READ_VERSION)
        if item is None:
            raise NotFoundError("no such document", step=READ_VERSION, pk=pk, sk=sk)
        return version_of(item)

    def _get_item(self, pk: str, sk: str, step: str, *, consistent: bool = True) -> dict[str, Any] | None:
        reply = self._call("get_item", step, pk, sk, Key=_key(pk, sk), ConsistentRead=consistent)
        item = reply.get("Item")
        return dict(item) if item else None

    def _document(self, item: Mapping[str, Any]) -> Document:
        return document_of(item, blob_root=self.deployment.blob_root, fetch=self._fetch)

    def _fetch(self, reader: BlobReader) -> Any:
        if self._store is None:
            raise ConfigurationError(
                f"the deployment of table {self.deployment.table_name} has no blob bucket", step=READ_BLOB
            )
        return self._store.fetch(reader)

    # ---- AWS ----
    def _call(self, operation: str, step: str, pk: str | None, sk: str | None, **request: Any) -> Any:
        client = self._client("dynamodb")
        method = getattr(client, operation)
        return self.retry.call(
            lambda: method(TableName=self.deployment.table_name, **request), step=step, pk=pk, sk=sk
        )

    def _client(self, service: str) -> Any:
        with self._lock:
            if service not in self._clients:
                if self._session is None:
                    self._session = boto3.session.Session()
                config = _config(self.upload_concurrency)
                self._clients[service] = self._session.client(service, config=config, **self._options)
            return self._clients[service]


def _config(concurrency: int) -> Config:
    # botocore's retries off: RetryPolicy retries, knowing which failures may have been applied.
    return Config(
        retries={"mode": "standard", "total_max_attempts": 1},
        max_pool_connections=max(10, concurrency),
    )


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {rules.PARTITION_KEY: {"S": pk}, rules.SORT_KEY: {"S": sk}}


def _version_condition(expected: int) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The condition that the item exists at version ``expected`` (0: an item written without a version)."""
    names = {"#pk": rules.PARTITION_KEY, "#v": rules.VERSION_ATTRIBUTE}
    if expected == 0:
        return "attribute_exists(#pk) AND attribute_not_exists(#v)", names, {}
    return "#v = :expected", {"#v": rules.VERSION_ATTRIBUTE}, {":expected": {"N": str(expected)}}


def _keys_of(item: Mapping[str, Any], pk: str, sk: str) -> set[str]:
    try:
        return {entry.key for entry in manifest_of(item, pk=pk, sk=sk)}
    except DocTableError:
        return set()
