"""The consumer's timestamp parser (S3's HTTP dates by the standard library): what botocore's own returns."""

from __future__ import annotations

import pytest
from botocore.utils import parse_timestamp as botocore_parse
from stream_consumer.blob_store import parse_timestamp


@pytest.mark.parametrize(
    "value",
    [
        "Wed, 01 May 2024 12:00:00 GMT",  # a HEAD's Last-Modified
        "Sun, 31 Dec 2023 23:59:59 GMT",
        "2024-05-01T12:00:00.000Z",  # ListObjectsV2's LastModified
        1714564800,
        "Wed, 01 May 2024 12:00:00 -0000",
    ],
)
def test_same_instant_as_botocore(value: object) -> None:
    parsed = parse_timestamp(value)
    assert parsed == botocore_parse(value) and parsed.tzinfo is not None


def test_what_botocore_refuses_is_refused() -> None:
    with pytest.raises(ValueError, match="Invalid timestamp"):
        parse_timestamp("not a date GMT")
