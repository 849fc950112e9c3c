"""doctable's application client: documents with blobs in a deployed doctable environment, with boto3 alone.

    from doctable.client import DocClient

    docs = DocClient.from_stack(env="stg")                 # the stack doctable-items-stg's table, bucket, root
    docs.put("invoice#42", "v", {"total": 12}, blobs={"scan": Path("scan.pdf"), "note": b"paid"})
    doc = docs.get("invoice#42", "v")
    pdf = doc.blobs["scan"].read()                           # fetched now, If-Match the manifest's ETag
    docs.replace("invoice#42", "v", {"total": 13}, blobs={"scan": b"..."}, expected_version=doc.version)
    docs.delete("invoice#42", "v")
    docs.query_index("byMatch", {"tenant": "a", "region": "eu", "year": ("between", 2024, 2025)})  # an index

Each blob is uploaded under a fresh key ``<blob_root><pk>/<sk>/<name>-<uuid4 hex>`` and listed in the item's
``blobs`` as a map ``{"key": S, "etag": S, "size": N}``; ``version`` (a number) orders the writers. The
stack's consumer deletes the blobs an item no longer lists. This package imports nothing but the standard library,
boto3 and botocore (an import-linter contract and tests/unit/test_client_isolation.py hold it to that).

What the caller's AWS identity needs: the runtime policy's DynamoDB actions on the table (RuntimePolicyArn),
s3:PutObject, s3:GetObject and s3:DeleteObject on ``<bucket>/<blob_root>*``, and, for ``from_stack``,
cloudformation:DescribeStacks on the stack.

Every call on the bucket names the account expected to own it (``ExpectedBucketOwner``): the stack's account
(``from_stack``), ``bucket_owner=`` given, else the credentials' own (STS GetCallerIdentity, which needs no grant).
S3 refuses a bucket of another account with 403, and the client raises ``BucketOwnerError`` (``code``
``bucket.not_owned``): nothing is written to a bucket that a borrowed or mistyped name points at elsewhere.
"""

from doctable.client.blobs import BlobSource
from doctable.client.client import DocClient
from doctable.client.deployment import Deployment
from doctable.client.document import BlobEntry, BlobReader, Document
from doctable.client.errors import (
    AwsError,
    BlobChangedError,
    BlobMissingError,
    BucketOwnerError,
    ConfigurationError,
    ConflictError,
    DocTableError,
    ManifestError,
    NotFoundError,
    ThrottledError,
    UploadError,
    ValidationError,
)
from doctable.client.indexes import IndexKeys
from doctable.client.retry import RetryPolicy
from doctable.client.rules import stack_name

__all__ = [
    "AwsError",
    "BlobChangedError",
    "BlobEntry",
    "BlobMissingError",
    "BlobReader",
    "BlobSource",
    "BucketOwnerError",
    "ConfigurationError",
    "ConflictError",
    "Deployment",
    "DocClient",
    "DocTableError",
    "Document",
    "IndexKeys",
    "ManifestError",
    "NotFoundError",
    "RetryPolicy",
    "ThrottledError",
    "UploadError",
    "ValidationError",
    "stack_name",
]
