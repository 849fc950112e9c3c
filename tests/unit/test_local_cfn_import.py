"""The local AWS's CloudFormation resource import (local/services/cloudformation/imports.py): a retained single-region table
taken out of its stack and imported as a global table, its items kept; and what AWS refuses of an import."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from local.services.cloudformation import imports as cfn_import
from local.services.dynamodb import replication as replicas
from tests.support.localaws import wait_for
from tests.unit.test_local_kinesis_destination import isolated_services

pytestmark = pytest.mark.unit

A, B = "us-east-1", "us-west-2"
KEYS = {
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
    "BillingMode": "PAY_PER_REQUEST",
    "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
}
TABLE = {
    "Type": "AWS::DynamoDB::Table",
    "Properties": {"TableName": "tbl", **KEYS},
    "DeletionPolicy": "Retain",
    "UpdateReplacePolicy": "Retain",
}
TOPIC = {"Type": "AWS::SNS::Topic", "Properties": {}}


def _global(*regions: str, policy: str | None = "Retain") -> dict[str, Any]:
    resource: dict[str, Any] = {
        "Type": "AWS::DynamoDB::GlobalTable",
        "Properties": {"TableName": "tbl", **KEYS, "Replicas": [{"Region": r} for r in regions]},
    }
    if policy:
        resource["DeletionPolicy"] = policy
    return resource


def _template(resources: dict[str, Any], outputs: dict[str, Any] | None = None) -> str:
    template: dict[str, Any] = {"Resources": resources}
    if outputs:
        template["Outputs"] = outputs
    return json.dumps(template)


NAME_OUTPUT = {"Name": {"Value": "tbl"}}


@pytest.fixture
def cfn(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A stack ``s`` whose retained table ``t`` (two items) was removed from it: the table kept, the stack with a
    topic only."""
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    replicas.reset()
    replicas.set_delay_ms(20)
    with isolated_services(), mock_aws():
        try:
            client = boto3.client("cloudformation", region_name=A)
            client.create_stack(StackName="s", TemplateBody=_template({"Table": TABLE, "Topic": TOPIC}))
            ddb = boto3.client("dynamodb", region_name=A)
            for key in ("a", "b"):
                ddb.put_item(TableName="tbl", Item={"pk": {"S": key}, "v": {"S": f"value-{key}"}})
            client.update_stack(StackName="s", TemplateBody=_template({"Topic": TOPIC}, NAME_OUTPUT))
            yield client
        finally:
            replicas.reset()
            replicas.set_delay_ms(replicas.DEFAULT_DELAY_MS)


def _import(cfn: Any, template: str, *, identifier: str = "tbl", logical: str = "Table", **extra: Any) -> Any:
    return cfn.create_change_set(
        StackName="s",
        ChangeSetName="import",
        ChangeSetType="IMPORT",
        TemplateBody=template,
        ResourcesToImport=[
            {
                "ResourceType": extra.pop("type", "AWS::DynamoDB::GlobalTable"),
                "LogicalResourceId": logical,
                "ResourceIdentifier": {"TableName": identifier},
            }
        ],
        **extra,
    )


def _refusal(cfn: Any, template: str, **kwargs: Any) -> str:
    with pytest.raises(ClientError) as raised:
        _import(cfn, template, **kwargs)
    assert raised.value.response["Error"]["Code"] == "ValidationError"
    return str(raised.value.response["Error"]["Message"])


def _items(region: str) -> list[str]:
    scan = boto3.client("dynamodb", region_name=region).scan(TableName="tbl", ConsistentRead=True)
    return sorted(item["v"]["S"] for item in scan["Items"])


def test_a_retained_table_removed_from_its_stack_is_kept(cfn: Any) -> None:
    # GIVEN the fixture's update that took the retained table out  THEN the table and its items are there
    assert _items(A) == ["value-a", "value-b"]
    resources = cfn.list_stack_resources(StackName="s")["StackResourceSummaries"]
    assert [r["ResourceType"] for r in resources] == ["AWS::SNS::Topic"]


