"""The registry of the local AWS's behaviours (local/behaviours.py) and what it claims, held against the
references: each claimed error code against botocore's model of the operation, each action and condition key
against IAM's Service Authorization Reference, each replacement against CloudFormation's resource schemas (as
cfn-lint ships them); and the same references over the rest of the local AWS's own tables (the replacements of
local/services/cloudformation/updates.py, the IAM evaluator's action names) and over every policy the project writes
(`doctable policy` for each role, the stack's own IAM statements)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from cfnlint.schema.manager import PROVIDER_SCHEMA_MANAGER

from contract.iam import policies as iam
from contract.iam.target import Target
from contract.knobs import resolve_config
from local import server
from local.auth import requests as iam_requests
from local.behaviours import BEHAVIOURS, Behaviour
from local.services.cloudformation.updates import REPLACING
from tests.conformance import models, sar

ROOT = Path(__file__).resolve().parents[2]
# Where the CloudFormation User Guide says more than the schema ("Update requires: Replacement" on a property the
# schema does not list as create-only): the guide wins, and a registered behaviour cites it.
GUIDE_REPLACEMENTS = {("AWS::DynamoDB::Table", "LocalSecondaryIndexes"): "cloudformation.lsi-replacement"}
# The richest stack shape: stream, index, TTL, PITR, a customer managed key, Kinesis and its consumer.
RICH = dict(
    kinesis="on", stream="new-and-old", encryption="customer-managed", consumer_source="kinesis",
    gsi="gsi1", ttl="on", pitr="on",
)  # fmt: skip
BOTOCORE_SERVICE = {
    "dynamodb": "dynamodb",
    "dynamodbstreams": "dynamodbstreams",
    "s3": "s3",
    "lambda": "lambda",
    "cloudformation": "cloudformation",
    "cloudwatch": "cloudwatch",
}


def _test_functions(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text())
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


# ---- the registry itself ----
def test_every_behaviour_is_registered_once_with_a_source_a_test_and_a_reference_or_why_none() -> None:
    ids = [b.id for b in BEHAVIOURS]
    assert len(ids) == len(set(ids))
    declared = {f"{t.module}:{t.path}" for t in server.declared()}
    for b in BEHAVIOURS:
        assert b.source.startswith("https://docs.aws.amazon.com/"), b.id
        path, _, function = b.test.partition("::")
        assert function in _test_functions(path), f"{b.id}: {b.test} is not a test"
        assert set(b.targets) <= declared, f"{b.id}: a target no module of local/ declares"
        # a behaviour is checked by a reference, or says why none can check it (never both, never neither)
        assert bool(b.references) != bool(b.unchecked), b.id


def test_every_replacement_of_a_moto_internal_belongs_to_a_registered_behaviour() -> None:
    # GIVEN every moto internal a module of local/ replaces (its PATCHES)
    from local import services

    patching = [m for m in services.modules(services.PATCHING + services.READING) if hasattr(m, "PATCHES")]
    replaced = {f"{t.module}:{t.path}" for module in patching for t in module.PATCHES.targets}
    assert len(replaced) >= 90
    # THEN each is a target of a behaviour of the registry, which says AWS's rule, its source and its test
    claimed = {t for b in BEHAVIOURS for t in b.targets}
    assert sorted(replaced - claimed) == []


def test_at_least_four_in_five_behaviours_are_checked_by_an_independent_reference() -> None:
    checked = [b for b in BEHAVIOURS if b.references]
    assert len(checked) * 5 >= len(BEHAVIOURS) * 4, f"{len(checked)} of {len(BEHAVIOURS)}"


# ---- claims against botocore's models ----
@functools.cache
def _model(service: str) -> Any:
    return botocore.session.get_session().get_service_model(service)


@pytest.mark.parametrize("behaviour", [b for b in BEHAVIOURS if b.errors], ids=lambda b: b.id)
def test_each_refusal_is_an_error_the_operations_model_names(behaviour: Behaviour) -> None:
    for operation, code in behaviour.errors:
        service, _, name = operation.partition(":")
        model = _model(BOTOCORE_SERVICE[service]).operation_model(name)
        allowed = {shape.name for shape in model.error_shapes}
        allowed |= {getattr(shape, "error_code", None) or shape.name for shape in model.error_shapes}
        common = models.COMMON_ERRORS.get(service, ("", frozenset()))[1]
        assert code in allowed | common, f"{operation} answers {code}: not in {sorted(allowed)} nor common"


# ---- claims and the evaluator against IAM's Service Authorization Reference ----
@pytest.mark.parametrize(
    "behaviour", [b for b in BEHAVIOURS if b.actions or b.condition_keys], ids=lambda b: b.id
)
def test_each_action_and_condition_key_a_behaviour_evaluates_exists(behaviour: Behaviour) -> None:
    for action in behaviour.actions:
        assert sar.action(action) is not None, f"{action} is not an action"
    for action, key in behaviour.condition_keys:
        assert sar.condition_problem(action, key) is None


# The JSON services whose operations the evaluator names as ``<prefix>:<Operation>``, and moto's handler of each:
# the operations the local AWS can answer are the ones whose names its handler has.
JSON_HANDLERS = {
    "dynamodb": ("dynamodb", "moto.dynamodb.responses", "DynamoHandler"),
    "dynamodbstreams": ("dynamodb", "moto.dynamodbstreams.responses", "DynamoDBStreamsHandler"),
    "kinesis": ("kinesis", "moto.kinesis.responses", "KinesisResponse"),
    "kms": ("kms", "moto.kms.responses", "KmsResponse"),
    "logs": ("logs", "moto.logs.responses", "LogsResponse"),
    "ssm": ("ssm", "moto.ssm.responses", "SimpleSystemManagerResponse"),
}
# Operations the evaluator never names by their own name: IAM authorizes them otherwise, and so does it.
AUTHORIZED_OTHERWISE = {
    "dynamodb:TransactWriteItems": "each item as its PutItem/UpdateItem/DeleteItem/ConditionCheckItem",
    "dynamodb:TransactGetItems": "each item as GetItem",
    "dynamodb:ExecuteStatement": "each statement as PartiQLSelect/Insert/Update/Delete on its table",
    "dynamodb:BatchExecuteStatement": "each statement as PartiQLSelect/Insert/Update/Delete on its table",
    "dynamodb:ExecuteTransaction": "each statement as PartiQLSelect/Insert/Update/Delete on its table",
    "kms:ReEncrypt": "kms:ReEncryptFrom on the source key and kms:ReEncryptTo on the destination key",
}


def _answered_operations() -> set[str]:
    import importlib

    from botocore import xform_name

    found = set()
    for service, (prefix, module, handler) in JSON_HANDLERS.items():
        cls = getattr(importlib.import_module(module), handler)
        found |= {f"{prefix}:{op}" for op in _model(service).operation_names if hasattr(cls, xform_name(op))}
    return found


def test_every_action_the_evaluator_maps_an_operation_to_exists() -> None:
    # GIVEN the evaluator's own names for operations (S3's, Lambda's, DynamoDB's transaction and PartiQL parts)
    mapped = {f"s3:{a}" for a in iam_requests._S3_ACTIONS.values()}
    mapped |= {f"s3:{a}" for a in iam_requests._S3_VERSIONED.values()}
    mapped |= {f"dynamodb:{a}" for a in [*iam_requests._TRANSACT.values(), *iam_requests._PARTIQL.values()]}
    mapped |= {"lambda:InvokeFunction", "iam:PassRole", "kms:ReEncryptFrom", "kms:ReEncryptTo"}
    # AND every operation of a JSON service the local AWS answers, named as the evaluator names it
    operations = _answered_operations()
    assert len(operations) > 150 and set(AUTHORIZED_OTHERWISE) <= operations
    mapped |= operations - set(AUTHORIZED_OTHERWISE)
    # THEN each is an action of the reference
    assert sorted(a for a in mapped if sar.action(a) is None) == []


# ---- replacements against CloudFormation's resource schemas ----
@functools.cache
def _schema(type_name: str) -> dict[str, Any]:
    schema: dict[str, Any] = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", type_name).schema
    return schema


def _create_only(type_name: str) -> set[str]:
    schema = _schema(type_name)
    paths = [
        *(schema.get("createOnlyProperties") or []),
        *(schema.get("conditionalCreateOnlyProperties") or []),
    ]
    return {p.split("/")[2] for p in paths if p.count("/") == 2}


@functools.cache
def _stack_types() -> frozenset[str]:
    from tests.infra.synth import synth

    _, template, _ = synth(**RICH)
    return frozenset(r["Type"] for r in template["Resources"].values())


def _local_replacements(type_name: str) -> set[str]:
    claimed = {p for b in BEHAVIOURS for t, p in b.replaces if t == type_name}
    return set(REPLACING.get(type_name, ())) | claimed


def test_the_local_aws_replaces_a_resource_exactly_when_its_schema_says_so() -> None:
    # GIVEN every resource type the stacks use, and every type the local AWS has replacement rules for
    types = sorted(_stack_types() | set(REPLACING) | {t for b in BEHAVIOURS for t, _ in b.replaces})
    assert {"AWS::DynamoDB::Table", "AWS::Lambda::EventSourceMapping", "AWS::Kinesis::Stream"} <= set(types)
    # THEN the properties whose change replaces the resource are the schema's create-only ones, and the User
    # Guide's where it says more (each cited by a registered behaviour)
    differences = {}
    for type_name in types:
        local = _local_replacements(type_name)
        schema = _create_only(type_name)
        guide = {p for (t, p) in GUIDE_REPLACEMENTS if t == type_name}
        if local != schema | guide:
            differences[type_name] = {
                "schema only": sorted(schema - local),
                "local only": sorted(local - schema - guide),
            }
    assert differences == {}
    registered = {b.id for b in BEHAVIOURS}
    assert set(GUIDE_REPLACEMENTS.values()) <= registered


def test_each_call_the_local_cloudformation_authorizes_is_one_its_types_handler_lists() -> None:
    # GIVEN every call the local CloudFormation makes as a stack's role (a handler's first, the read it waits on,
    # one per property), each property set
    from local.services.cloudformation import handler_calls

    types = set(handler_calls.CALLS) | set(handler_calls.FOLLOW_UPS)
    unlisted = []
    for type_name in sorted(types):
        handlers = _schema(type_name).get("handlers") or {}
        operations = set(handler_calls.CALLS.get(type_name, {})) | set(
            handler_calls.FOLLOW_UPS.get(type_name, {})
        )
        for operation in operations:
            listed = set((handlers.get(operation) or {}).get("permissions") or [])
            everything = {"Role": "arn:aws:iam::123456789012:role/r", "PermissionsBoundary": "arn:b"}
            for prop, _action, _arns in handler_calls.FOLLOW_UPS.get(type_name, {}).get(operation, ([], []))[
                1
            ]:
                everything[prop] = ["x"]
            for action, _ in handler_calls.calls(type_name, operation, "n", everything, "us-east-1"):
                if action not in listed:
                    unlisted.append(f"{type_name} {operation}: {action}")
    # THEN each is among the permissions its type's registry schema lists for that handler (cfn-lint's copy)
    assert unlisted == []


@pytest.mark.parametrize("behaviour", [b for b in BEHAVIOURS if b.replaces], ids=lambda b: b.id)
def test_each_replacement_a_behaviour_claims_is_create_only_in_the_schema(behaviour: Behaviour) -> None:
    for type_name, prop in behaviour.replaces:
        assert prop in _create_only(type_name) or (type_name, prop) in GUIDE_REPLACEMENTS, (type_name, prop)


# ---- the project's own policies against the reference ----
SHAPES = (RICH, {}, {"encryption": "customer-managed", "env": "prod"})
# Findings that are the reference's gaps, not the policies': each with the reason.
KNOWN_FALSE_POSITIVES: dict[tuple[str, str], str] = {}


def _policy_problems(statements: list[dict[str, Any]]) -> list[str]:
    problems = []
    for statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = (
            statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        )
        for action in actions:
            if sar.action(action) is None:
                problems.append(f"{statement.get('Sid')}: {action} is not an action")
                continue
            if any(sar.resource_problem(action, r) is None for r in resources if isinstance(r, str)):
                continue
            if all(not isinstance(r, str) for r in resources):
                continue  # references CloudFormation resolves at deploy: _template_statements resolves them
            found = f"{statement.get('Sid')}: {action} on {resources}"
            if (action, str(resources)) not in KNOWN_FALSE_POSITIVES:
                problems.append(found)
        for operator in (statement.get("Condition") or {}).values():
            for key in operator:
                for action in actions:
                    problem = sar.condition_problem(action, key)
                    if problem:
                        problems.append(f"{statement.get('Sid')}: {problem}")
    return problems


@pytest.mark.parametrize(
    "knobs", SHAPES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()) or "defaults"
)
def test_every_policy_doctable_prints_names_real_actions_on_their_resource_types(
    knobs: dict[str, str],
) -> None:
    # GIVEN each role's policy for one environment's shape, as `doctable policy` prints it
    config = resolve_config(context=knobs, environ={})
    target = Target(config, "123456789012", "us-east-1")
    for role in iam.ROLES:
        statements = [s.document() for s in iam.role_statements(role, target)]
        # THEN each action exists and each resource is one of its resource types (or * where IAM allows none)
        assert _policy_problems(statements) == [], role
    # AND so do the CloudFormation execution policy's and the boundary's (its denials and <service>:* aside)
    from contract.iam import execution as iam_execution

    for document in iam_execution.execution_documents(target):
        assert _policy_problems(document["Statement"]) == [], "execution"
    exact = [
        s for s in iam_execution.boundary_document(target)["Statement"]
        if s["Effect"] == "Allow" and not any(a.endswith(":*") for a in s["Action"])
    ]  # fmt: skip
    assert _policy_problems(exact) == [], "boundary"


def test_the_stacks_own_iam_statements_name_real_actions_on_their_resource_types() -> None:
    from tests.infra.synth import synth

    _, template, _ = synth(**RICH)
    statements = [s for r in template["Resources"].values() for s in _template_statements(r, template)]
    assert len(statements) >= 5
    assert _policy_problems(statements) == []
    # AND none allows an action that escalates or exposes, nor a wildcard action (test_policy_analysis.py)
    assert sar.findings("stack", statements) == set()


def _template_statements(resource: dict[str, Any], template: dict[str, Any]) -> list[dict[str, Any]]:
    properties = resource.get("Properties") or {}
    if resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
        documents = [properties.get("PolicyDocument") or {}]
    elif resource["Type"] == "AWS::IAM::Role":
        documents = [p.get("PolicyDocument") or {} for p in properties.get("Policies") or []]
    else:
        return []
    return [
        dict(s, Resource=_resolve(s.get("Resource", "*"), template))
        for d in documents
        for s in d.get("Statement", [])
        if s.get("Effect") == "Allow"
    ]


ARNS = {
    "AWS::DynamoDB::Table": {"Arn": "arn:aws:dynamodb:us-east-1:123456789012:table/t",
                             "StreamArn": "arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/2026"},
    "AWS::S3::Bucket": {"Arn": "arn:aws:s3:::bucket", "Ref": "bucket"},
    "AWS::KMS::Key": {"Arn": "arn:aws:kms:us-east-1:123456789012:key/k"},
    "AWS::Kinesis::Stream": {"Arn": "arn:aws:kinesis:us-east-1:123456789012:stream/s"},
    "AWS::Lambda::Function": {"Arn": "arn:aws:lambda:us-east-1:123456789012:function:f", "Ref": "f"},
    "AWS::Logs::LogGroup": {"Arn": "arn:aws:logs:us-east-1:123456789012:log-group:g:*", "Ref": "g"},
    "AWS::SNS::Topic": {"Ref": "arn:aws:sns:us-east-1:123456789012:topic", "TopicArn": "arn:aws:sns:us-east-1:123456789012:topic"},
    "AWS::Lambda::EventSourceMapping": {"Ref": "uuid"},
}  # fmt: skip
PSEUDO = {"AWS::Partition": "aws", "AWS::Region": "us-east-1", "AWS::AccountId": "123456789012", "AWS::URLSuffix": "amazonaws.com"}  # fmt: skip


def _resolve(value: Any, template: dict[str, Any]) -> Any:
    """A statement's Resource with CloudFormation's references resolved to ARNs of the right shape."""
    if isinstance(value, list):
        return [_resolve(v, template) for v in value]
    if not isinstance(value, dict):
        return value
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(str(_resolve(p, template)) for p in parts)
    if "Ref" in value:
        name = value["Ref"]
        if name in PSEUDO:
            return PSEUDO[name]
        kind = template["Resources"].get(name, {}).get("Type", "")
        return ARNS.get(kind, {}).get("Ref", f"unresolved:{name}")
    if "Fn::GetAtt" in value:
        name, attribute = (
            value["Fn::GetAtt"]
            if isinstance(value["Fn::GetAtt"], list)
            else value["Fn::GetAtt"].split(".", 1)
        )
        kind = template["Resources"].get(name, {}).get("Type", "")
        return ARNS.get(kind, {}).get(attribute, f"unresolved:{name}.{attribute}")
    if "Fn::Sub" in value:
        text = value["Fn::Sub"] if isinstance(value["Fn::Sub"], str) else value["Fn::Sub"][0]
        for key, replacement in PSEUDO.items():
            text = text.replace("${" + key + "}", replacement)
        return text
    return value


def test_docs_fidelity_is_generated_from_the_registry() -> None:
    from tests.conformance import fidelity

    assert fidelity.DOC.read_text() == fidelity.render(), "run: python -m tests.conformance.fidelity --write"
