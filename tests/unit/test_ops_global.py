"""The operations commands on a global table (``replicas``): preflight's replica and table-type findings, verify's
replica checks, teardown's replica stacks. moto in process with the local AWS's global tables
(local/services/cloudformation/global_table.py, dynamodb_replica_api.py), the home region ``REGION`` and two replica regions."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, cast

import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from contract import names
from contract.findings import Finding, Level
from contract.iam import policies as iam
from contract.knobs import DocTableConfig
from contract.shape import GLOBAL_TABLE_TYPE, TABLE_TYPE, table_shape
from doctable.capabilities.drift import detect
from doctable.capabilities.ownership import require_owned_table
from doctable.capabilities.protocol import observe_table, replica_stack
from doctable.core.aws import Aws
from doctable.core.context import describe_stack
from doctable.core.deployment import Deployment, use_deployed_knobs
from doctable.core.errors import RefusedError
from doctable.core.ledger import build_ledger
from doctable.core.live import live_replica_regions
from doctable.core.render import Progress
from doctable.lifecycle import global_table, teardown
from doctable.lifecycle import preflight as p
from doctable.lifecycle.deploy import gate
from doctable.lifecycle.teardown import plan_teardown, run_teardown
from doctable.verify.checks import Verifier, expectations
from doctable.verify.expect import writes
from doctable.verify.items import Scratch
from doctable.verify.record import FAIL, PASS, CheckFailed, Row
from doctable.verify.replica_delivery import Region, delivery_checks
from local.pollers import streams as esm
from local.runtime.runner import InvokeResult
from local.services.awslambda import mappings
from local.services.dynamodb import replication as dynamodb_replicas
from tests.support import ops as ot
from tests.support.ops import REGION
from tests.unit.test_local_kinesis_destination import isolated_services

pytestmark = pytest.mark.unit

B, C = "us-west-2", "us-east-1"  # the replica regions; REGION is the home one


class NoRunner:
    """A stand-in function runner: the mappings' functions run nothing."""

    def invoke(self, fn: Any, event: Any, iterator_age_ms: float | None = None) -> InvokeResult:
        return InvokeResult(b"null", None, "", "r", 1.0)

    def prewarm(self, fn: Any) -> None:
        return None


