"""Your own indexes in the template: 0, 1, 3 and 20 GSIs, 2 LSIs and a multi-attribute key, with their key types,
projections and throughput; a Query grant per index and nothing broader; cfn-lint and cdk-nag clean on each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.infra.synth import cfn_lint, only, synth

ROOT = Path(__file__).resolve().parents[2]
TABLE = "AWS::DynamoDB::Table"
THREE = {
    "byOwner": {
        "partition": "owner:S",
        "sort": "createdAt:N",
        "projection": "include",
        "include": ["summary"],
    },
    "byHash": {"partition": "digest:B", "projection": "keys-only", "max_read": 500, "max_write": 200},
    "byScore": {"partition": "board:S", "sort": "score:N", "warm_read": 13000},
}
TWO_LSIS = {
    "byVersion": {"kind": "local", "sort": "version:N"},
    "byTitle": {"kind": "local", "sort": "title:S", "projection": "include", "include": ["summary", "owner"]},
}
TWENTY = {f"idx{i:02d}": {"partition": f"a{i:02d}:S"} for i in range(20)}
# A multi-attribute key: 2 partition and 3 sort attributes (the CDK's partitionKeys/sortKeys)
MULTI = {
    "byMatch": {"partition": ["tenant:S", "region:S"], "sort": ["year:N", "round:S", "seq:N"]},
    "byOwner": THREE["byOwner"],
}
CASES: dict[str, dict[str, Any]] = {
    "none": {},
    "one": {"byOwner": THREE["byOwner"]},
    "three": THREE,
    "twenty": TWENTY,
}
CASES["two-lsis"] = {**TWO_LSIS, "byOwner": THREE["byOwner"]}
CASES["multi-attribute"] = MULTI


def table(indexes: dict[str, Any]) -> dict[str, Any]:
    _, template, _ = synth(indexes=indexes, stream="new-and-old")
    return template


@pytest.mark.parametrize("case", list(CASES))
def test_every_declared_index_is_in_the_template_with_one_query_grant(case: str) -> None:
    template = table(CASES[case])
    properties = only(template, TABLE)["Properties"]
    gsis = {g["IndexName"]: g for g in properties.get("GlobalSecondaryIndexes", [])}
    lsis = {g["IndexName"]: g for g in properties.get("LocalSecondaryIndexes", [])}
    declared = CASES[case]
    assert set(gsis) == {n for n, d in declared.items() if d.get("kind") != "local"}
    assert set(lsis) == {n for n, d in declared.items() if d.get("kind") == "local"}
    # every key attribute is defined once, with its declared type
    types = {a["AttributeName"]: a["AttributeType"] for a in properties["AttributeDefinitions"]}
    assert len(types) == len(properties["AttributeDefinitions"])
    for name, d in declared.items():
        for field in ("partition", "sort"):
            for key in [d[field]] if isinstance(d.get(field), str) else d.get(field, []):
                attribute, kind = key.split(":")
                assert types[attribute] == kind, (name, attribute)
    # the runtime policy: Query on each index by its ARN, one statement each
    policy = only(template, "AWS::IAM::ManagedPolicy")["Properties"]["PolicyDocument"]["Statement"]
    queried = [
        json.dumps(s["Resource"]).split("/index/")[1].split('"')[0]
        for s in policy
        if s["Action"] == "dynamodb:Query"
    ]
    assert sorted(queried) == sorted(declared)
    # no wildcard but the blob root's objects (ApplicationBlobs: keys made at write time)
    assert all("*" not in json.dumps(s["Resource"]) for s in policy if s.get("Sid") != "ApplicationBlobs")
    assert len({s["Sid"] for s in policy}) == len(policy)


def test_projection_and_throughput_are_as_declared() -> None:
    gsis = {g["IndexName"]: g for g in only(table(THREE), TABLE)["Properties"]["GlobalSecondaryIndexes"]}
    assert gsis["byOwner"]["Projection"] == {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["summary"]}
    assert gsis["byHash"]["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert gsis["byHash"]["OnDemandThroughput"] == {"MaxReadRequestUnits": 500, "MaxWriteRequestUnits": 200}
    assert gsis["byScore"]["WarmThroughput"] == {"ReadUnitsPerSecond": 13000}
    assert [k["KeyType"] for k in gsis["byHash"]["KeySchema"]] == ["HASH"]


@pytest.mark.parametrize("global_table", [False, True], ids=["table", "global-table"])
def test_a_multi_attribute_key_is_its_hash_and_range_entries_in_order(global_table: bool) -> None:
    # GIVEN a GSI of 2 partition and 3 sort attributes, on a single-region table and on a global one (TableV2)
    knobs = {"replicas": "us-east-1"} if global_table else {}
    _, template, _ = synth(
        indexes=MULTI, stream="new-and-old", region="eu-west-1" if global_table else None, **knobs
    )
    kind = "AWS::DynamoDB::GlobalTable" if global_table else TABLE
    properties = only(template, kind)["Properties"]
    gsis = {g["IndexName"]: g for g in properties["GlobalSecondaryIndexes"]}
    # THEN its KeySchema is CloudFormation's form: the HASH entries, then the RANGE entries, each in declared order
    assert gsis["byMatch"]["KeySchema"] == [
        {"AttributeName": "tenant", "KeyType": "HASH"},
        {"AttributeName": "region", "KeyType": "HASH"},
        {"AttributeName": "year", "KeyType": "RANGE"},
        {"AttributeName": "round", "KeyType": "RANGE"},
        {"AttributeName": "seq", "KeyType": "RANGE"},
    ]
    # AND each attribute is defined once with its type; the single-attribute index is as before
    types = {a["AttributeName"]: a["AttributeType"] for a in properties["AttributeDefinitions"]}
    assert {a: types[a] for a in ("tenant", "region", "year", "round", "seq")} == {
        "tenant": "S", "region": "S", "year": "N", "round": "S", "seq": "N"
    }  # fmt: skip
    assert [k["KeyType"] for k in gsis["byOwner"]["KeySchema"]] == ["HASH", "RANGE"]


def test_cfn_lint_is_clean_on_each_index_template(tmp_path: Path) -> None:
    for case, declared in CASES.items():
        (tmp_path / f"{case}.template.json").write_text(json.dumps(table(declared)))
    _, global_multi, _ = synth(indexes=MULTI, stream="new-and-old", region="eu-west-1", replicas="us-east-1")
    (tmp_path / "multi-attribute-global.template.json").write_text(json.dumps(global_multi))
    result = cfn_lint(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_runtime_policy_lets_an_application_write_its_blobs_under_the_blob_root() -> None:
    _, template, _ = synth(stream="new-and-old", blob_root="docs/")
    policy = only(template, "AWS::IAM::ManagedPolicy")["Properties"]["PolicyDocument"]["Statement"]
    (blobs,) = [s for s in policy if s.get("Sid") == "ApplicationBlobs"]
    assert sorted(blobs["Action"]) == ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"]
    assert json.dumps(blobs["Resource"]).endswith('"/docs/*"]]}')
    # without the built-in consumer the stack has no blob bucket, and the policy no blob statement
    _, bare, _ = synth(stream="new-and-old", consumer="none")
    statements = only(bare, "AWS::IAM::ManagedPolicy")["Properties"]["PolicyDocument"]["Statement"]
    assert not [s for s in statements if s.get("Sid") == "ApplicationBlobs"]
