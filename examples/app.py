"""A small application on doctable, with its client alone: put a document with two blobs, replace it, delete it,
and watch the stack's consumer delete the blobs the item no longer lists.

Against `make local`'s deployment (env dev, the stack doctable-items-dev):

    eval "$(.venv/bin/doctable local env)"
    .venv/bin/python examples/app.py

Against AWS, with credentials for the environment's account and region: ``python examples/app.py --env stg``.
Exit 0 when the consumer cleaned up, 1 when it did not within --timeout, 2 on an error of the client.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import boto3

from doctable.client import DocClient, DocTableError, stack_name


def _keys_under(s3: Any, bucket: str, prefix: str) -> set[str]:
    keys: set[str] = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys.update(o["Key"] for o in page.get("Contents", []))
    return keys


def _wait(condition: Callable[[], bool], timeout: float) -> bool:
    """Whether ``condition()`` held before ``timeout`` seconds passed (polled: the consumer works asynchronously)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.25)
    return True


def run(docs: DocClient, s3: Any, timeout: float) -> int:
    bucket = docs.deployment.blob_bucket
    if bucket is None:
        print("this environment has no blob bucket (no consumer): deploy it with stream=new-and-old")
        return 2
    pk, sk = f"example-{uuid.uuid4().hex[:8]}", "doc"
    prefix = f"{docs.deployment.blob_root}{pk}/{sk}/"

    first = docs.put(pk, sk, {"title": "draft"}, blobs={"body": b"first draft", "cover": b"a cover"})
    print(f"put      {pk}/{sk} version {first.version}: {', '.join(e.key for e in first.manifest)}")

    second = docs.replace(
        pk,
        sk,
        {"title": "final"},
        blobs={"body": b"final text", "appendix": b"notes"},
        expected_version=first.version,
    )
    print(f"replace  {pk}/{sk} version {second.version}: {', '.join(e.key for e in second.manifest)}")
    old, new = {e.key for e in first.manifest}, {e.key for e in second.manifest}
    if not _wait(lambda: _keys_under(s3, bucket, prefix) == new, timeout):
        print(f"the consumer did not delete the replaced blobs within {timeout:.0f}s: {sorted(old)}")
        return 1
    print(f"         the consumer deleted the {len(old)} blobs the new version dropped")
    read = docs.get(pk, sk)
    print(f"get      title={read.attributes['title']!r} body={read.blobs['body'].read()!r}")

    docs.delete(pk, sk, expected_version=second.version)
    print(f"delete   {pk}/{sk}")
    if not _wait(lambda: not _keys_under(s3, bucket, prefix), timeout):
        print(f"the consumer did not delete the document's blobs within {timeout:.0f}s: {sorted(new)}")
        return 1
    print(f"         the consumer deleted its {len(new)} blobs: nothing is left under {prefix}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--env", default=os.environ.get("DOCTABLE_ENV", "dev"), help="the environment (default: dev)"
    )
    parser.add_argument("--table-base", default="items", help="the stack's table_base (default: items)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the consumer")
    args = parser.parse_args(argv)
    session = (
        boto3.session.Session()
    )  # the usual chain: AWS_ENDPOINT_URL and AWS_CA_BUNDLE reach the local AWS
    try:
        docs = DocClient.from_stack(args.env, table_base=args.table_base, session=session)
        print(f"stack    {stack_name(args.env, args.table_base)}: {docs!r}")
        return run(docs, session.client("s3"), args.timeout)
    except DocTableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