@pytest.fixture
def global_env(ops_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    """GIVEN ``ops_env`` with moto in process and the local AWS's global tables and mappings; the commands' Aws
    session."""
    dynamodb_replicas.reset()
    runner = NoRunner()
    monkeypatch.setattr(esm, "get_runner", lambda: runner)
    monkeypatch.setattr(mappings, "get_runner", lambda: runner)
    manager = esm.MappingManager()
    monkeypatch.setattr(esm, "_MANAGER", manager)
    with isolated_services(), mock_aws():
        try:
            yield Aws.connect()
        finally:
            manager.shutdown()
            dynamodb_replicas.reset()


QUIET = Progress("doctable teardown", quiet=True)


def knobs(*replicas: str, **more: str) -> DocTableConfig:
    return ot.config_of(stream="new-and-old", replicas=",".join(replicas) or "none", **more)


def global_template(config: DocTableConfig) -> dict[str, Any]:
    """The home stack with its AWS::DynamoDB::GlobalTable (a replica in REGION and each of ``config.replicas``)."""
    properties = ot.table_properties(config, table_shape(config))
    tags = properties.pop("Tags")
    properties.pop("BillingMode")
    properties["BillingMode"] = "PAY_PER_REQUEST"
    protection = table_shape(config).deletion_protection
    properties["Replicas"] = [
        {"Region": r, "Tags": tags, "DeletionProtectionEnabled": protection}
        for r in (REGION, *config.replicas)
    ]
    resource = {"Type": GLOBAL_TABLE_TYPE, "DeletionPolicy": "Delete", "Properties": properties}
    outputs = {
        names.OUT_TABLE_NAME: {"Value": {"Ref": names.ID_TABLE}},
        names.OUT_TABLE_ARN: {"Value": {"Fn::GetAtt": [names.ID_TABLE, "Arn"]}},
        names.OUT_STREAM_ARN: {"Value": {"Fn::GetAtt": [names.ID_TABLE, "StreamArn"]}},
        names.OUT_KNOBS: {"Value": config.deployed_record()},
        names.OUT_REPLICA_REGIONS: {"Value": ",".join(config.replicas)},
    }
    return {"Resources": {names.ID_TABLE: resource}, "Outputs": outputs}


def deploy_global(aws: Aws, config: DocTableConfig) -> None:
    """The home stack of ``config``'s global table, created in moto (the local AWS's GlobalTable handler)."""
    cfn = aws.client("cloudformation")
    cfn.create_stack(StackName=config.stack_name, TemplateBody=json.dumps(global_template(config)))
    status = cfn.describe_stacks(StackName=config.stack_name)["Stacks"][0]["StackStatus"]
    assert status == "CREATE_COMPLETE", status


def deployment_of(aws: Aws, config: DocTableConfig) -> Deployment:
    """The deployment as the commands read it: the stack's recorded knobs the truth, ``config`` the target."""
    return use_deployed_knobs(describe_stack(aws, config))


def by_code(findings: list[Finding]) -> dict[str, Finding]:
    return {f.code: f for f in findings}


# ------------------------------------------------------------------------------------------ preflight
def test_the_live_replica_regions_are_the_home_tables_replicas_but_the_home_region(global_env: Aws) -> None:
    # GIVEN a global table in REGION with replicas in B and C
    deploy_global(global_env, knobs(B, C))
    # WHEN the home table is described
    table = global_env.client("dynamodb").describe_table(TableName="items-dev")["Table"]
    # THEN its live replica regions are B and C
    assert live_replica_regions(table, REGION) == tuple(sorted((B, C)))


def test_a_replica_region_added_is_an_online_change(global_env: Aws) -> None:
    # GIVEN a global table with a replica in B, and knobs that now declare B and C
    deploy_global(global_env, knobs(B))
    # WHEN preflight observes
    findings = p.run_preflight(global_env, deployment_of(global_env, knobs(B, C)))
    # THEN C is a replica added: a change, not destructive, its region as the value
    added = by_code(findings)["replica.added"]
    assert (added.level, added.destructive, added.before, added.after) == (Level.CHANGE, False, None, C)
    assert [f.code for f in findings if f.level is not Level.OK] == ["replica.added"]


def test_a_replica_region_removed_is_destructive(global_env: Aws) -> None:
    # GIVEN a global table with replicas in B and C, and knobs that now declare B only
    deploy_global(global_env, knobs(B, C))
    # WHEN preflight observes
    findings = p.run_preflight(global_env, deployment_of(global_env, knobs(B)))
    # THEN C is a replica removed: destructive, so the deploy gate asks first
    removed = by_code(findings)["replica.removed"]
    assert (removed.level, removed.destructive, removed.before, removed.after) == (
        Level.CHANGE,
        True,
        C,
        None,
    )
    assert [f.code for f in p.destructive(findings)] == ["replica.removed"]


def test_a_replica_added_behind_the_stack_is_drift(global_env: Aws) -> None:
    # GIVEN a global table deployed with a replica in B, and C added by hand
    deploy_global(global_env, knobs(B))
    global_env.client("dynamodb").update_table(
        TableName="items-dev", ReplicaUpdates=[{"Create": {"RegionName": C}}]
    )
    # WHEN preflight observes with the knobs unchanged
    findings = p.run_preflight(global_env, deployment_of(global_env, knobs(B)))
    # THEN C is drift the deploy leaves (its replicas knob does not change), not a change of the deploy
    assert [(f.level, f.code, f.before) for f in findings if f.level is Level.DRIFT] == [
        (Level.DRIFT, "drift.detected", C)
    ]
    assert not p.destructive(findings)


def test_a_single_region_table_declared_global_is_converted(moto_env: Aws) -> None:
    # GIVEN the stack's single-region table, and knobs that now declare a replica
    ot.deploy(moto_env.client, knobs())
    # WHEN preflight observes
    findings = p.run_preflight(moto_env, deployment_of(moto_env, knobs(B)))
    # THEN the type change is a warning, not destructive, with both types as values: the deploy converts it
    converted = by_code(findings)["table.to_global"]
    assert (converted.level, converted.destructive) == (Level.WARN, False)
    assert (converted.before, converted.after) == (TABLE_TYPE, GLOBAL_TABLE_TYPE)
    assert "items kept" in converted.effect and "4 CloudFormation operations" in converted.effect
    assert not [f for f in findings if f.level is Level.STOP]
    # AND the deploy starts the conversion at its first step
    assert global_table.start_step(findings) == "retain"


def test_a_global_table_declared_single_region_is_refused(global_env: Aws) -> None:
    # GIVEN the stack's global table, and knobs that now declare no replica
    deploy_global(global_env, knobs(B))
    # WHEN preflight observes
    findings = p.run_preflight(global_env, deployment_of(global_env, knobs()))
    # THEN the type change stops the deploy, and no replica finding is given besides it
    converted = by_code(findings)["table.to_single"]
    assert (converted.level, converted.destructive) == (Level.STOP, True)
    assert (converted.before, converted.after) == (GLOBAL_TABLE_TYPE, TABLE_TYPE)
    assert not {"replica.added", "replica.removed"} & set(by_code(findings))


def test_a_global_table_matching_its_knobs_is_unchanged(global_env: Aws) -> None:
    # GIVEN a global table deployed with replicas in B and C, the knobs unchanged
    deploy_global(global_env, knobs(B, C))
    # WHEN preflight observes THEN the table is the stack's and nothing changes
    findings = p.run_preflight(global_env, deployment_of(global_env, knobs(B, C)))
    assert [(f.level, f.code) for f in findings] == [(Level.OK, "table.unchanged")]


# ------------------------------------------------------------------------------------------ verify
def stream_reader_function(aws: Aws, region: str, name: str) -> str:
    """In ``region``: a function ``name`` whose role may read DynamoDB streams (a mapping's target); its ARN."""
    import io
    import zipfile

    there = aws.in_region(region)
    iam = there.client("iam")
    role = iam.create_role(RoleName=f"{name}-{region}", AssumeRolePolicyDocument="{}")["Role"]
    reads = [
        "dynamodb:DescribeStream",
        "dynamodb:GetRecords",
        "dynamodb:GetShardIterator",
        "dynamodb:ListStreams",
    ]
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": reads, "Resource": "*"}]}
    iam.put_role_policy(RoleName=role["RoleName"], PolicyName="streams", PolicyDocument=json.dumps(policy))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return {}\n")
    function = there.client("lambda").create_function(
        FunctionName=f"{name}-{region}", Runtime=names.LAMBDA_RUNTIME, Role=role["Arn"],
        Handler="handler.handler", Code={"ZipFile": buffer.getvalue()},
    )  # fmt: skip
    return str(function["FunctionArn"])


def wire_replica_stack(aws: Aws, config: DocTableConfig, region: str, *, enabled: bool = True) -> str:
    """In ``region``: a consumer function, its mapping on the replica's stream (``enabled`` or not), and the replica
    stack ``config.replica_stack_name(region)`` whose outputs name them; return the mapping's UUID."""
    there = aws.in_region(region)
    function = {"FunctionArn": stream_reader_function(aws, region, "consumer")}
    table = there.client("dynamodb").describe_table(TableName=config.table_name)["Table"]
    mapping = there.client("lambda").create_event_source_mapping(
        EventSourceArn=table["LatestStreamArn"],
        FunctionName=function["FunctionArn"],
        StartingPosition="TRIM_HORIZON",
        Enabled=enabled,
    )
    outputs = {
        names.OUT_MAPPING_UUID: {"Value": mapping["UUID"]},
        names.OUT_CONSUMER_LOG_GROUP: {"Value": f"consumer-{region}-logs"},
    }
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}, "Outputs": outputs}
    there.client("cloudformation").create_stack(
        StackName=config.replica_stack_name(region), TemplateBody=json.dumps(template)
    )
    return str(mapping["UUID"])


