"""doctable.client against the deployed consumer on the local AWS: the application's half of the data contract.

A stack with the stream and the built-in consumer (blob_root docs/, so the client must read the root from the
stack), then: put, replace (the consumer deletes the dropped blobs from the MODIFY), delete (from the REMOVE),
expire, two writers replacing one document at once, an upload failing halfway, and examples/app.py run as a user
would run it against `make local`.
"""

from __future__ import annotations

import io
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError

from contract import names
from doctable.client import ConflictError, DocClient, RetryPolicy, UploadError
from tests.support import localaws as lt

pytestmark = pytest.mark.integration

ENV, TABLE_BASE, ROOT = "dev", "itclient", "docs/"
KNOBS = {
    "env": ENV,
    "table_base": TABLE_BASE,
    "stream": "new-and-old",
    "consumer": "builtin",
    "blob_root": ROOT,
    "ttl": "on",
}
CONSUMER_DEADLINE = 120.0  # seconds for the consumer to act on a change


@pytest.fixture(scope="module")
def stack(deploy: Callable[..., lt.Deployed]) -> lt.Deployed:
    return deploy(KNOBS)


@pytest.fixture
def connect(local_aws: lt.LocalAWS, stack: lt.Deployed) -> Callable[..., DocClient]:
    """A new client of the stack, configured from its outputs as an application would (DescribeStacks)."""

    def _connect(**options: Any) -> DocClient:
        session = boto3.session.Session(
            aws_access_key_id=lt.api.ACCESS_KEY_ID,
            aws_secret_access_key=lt.api.SECRET_ACCESS_KEY,
            region_name=lt.REGION,
        )
        return DocClient.from_stack(
            ENV,
            table_base=TABLE_BASE,
            session=session,
            endpoint_url=local_aws.info.url,
            verify=local_aws.ca_bundle,
            **options,
        )

    return _connect


class Bucket:
    def __init__(self, local_aws: lt.LocalAWS, stack: lt.Deployed) -> None:
        self.s3 = local_aws.client("s3")
        self.name = stack.outputs[names.OUT_BLOB_BUCKET]

    def keys(self, pk: str, sk: str = "doc") -> set[str]:
        listing = self.s3.list_objects_v2(Bucket=self.name, Prefix=f"{ROOT}{pk}/{sk}/")
        return {o["Key"] for o in listing.get("Contents", [])}

    def wait_for_keys(self, pk: str, expected: set[str], what: str) -> None:
        lt.wait_for(lambda: self.keys(pk) == expected, timeout=CONSUMER_DEADLINE, interval=0.2, what=what)


@pytest.fixture
def bucket(local_aws: lt.LocalAWS, stack: lt.Deployed) -> Bucket:
    return Bucket(local_aws, stack)


def _raw_item(local_aws: lt.LocalAWS, stack: lt.Deployed, pk: str, sk: str = "doc") -> dict[str, Any] | None:
    ddb = local_aws.client("dynamodb")
    key = {"pk": {"S": pk}, "sk": {"S": sk}}
    return ddb.get_item(TableName=stack.outputs[names.OUT_TABLE_NAME], Key=key, ConsistentRead=True).get(
        "Item"
    )


def test_the_client_reads_its_deployment_from_the_stack(
    connect: Callable[..., DocClient], stack: lt.Deployed
) -> None:
    docs = connect()
    assert docs.deployment.table_name == stack.outputs[names.OUT_TABLE_NAME]
    assert docs.deployment.blob_bucket == stack.outputs[names.OUT_BLOB_BUCKET]
    assert docs.deployment.blob_root == ROOT  # from the stack's Knobs output


