"""verify / ledger / preflight / teardown against the local AWS, on stacks deployed with the real CDK CLI.

Uses the session fixtures of conftest.py (``local_aws``, ``deploy``) but deploys its OWN stacks (table_base
``ops*``): the shared ``flat_stack``/``full_stack`` are updated and destroyed by test_local_stack.py. The
commands run as the console script would (a subprocess, the environment `doctable local env` prints).
Each test stands alone: a stack fixture deploys its stack when it is not there (a teardown test may have
removed it), drift tests restore what they break, and a test that reads verify's record runs verify first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.support import localaws as lt
from tests.support import ops as ot
from tests.support.cli import Result, context_args, run_doctable

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

FULL = {
    "env": "dev",
    "table_base": "opsfull",
    "gsi": "gsi1",
    "ttl": "on",
    "pitr": "on",
    "stream": "new-and-old",
}
FLAT = {"env": "stg", "table_base": "opsflat"}
# prod: deletion protection + RETAIN; a LATEST mapping exercises the settle wait.
PROD = {"env": "prod", "table_base": "opsprod", "stream": "new-and-old", "starting_position": "latest"}
VERIFY_BOUND = ["--timeout", "60"]
SETTLED = ("CREATE_COMPLETE", "UPDATE_COMPLETE")
Outputs = dict[str, str]


@pytest.fixture(scope="module")
def doctable(local_aws: lt.LocalAWS, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Result]:
    state = tmp_path_factory.mktemp("ops-state")
    env = {
        **local_aws.env,
        "DOCTABLE_STATE_DIR": str(state / "state"),
        "DOCTABLE_LEDGER_DIR": str(state / "ledger"),
    }

    def run(*args: str, knobs: dict[str, str] | None = None) -> Result:
        return run_doctable([*args, *context_args(knobs or {})], env=env, timeout=600)

    run.state = state  # type: ignore[attr-defined]
    return run


@pytest.fixture(scope="module")
def stack(local_aws: lt.LocalAWS, deploy: Callable[..., Outputs]) -> Callable[[dict[str, str]], Outputs]:
    """The outputs of the stack these knobs describe, deployed first unless it stands settled already."""

    def ensure(knobs: dict[str, str]) -> Outputs:
        name = lt.stack_name(knobs)
        try:
            stacks = local_aws.client("cloudformation").describe_stacks(StackName=name)["Stacks"]
        except ClientError:
            stacks = []
        if stacks and stacks[0]["StackStatus"] in SETTLED:
            return lt.stack_outputs(local_aws, name)
        return deploy(knobs).outputs

    return ensure


@pytest.fixture
def full(stack: Callable[[dict[str, str]], Outputs]) -> Outputs:
    return stack(FULL)


@pytest.fixture
def flat(stack: Callable[[dict[str, str]], Outputs]) -> Outputs:
    return stack(FLAT)


@pytest.fixture
def prod(stack: Callable[[dict[str, str]], Outputs]) -> Outputs:
    return stack(PROD)


def rows_of(result: Result) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in result.json()["rows"]}


def failing(result: Result) -> dict[str, str]:
    return {k: r["observed"] for k, r in rows_of(result).items() if r["result"] == "FAIL"}


# ---------------------------------------------------------------------------------------------- verify
def test_verify_passes_on_the_full_shape(
    local_aws: lt.LocalAWS, doctable: Callable[..., Result], full: Outputs
) -> None:
    result = doctable("verify", "--json", *VERIFY_BOUND, knobs=FULL)
    assert failing(result) == {}, result.err
    assert result.code == 0
    rows = rows_of(result)
    # every check applies to this shape: nothing skipped, the record-level proofs really ran
    assert {r["result"] for r in rows.values()} == {"PASS"}
    assert rows["stream-delivery"]["observed"].startswith("seq ")
    assert "TRIM_HORIZON: no settle wait needed" in rows["stream-delivery"]["observed"]
    assert rows["blob-cleanup"]["observed"].startswith("2 blobs gone")
    # and it cleaned up after itself: no verify item left in the table
    items = local_aws.client("dynamodb").scan(TableName=full["TableName"], ConsistentRead=True)["Items"]
    assert not [i for i in items if i["pk"]["S"].startswith("doctable-verify-")]


def test_verify_passes_on_the_flat_shape_and_skips_with_reasons(
    doctable: Callable[..., Result], flat: Outputs
) -> None:
    result = doctable("verify", "--json", *VERIFY_BOUND, knobs=FLAT)
    assert result.code == 0 and failing(result) == {}
    rows = rows_of(result)
    skipped = {k for k, r in rows.items() if r["result"] == "SKIP"}
    assert skipped == {"gsi-query", "mapping", "mapping-tags", "stream-delivery", "blob-cleanup"}
    assert all(rows[k]["observed"].startswith("skipped: ") for k in skipped)


def test_verify_passes_on_prod_with_a_latest_mapping_after_the_settle_wait(
    doctable: Callable[..., Result], prod: Outputs
) -> None:
    result = doctable("verify", "--json", "--settle", "5", *VERIFY_BOUND, knobs=PROD)
    assert failing(result) == {} and result.code == 0
    rows = rows_of(result)
    assert rows["deletion-protection"]["observed"] == "enabled"
    assert "LATEST" in rows["stream-delivery"]["observed"]


def test_verify_table_output_and_exit_code(doctable: Callable[..., Result], flat: Outputs) -> None:
    result = doctable("verify", *VERIFY_BOUND, knobs=FLAT)
    assert result.code == 0
    header = result.out.splitlines()[0].split()
    assert header == ["check", "expected", "observed", "result"]
    assert "verify PASSED: opsflat-stg" in result.out


# ----------------------------------------------------------------------------------------------- drift
def test_ttl_disabled_behind_the_stack_fails_naming_ttl(
    local_aws: lt.LocalAWS, doctable: Callable[..., Result], full: Outputs
) -> None:
    table = full["TableName"]
    # The deploy enabled TTL: disabling it is the table's next TTL change (the clock control passes its interval).
    ot.change_ttl_now(local_aws, table, enabled=False)
    try:
        result = doctable("verify", "--json", *VERIFY_BOUND, knobs=FULL)
        assert result.code == 1
        assert set(failing(result)) == {"ttl"}
    finally:
        ot.change_ttl_now(local_aws, table, enabled=True)


def test_a_removed_tag_fails_naming_the_tags(
    local_aws: lt.LocalAWS, doctable: Callable[..., Result], full: Outputs
) -> None:
    ddb = local_aws.client("dynamodb")
    arn = full["TableArn"]
    ddb.untag_resource(ResourceArn=arn, TagKeys=["Environment"])
    try:
        result = doctable("verify", "--json", *VERIFY_BOUND, knobs=FULL)
        assert result.code == 1
        assert set(failing(result)) == {"table-tags"}
        assert "Environment=dev" in failing(result)["table-tags"]
    finally:
        ddb.tag_resource(ResourceArn=arn, Tags=[{"Key": "Environment", "Value": "dev"}])


def test_a_disabled_mapping_fails_naming_the_mapping(
    local_aws: lt.LocalAWS, doctable: Callable[..., Result], full: Outputs
) -> None:
    lam = local_aws.client("lambda")
    uuid = full["EventSourceMappingUuid"]
    lam.update_event_source_mapping(UUID=uuid, Enabled=False)
    try:
        result = doctable("verify", "--json", *VERIFY_BOUND, knobs=FULL)
        assert result.code == 1
        fails = failing(result)
        assert "mapping" in fails and "Disabled" in fails["mapping"]
        # the record-level proofs cannot pass without delivery: failed at once, not after the bound
        assert set(fails) == {"mapping", "stream-delivery", "blob-cleanup"}
    finally:
        lam.update_event_source_mapping(UUID=uuid, Enabled=True)


def test_consumer_settings_changed_behind_the_stack_fail_naming_the_consumer(
    local_aws: lt.LocalAWS, doctable: Callable[..., Result], full: Outputs
) -> None:
    # GIVEN the deployed consumer's key-reuse check switched off and its memory changed, outside the stack
    lam = local_aws.client("lambda")
    function = full["ConsumerFunctionName"]
    before = lam.get_function_configuration(FunctionName=function)
    variables = dict(before["Environment"]["Variables"], BLOB_KEY_REUSE="never")
    lam.update_function_configuration(
        FunctionName=function, MemorySize=1024, Environment={"Variables": variables}
    )
    try:
        # WHEN verify runs  THEN only the consumer row fails, naming both with their declared values
        result = doctable("verify", "--json", *VERIFY_BOUND, knobs=FULL)
        assert result.code == 1
        fails = failing(result)
        assert set(fails) == {"consumer-config"}, fails
        assert "MemorySize 1024 (declared 512)" in fails["consumer-config"]
        assert "BLOB_KEY_REUSE 'never' (declared 'guarded')" in fails["consumer-config"]
    finally:
        lam.update_function_configuration(
            FunctionName=function, MemorySize=before["MemorySize"], Environment=before["Environment"]
        )


def test_verify_passes_again_once_the_drift_is_repaired(
    doctable: Callable[..., Result], full: Outputs
) -> None:
    result = doctable("verify", "--json", *VERIFY_BOUND, knobs=FULL)
    assert failing(result) == {} and result.code == 0


# ---------------------------------------------------------------------------------------------- ledger
def test_ledger_records_the_live_state(doctable: Callable[..., Result], full: Outputs) -> None:
    # GIVEN a passing verify of the environment (the ledger records its rows)
    assert doctable("verify", "-q", *VERIFY_BOUND, knobs=FULL).code == 0
    result = doctable("ledger", "--json", knobs=FULL)
    assert result.code == 0
    entry = result.json()
    assert entry["status"] == "live"
    realized = entry["realized"]
    assert realized["table"] == "opsfull-dev"
    assert realized["mapping_uuid"] == full["EventSourceMappingUuid"]
    assert realized["stream_arn"] == full["StreamArn"]
    assert realized["consumer_function"] == full["ConsumerFunctionName"]
    assert realized["blob_bucket"] == full["BlobBucketName"]
    assert entry["last_verified"]["passed"] and entry["last_verified"]["rows"]
    ledger_dir = doctable.state / "ledger"  # type: ignore[attr-defined]
    assert (ledger_dir / "opsfull-dev.md").read_text().startswith("# Live State — opsfull-dev")


def test_ledger_without_knobs_records_the_deployed_knobs_and_reports_given_ones_pending(
    doctable: Callable[..., Result], full: Outputs
) -> None:
    # GIVEN the all-on stack, named by env and table_base only (the harness's settings declare no shape)
    which = {"env": FULL["env"], "table_base": FULL["table_base"]}
    # WHEN the ledger is written THEN its inputs are the knobs the stack recorded, not the settings' defaults
    entry = doctable("ledger", "--json", knobs=which).json()
    inputs = entry["resolved_inputs"]
    assert (inputs["gsi"], inputs["ttl"], inputs["pitr"], inputs["stream"]) == (
        "gsi1",
        "on",
        "on",
        "new-and-old",
    )
    assert entry["knobs_source"] == "deployed"
    # AND a setting that differs is pending, never taken as the truth
    pending = doctable("ledger", "--json", knobs={**FULL, "gsi": "none"})
    assert "gsi: deployed gsi1, given none — pending: deploy to apply" in pending.err
    assert pending.json()["resolved_inputs"]["gsi"] == "gsi1"
    assert pending.json()["pending_knobs"] == [{"knob": "gsi", "deployed": "gsi1", "given": "none"}]


# ------------------------------------------------------------------------------------------- preflight
def test_preflight_stops_on_a_foreign_same_named_table(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS
) -> None:
    ddb = local_aws.client("dynamodb")
    ddb.create_table(
        TableName="opsforeign-dev",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        Tags=[{"Key": "Team", "Value": "someone-else"}],
    )
    try:
        result = doctable("preflight", "--json", knobs={"env": "dev", "table_base": "opsforeign"})
        assert result.code == 1
        assert [(f["level"], f["code"]) for f in result.json()["findings"] if f["level"] == "STOP"] == [
            ("STOP", "table.foreign")
        ]
    finally:
        ddb.delete_table(TableName="opsforeign-dev")


def test_preflight_on_our_live_table_explains_each_change(
    doctable: Callable[..., Result], full: Outputs
) -> None:
    same = doctable("preflight", "--json", knobs=FULL)
    assert same.code == 0 and "table.unchanged" in {f["code"] for f in same.json()["findings"]}
    changed = doctable("preflight", "--json", knobs={**FULL, "gsi": "none", "ttl": "off", "stream": "none"})
    assert changed.code == 0
    findings = {f["code"]: f for f in changed.json()["findings"]}
    assert findings["index.removed"]["before"] == "gsi1" and findings["index.removed"]["destructive"]
    assert findings["stream.disabled"]["destructive"] and findings["mapping.deleted"]["destructive"]
    assert not findings["ttl.disabled"]["destructive"]
    assert set(changed.json()["destructive"]) >= {"index.removed", "stream.disabled", "mapping.deleted"}


def test_preflight_stops_on_a_missing_borrowed_consumer(
    doctable: Callable[..., Result], local_aws: lt.LocalAWS
) -> None:
    arn = f"arn:aws:lambda:{lt.REGION}:{lt.ACCOUNT}:function:not-there"
    result = doctable(
        "preflight",
        "--json",
        knobs={"env": "dev", "table_base": "opsborrow", "stream": "new-and-old", "consumer": arn},
    )
    stops = [(f["code"], f["subject"]) for f in result.json()["findings"] if f["level"] == "STOP"]
    assert result.code == 1 and [code for code, _ in stops] == ["consumer.missing"], stops


# -------------------------------------------------------------------------------------------- teardown
def test_teardown_refuses_without_confirmation(
    local_aws: lt.LocalAWS, doctable: Callable[..., Result], flat: Outputs
) -> None:
    result = doctable("teardown", knobs=FLAT)  # stdin is not a terminal, no --yes
    assert result.code == 3 and "--yes" in result.err
    assert (
        local_aws.client("dynamodb").describe_table(TableName="opsflat-stg")["Table"]["TableStatus"]
        == "ACTIVE"
    )


def test_teardown_of_prod_needs_the_protection_lifted_and_keeps_the_table(
    local_aws: lt.LocalAWS, doctable: Callable[..., Result], prod: Outputs
) -> None:
    refused = doctable("teardown", "--yes", knobs=PROD)
    assert refused.code == 3 and "--lift-deletion-protection" in refused.err
    result = doctable("teardown", "--yes", "--lift-deletion-protection", "--json", knobs=PROD)
    assert result.code == 0, result.out + result.err
    outcome = result.json()
    assert outcome["clean"]
    assert any(r.startswith("AWS::DynamoDB::Table opsprod-prod (RETAIN") for r in outcome["retained"])
    assert f"AWS::Lambda::EventSourceMapping {prod['EventSourceMappingUuid']}" in outcome["removed"]
    ddb = local_aws.client("dynamodb")
    assert ddb.describe_table(TableName="opsprod-prod")["Table"]["DeletionProtectionEnabled"]
    ddb.update_table(TableName="opsprod-prod", DeletionProtectionEnabled=False)  # leave the session tidy
    ddb.delete_table(TableName="opsprod-prod")


@pytest.mark.parametrize("which", ["full", "flat"])
def test_teardown_leaves_nothing_that_is_not_retained(
    local_aws: lt.LocalAWS, doctable: Callable[..., Result], request: pytest.FixtureRequest, which: str
) -> None:
    deployed: Outputs = request.getfixturevalue(which)
    knobs = FULL if which == "full" else FLAT
    if which == "full":  # a non-empty blob bucket must not block the stack deletion (dev is destroyable)
        local_aws.client("s3").put_object(Bucket=deployed["BlobBucketName"], Key="left/over", Body=b"x")
    result = doctable("teardown", "--yes", "--json", "--ledger", knobs=knobs)
    assert result.code == 0, result.out + result.err
    outcome = result.json()
    assert outcome["clean"] and outcome["still_present"] == [] and outcome["retained"] == []
    # absence, checked independently of the command
    table = deployed["TableName"]
    assert table not in local_aws.client("dynamodb").list_tables()["TableNames"]
    if which == "full":
        assert not [
            m
            for m in local_aws.client("lambda").list_event_source_mappings()["EventSourceMappings"]
            if m["UUID"] == deployed["EventSourceMappingUuid"]
        ]
        names = [f["FunctionName"] for f in local_aws.client("lambda").list_functions()["Functions"]]
        assert deployed["ConsumerFunctionName"] not in names
    ledger = doctable("ledger", "--json", knobs=knobs).json()
    assert ledger["status"] == "gone" and ledger["realized"]["table_arn"] is None