def verify_rows(aws: Aws, config: DocTableConfig) -> dict[str, Row]:
    """The rows of a read-only verify of ``config``'s deployment, by id."""
    verifier = Verifier(aws, deployment_of(aws, config), read_only=True)
    return {row.id: row for row in verifier.run()}


def test_verify_checks_every_replica_region_and_its_consumer(global_env: Aws) -> None:
    # GIVEN a global table with replicas in B and C, each region's replica stack with its mapping on its stream
    config = knobs(B, C)
    deploy_global(global_env, config)
    for region in (B, C):
        wire_replica_stack(global_env, config, region)
    # WHEN verify runs read-only
    rows = verify_rows(global_env, config)
    # THEN the replicas row and each region's consumer row pass
    ids = ["replicas", f"replica-consumer:{B}", f"replica-consumer:{C}"]
    assert [rows[i].result for i in ids] == [PASS, PASS, PASS]


def test_each_replica_has_the_declared_class_protection_and_pitr_or_its_row_fails(global_env: Aws) -> None:
    # GIVEN a global table declared with PITR (35 days) and deletion protection, replicas in B and C
    config = knobs(B, C, pitr="on", deletion_protection="on")
    deploy_global(global_env, config)
    ddb = {r: global_env.in_region(r).client("dynamodb") for r in (REGION, B, C)}
    for region in (REGION, B, C):
        ddb[region].update_continuous_backups(
            TableName=config.table_name,
            PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True},
        )
    declared = "class STANDARD; deletion protection on; PITR on (35 days)"
    rows = verify_rows(global_env, config)
    assert [(rows[f"replica-options:{r}"].result, rows[f"replica-options:{r}"].observed) for r in (B, C)] == [
        (PASS, declared),
        (PASS, declared),
    ]
    # WHEN PITR is turned off on C's replica and its deletion protection lifted, behind the stack
    ddb[C].update_continuous_backups(
        TableName=config.table_name,
        PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": False},
    )
    ddb[C].update_table(TableName=config.table_name, DeletionProtectionEnabled=False)
    rows = verify_rows(global_env, config)
    # THEN C's row fails showing what it found, and B's still passes
    assert (rows[f"replica-options:{B}"].result, rows[f"replica-options:{C}"].result) == (PASS, FAIL)
    assert rows[f"replica-options:{C}"].observed == "class STANDARD; deletion protection off; PITR off"


