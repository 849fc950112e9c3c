"""Kinesis Data Streams for DynamoDB in operations (kinesis, consumer_source): preflight's lines, verify's rows,
reconcile's repair and plan's figures. moto serves the table, the stack and the Kinesis stream; it lacks the
table's Kinesis-destination calls, which a small in-memory stand-in answers as AWS does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from contract import names
from contract.findings import Finding, Level
from contract.knobs import DocTableConfig
from contract.shape import cleanup_filter_patterns, mapping_shape
from doctable.capabilities import drift, kinesis
from doctable.capabilities.borrowed import consumer_findings
from doctable.capabilities.mapping import CREATED, DELETED, REPLACED, mapping_change
from doctable.cli import main
from doctable.core import grants
from doctable.core.aws import Aws
from doctable.core.context import describe_stack
from doctable.core.deployment import use_deployed_knobs
from doctable.core.render import Progress
from doctable.lifecycle import preflight as p
from doctable.plan.cost import HOURS_PER_MONTH, KB_PER_GB, Workload, build_plan, value
from doctable.verify import kinesis as vk
from doctable.verify.checks import CheckFailed, Skip, Verifier, expectations
from tests.support import ops as ot
from tests.support.ops import REGION

ACCOUNT = "123456789012"
TABLE = "items-dev"
THEIRS = f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/theirs"
OTHER = f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/other"
FUNCTION = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:borrowed"
QUIET = Progress(quiet=True, sleep=lambda s: None)


def cfg(**knobs: str) -> DocTableConfig:
    return ot.config_of(**knobs)


class Destinations:
    """A DynamoDB client (moto's) with the Kinesis-destination calls moto lacks, answered from memory as AWS
    answers them: Enable makes a destination ACTIVE, Disable makes it DISABLED."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.streams: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def set(self, arn: str, status: str, precision: str = kinesis.PRECISION) -> None:
        self.streams[arn] = {
            "StreamArn": arn,
            "DestinationStatus": status,
            kinesis.PRECISION_FIELD: precision,
        }

    def describe_kinesis_streaming_destination(self, TableName: str) -> dict[str, Any]:
        return {"TableName": TableName, "KinesisDataStreamDestinations": list(self.streams.values())}

    def enable_kinesis_streaming_destination(self, **params: Any) -> dict[str, Any]:
        self.calls.append(("enable", params))
        precision = (params.get("EnableKinesisStreamingConfiguration") or {}).get(kinesis.PRECISION_FIELD)
        self.set(params["StreamArn"], kinesis.ACTIVE, precision or "MICROSECOND")
        return {
            "TableName": params["TableName"],
            "StreamArn": params["StreamArn"],
            "DestinationStatus": "ENABLING",
        }

    def update_kinesis_streaming_destination(self, **params: Any) -> dict[str, Any]:
        self.calls.append(("update", params))
        precision = params["UpdateKinesisStreamingConfiguration"][kinesis.PRECISION_FIELD]
        self.set(params["StreamArn"], kinesis.ACTIVE, precision)
        return {
            "TableName": params["TableName"],
            "StreamArn": params["StreamArn"],
            "DestinationStatus": "UPDATING",
        }

    def disable_kinesis_streaming_destination(self, **params: Any) -> dict[str, Any]:
        self.set(params["StreamArn"], kinesis.DISABLED)
        return {
            "TableName": params["TableName"],
            "StreamArn": params["StreamArn"],
            "DestinationStatus": "DISABLING",
        }


@pytest.fixture
def destinations(moto_env: Aws, monkeypatch: pytest.MonkeyPatch) -> Iterator[Destinations]:
    """GIVEN every DynamoDB client the commands open answering the Kinesis-destination calls (one table)."""
    wrapped: dict[int, Destinations] = {}
    shared: dict[str, dict[str, Any]] = {}
    calls: list[tuple[str, dict[str, Any]]] = []
    original = Aws.client

    def client(self: Aws, service: str) -> Any:
        inner = original(self, service)
        if service != "dynamodb":
            return inner
        if id(inner) not in wrapped:
            fake = Destinations(inner)
            fake.streams, fake.calls = shared, calls  # one table's state, whichever session asks
            wrapped[id(inner)] = fake
        return wrapped[id(inner)]

    monkeypatch.setattr(Aws, "client", client)
    yield moto_env.client("dynamodb")


def created_stream(
    aws: Aws, name: str = "changes", *, mode: str = "ON_DEMAND", encrypted: bool = True
) -> str:
    """A Kinesis stream in moto, as the stack creates it (on-demand, encrypted with alias/aws/kinesis)."""
    client = aws.client("kinesis")
    shards = {"ShardCount": 1} if mode != "ON_DEMAND" else {}
    client.create_stream(StreamName=name, StreamModeDetails={"StreamMode": mode}, **shards)
    if encrypted:
        client.start_stream_encryption(StreamName=name, EncryptionType="KMS", KeyId="alias/aws/kinesis")
    return str(client.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamARN"])


def deployment_of(config: DocTableConfig, outputs: dict[str, str]) -> Any:
    return SimpleNamespace(config=config, out=outputs.get, table_name=TABLE, region=REGION)


# ------------------------------------------------------------------------------------------- preflight
def found_of(deployed: DocTableConfig, target: DocTableConfig) -> list[tuple[str, bool, Any, Any]]:
    """(code, destructive, before, after) of each finding preflight makes for a ``kinesis`` knob change."""
    return [(f.code, f.destructive, f.before, f.after) for f in kinesis.findings(deployed, target)]


def test_turning_kinesis_on_creates_a_stream_and_names_every_price_with_its_source() -> None:
    # GIVEN a live stack without Kinesis, and knobs turning it on  THEN one change, nothing destroyed
    assert found_of(cfg(), cfg(kinesis="on")) == [("kinesis.enabled", False, None, "on")]
    # AND the cost it states names each price with its source
    cost = kinesis.cost_text()
    assert "$0.10 per million" in cost and "aws.amazon.com/dynamodb/pricing/on-demand/" in cost
    assert "$0.04 per stream-hour" in cost and "$0.08 per GB ingested" in cost
    assert "$0.04 per GB retrieved" in cost and "aws.amazon.com/kinesis/data-streams/pricing/" in cost
    assert "~$29.20/month" in cost


def test_streaming_into_a_borrowed_stream_is_enabling_it() -> None:
    assert found_of(cfg(), cfg(kinesis=THEIRS)) == [("kinesis.enabled", False, None, THEIRS)]


def test_turning_kinesis_off_deletes_the_created_stream_unless_the_environment_retains_it() -> None:
    # dev: the stream goes with its unread records: a destructive change of its own
    assert found_of(cfg(kinesis="on"), cfg()) == [
        ("kinesis.disabled", False, "on", None),
        ("kinesis.stream_deleted", True, kinesis.CREATED, None),
    ]
    # prod (like uat): retained like the table, nothing deleted
    assert found_of(cfg(env="prod", kinesis="on"), cfg(env="prod")) == [
        ("kinesis.disabled", False, "on", None)
    ]
    # a borrowed stream is never deleted
    assert found_of(cfg(kinesis=THEIRS), cfg()) == [("kinesis.disabled", False, THEIRS, None)]


@pytest.mark.parametrize(
    ("before", "after", "deleted"), [("on", THEIRS, True), (THEIRS, OTHER, False), (THEIRS, "on", False)]
)
def test_switching_the_destination_deletes_only_a_stream_the_stack_created(
    before: str, after: str, deleted: bool
) -> None:
    found = found_of(cfg(kinesis=before), cfg(kinesis=after))
    assert found[0] == ("kinesis.changed", False, before, after)
    assert [code for code, destructive, *_ in found if destructive] == (
        ["kinesis.stream_deleted"] if deleted else []
    )


def test_no_kinesis_change_no_line() -> None:
    assert kinesis.findings(cfg(kinesis="on"), cfg(kinesis="on", batch_size="20")) == []


@pytest.mark.parametrize(("position", "destructive"), [("latest", True), ("trim-horizon", False)])
def test_a_source_switch_replaces_the_mapping_destructively_only_from_latest(
    position: str, destructive: bool
) -> None:
    # GIVEN the built-in consumer on the DynamoDB stream, moved to the Kinesis data stream
    before = cfg(stream="new-and-old", kinesis="on", starting_position=position)
    after = cfg(stream="new-and-old", kinesis="on", consumer_source="kinesis", starting_position=position)
    change = mapping_change(before, after)
    # THEN the mapping is replaced; from LATEST the records in between are lost, from TRIM_HORIZON re-delivered
    assert change is not None and change.code == REPLACED
    finding = change.finding()
    assert (finding.before, finding.after) == (before.starting_position_cfn, after.starting_position_cfn)
    assert finding.destructive is destructive


def test_a_kinesis_mapping_is_replaced_when_its_stream_changes_but_not_for_a_dynamodb_view_change() -> None:
    on_theirs = cfg(kinesis=THEIRS, consumer_source="kinesis")
    change = mapping_change(on_theirs, cfg(kinesis=OTHER, consumer_source="kinesis"))
    assert change is not None and change.code == REPLACED
    # the DynamoDB stream going away does not touch a mapping reading Kinesis
    assert (
        mapping_change(
            cfg(stream="new-and-old", kinesis="on", consumer_source="kinesis"),
            cfg(kinesis="on", consumer_source="kinesis"),
        )
        is None
    )


def test_preflight_reports_the_kinesis_change_against_the_deployed_knobs(moto_env: Aws) -> None:
    # GIVEN a stack deployed without Kinesis (moto), and knobs turning it on
    ot.deploy(moto_env.client, cfg())
    deployment = use_deployed_knobs(describe_stack(moto_env, cfg(kinesis="on")))
    # WHEN preflight runs
    findings = {f.code: f for f in p.run_preflight(moto_env, deployment)}
    # THEN the kinesis line is a change the deploy makes
    found = findings["kinesis.enabled"]
    assert (found.level, found.destructive, found.before, found.after) == (Level.CHANGE, False, None, "on")


def _role(aws: Aws, name: str, statements: list[dict[str, Any]]) -> str:
    iam = aws.client("iam")
    role = iam.create_role(RoleName=name, AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    document = json.dumps({"Version": "2012-10-17", "Statement": statements})
    iam.put_role_policy(RoleName=name, PolicyName="p", PolicyDocument=document)
    return str(role)


def _function(aws: Aws, role: str) -> str:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.py", "def handler(e, c):\n    return None\n")
    reply = aws.client("lambda").create_function(
        FunctionName="borrowed", Runtime=names.LAMBDA_RUNTIME, Role=role, Handler="index.handler",
        Code={"ZipFile": buffer.getvalue()},
    )  # fmt: skip
    return str(reply["FunctionArn"])


def test_a_borrowed_consumer_reading_kinesis_needs_kinesis_grants_not_dynamodb_ones(moto_env: Aws) -> None:
    # GIVEN a borrowed function whose role reads DynamoDB streams only, and knobs making it read THEIRS
    role = _role(moto_env, "ddb-reader", [{"Effect": "Allow", "Action": "dynamodb:*", "Resource": "*"}])
    arn = _function(moto_env, role)
    config = cfg(kinesis=THEIRS, consumer=arn, consumer_source="kinesis")
    # THEN every Kinesis read action is missing
    (lacking,) = consumer_findings(moto_env, config, None, {}.get)
    assert (lacking.level, lacking.code, lacking.before) == (Level.WARN, "consumer.cannot_read_stream", [])
    assert lacking.after == list(grants.KINESIS_READ_ACTIONS)
    # AND a role granted them on that stream passes
    moto_env.client("iam").put_role_policy(
        RoleName="ddb-reader", PolicyName="p",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": list(grants.KINESIS_READ_ACTIONS), "Resource": THEIRS}],
            }
        ),
    )  # fmt: skip
    (granted,) = consumer_findings(moto_env, config, None, {}.get)
    assert (granted.level, granted.code) == (Level.OK, "consumer.ok")


# ---------------------------------------------------------------------------------------------- verify
def test_verify_rows_say_what_each_kinesis_setting_expects() -> None:
    assert [row[:3:2] for row in vk.kinesis_rows(cfg())] == [("kinesis-destination", vk.NO_DESTINATION)]
    on = dict((row[0], row[2]) for row in vk.kinesis_rows(cfg(kinesis="on")))
    assert (
        on["kinesis-destination"].startswith("ACTIVE") and "ON_DEMAND, KMS encrypted" in on["kinesis-stream"]
    )
    assert THEIRS in vk.kinesis_rows(cfg(kinesis=THEIRS))[0][2]
    # the rows sit in verify's contract, after the stream row
    ids = [row[0] for row in expectations(cfg(kinesis="on")).rows()]
    assert ids.index("kinesis-destination") == ids.index("stream") + 1


def checks(aws: Aws, config: DocTableConfig, outputs: dict[str, str]) -> dict[str, Any]:
    return vk.kinesis_checks(aws, deployment_of(config, outputs))


def test_the_declared_destination_active_passes(moto_env: Aws, destinations: Destinations) -> None:
    stream = created_stream(moto_env)
    destinations.set(stream, kinesis.ACTIVE)
    run = checks(moto_env, cfg(kinesis="on"), {names.OUT_KINESIS_STREAM_ARN: stream})
    assert run["kinesis-destination"]() == f"ACTIVE {stream}"
    assert run["kinesis-stream"]().startswith("ACTIVE, ON_DEMAND, KMS (alias/aws/kinesis), 24 h")


@pytest.mark.parametrize(
    ("status", "says"),
    [
        (kinesis.ENABLING, "not streaming yet"),
        (kinesis.DISABLED, "`doctable reconcile --apply` re-enables it"),
        (kinesis.ENABLE_FAILED, "ENABLE_FAILED"),
    ],
)
def test_a_destination_not_active_fails_naming_its_status(
    moto_env: Aws, destinations: Destinations, status: str, says: str
) -> None:
    destinations.set(THEIRS, status)
    with pytest.raises(CheckFailed, match=f"{status} {THEIRS}") as failure:
        checks(moto_env, cfg(kinesis=THEIRS), {})["kinesis-destination"]()
    assert says in str(failure.value)


def test_a_destination_on_the_wrong_stream_fails(moto_env: Aws, destinations: Destinations) -> None:
    # GIVEN the table streaming to OTHER while the knobs name THEIRS
    destinations.set(OTHER, kinesis.ACTIVE)
    with pytest.raises(CheckFailed, match=f"absent \\({THEIRS}\\).*ACTIVE {OTHER}"):
        checks(moto_env, cfg(kinesis=THEIRS), {})["kinesis-destination"]()
    # AND the stack's own stream without its output cannot be checked
    with pytest.raises(CheckFailed, match=names.OUT_KINESIS_STREAM_ARN):
        checks(moto_env, cfg(kinesis="on"), {})["kinesis-destination"]()


def test_kinesis_off_with_a_destination_fails_and_without_one_passes(
    moto_env: Aws, destinations: Destinations
) -> None:
    run = checks(moto_env, cfg(), {})
    assert run["kinesis-destination"]() == vk.NO_DESTINATION
    destinations.set(OTHER, kinesis.DISABLED)  # a disabled one is history, not streaming
    assert run["kinesis-destination"]() == vk.NO_DESTINATION
    destinations.set(OTHER, kinesis.ACTIVE)
    with pytest.raises(CheckFailed, match=f"unexpected destination.*{OTHER}"):
        run["kinesis-destination"]()
    with pytest.raises(Skip, match="kinesis=off"):
        run["kinesis-stream"]()


def test_an_endpoint_without_the_destination_api_skips_off_and_fails_on(moto_env: Aws) -> None:
    # moto in-process raises NotImplementedError for DescribeKinesisStreamingDestination
    with pytest.raises(Skip, match="does not implement"):
        checks(moto_env, cfg(), {})["kinesis-destination"]()
    with pytest.raises(CheckFailed, match="unproven"):
        checks(moto_env, cfg(kinesis=THEIRS), {})["kinesis-destination"]()


def test_the_created_stream_must_be_on_demand_encrypted_and_the_stacks(moto_env: Aws) -> None:
    # GIVEN a provisioned, unencrypted stream behind the stack's output
    stream = created_stream(moto_env, mode="PROVISIONED", encrypted=False)
    with pytest.raises(CheckFailed, match="mode PROVISIONED, not ON_DEMAND; not encrypted"):
        checks(moto_env, cfg(kinesis="on"), {names.OUT_KINESIS_STREAM_ARN: stream})["kinesis-stream"]()
    # AND with a customer managed key, the stream must be under the stack's key, not alias/aws/kinesis
    managed = created_stream(moto_env, "managed")
    outputs = {
        names.OUT_KINESIS_STREAM_ARN: managed,
        names.OUT_KMS_KEY_ARN: f"arn:aws:kms:{REGION}:{ACCOUNT}:key/k",
    }
    with pytest.raises(CheckFailed, match="key alias/aws/kinesis, not the stack's"):
        checks(moto_env, cfg(kinesis="on", encryption="customer-managed"), outputs)["kinesis-stream"]()
    # AND a missing stream says so; a borrowed stream's mode and encryption are its owner's
    with pytest.raises(CheckFailed, match="not found"):
        checks(moto_env, cfg(kinesis=THEIRS), {})["kinesis-stream"]()
    borrowed = created_stream(moto_env, "theirs", mode="PROVISIONED", encrypted=False)
    assert "PROVISIONED, NONE" in checks(moto_env, cfg(kinesis=borrowed), {})["kinesis-stream"]()


def _mapping(config: DocTableConfig, source: str) -> dict[str, Any]:
    """A GetEventSourceMapping answer carrying every declared setting, reading ``source``."""
    shape = mapping_shape(config)
    assert shape is not None
    fields = {k: v for k, v in shape.live_fields().items() if v is not None}
    return {
        **fields,
        "UUID": "u-1",
        "State": "Enabled",
        "EventSourceArn": source,
        "FunctionArn": FUNCTION,
        "StartingPosition": shape.starting_position,
        "DestinationConfig": {"OnFailure": {"Destination": f"arn:aws:s3:::{ot.FAILURE_BUCKET}"}},
    }


def verifier(config: DocTableConfig, mapping: dict[str, Any], outputs: dict[str, str]) -> Verifier:
    table = {"TableName": TABLE, "TableArn": f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{TABLE}"}
    clients = {
        "dynamodb": SimpleNamespace(describe_table=lambda TableName: {"Table": table}),
        "lambda": SimpleNamespace(get_event_source_mapping=lambda UUID: mapping),
    }
    aws = SimpleNamespace(client=clients.__getitem__, partition="aws", region=REGION, account=ACCOUNT)
    outputs = {names.OUT_MAPPING_UUID: "u-1", names.OUT_FAILURE_BUCKET: ot.FAILURE_BUCKET, **outputs}
    deployment = SimpleNamespace(config=config, out=outputs.get, table_name=TABLE, region=REGION)
    return Verifier(aws, deployment, progress=QUIET)  # type: ignore[arg-type]


def test_the_mapping_must_read_the_kinesis_stream_with_its_filter_under_data() -> None:
    # GIVEN the consumer reading the created Kinesis stream, with the cleanup filter
    config = cfg(kinesis="on", consumer="builtin", consumer_source="kinesis", events="cleanup")
    outputs = {names.OUT_KINESIS_STREAM_ARN: THEIRS}
    # THEN a mapping on that stream, its patterns under `data`, passes
    assert verifier(config, _mapping(config, THEIRS), outputs)._check_mapping().startswith("Enabled")
    assert all(json.loads(p).keys() == {"data"} for p in mapping_shape(config).filter_patterns)  # type: ignore[union-attr]
    # AND one reading another source (the DynamoDB stream) fails naming both
    wrong = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{TABLE}/stream/2026"
    with pytest.raises(CheckFailed, match=f"reads {wrong}, not the Kinesis data stream {THEIRS}"):
        verifier(config, _mapping(config, wrong), outputs)._check_mapping()
    # AND one whose patterns address the DynamoDB record directly (not under `data`) fails on its filter
    plain = {
        **_mapping(config, THEIRS),
        "FilterCriteria": {"Filters": [{"Pattern": p} for p in cleanup_filter_patterns()]},
    }
    with pytest.raises(CheckFailed, match="FilterCriteria"):
        verifier(config, plain, outputs)._check_mapping()


def test_a_mapping_reading_kinesis_when_the_knobs_say_dynamodb_fails() -> None:
    config = cfg(stream="new-and-old", kinesis="on")
    v = verifier(config, _mapping(config, THEIRS), {})
    v._description = {"TableName": TABLE, "LatestStreamArn": "arn:aws:dynamodb:x:1:table/t/stream/s"}
    with pytest.raises(CheckFailed, match="not the live stream"):
        v._check_mapping()


def test_the_record_level_proof_applies_to_a_kinesis_consumer_without_a_dynamodb_stream() -> None:
    # GIVEN stream=none and the built-in consumer on the Kinesis stream, with a healthy mapping
    config = cfg(kinesis="on", consumer="builtin", consumer_source="kinesis")
    v = verifier(config, _mapping(config, THEIRS), {names.OUT_KINESIS_STREAM_ARN: THEIRS})
    v._check_mapping()
    # THEN the proof is attempted (no "no change feed" skip)
    v._require_builtin("record-level stream proof")
    # AND with nothing reading any stream it is skipped
    with pytest.raises(Skip, match="no change feed"):
        verifier(cfg(), {}, {})._require_builtin("proof")


def _change(event: str, pk: str, sk: str) -> bytes:
    keys = {names.PARTITION_KEY: {"S": pk}, names.SORT_KEY: {"S": sk}}
    return json.dumps({"eventName": event, "tableName": TABLE, "dynamodb": {"Keys": keys}}).encode()


def test_the_nudge_sequence_number_is_read_off_the_kinesis_stream(moto_env: Aws) -> None:
    # GIVEN the created stream, and a write that puts other keys, then the nudge's INSERT and REMOVE
    stream = created_stream(moto_env)
    client = moto_env.client("kinesis")
    put: dict[str, str] = {}

    def write() -> None:
        client.put_record(StreamARN=stream, Data=_change("INSERT", "other", "nudge"), PartitionKey="a")
        client.put_record(StreamARN=stream, Data=b"not json", PartitionKey="b")
        client.put_record(StreamARN=stream, Data=_change("INSERT", "pk1", "nudge"), PartitionKey="c")
        put["remove"] = client.put_record(
            StreamARN=stream, Data=_change("REMOVE", "pk1", "nudge"), PartitionKey="c"
        )["SequenceNumber"]

    # WHEN verify looks for the REMOVE of pk1/nudge
    sequence = vk.capture_kinesis_sequence(
        moto_env, stream, write, {names.PARTITION_KEY: "pk1", names.SORT_KEY: "nudge"},
        bound=5, progress=QUIET, event_name="REMOVE",
    )  # fmt: skip
    # THEN it is that record's Kinesis sequence number (what the consumer's proof line spans)
    assert sequence == put["remove"]
    # AND without a stream it still writes, and knows no number
    wrote: list[bool] = []
    assert (
        vk.capture_kinesis_sequence(moto_env, None, lambda: wrote.append(True), {}, bound=1, progress=QUIET)
        is None
    )
    assert wrote == [True]


# ------------------------------------------------------------------------------------ drift, reconcile
def drifts(aws: Aws, config: DocTableConfig, outputs: dict[str, str]) -> dict[str, drift.Drift]:
    found = kinesis.kinesis_drift(aws, deployment_of(config, outputs), {"TableName": TABLE})  # type: ignore[arg-type]
    return {d.prop: d for d in found}


def test_a_disabled_or_missing_destination_is_drift_that_enable_restores(
    moto_env: Aws, destinations: Destinations
) -> None:
    outputs = {names.OUT_KINESIS_STREAM_ARN: THEIRS}
    destinations.set(THEIRS, kinesis.ACTIVE)
    assert drifts(moto_env, cfg(kinesis="on"), outputs) == {}
    for status in (kinesis.DISABLED, kinesis.ENABLE_FAILED):
        destinations.set(THEIRS, status)
        found = drifts(moto_env, cfg(kinesis="on"), outputs)[kinesis.PROP_DESTINATION]
        assert (found.live, found.declared, found.op) == (
            f"{status} {THEIRS}",
            f"ACTIVE {THEIRS}",
            kinesis.ENABLE_CALL,
        )
        assert found.params == {
            "StreamArn": THEIRS,
            "EnableKinesisStreamingConfiguration": {"ApproximateCreationDateTimePrecision": "MILLISECOND"},
        }
    destinations.streams.clear()
    assert drifts(moto_env, cfg(kinesis="on"), outputs)[kinesis.PROP_DESTINATION].live == f"absent ({THEIRS})"


def test_a_changed_timestamp_precision_is_drift_that_update_restores(
    moto_env: Aws, destinations: Destinations
) -> None:
    destinations.set(THEIRS, kinesis.ACTIVE, "MICROSECOND")
    found = drifts(moto_env, cfg(kinesis=THEIRS), {})[kinesis.PROP_PRECISION]
    assert (found.live, found.declared, found.op) == ("MICROSECOND", "MILLISECOND", kinesis.UPDATE_CALL)


def test_an_undeclared_destination_is_reported_but_left_alone(
    moto_env: Aws, destinations: Destinations
) -> None:
    destinations.set(OTHER, kinesis.ACTIVE)
    found = drifts(moto_env, cfg(), {})[kinesis.PROP_OTHERS]
    assert found.live == OTHER and found.op is None and "reconcile leaves it" in found.how
    # AND the stack's stream without its output cannot be repaired
    missing = drifts(moto_env, cfg(kinesis="on"), {})[kinesis.PROP_DESTINATION]
    assert missing.op is None and names.OUT_KINESIS_STREAM_ARN in missing.how


def test_kinesis_drift_is_the_deploys_business_when_the_knob_changes() -> None:
    assert drift.changed_by_deploy(kinesis.PROP_DESTINATION, cfg(), cfg(kinesis="on"))
    assert not drift.changed_by_deploy(
        kinesis.PROP_DESTINATION, cfg(kinesis="on"), cfg(kinesis="on", ttl="on")
    )
    # a consumer moved to another source is a new mapping: its settings are the deploy's too
    dynamo = cfg(stream="new-and-old", kinesis="on")
    assert drift.changed_by_deploy(
        "mapping:BatchSize", dynamo, cfg(stream="new-and-old", kinesis="on", consumer_source="kinesis")
    )


def test_reconcile_re_enables_a_destination_disabled_out_of_band(
    moto_env: Aws, destinations: Destinations, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a stack streaming to its own Kinesis stream (moto), whose destination someone disabled
    stream = created_stream(moto_env)
    ot.deploy(moto_env.client, cfg(kinesis="on"), extra_outputs={names.OUT_KINESIS_STREAM_ARN: stream})
    destinations.set(stream, kinesis.DISABLED)
    # WHEN reconcile runs dry
    code = main(["reconcile", "--json", "-q"])
    report = json.loads(capsys.readouterr().out)
    # THEN the drift is listed with the call, and nothing changed
    assert code == 1 and [d["subject"] for d in report["drift"]] == ["kinesis destination"]
    assert report["drift"][0]["action"].startswith(f"EnableKinesisStreamingDestination StreamArn={stream}")
    assert destinations.calls == []
    # WHEN it applies
    code = main(["reconcile", "--json", "-q", "--apply"])
    report = json.loads(capsys.readouterr().out)
    # THEN the destination is enabled again with the stack's precision, and the re-read finds no drift
    assert code == 0 and report["restored"] == ["kinesis destination"] and report["remaining"] == []
    assert destinations.calls == [
        (
            "enable",
            {
                "TableName": TABLE,
                "StreamArn": stream,
                "EnableKinesisStreamingConfiguration": {
                    "ApproximateCreationDateTimePrecision": "MILLISECOND"
                },
            },
        )
    ]
    # AND preflight reports it as drift the deploy would not repair
    destinations.set(stream, kinesis.DISABLED)
    code = main(["preflight", "--json", "-c", "kinesis=on"])
    found = json.loads(capsys.readouterr().out)
    assert [(d["code"], d["subject"]) for d in found["drift"]] == [("drift.detected", "kinesis destination")]
    assert found["destructive"] == []


# ------------------------------------------------------------------------------------------------ plan
def test_plan_adds_the_capture_units_and_the_on_demand_stream_with_their_sources() -> None:
    w = Workload(writes_per_second=100, item_kb=1.5)
    month_s = HOURS_PER_MONTH * 3600
    plan = build_plan(w, cfg(stream="new-and-old", kinesis="on"))
    usd = plan.monthly_usd
    assert usd["DynamoDB change data capture units (Kinesis)"] == pytest.approx(
        100 * 2 * month_s / 1e6 * 0.10
    )
    assert usd["Kinesis on-demand stream-hours"] == pytest.approx(730 * 0.04)
    assert usd["Kinesis data ingested"] == pytest.approx(100 * 3 * month_s / KB_PER_GB * 0.08)
    assert "Kinesis data retrieved by the mapping" not in usd  # the mapping reads the DynamoDB stream
    for name in (
        "price_cdc_per_m",
        "price_kinesis_stream_hour",
        "price_kinesis_ingest_gb",
        "price_kinesis_retrieval_gb",
    ):
        assert value(name) > 0
    # a borrowed stream: only the capture units are ours
    borrowed = build_plan(w, cfg(stream="new-and-old", kinesis=THEIRS)).monthly_usd
    assert (
        "Kinesis on-demand stream-hours" not in borrowed
        and "DynamoDB change data capture units (Kinesis)" in borrowed
    )
    # kinesis off: no Kinesis line
    assert not any("Kinesis" in name for name in build_plan(w, cfg(stream="new-and-old")).monthly_usd)


def test_plan_models_a_kinesis_mapping_with_its_own_poll_and_shard_limits() -> None:
    w = Workload(writes_per_second=100)
    config = cfg(
        kinesis="on",
        consumer="builtin",
        consumer_source="kinesis",
        parallelization_factor="2",
        batch_size="10",
    )
    plan = build_plan(w, config)
    # on-demand starts with 4 shards; one batch per shard per parallelization factor at a time
    assert plan.shards == 4 and plan.concurrent_consumers == 8
    assert plan.records_per_second_per_shard == pytest.approx(25)
    assert plan.records_per_invocation == pytest.approx(10)  # 25 records in a 1 s poll, batch_size 10
    assert "Kinesis data retrieved by the mapping" in plan.monthly_usd
    assert "DynamoDB stream reads by Lambda" not in plan.monthly_usd
    note = next(n for n in plan.notes if n.startswith("consumer_source=kinesis"))
    assert (
        "once a second" in note and "5 calls/s" in note and "shared by every shared-throughput reader" in note
    )


# -------------------------------------------------------------------------------------------- teardown
def test_teardown_proves_the_created_stream_gone_or_still_there(moto_env: Aws) -> None:
    from doctable.lifecycle import teardown

    # GIVEN the stack's stream as teardown lists it (its physical id is the stream's name)
    created_stream(moto_env, "doctable-changes")
    resource = teardown.Resource("ChangeStream", "AWS::Kinesis::Stream", "doctable-changes", retained=False)
    assert resource.type in teardown.PROBED_TYPES
    # THEN it is seen while it exists, and its absence is proven once deleted
    assert teardown._exists(moto_env, resource) is True
    moto_env.client("kinesis").delete_stream(StreamName="doctable-changes")
    assert teardown._exists(moto_env, resource) is False


def test_the_ledger_records_the_kinesis_stream_among_the_realized_ids(moto_env: Aws) -> None:
    ot.deploy(moto_env.client, cfg(kinesis="on"), extra_outputs={names.OUT_KINESIS_STREAM_ARN: THEIRS})
    assert describe_stack(moto_env, cfg(kinesis="on")).realized()["kinesis_stream_arn"] == THEIRS
    # without the output (not deployed yet), the knob's borrowed stream; with kinesis off, none
    assert (
        describe_stack(moto_env, cfg(table_base="other", kinesis=OTHER)).realized()["kinesis_stream_arn"]
        == OTHER
    )
    assert describe_stack(moto_env, cfg(table_base="other")).realized()["kinesis_stream_arn"] is None


def test_a_borrowed_kinesis_stream_must_exist_active_in_the_tables_region(moto_env: Aws) -> None:
    # GIVEN kinesis=<ARN> of a stream not created yet: the deploy would fail enabling the destination
    findings = {f.code: f for f in p.run_preflight(moto_env, describe_stack(moto_env, cfg(kinesis=THEIRS)))}
    assert (findings["kinesis.stream_missing"].level, findings["kinesis.stream_missing"].after) == (
        Level.STOP,
        THEIRS,
    )
    # AND a stream in another region stops too
    elsewhere = THEIRS.replace(REGION, "us-west-2")
    (other,) = borrowed_kinesis(moto_env, elsewhere)
    assert (other.level, other.code, other.before) == (Level.STOP, "kinesis.stream_other_region", "us-west-2")
    # AND once it exists and is ACTIVE, it is OK
    arn = created_stream(moto_env, "theirs")
    (ok,) = borrowed_kinesis(moto_env, arn)
    assert (ok.level, ok.code, ok.before) == (Level.OK, "kinesis.ok", kinesis.ACTIVE)


def borrowed_kinesis(aws: Aws, arn: str) -> list[Finding]:
    from doctable.capabilities.borrowed import kinesis_stream_findings

    return kinesis_stream_findings(aws, cfg(kinesis=arn))


def test_a_created_or_deleted_mapping_on_kinesis_has_its_code_and_positions() -> None:
    reads = cfg(kinesis="on", consumer="builtin", consumer_source="kinesis")
    created = mapping_change(cfg(kinesis="on"), reads)
    assert created is not None and (created.code, created.before, created.after) == (
        CREATED,
        None,
        "TRIM_HORIZON",
    )
    deleted = mapping_change(cfg(stream="new-and-old"), cfg(stream="new-and-old", consumer="none"))
    assert deleted is not None and (deleted.code, deleted.before, deleted.after) == (
        DELETED,
        "TRIM_HORIZON",
        None,
    )
    assert deleted.finding().destructive
