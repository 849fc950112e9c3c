"""Seeding an in-process moto with a test's GIVEN faster than through boto3: many S3 objects written into moto's
backend directly (2,500 PutObject calls through boto3 and moto's responses took ~25 s of a unit test that proves
the consumer's deletes, not the writes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

FEW = 10  # up to this many go through the client, as any test's would


def put_objects(client: Any, bucket: str, keys: Sequence[str], body: bytes = b"x") -> None:
    """Each key into ``bucket`` with ``body``: through ``client`` for a few, into moto's backend past that."""
    if len(keys) <= FEW:
        for key in keys:
            client.put_object(Bucket=bucket, Key=key, Body=body)
        return
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    for key in keys:
        backend.put_object(bucket, key, body)