def test_the_ledger_records_the_replica_regions_and_the_replica_rows_of_the_last_verify(
    global_env: Aws,
) -> None:
    # GIVEN a global table with replicas in B and C, verified read-only
    config = knobs(B, C)
    deploy_global(global_env, config)
    deployment = deployment_of(global_env, config)
    rows = Verifier(global_env, deployment, read_only=True).run()
    record = {
        "region": deployment.region,
        "account": deployment.account,
        "stack_id": deployment.stack_id,
        "knobs": config.as_knobs(),
        "passed": False,
        "rows": [r.as_dict() for r in rows],
    }
    # WHEN the ledger is built from the deployment and that verify
    entry = build_ledger(deployment, record, None, resolved_by="test")
    # THEN it names the replica regions the stack recorded, and keeps each replica region's rows
    assert entry["realized"]["replica_regions"] == f"{B},{C}"
    kept = {row["id"] for row in entry["last_verified"]["rows"]}
    assert {f"replica-options:{B}", f"replica-options:{C}", "replicas"} <= kept


def test_verify_fails_a_missing_replica_stack_and_an_undeclared_replica(global_env: Aws) -> None:
    # GIVEN a global table deployed with a replica in B and no replica stack, then C added by hand
    config = knobs(B)
    deploy_global(global_env, config)
    global_env.client("dynamodb").update_table(
        TableName=config.table_name, ReplicaUpdates=[{"Create": {"RegionName": C}}]
    )
    # WHEN verify runs read-only
    rows = verify_rows(global_env, config)
    # THEN the replicas row fails (C is not declared) and B's consumer row fails (no stack there)
    assert (rows["replicas"].result, rows[f"replica-consumer:{B}"].result) == (FAIL, FAIL)
    assert f"replica-consumer:{C}" not in rows


def test_verify_fails_a_disabled_replica_mapping(global_env: Aws) -> None:
    # GIVEN a global table with a replica in B whose replica stack's mapping is disabled
    config = knobs(B)
    deploy_global(global_env, config)
    wire_replica_stack(global_env, config, B, enabled=False)
    # WHEN verify runs read-only THEN B's consumer row fails
    assert verify_rows(global_env, config)[f"replica-consumer:{B}"].result == FAIL


def test_a_single_region_table_has_no_replica_rows() -> None:
    # GIVEN knobs without replicas THEN verify plans no replica row
    planned = {row_id for row_id, _, _ in expectations(knobs()).rows()}
    assert not {i for i in planned if i.startswith("replica")}


DELIVERY = [f"replica-delivery:{r}" for r in (REGION, B, C)]


def test_a_global_table_plans_a_writing_nudge_row_per_region() -> None:
    # GIVEN a global table in REGION with replicas in B and C, its consumer built in
    expect = expectations(knobs(B, C), REGION)
    # THEN verify plans one replica-delivery row per region, home first, after every other row
    ids = [row_id for row_id, _, _ in expect.rows()]
    assert ids[-3:] == DELIVERY
    # AND each writes: a read-only run skips them all
    checked, skipped = expect.split(read_only=True)
    assert all(writes(i) for i in DELIVERY)
    assert [r[0] for r in skipped][-3:] == DELIVERY and not {r[0] for r in checked} & set(DELIVERY)


