"""A subscriber's mapping changed behind the stack: preflight names each drift with its own code, reconcile restores
what it can in place (the calls it makes, the re-read after them) and says what only a deploy can (moto)."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contract import names
from contract.knobs import DocTableConfig, resolve_config
from contract.shape import mapping_shape
from doctable.capabilities.mapping import (
    SubscriberDrift,
    rewritten_by_deploy,
    subscriber_drift,
    subscriber_shape,
)
from doctable.capabilities.repairs import TAG_MAPPING, UPDATE_MAPPING, plan_mapping_repairs
from doctable.cli import main
from doctable.core.aws import Aws
from doctable.core.context import describe_stack
from doctable.core.deployment import use_deployed_knobs
from tests.support import ops as ot

pytestmark = pytest.mark.unit

KNOBS = {"stream": "new-and-old", "owner": "team-docs"}
FILTER = '{"eventName": ["INSERT", "MODIFY"]}'
DECLARED = {"eventName": ["INSERT", "MODIFY"]}
CANONICAL = {"Filters": [{"Pattern": '{"eventName":["INSERT","MODIFY"]}'}]}  # as the declaration holds it
FAILURES = "audit-failures"
UUID_OUT = names.subscriber_output("audit", names.OUT_SUBSCRIBER_MAPPING)
CONSUMER_OUTPUTS = (
    names.OUT_MAPPING_UUID,
    names.OUT_FAILURE_BUCKET,
    names.OUT_CONSUMER_FUNCTION_ARN,
    names.OUT_CONSUMER_FUNCTION_NAME,
)
DRIFT_CODES = {
    "subscriber.mapping_missing",
    "subscriber.mapping_disabled",
    "subscriber.filter_drifted",
    "subscriber.mapping_drifted",
    "subscriber.mapping_tags_drifted",
}


def settings_text(batch_size: int = 25, subscriber: bool = True) -> str:
    declared = (
        "\n[environments.dev.subscribers.audit]\n"
        'handler = "subscribers/audit.py:handler"\n'
        f"filters = ['{FILTER}']\n"
        f"batch_size = {batch_size}\n"
    )
    knobs = "".join(f'{k} = "{v}"\n' for k, v in KNOBS.items())
    return f"[defaults]\n\n[environments.dev]\n{knobs}" + (declared if subscriber else "")


def declared_config(folder: Path) -> DocTableConfig:
    """The knobs and the subscriber the settings file declares, as a deploy records them."""
    subscribers = {
        "audit": {"handler": "subscribers/audit.py:handler", "filters": [FILTER], "batch_size": 25}
    }
    return resolve_config(
        context=KNOBS, environ={}, defaults={}, subscribers=subscribers, settings_dir=folder
    )


def wire_subscriber(aws: Aws, config: DocTableConfig) -> dict[str, str]:
    """The subscriber's function, failure bucket and mapping as infra/compute/subscribers.py declares them (its own
    batch size and filter over the consumer's options, the stack's tags); return its outputs."""
    lam = aws.client("lambda")
    role = aws.client("iam").create_role(RoleName="audit-role", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return None\n")
    lam.create_function(
        FunctionName="audit-fn", Runtime=names.LAMBDA_RUNTIME, Role=role, Handler="handler.handler",
        Code={"ZipFile": buffer.getvalue()},
    )  # fmt: skip
    aws.client("s3").create_bucket(
        Bucket=FAILURES, CreateBucketConfiguration={"LocationConstraint": ot.REGION}
    )
    consumer = mapping_shape(config)
    assert consumer is not None
    stream = aws.client("dynamodb").describe_table(TableName=config.table_name)["Table"]["LatestStreamArn"]
    mapping = lam.create_event_source_mapping(
        EventSourceArn=stream, FunctionName="audit-fn", StartingPosition=consumer.starting_position,
        BatchSize=25, MaximumBatchingWindowInSeconds=consumer.batching_window,
        MaximumRetryAttempts=consumer.max_retries, MaximumRecordAgeInSeconds=consumer.max_record_age,
        ParallelizationFactor=consumer.parallelization_factor, BisectBatchOnFunctionError=True,
        FunctionResponseTypes=["ReportBatchItemFailures"],
        DestinationConfig={"OnFailure": {"Destination": f"arn:aws:s3:::{FAILURES}"}},
        FilterCriteria={"Filters": [{"Pattern": json.dumps(DECLARED)}]}, Tags=config.tags(),
    )  # fmt: skip
    return {
        names.subscriber_output("audit", names.OUT_SUBSCRIBER_FUNCTION): "audit-fn",
        names.subscriber_output("audit", names.OUT_SUBSCRIBER_LOG_GROUP): "/aws/lambda/audit-fn",
        UUID_OUT: mapping["UUID"],
        names.subscriber_output("audit", names.OUT_SUBSCRIBER_FAILURE_BUCKET): FAILURES,
    }


@pytest.fixture
def folder(ops_env: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """GIVEN a settings file declaring the audit subscriber (INSERT and MODIFY, batches of 25)."""
    (tmp_path / "subscribers").mkdir()
    (tmp_path / "subscribers" / "audit.py").write_text("def handler(event, context):\n    return None\n")
    (tmp_path / "doctable.toml").write_text(settings_text())
    monkeypatch.setenv("DOCTABLE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("DOCTABLE_CONFIG", str(tmp_path / "doctable.toml"))
    return tmp_path


@pytest.fixture
def stack(moto_env: Aws, folder: Path) -> dict[str, str]:
    """GIVEN the stack deployed with its consumer's mapping and the audit subscriber's, as declared."""
    config = declared_config(folder)
    wired = ot.deploy_with_mapping(moto_env.client, config)
    consumer = {k: wired[k] for k in CONSUMER_OUTPUTS}
    outputs = {**consumer, **wire_subscriber(moto_env, config)}
    cfn = moto_env.client("cloudformation")
    template = ot.template(config, extra_outputs=outputs)
    cfn.update_stack(StackName=config.stack_name, TemplateBody=json.dumps(template))
    stack = cfn.describe_stacks(StackName=config.stack_name)["Stacks"][0]
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}


def preflight_drift(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    assert main(["preflight", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    return [f for f in report["drift"] + report["findings"] if f["code"] in DRIFT_CODES]


def reconcile(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    code = main(["reconcile", "--json", "-q", *extra])
    return code, json.loads(capsys.readouterr().out)


def live(aws: Aws, stack: dict[str, str]) -> dict[str, Any]:
    return aws.client("lambda").get_event_source_mapping(UUID=stack[UUID_OUT])  # type: ignore[no-any-return]


def _update(**settings: Any) -> Callable[[Aws, dict[str, str]], None]:
    def change(aws: Aws, stack: dict[str, str]) -> None:
        aws.client("lambda").update_event_source_mapping(UUID=stack[UUID_OUT], **settings)

    return change


def _untag(aws: Aws, stack: dict[str, str]) -> None:
    aws.client("lambda").untag_resource(Resource=live(aws, stack)["EventSourceMappingArn"], TagKeys=["Owner"])


# kind -> (the change behind the stack, {(code, subject, live, declared)} preflight and reconcile report)
DRIFTS: dict[str, tuple[Callable[[Aws, dict[str, str]], None], set[tuple[str, str, str, str]]]] = {
    "disabled": (
        _update(Enabled=False),
        {("subscriber.mapping_disabled", "subscriber audit mapping state", "Disabled", "Enabled")},
    ),
    "filter changed": (
        _update(FilterCriteria={"Filters": [{"Pattern": '{"eventName": ["REMOVE"]}'}]}),
        {
            (
                "subscriber.filter_drifted",
                "subscriber audit mapping FilterCriteria",
                "1 filter patterns",
                "1 filter patterns",
            )
        },
    ),
    "filter removed": (
        _update(FilterCriteria={}),
        {
            (
                "subscriber.filter_drifted",
                "subscriber audit mapping FilterCriteria",
                "no filter",
                "1 filter patterns",
            )
        },
    ),
    "batching changed": (
        _update(BatchSize=5, MaximumRetryAttempts=0),
        {
            ("subscriber.mapping_drifted", "subscriber audit mapping BatchSize", "5", "25"),
            ("subscriber.mapping_drifted", "subscriber audit mapping MaximumRetryAttempts", "0", "5"),
        },
    ),
    "tag removed": (
        _untag,
        {("subscriber.mapping_tags_drifted", "subscriber audit mapping tag Owner", "absent", "team-docs")},
    ),
}


def _rows(found: list[dict[str, Any]], code_key: str = "code") -> set[tuple[str, str, str, str]]:
    return {(f[code_key], f["subject"], str(f["live"]), str(f["declared"])) for f in found}


def test_an_undrifted_subscriber_mapping_is_no_finding_and_no_repair(
    stack: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert preflight_drift(capsys) == []
    code, report = reconcile(capsys)
    assert code == 0 and report["drift"] == []


@pytest.mark.parametrize("kind", sorted(DRIFTS))
def test_each_drift_is_found_by_preflight_and_repaired_by_reconcile(
    moto_env: Aws, stack: dict[str, str], capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    # GIVEN the subscriber's mapping changed behind the stack
    make, expected = DRIFTS[kind]
    make(moto_env, stack)
    # WHEN preflight observes THEN each drift is a DRIFT finding with its own code and the live/declared values
    found = preflight_drift(capsys)
    assert _rows(found) == expected and {f["level"] for f in found} == {"DRIFT"}
    # WHEN reconcile runs dry THEN it lists them, each with the call it would make, and changes nothing
    code, report = reconcile(capsys)
    assert code == 1 and _rows(report["drift"]) == expected
    assert {d["op"] for d in report["drift"]} == {TAG_MAPPING if kind == "tag removed" else UPDATE_MAPPING}
    # WHEN it applies THEN it restored each, re-read the mapping, and nothing is left
    code, report = reconcile(capsys, "--apply")
    assert code == 0, report
    assert set(report["restored"]) == {subject for _, subject, _, _ in expected} and report["remaining"] == []
    mapping = live(moto_env, stack)
    assert (mapping["State"], mapping["BatchSize"], mapping["MaximumRetryAttempts"]) == ("Enabled", 25, 5)
    assert [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]] == [DECLARED]
    tags = moto_env.client("lambda").list_tags(Resource=mapping["EventSourceMappingArn"])["Tags"]
    assert tags.get("Owner") == "team-docs"
    assert preflight_drift(capsys) == []


def test_a_deleted_mapping_is_found_and_left_to_a_deploy(
    moto_env: Aws, stack: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the subscriber's mapping deleted behind the stack
    moto_env.client("lambda").delete_event_source_mapping(UUID=stack[UUID_OUT])
    # THEN preflight names it, with no repair of reconcile's: the way out is a deploy that replaces the mapping
    (found,) = preflight_drift(capsys)
    assert (found["code"], found["live"], found["declared"]) == (
        "subscriber.mapping_missing",
        "absent",
        stack[UUID_OUT],
    )
    assert "starting_position" in found["effect"]
    code, report = reconcile(capsys, "--apply")
    assert code == 1 and report["restored"] == []
    (left,) = report["remaining"]
    assert (left["code"], left["op"], left["subscriber"]) == ("subscriber.mapping_missing", None, "audit")


def test_drift_a_deploy_rewrites_is_the_deploys_change_not_drift(
    moto_env: Aws, stack: dict[str, str], folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the live batch size drifted and the mapping disabled, and the settings now declaring batches of 50
    _update(BatchSize=5, Enabled=False)(moto_env, stack)
    (folder / "doctable.toml").write_text(settings_text(batch_size=50))
    # THEN the deploy sets the batch size (no drift of it: the subscriber's update says so); it never re-enables
    assert main(["preflight", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    codes = {f["code"] for f in report["drift"] + report["findings"]}
    assert {"subscriber.updated", "subscriber.mapping_disabled"} <= codes
    assert "subscriber.mapping_drifted" not in codes
    # AND a subscriber the settings remove: its drift is gone with it
    (folder / "doctable.toml").write_text(settings_text(subscriber=False))
    assert main(["preflight", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    codes = {f["code"] for f in report["drift"] + report["findings"]}
    assert "subscriber.removed" in codes and not codes & DRIFT_CODES


def test_what_a_deploy_rewrites_is_decided_per_setting(folder: Path) -> None:
    # GIVEN the deployed declaration and drifts of each kind
    deployed = declared_config(folder)
    moved = resolve_config(
        context={**KNOBS, "owner": "team-search"}, environ={}, defaults={}, settings_dir=folder,
        subscribers={"audit": {"handler": "subscribers/audit.py:handler", "filters": [FILTER], "batch_size": 50}},
    )  # fmt: skip
    replaced = resolve_config(
        context=KNOBS, environ={}, defaults={}, settings_dir=folder,
        subscribers={"audit": {"handler": "subscribers/audit.py:handler", "starting_position": "latest"}},
    )  # fmt: skip

    def drift(prop: str) -> SubscriberDrift:
        return SubscriberDrift(prop, "s", "live", "declared", UPDATE_MAPPING, subscriber="audit", uuid="u")

    # THEN a changed template value is the deploy's, an unchanged one (the filter, the state) stays drift
    assert rewritten_by_deploy(drift("subscriber:audit:BatchSize"), deployed, moved)
    assert rewritten_by_deploy(drift("subscriber-tag:audit:Owner"), deployed, moved)
    assert not rewritten_by_deploy(drift("subscriber:audit:FilterCriteria"), deployed, moved)
    assert not rewritten_by_deploy(drift("subscriber:audit:Enabled"), deployed, moved)
    assert not rewritten_by_deploy(drift("subscriber-tag:audit:Environment"), deployed, moved)
    # AND a new mapping (another starting position) replaces every drift of the old one
    assert rewritten_by_deploy(drift("subscriber:audit:Enabled"), deployed, replaced)


def test_the_declared_mapping_takes_the_subscribers_options_over_the_consumers(folder: Path) -> None:
    config = resolve_config(
        context={**KNOBS, "kinesis": "on", "batch_size": "200"}, environ={}, defaults={}, settings_dir=folder,
        subscribers={
            "audit": {"handler": "subscribers/audit.py:handler", "filters": [FILTER], "batch_size": 25},
            "feed": {"handler": "subscribers/audit.py:handler", "filters": [FILTER], "source": "kinesis"},
        },
    )  # fmt: skip
    audit, feed = (subscriber_shape(config, spec) for spec in config.subscribers)
    # THEN its own batch size, else the consumer's; its filters, under `data` on Kinesis; no metrics
    assert (audit.batch_size, feed.batch_size) == (25, 200)
    assert [json.loads(p) for p in audit.filter_patterns] == [DECLARED]
    assert [json.loads(p) for p in feed.filter_patterns] == [{"data": DECLARED}]
    assert audit.metrics_config is None and audit.bisect_on_error


def test_repairs_are_one_call_per_mapping_and_operation_settings_before_tags() -> None:
    def drift(name: str, uuid: str, op: str | None, params: dict[str, Any]) -> SubscriberDrift:
        return SubscriberDrift(
            f"p-{name}", f"subject {name}", "l", "d", op, params, subscriber=uuid, uuid=uuid
        )

    repairs = plan_mapping_repairs(
        [
            drift("tag", "b", TAG_MAPPING, {"Owner": "x"}),
            drift("state", "b", UPDATE_MAPPING, {"Enabled": True}),
            drift("missing", "c", None, {}),
            drift("batch", "b", UPDATE_MAPPING, {"BatchSize": 25}),
            drift("filter", "a", UPDATE_MAPPING, {"FilterCriteria": {}}),
        ]
    )
    assert [(r.uuid, r.op, r.params, r.subjects) for r in repairs] == [
        ("b", UPDATE_MAPPING, {"Enabled": True, "BatchSize": 25}, ["subject state", "subject batch"]),
        ("b", TAG_MAPPING, {"Owner": "x"}, ["subject tag"]),
        ("a", UPDATE_MAPPING, {"FilterCriteria": {}}, ["subject filter"]),
    ]


def test_drift_is_read_against_the_deployed_declaration(
    moto_env: Aws, stack: dict[str, str], folder: Path
) -> None:
    # GIVEN the stack as the commands read it (its recorded knobs), the mapping disabled and re-filtered
    _update(Enabled=False, FilterCriteria={})(moto_env, stack)
    deployment = use_deployed_knobs(describe_stack(moto_env, declared_config(folder)))
    # THEN one drift per setting, each naming its subscriber, mapping and repair
    found = sorted(subscriber_drift(moto_env, deployment), key=lambda d: d.code)
    assert [(d.code, d.subscriber, d.uuid, d.op, d.params) for d in found] == [
        (
            "subscriber.filter_drifted",
            "audit",
            stack[UUID_OUT],
            UPDATE_MAPPING,
            {"FilterCriteria": CANONICAL},
        ),
        ("subscriber.mapping_disabled", "audit", stack[UUID_OUT], UPDATE_MAPPING, {"Enabled": True}),
    ]
