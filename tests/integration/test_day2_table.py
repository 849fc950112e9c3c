"""Day 2, the table's knobs: TTL rate-limited (the update rolls back), then PITR and mapping options in place (an
index added and removed: test_day2_index.py). The machinery and what each flip checks: tests/support/day2.py."""

from __future__ import annotations

import pytest

from contract.knobs import KNOB_DEFAULTS
from tests.support import day2 as d2
from tests.support import localaws as lt
from tests.support.day2 import day2_aws_fixture, day2_fixture  # noqa: F401 - the day-2 fixtures

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]


def test_day2_ttl_rate_limited_rolls_back_then_pitr_and_mapping_options_in_place(day2: d2.Day2) -> None:
    outputs = d2.given_kept(day2)
    # ttl off -> on, then off again at once: DynamoDB's rate limit fails the update, which rolls back
    day2.flip("ttl off -> on", {"ttl.enabled"}, ttl="on")
    assert day2.table()["ttl"] == "ENABLED"
    message = day2.failed_flip("ttl on -> off within the interval", {"ttl.disabled"}, set())
    assert d2.RATE_LIMITED in message and "(HandlerErrorCode: ValidationException)" in message
    assert day2.table()["ttl"] == "ENABLED"
    # verify right after the rollback: it checks the knobs the stack holds (ttl on) and says it rolled back
    said = day2.verify(ttl="off")
    assert (
        d2.ROLLED_BACK_NOTE in said
        and "UPDATE_ROLLBACK_COMPLETE" in said
        and "ttl: deployed on, given off" in said
    )

    # pitr on with batch_size, then pitr off with max_retries: in place, and the stack was still updatable
    day2.flip("pitr off -> on, batch_size -> 5", set(), ttl="on", pitr="on", batch_size="5")
    assert day2.table()["pitr"] == "ENABLED"
    assert [m["BatchSize"] for m in day2.mappings()] == [5]
    day2.verify(ttl="on", pitr="on", batch_size="5")
    day2.flip("pitr on -> off, max_retries 5 -> 2", {"pitr.disabled"}, ttl="on", max_retries="2")
    assert day2.table()["pitr"] == "DISABLED"
    default_batch = int(KNOB_DEFAULTS["batch_size"])
    assert [(m["BatchSize"], m["MaximumRetryAttempts"]) for m in day2.mappings()] == [(default_batch, 2)]
    day2.verify(ttl="on", max_retries="2")

    # ttl on -> off once the interval has passed since the last change (the local AWS's clock control says so)
    assert day2.aws.faults.ttl_interval_elapsed(outputs["TableName"]) == [lt.REGION]
    day2.flip("ttl on -> off", set())
    assert day2.table()["ttl"] == "DISABLED"
    day2.verify()
    d2.assert_kept(day2, outputs, outputs["BlobBucketName"])
    day2.no_mismatches()