@pytest.mark.parametrize(
    ("config", "home"),
    [(knobs(), REGION), (knobs(B, consumer="none"), REGION), (knobs(B), None)],
    ids=["single-region", "no-consumer", "home-unknown"],
)
def test_no_nudge_row_without_replicas_a_built_in_consumer_or_a_home_region(
    config: DocTableConfig, home: str | None
) -> None:
    planned = [row_id for row_id, _, _ in expectations(config, home).rows()]
    assert not [i for i in planned if i.startswith("replica-delivery:")]


def test_a_read_only_verify_lists_the_nudge_rows_as_skipped(global_env: Aws) -> None:
    # GIVEN a deployed global table with its replica stacks
    config = knobs(B, C)
    deploy_global(global_env, config)
    for region in (B, C):
        wire_replica_stack(global_env, config, region)
    # WHEN verify runs read-only THEN it runs no nudge, and lists each as skipped
    verifier = Verifier(global_env, deployment_of(global_env, config), read_only=True)
    rows = {row.id for row in verifier.run()}
    assert not rows & set(DELIVERY)
    assert [row_id for row_id, _, _ in verifier.skipped][-3:] == DELIVERY


@dataclass
class NudgeRun:
    """The part of a verify run the nudges take (replica_delivery.VerifyRun)."""

    aws: Aws
    deployment: Deployment
    pk: str = "doctable-verify-test"
    scratch: Scratch = field(default_factory=Scratch)
    progress: Progress = field(default_factory=lambda: Progress("doctable verify", quiet=True))
    timeout: float = 3.0
    settle: float = 0.0
    wall: Callable[[], float] = time.time


def proof_line(aws: Aws, group: str, table: str) -> None:
    """A consumer's proof line in ``group`` (``aws``'s region), stamped a minute ahead: after any nudge."""
    logs = aws.client("logs")
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName="s")
    line = {"message": names.PROOF_LOG_MESSAGE, "table_name": table, "record_count": 1}
    event = {"timestamp": int((time.time() + 60) * 1000), "message": json.dumps(line)}
    logs.put_log_events(logGroupName=group, logStreamName="s", logEvents=[event])


def nudged(aws: Aws, proven: tuple[str, ...], timeout: float = 3.0) -> dict[str, Row]:
    """The nudge rows of a global table in REGION, B and C whose consumers in ``proven`` logged a proof line."""
    config = knobs(B, C)
    deploy_global(aws, config)
    for region in (B, C):
        wire_replica_stack(aws, config, region)
    deployment = deployment_of(aws, config)
    deployment.outputs[names.OUT_CONSUMER_LOG_GROUP] = "consumer-home-logs"
    groups = {REGION: "consumer-home-logs", B: f"consumer-{B}-logs", C: f"consumer-{C}-logs"}
    for region in proven:
        proof_line(aws.in_region(region), groups[region], config.table_name)
    run = NudgeRun(aws, deployment, timeout=timeout)
    rows = {}
    for row_id, check in delivery_checks(run).items():
        try:
            rows[row_id] = Row(row_id, row_id, "", check(), PASS)
        except CheckFailed as exc:
            rows[row_id] = Row(row_id, row_id, "", str(exc), FAIL)
    # every nudge is gone from every region once replication has caught up
    for region in (REGION, B, C):
        ddb = aws.in_region(region).client("dynamodb")

        def empty(ddb: Any = ddb) -> bool | None:
            return True if not ddb.scan(TableName=config.table_name).get("Items") else None

        assert run.progress.wait("the nudges to go", empty, 15.0)[0], region
    return rows


def test_a_nudge_written_in_each_region_reaches_and_is_proven_in_every_region(global_env: Aws) -> None:
    # GIVEN every region's consumer has logged a proof line after the nudges
    # WHEN the nudge rows run
    rows = nudged(global_env, (REGION, B, C))
    # THEN each passes, and says for every region how long it took
    assert [rows[i].result for i in DELIVERY] == [PASS, PASS, PASS], rows
    for row in rows.values():
        assert all(f"{r}: " in row.observed for r in (REGION, B, C))


def test_a_region_whose_consumer_proves_nothing_fails_every_nudge_naming_it(global_env: Aws) -> None:
    # GIVEN C's consumer logged no proof line
    rows = nudged(global_env, (REGION, B))
    # THEN every nudge row fails, naming C and no other region
    assert [rows[i].result for i in DELIVERY] == [FAIL, FAIL, FAIL]
    assert all(C in rows[i].observed and B not in rows[i].observed for i in DELIVERY)


