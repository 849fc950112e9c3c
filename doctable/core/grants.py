"""Can a role read a table's stream? IAM's policy simulator where available, else an approximate reading of
the role's own policies (the local AWS has no simulator)."""

from __future__ import annotations

import fnmatch
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from botocore.exceptions import BotoCoreError, ClientError

if TYPE_CHECKING:
    from doctable.core.aws import Aws

STREAM_READ_ACTIONS = ("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator")
LIST_STREAMS_ACTION = "dynamodb:ListStreams"
# What an event-source mapping reading a Kinesis data stream needs on it (Lambda's AWSLambdaKinesisExecutionRole,
# less ListStreams, which a mapping given the stream's ARN does not call, and SubscribeToShard, enhanced fan-out's).
KINESIS_READ_ACTIONS = (
    "kinesis:DescribeStream",
    "kinesis:DescribeStreamSummary",
    "kinesis:GetRecords",
    "kinesis:GetShardIterator",
    "kinesis:ListShards",
)


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _document(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    return json.loads(unquote(str(raw)))


def _statement_matches(statement: dict[str, Any], action: str, resource: str) -> bool:
    actions = [a.lower() for a in _as_list(statement.get("Action"))]
    resources = _as_list(statement.get("Resource"))
    if "NotAction" in statement or "NotResource" in statement:
        return False  # not evaluated: the simulator (on AWS) does this properly
    return any(fnmatch.fnmatchcase(action.lower(), a) for a in actions) and any(
        fnmatch.fnmatchcase(resource, r) for r in resources
    )


def evaluate_documents(documents: list[dict[str, Any]], action: str, resource: str) -> bool:
    """Allowed by some Allow statement and no Deny (conditions ignored): an approximation of IAM."""
    allowed = False
    for document in documents:
        for statement in _as_list_of_dicts(document.get("Statement")):
            if _statement_matches(statement, action, resource):
                if statement.get("Effect") == "Deny":
                    return False
                if statement.get("Effect") == "Allow":
                    allowed = True
    return allowed


def _as_list_of_dicts(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value]
    return [v for v in value or [] if isinstance(v, dict)]


def role_documents(aws: Aws, role_name: str) -> list[dict[str, Any]]:
    iam = aws.client("iam")
    documents: list[dict[str, Any]] = []
    for page in iam.get_paginator("list_role_policies").paginate(RoleName=role_name):
        for policy_name in page.get("PolicyNames", []):
            reply = iam.get_role_policy(RoleName=role_name, PolicyName=policy_name)
            documents.append(_document(reply["PolicyDocument"]))
    for page in iam.get_paginator("list_attached_role_policies").paginate(RoleName=role_name):
        for attached in page.get("AttachedPolicies", []):
            policy = iam.get_policy(PolicyArn=attached["PolicyArn"])["Policy"]
            version = iam.get_policy_version(
                PolicyArn=attached["PolicyArn"], VersionId=policy["DefaultVersionId"]
            )
            documents.append(_document(version["PolicyVersion"]["Document"]))
    return documents


def missing_stream_grants(aws: Aws, role_arn: str, stream_arn: str) -> tuple[list[str], str]:
    """(actions the role lacks on the stream, how it was decided: 'simulator' or 'policy reading')."""
    return missing_grants(
        aws, role_arn, [(a, stream_arn) for a in STREAM_READ_ACTIONS] + [(LIST_STREAMS_ACTION, "*")]
    )


def missing_kinesis_grants(aws: Aws, role_arn: str, stream_arn: str) -> tuple[list[str], str]:
    """(actions the role lacks to read the Kinesis data stream with a mapping, how it was decided)."""
    return missing_grants(aws, role_arn, [(a, stream_arn) for a in KINESIS_READ_ACTIONS])


def missing_grants(aws: Aws, role_arn: str, wanted: list[tuple[str, str]]) -> tuple[list[str], str]:
    """(the actions of ``wanted`` (action, resource) the role lacks, how it was decided)."""
    iam = aws.client("iam")
    try:
        missing = []
        for resource in dict.fromkeys(r for _, r in wanted):
            actions = [a for a, r in wanted if r == resource]
            reply = iam.simulate_principal_policy(
                PolicySourceArn=role_arn, ActionNames=actions, ResourceArns=[resource]
            )
            for result in reply.get("EvaluationResults", []):
                if result.get("EvalDecision") != "allowed":
                    missing.append(result["EvalActionName"])
        return missing, "simulator"
    except (ClientError, BotoCoreError, NotImplementedError):
        # Not available here (the local AWS; moto in-process raises NotImplementedError), or no
        # iam:SimulatePrincipalPolicy permission: read the role's policies instead.
        pass
    role_name = role_arn.rsplit("/", 1)[-1]
    documents = role_documents(aws, role_name)
    return [a for a, r in wanted if not evaluate_documents(documents, a, r)], "policy reading (approximate)"