def test_replace_and_delete_leave_old_blobs_to_the_consumer(
    connect: Callable[..., DocClient], bucket: Bucket, local_aws: lt.LocalAWS, stack: lt.Deployed
) -> None:
    docs = connect()
    owners: list[str | None] = []  # what each of the client's S3 requests names as the bucket's owner
    docs._client("s3").meta.events.register(
        "before-call.s3",
        lambda params, **_: owners.append(params["headers"].get("x-amz-expected-bucket-owner")),
    )
    # GIVEN a document put with two blobs
    first = docs.put("lifecycle", "doc", {"title": "draft"}, blobs={"body": b"draft", "cover": b"cover"})
    raw = _raw_item(local_aws, stack, "lifecycle")
    assert raw is not None and all(set(e["M"]) == {"key", "etag", "size"} for e in raw["blobs"]["L"])
    assert bucket.keys("lifecycle") == {e.key for e in first.manifest}

    # WHEN it is replaced by a version with other blobs
    second = docs.replace(
        "lifecycle",
        "doc",
        {"title": "final"},
        blobs={"body": b"final", "appendix": b"notes"},
        expected_version=1,
    )

    # THEN the consumer deletes the blobs the MODIFY dropped, and the new ones are read back by their ETags
    bucket.wait_for_keys(
        "lifecycle", {e.key for e in second.manifest}, "the consumer to delete the replaced blobs"
    )
    doc = docs.get("lifecycle", "doc")
    assert doc.version == 2 and doc.attributes == {"title": "final"}
    assert {name: reader.read() for name, reader in doc.blobs.items()} == {
        "body": b"final",
        "appendix": b"notes",
    }

    # WHEN it is deleted  THEN the consumer deletes its blobs from the REMOVE
    docs.delete("lifecycle", "doc", expected_version=2)
    assert _raw_item(local_aws, stack, "lifecycle") is None
    bucket.wait_for_keys("lifecycle", set(), "the consumer to delete the deleted document's blobs")
    # AND every request of the client named the stack's account as the bucket's owner, which the local AWS served
    # (the consumer's own requests name its function's account: tests/unit/test_consumer_handler.py)
    assert docs.deployment.bucket_owner == lt.ACCOUNT
    assert len(owners) >= 6 and set(owners) == {lt.ACCOUNT}


def test_expire_sets_expires_at_and_the_consumer_keeps_the_blobs(
    connect: Callable[..., DocClient], bucket: Bucket, local_aws: lt.LocalAWS, stack: lt.Deployed
) -> None:
    docs = connect()
    written = docs.put("expiring", "doc", blobs={"body": b"keep me"})
    at = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)

    assert docs.expire("expiring", "doc", at) == 2

    raw = _raw_item(local_aws, stack, "expiring")
    assert raw is not None and raw["expiresAt"] == {"N": str(int(at.timestamp()))}
    # the MODIFY lists the same blobs: once the consumer has seen it, they are all still there
    lt.polled_past(local_aws, stack.outputs[names.OUT_MAPPING_UUID], passes=3)
    assert bucket.keys("expiring") == {e.key for e in written.manifest}
    assert docs.get("expiring", "doc").blobs["body"].read() == b"keep me"