def test_a_nudge_not_replicated_in_time_fails_naming_the_regions_without_it(global_env: Aws) -> None:
    # GIVEN replication slower than verify's bound
    before = dynamodb_replicas.REGISTRY.delay * 1000
    dynamodb_replicas.set_delay_ms(4_000)
    try:
        rows = nudged(global_env, (REGION, B, C), timeout=1.0)
    finally:
        dynamodb_replicas.set_delay_ms(before)
    # THEN each nudge row fails, naming the two regions that did not return it
    for origin in (REGION, B, C):
        row = rows[f"replica-delivery:{origin}"]
        others = [r for r in (REGION, B, C) if r != origin]
        assert row.result == FAIL and all(r in row.observed for r in others) and origin not in row.observed


def test_the_nudges_record_is_found_on_a_regions_stream_by_its_key_and_event() -> None:
    # GIVEN a region following one shard whose records are another item's, then the nudge's INSERT
    key = {names.PARTITION_KEY: "doctable-verify-x", names.SORT_KEY: "delivery-a"}
    typed = {k: {"S": v} for k, v in key.items()}
    other = {
        "eventName": "INSERT",
        "dynamodb": {"Keys": {**typed, names.SORT_KEY: {"S": "other"}}, "SequenceNumber": "1"},
    }
    ours = {"eventName": "INSERT", "dynamodb": {"Keys": typed, "SequenceNumber": "7"}}
    pages = {
        "it0": {"Records": [other], "NextShardIterator": "it1"},
        "it1": {"Records": [ours], "NextShardIterator": "it2"},
    }
    streams = SimpleNamespace(get_records=lambda ShardIterator, Limit: pages[ShardIterator])
    region = Region("a", cast(Aws, SimpleNamespace(client=lambda name: streams)), "group", "arn", ["it0"])
    # WHEN it reads forward THEN the first read moves on, the second notes the nudge's sequence number and stops
    region.read_stream(key, "INSERT")
    assert (region.sequence, region.iterators) == (None, ["it1"])
    region.read_stream(key, "INSERT")
    assert (region.sequence, region.iterators) == ("7", [])
    # AND a REMOVE-filtered mapping's nudge is not its INSERT
    region.iterators = ["it1"]
    region.sequence = None
    region.read_stream(key, "REMOVE")
    assert region.sequence is None


# ------------------------------------------------------------------------------------------ IAM
ACCOUNT = "123456789012"


def policy(role: str, command: str, config: DocTableConfig) -> dict[str, iam.Statement]:
    return {s.sid: s for s in iam.role_statements(role, iam.Target(config, ACCOUNT, REGION), command)}


def test_the_replica_checks_read_the_table_and_the_replica_stack_in_each_replica_region() -> None:
    # GIVEN the reader's verify (read-only) of a global table with replicas in B and C
    found = policy("reader", "verify", knobs(B, C))
    # THEN it reads the table (its description and its PITR) in each replica region, and each replica stack,
    # nothing else there
    assert found["ReadReplicaTables"].resources == tuple(
        f"arn:aws:dynamodb:{r}:{ACCOUNT}:table/items-dev" for r in (B, C)
    )
    assert found["ReadReplicaStacks"].resources == tuple(
        f"arn:aws:cloudformation:{r}:{ACCOUNT}:stack/doctable-items-dev-{r}/*" for r in (B, C)
    )
    assert found["ReadReplicaMappings"].actions == ("lambda:GetEventSourceMapping",)
    replica_actions = {a for sid in ("ReadReplicaTables", "ReadReplicaStacks") for a in found[sid].actions}
    assert replica_actions == {
        "dynamodb:DescribeTable",
        "dynamodb:DescribeContinuousBackups",
        "cloudformation:DescribeStacks",
    }


def test_the_full_verify_may_write_verify_test_items_and_read_proof_lines_in_each_replica_region() -> None:
    # GIVEN the operator's verify of a global table with replicas in B and C, and the reader's (read-only)
    found = policy("operator", "verify", knobs(B, C))
    reader = policy("reader", "verify", knobs(B, C))
    # THEN it puts, gets and deletes items in each replica, under verify's own partition keys only
    items = found["VerifyReplicaTestItemsOnly"]
    assert set(items.actions) == {"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:DeleteItem"}
    assert items.resources == tuple(f"arn:aws:dynamodb:{r}:{ACCOUNT}:table/items-dev" for r in (B, C))
    assert items.condition == found["VerifyTestItemsOnly"].condition
    # AND reads each replica stream's records and each replica stack consumer's log group
    assert found["ReadReplicaStreamRecord"].resources == tuple(
        f"arn:aws:dynamodb:{r}:{ACCOUNT}:table/items-dev/stream/*" for r in (B, C)
    )
    assert found["ReadReplicaProofLines"].actions == ("logs:FilterLogEvents",)
    assert found["ReadReplicaProofLines"].resources == tuple(
        f"arn:aws:logs:{r}:{ACCOUNT}:log-group:doctable-items-dev-{r}-*" for r in (B, C)
    )
    # AND the read-only verify has none of them
    assert not {"VerifyReplicaTestItemsOnly", "ReadReplicaStreamRecord", "ReadReplicaProofLines"} & set(
        reader
    )