def test_an_import_adopts_the_table_as_a_global_table_with_its_items(cfn: Any) -> None:
    # GIVEN the stack's template plus the table as a global table with only the stack's region
    template = _template({"Topic": TOPIC, "Table": _global(A)}, NAME_OUTPUT)
    # WHEN an IMPORT change set of the table is made  THEN it lists the table's import
    made = _import(cfn, template)
    described = cfn.describe_change_set(StackName="s", ChangeSetName=made["Id"])
    assert described["Status"] == "CREATE_COMPLETE" and described["ExecutionStatus"] == "AVAILABLE"
    assert [
        (c["ResourceChange"]["Action"], c["ResourceChange"]["LogicalResourceId"])
        for c in described["Changes"]
    ] == [("Import", "Table")]
    # WHEN it is executed  THEN the stack is IMPORT_COMPLETE and lists the table as a global table
    cfn.execute_change_set(StackName="s", ChangeSetName=made["Id"])
    stack = cfn.describe_stacks(StackName="s")["Stacks"][0]
    assert stack["StackStatus"] == "IMPORT_COMPLETE"
    resources = {
        r["LogicalResourceId"]: (r["ResourceType"], r["PhysicalResourceId"])
        for r in cfn.list_stack_resources(StackName="s")["StackResourceSummaries"]
    }
    assert resources["Table"] == ("AWS::DynamoDB::GlobalTable", "tbl")
    events = [
        e["ResourceStatus"]
        for e in cfn.describe_stack_events(StackName="s")["StackEvents"]
        if e["LogicalResourceId"] == "Table" and e["ResourceStatus"].startswith("IMPORT")
    ]
    assert sorted(events) == ["IMPORT_COMPLETE", "IMPORT_IN_PROGRESS"]
    # AND the items are kept
    assert _items(A) == ["value-a", "value-b"]
    # WHEN a later update adds a replica  THEN the items are readable there
    cfn.update_stack(
        StackName="s", TemplateBody=_template({"Topic": TOPIC, "Table": _global(A, B)}, NAME_OUTPUT)
    )
    assert cfn.describe_stacks(StackName="s")["Stacks"][0]["StackStatus"] == "UPDATE_COMPLETE"
    wait_for(lambda: _items(B) == ["value-a", "value-b"], timeout=10)


def test_an_import_without_a_deletion_policy_is_refused(cfn: Any) -> None:
    template = _template({"Topic": TOPIC, "Table": _global(A, policy=None)}, NAME_OUTPUT)
    assert _refusal(cfn, template) == cfn_import.NEEDS_DELETION_POLICY.format(names="Table")


def test_an_import_of_a_missing_table_is_refused(cfn: Any) -> None:
    resource = copy.deepcopy(_global(A))
    resource["Properties"]["TableName"] = "gone"
    template = _template({"Topic": TOPIC, "Table": resource}, NAME_OUTPUT)
    message = _refusal(cfn, template, identifier="gone")
    assert message == cfn_import.NOT_FOUND.format(type="AWS::DynamoDB::GlobalTable", identifier="gone")


def test_an_identifier_other_than_the_templates_is_refused(cfn: Any) -> None:
    template = _template({"Topic": TOPIC, "Table": _global(A)}, NAME_OUTPUT)
    assert "does not match" in _refusal(cfn, template, identifier="other")


@pytest.mark.parametrize(
    ("resources", "outputs", "expected"),
    [
        ({"Topic": {**TOPIC, "Properties": {"TopicName": "x"}}}, NAME_OUTPUT, "Topic"),
        ({"Topic": TOPIC, "Other": TOPIC}, NAME_OUTPUT, "Other"),
        ({"Topic": TOPIC}, {"Name": {"Value": "changed"}}, "Outputs"),
    ],
    ids=["modified", "added", "outputs"],
)
def test_an_import_that_changes_anything_else_is_refused(
    cfn: Any, resources: dict[str, Any], outputs: dict[str, Any], expected: str
) -> None:
    template = _template({**resources, "Table": _global(A)}, outputs)
    assert _refusal(cfn, template) == cfn_import.CANNOT_MODIFY.format(names=expected)
    # AND nothing changed: the stack still has only its topic
    assert cfn.describe_stacks(StackName="s")["Stacks"][0]["StackStatus"] == "UPDATE_COMPLETE"


def test_an_import_of_a_table_another_stack_has_is_refused(cfn: Any) -> None:
    cfn.create_stack(
        StackName="other",
        TemplateBody=_template({"Mine": {**TABLE, "Properties": {"TableName": "u", **KEYS}}}),
    )
    resource = copy.deepcopy(_global(A))
    resource["Properties"]["TableName"] = "u"
    template = _template({"Topic": TOPIC, "Table": resource}, NAME_OUTPUT)
    message = _refusal(cfn, template, identifier="u")
    assert message == cfn_import.IN_OTHER_STACK.format(
        type="AWS::DynamoDB::GlobalTable", identifier="u", stack="other"
    )


def test_a_resource_written_without_properties_is_not_a_change(cfn: Any) -> None:
    """Found by the conformance tier: moto stores a resource written without Properties with an empty one, and
    the import then refused the unchanged resource as modified."""
    # GIVEN a stack whose only resource is written without Properties
    bare = {"Type": "AWS::SNS::Topic"}
    cfn.create_stack(StackName="bare", TemplateBody=_template({"Topic": bare}))
    # WHEN the retained table is imported into it, the topic written the same way
    made = cfn.create_change_set(
        StackName="bare",
        ChangeSetName="import",
        ChangeSetType="IMPORT",
        TemplateBody=_template({"Topic": bare, "Table": TABLE}),
        ResourcesToImport=[
            {
                "ResourceType": "AWS::DynamoDB::Table",
                "LogicalResourceId": "Table",
                "ResourceIdentifier": {"TableName": "tbl"},
            }
        ],
    )
    # THEN the change set imports the table and changes nothing else
    changes = cfn.describe_change_set(ChangeSetName=made["Id"])["Changes"]
    assert [(c["ResourceChange"]["LogicalResourceId"], c["ResourceChange"]["Action"]) for c in changes] == [
        ("Table", "Import")
    ]
