"""Day 2, the stream's side: the mapping replaced by starting_position after a failed update (the consumer and the
stream turned off and on: test_day2_consumer.py). The machinery and what each flip checks: tests/support/day2.py."""

from __future__ import annotations

import pytest

from tests.support import day2 as d2
from tests.support.day2 import day2_aws_fixture, day2_fixture  # noqa: F401 - the day-2 fixtures

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]


def test_day2_mapping_replaced_by_starting_position_after_a_failed_update(day2: d2.Day2) -> None:
    outputs = d2.given_kept(day2)
    # an injected resource failure: the alias a LATEST mapping needs exists already, made out of band
    lam = day2.aws.client("lambda")
    function = outputs["ConsumerFunctionName"]
    lam.create_alias(FunctionName=function, Name="from-latest", FunctionVersion="$LATEST")
    (before,) = day2.mappings()
    message = day2.failed_flip(
        "starting_position -> latest with pitr on, alias made out of band",
        {"mapping.replaced", "pitr.enabled"},
        {"mapping.replaced"},
        starting_position="latest",
        pitr="on",
    )
    assert "Alias already exists" in message
    assert day2.table()["pitr"] == "DISABLED"  # the table's change was rolled back
    assert [(m["UUID"], m["StartingPosition"]) for m in day2.mappings()] == [(before["UUID"], "TRIM_HORIZON")]
    said = day2.verify(starting_position="latest", pitr="on")
    assert d2.ROLLED_BACK_NOTE in said and "starting_position: deployed trim-horizon, given latest" in said
    lam.delete_alias(FunctionName=function, Name="from-latest")

    # starting_position trim-horizon -> latest -> trim-horizon: one deploy each, the mapping replaced
    day2.flip("starting_position trim-horizon -> latest", {"mapping.replaced"}, starting_position="latest")
    (latest,) = day2.mappings()
    assert latest["StartingPosition"] == "LATEST" and latest["UUID"] != before["UUID"]
    assert latest["FunctionArn"].endswith(":from-latest")
    day2.verify(starting_position="latest")
    day2.flip("starting_position latest -> trim-horizon", set())
    (horizon,) = day2.mappings()
    assert horizon["StartingPosition"] == "TRIM_HORIZON" and horizon["FunctionArn"].endswith(
        ":from-trim-horizon"
    )
    day2.verify()
    d2.assert_kept(day2, outputs, outputs["BlobBucketName"])
    day2.no_mismatches()