def test_teardown_may_delete_the_replica_stacks_and_a_single_region_table_has_no_replica_statement() -> None:
    # GIVEN the operator's teardown of a global table, and of a single-region one
    found = policy("operator", "teardown", knobs(B))
    single = policy("operator", "teardown", knobs())
    # THEN the global one deletes the replica stack in B; the single-region one names no replica
    assert "cloudformation:DeleteStack" in found["DeleteReplicaStacks"].actions
    assert found["DeleteReplicaStacks"].resources == (
        f"arn:aws:cloudformation:{B}:{ACCOUNT}:stack/doctable-items-dev-{B}/*",
    )
    assert not {sid for sid in single if "Replica" in sid}


# ------------------------------------------------------------------------------------------ teardown
def stack_exists(aws: Aws, name: str) -> bool:
    return replica_stack(aws, name) is not None


def test_teardown_deletes_the_replica_stacks_before_the_home_stack(global_env: Aws) -> None:
    # GIVEN a global table with replicas in B and C, each region's replica stack deployed
    config = knobs(B, C)
    deploy_global(global_env, config)
    for region in (B, C):
        wire_replica_stack(global_env, config, region)
    deployment = deployment_of(global_env, config)
    # WHEN the environment is torn down
    plan, outcome = run_teardown(
        global_env, deployment, assume_yes=True, lift=False, timeout=30, progress=Progress("t", quiet=True)
    )
    # THEN the plan names both replica stacks, and they and the home stack are gone
    assert [(s.region, s.name) for s in plan.replica_stacks] == [
        (r, config.replica_stack_name(r)) for r in (B, C)
    ]
    assert outcome.clean and not outcome.still_present
    assert [stack_exists(global_env.in_region(r), config.replica_stack_name(r)) for r in (B, C)] == [
        False,
        False,
    ]
    assert not stack_exists(global_env, config.stack_name)
    # AND the replica stacks were removed before the home one
    stacks = [r for r in outcome.removed if r.startswith("AWS::CloudFormation::Stack")]
    assert stacks == [
        *(f"AWS::CloudFormation::Stack {config.replica_stack_name(r)} ({r})" for r in (B, C)),
        f"AWS::CloudFormation::Stack {config.stack_name}",
    ]


def test_teardown_finds_a_replica_stack_of_a_region_only_the_table_lists(global_env: Aws) -> None:
    # GIVEN a global table deployed with B, a replica stack in C, and C added to the table by hand
    config = knobs(B)
    deploy_global(global_env, config)
    global_env.client("dynamodb").update_table(
        TableName=config.table_name, ReplicaUpdates=[{"Create": {"RegionName": C}}]
    )
    wire_replica_stack(global_env, config, C)
    # WHEN the teardown is planned THEN C's stack is among those deleted first
    plan = plan_teardown(global_env, deployment_of(global_env, config))
    assert [s.region for s in plan.replica_stacks] == [C]


# ------------------------------------------------------------------------------------------ the gate, reconcile
def test_the_deploy_gate_refuses_a_replica_removed_without_a_yes(global_env: Aws) -> None:
    # GIVEN preflight's findings for a replica region removed (C) and one added (B)
    deploy_global(global_env, knobs(C))
    findings = p.run_preflight(global_env, deployment_of(global_env, knobs(B)))
    # WHEN the deploy gate runs without a terminal THEN only the removal blocks it
    blocked = gate(findings, allow=False, interactive=False)
    assert [(f.code, f.before) for f in blocked] == [("replica.removed", C)]


def test_the_stacks_global_table_is_owned_and_has_no_drift(global_env: Aws) -> None:
    # GIVEN a global table deployed as its knobs declare
    config = knobs(B)
    deploy_global(global_env, config)
    deployment = deployment_of(global_env, config)
    # WHEN reconcile reads it THEN the stack owns it (a GlobalTable resource) and nothing drifted
    table = require_owned_table(global_env, deployment, doing="reconcile it")
    observed = observe_table(global_env, deployment, table)
    assert observed.table_type == GLOBAL_TABLE_TYPE
    assert detect(observed) == []