def test_two_writers_replacing_at_once_one_conflicts_and_nothing_is_lost(
    connect: Callable[..., DocClient], bucket: Bucket
) -> None:
    # GIVEN a document both writers have read at version 1
    connect().put("contested", "doc", {"writers": []}, blobs={"body": b"original"})
    writers = {"alice": connect(), "bob": connect()}
    both_read = threading.Barrier(len(writers))
    conflicts: list[ConflictError] = []
    results: dict[str, int] = {}

    def write(name: str, docs: DocClient) -> None:
        # read-modify-write, until it lands on top of whatever the other wrote
        barrier_passed = False
        while True:
            doc = docs.get("contested", "doc")
            if not barrier_passed:
                both_read.wait(timeout=30)
                barrier_passed = True
            writers_so_far = [*doc.attributes["writers"], name]
            try:
                written = docs.replace(
                    "contested",
                    "doc",
                    {"writers": writers_so_far},
                    blobs={"body": f"by {name}".encode()},
                    expected_version=doc.version,
                )
            except ConflictError as conflict:
                conflicts.append(conflict)
                continue
            results[name] = written.version
            return

    # WHEN both replace it at once, each expecting the version it read
    threads = [threading.Thread(target=write, args=item) for item in writers.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    # THEN exactly one was refused, naming the document and the versions, and its retry landed on the other's
    assert len(conflicts) == 1
    assert (conflicts[0].pk, conflicts[0].sk) == ("contested", "doc")
    assert (conflicts[0].expected_version, conflicts[0].current_version) == (1, 2)
    assert sorted(results.values()) == [2, 3]
    final = writers["alice"].get("contested", "doc")
    assert final.version == 3 and sorted(final.attributes["writers"]) == [
        "alice",
        "bob",
    ]  # nobody's work lost
    last = max(results, key=results.__getitem__)
    assert final.blobs["body"].read() == f"by {last}".encode()
    # AND once the consumer has seen both MODIFYs, only the final blob is left (the refused upload was taken back)
    bucket.wait_for_keys(
        "contested", {final.blobs["body"].key}, "the consumer to delete the superseded blobs"
    )


class _BrokenStream(io.RawIOBase):
    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        raise OSError("the source went away")


def _lose_uploads_after(docs: DocClient, passes: int) -> None:
    """Every PutObject after the first ``passes`` never reaches S3 (the connection fails)."""
    sent = {"n": 0}

    def before_send(**_: Any) -> None:
        sent["n"] += 1
        if sent["n"] > passes:
            raise EndpointConnectionError(endpoint_url="https://s3 (connection lost)")

    docs._client("s3").meta.events.register("before-send.s3.PutObject", before_send)


@pytest.mark.parametrize("failure", ["source-fails", "connection-lost"])
def test_an_upload_failing_halfway_leaves_no_blob_and_no_item(
    connect: Callable[..., DocClient],
    bucket: Bucket,
    local_aws: lt.LocalAWS,
    stack: lt.Deployed,
    failure: str,
) -> None:
    # GIVEN a client whose third upload fails: its source breaks, or its connection to S3 is lost on every retry
    docs = connect(upload_concurrency=1, retry=RetryPolicy(max_attempts=3, base_delay=0.01))
    blobs: dict[str, Any] = {"a": b"A", "b": b"B", "c": b"C", "d": b"D"}
    if failure == "source-fails":
        blobs["c"] = _BrokenStream()
    else:
        _lose_uploads_after(docs, passes=2)
    pk = f"halfway-{failure}"

    # WHEN the document is put
    with pytest.raises(UploadError) as failed:
        docs.put(pk, "doc", {"n": 1}, blobs=blobs)

    # THEN the error names the blob, the uploads made were deleted, no item was written, nothing is orphaned
    assert failed.value.blob == "c" and failed.value.orphans == ()
    assert bucket.keys(pk) == set()
    assert _raw_item(local_aws, stack, pk) is None


def test_the_example_app_runs_against_the_deployment(local_aws: lt.LocalAWS, stack: lt.Deployed) -> None:
    # GIVEN the environment `doctable local env` gives a shell (the endpoint, its CA, the deployer's key)
    # WHEN examples/app.py runs against the stack
    proc = subprocess.run(
        [sys.executable, str(lt.ROOT / "examples" / "app.py"), "--env", ENV, "--table-base", TABLE_BASE, "--timeout", str(CONSUMER_DEADLINE)],
        cwd=lt.ROOT, env=local_aws.env, capture_output=True, text=True, timeout=CONSUMER_DEADLINE * 2 + 60,
    )  # fmt: skip
    # THEN it puts, replaces and deletes, and sees the consumer delete the old blobs each time
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the consumer deleted the 2 blobs the new version dropped" in proc.stdout
    assert "the consumer deleted its 2 blobs: nothing is left under docs/example-" in proc.stdout