def test_teardown_lifts_every_replicas_deletion_protection_when_told(global_env: Aws) -> None:
    # GIVEN a protected global table with a replica in B (each replica protected)
    config = knobs(B, deletion_protection="on")
    deploy_global(global_env, config)
    deployment = deployment_of(global_env, config)
    # WHEN it is torn down without --lift-deletion-protection THEN it is refused, the stack kept
    with pytest.raises(RefusedError):
        run_teardown(global_env, deployment, assume_yes=True, lift=False, timeout=30, progress=QUIET)
    assert stack_exists(global_env, config.stack_name)
    # WHEN it is torn down with it THEN every replica's protection is lifted and everything is gone
    _, outcome = run_teardown(global_env, deployment, assume_yes=True, lift=True, timeout=30, progress=QUIET)
    assert outcome.clean and not stack_exists(global_env, config.stack_name)
    assert config.table_name not in global_env.in_region(B).client("dynamodb").list_tables()["TableNames"]


def test_a_teardown_resumed_after_the_home_table_was_lifted_lifts_the_replicas_too(global_env: Aws) -> None:
    # GIVEN a protected global table whose home table's protection an earlier, refused teardown already lifted
    config = knobs(B, deletion_protection="on")
    deploy_global(global_env, config)
    deployment = deployment_of(global_env, config)
    global_env.client("dynamodb").update_table(TableName=config.table_name, DeletionProtectionEnabled=False)
    replica = global_env.in_region(B).client("dynamodb")
    assert replica.describe_table(TableName=config.table_name)["Table"]["DeletionProtectionEnabled"] is True
    # WHEN it is torn down with --lift-deletion-protection
    _, outcome = run_teardown(global_env, deployment, assume_yes=True, lift=True, timeout=30, progress=QUIET)
    # THEN the replica's protection is lifted too, and the stack and every replica are gone
    assert outcome.clean and not stack_exists(global_env, config.stack_name), outcome
    assert f"the replicas of {config.table_name} in {B}" in outcome.notes[0]
    assert config.table_name not in replica.list_tables()["TableNames"]


def test_a_failed_stack_deletion_is_reported_without_waiting_for_what_it_left(
    global_env: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a protected global table whose replica keeps its protection (the teardown is not told to lift it)
    config = knobs(B, deletion_protection="on")
    deploy_global(global_env, config)
    deployment = deployment_of(global_env, config)
    global_env.client("dynamodb").update_table(TableName=config.table_name, DeletionProtectionEnabled=False)
    waits: list[float] = []
    probe = teardown._wait_absent

    def recorded(aws: Aws, resource: Any, timeout: float, progress: Progress) -> bool:
        waits.append(timeout)
        return probe(aws, resource, timeout, progress)

    monkeypatch.setattr(teardown, "_wait_absent", recorded)
    # WHEN the stack is torn down without --lift-deletion-protection (the home table is no longer protected)
    _, outcome = run_teardown(
        global_env, deployment, assume_yes=True, lift=False, timeout=600, progress=QUIET
    )
    # THEN CloudFormation's failure is reported and what it left is probed once, not awaited for the timeout
    assert not outcome.clean and any(
        line.startswith(f"stack {config.stack_name}") for line in outcome.still_present
    )
    assert waits and set(waits) == {0}, waits


def test_teardown_of_a_protected_global_table_may_lift_each_replicas_protection() -> None:
    found = policy("operator", "teardown", knobs(B, deletion_protection="on"))
    assert found["LiftReplicaDeletionProtection"].resources == (
        f"arn:aws:dynamodb:{B}:{ACCOUNT}:table/items-dev",
    )


def test_a_replica_stack_teardown_cannot_read_is_named_not_skipped_silently(
    global_env: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a global table deployed with B, C added by hand, and C's stacks unreadable (AccessDenied)
    config = knobs(B)
    deploy_global(global_env, config)
    global_env.client("dynamodb").update_table(
        TableName=config.table_name, ReplicaUpdates=[{"Create": {"RegionName": C}}]
    )

    def denied_in_c(aws: Aws, name: str) -> dict[str, Any] | None:
        if aws.region == C:
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "DescribeStacks")
        return replica_stack(aws, name)

    monkeypatch.setattr(global_table, "replica_stack", denied_in_c)
    # WHEN the teardown is planned THEN the plan carries one note naming C's region
    plan = plan_teardown(global_env, deployment_of(global_env, config))
    assert [C in note for note in plan.notes] == [True]
