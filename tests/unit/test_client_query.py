"""DocClient.query_index: a query of an index by a dict of key values, against the local AWS in process (its
adaptations of moto), the key condition DynamoDB requires of a multi-attribute key built and checked before any call,
and the index's key schema read from the stack's Knobs output, ``indexes=`` or DescribeTable."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from contract import names
from contract.knobs import resolve_config
from contract.shape import table_shape
from doctable.client import ConfigurationError, Deployment, DocClient, IndexKeys, RetryPolicy, ValidationError
from doctable.client.indexes import key_condition

REGION = "eu-west-1"
TABLE = "mak-client"
MATCH = {"partition": ["tenant:S", "region:S"], "sort": ["year:N", "round:S", "seq:N"]}
DECLARED = {"byMatch": MATCH, "byOwner": {"partition": "owner:S", "sort": "at:N", "projection": "keys-only"}}


@pytest.fixture
def ddb(local_moto: None) -> Iterator[Any]:
    """GIVEN the table with a GSI of 2 partition and 3 sort attributes (and a single-attribute one), as the stack
    declares them, on the local AWS in process."""
    shape = table_shape(resolve_config(context={}, environ={}, indexes=DECLARED))
    client = boto3.client("dynamodb", region_name=REGION)
    client.create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": k.name, "KeyType": k.key_type} for k in shape.keys],
        AttributeDefinitions=[
            {"AttributeName": a, "AttributeType": t} for a, t in shape.attribute_definitions().items()
        ],
        GlobalSecondaryIndexes=[i.definition() for i in shape.global_indexes],
        BillingMode="PAY_PER_REQUEST",
    )
    yield client


def docs_of(ddb: Any, **options: Any) -> DocClient:
    options.setdefault("retry", RetryPolicy(sleep=lambda _: None))
    return DocClient(TABLE, dynamodb=ddb, **options)


def matches(docs: DocClient) -> None:
    """Six matches of tenant a (five in eu, one in us) and one lacking seq (in no index)."""
    for n in range(6):
        docs.put(
            f"m{n}",
            "v",
            {
                "tenant": "a",
                "region": "eu" if n < 5 else "us",
                "year": 2024 + n % 2,
                "round": f"r{n // 3}",
                "seq": n,
            },
        )
    docs.put("partial", "v", {"tenant": "a", "region": "eu", "year": 2024, "round": "r0"})


def pks(found: list[Any]) -> list[str]:
    return [d.pk for d in found]


def test_a_query_by_a_dict_of_key_values_follows_dynamodbs_rules(ddb: Any) -> None:
    docs = docs_of(ddb, indexes=DECLARED)
    matches(docs)
    eu = {"tenant": "a", "region": "eu"}
    # the whole partition (both partition attributes), ordered by year, round, seq; the partial item is not indexed
    assert pks(docs.query_index("byMatch", eu)) == ["m0", "m2", "m4", "m1", "m3"]
    assert pks(docs.query_index("byMatch", eu, ascending=False)) == ["m3", "m1", "m4", "m2", "m0"]
    # sort attributes left to right: = on each but the last, a range on the last
    assert pks(docs.query_index("byMatch", {**eu, "year": 2024})) == ["m0", "m2", "m4"]
    assert pks(docs.query_index("byMatch", {**eu, "year": 2024, "round": ("begins_with", "r1")})) == ["m4"]
    assert pks(docs.query_index("byMatch", {**eu, "year": 2024, "round": "r0", "seq": (">", 0)})) == ["m2"]
    assert pks(docs.query_index("byMatch", {**eu, "year": ("between", 2025, 2030)})) == ["m1", "m3"]
    # the documents come back whole (projection ALL), and the limit pages through LastEvaluatedKey
    (first,) = docs.query_index("byMatch", {**eu, "year": 2025, "round": "r0"})
    assert first.attributes["seq"] == 1 and first.version == 1
    assert pks(docs.query_index("byMatch", eu, limit=4)) == ["m0", "m2", "m4", "m1"]
    # a single-attribute index, keys only: the table's and the index's keys
    docs.put("o1", "v", {"owner": "ann", "at": 5, "note": "x"})
    (owned,) = docs.query_index("byOwner", {"owner": "ann", "at": ("<=", 5)})
    assert owned.pk == "o1" and dict(owned.attributes) == {"owner": "ann", "at": 5}


class NoCalls:
    """A client any call to which fails the test: a bad key is refused before AWS is asked anything."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"no AWS call may be made for a bad key (called {name})")


EU = {"tenant": "a", "region": "eu"}
BAD_KEYS: list[tuple[str, str, Any, str]] = [
    ("a partition attribute missing", "byMatch", {"tenant": "a"}, "partition attribute 'region' is missing; a query gives every partition attribute with ="),
    ("a range on a partition attribute", "byMatch", {"tenant": ("<", "b"), "region": "eu"}, "'tenant' is a partition attribute: only equality"),
    ("a sort attribute skipped", "byMatch", {**EU, "round": "r0"}, "sort attribute 'round' is given without 'year' before it; the sort attributes go left to right, none skipped"),
    ("a sort attribute skipped in the middle", "byMatch", {**EU, "year": 2024, "seq": 1}, "sort attribute 'seq' is given without 'round' before it"),
    ("a range before the last", "byMatch", {**EU, "year": (">", 2000), "round": "r0"}, "'year' has a range but 'round' after it is given too; a range is allowed only on the last sort attribute given"),
    ("not a key attribute", "byMatch", {**EU, "colour": "red"}, "'colour' is not a key attribute of the index (partition tenant, region; sort year, round, seq)"),
    ("a value of another type", "byMatch", {**EU, "year": "2024"}, "'year' is N in the index; got str '2024', allowed: an int or a Decimal"),
    ("a float", "byMatch", {**EU, "year": 2024.5}, "'year' is N in the index; got float"),
    ("an empty string", "byMatch", {"tenant": "", "region": "eu"}, "'tenant' is S in the index; got str ''"),
    ("begins_with on a number", "byMatch", {**EU, "year": ("begins_with", 20)}, "'year' is N: begins_with applies to S and B attributes"),
    ("an unknown operator", "byMatch", {**EU, "year": ("!=", 1)}, "'year': ('!=', 1) is not a condition; allowed: a value (=)"),
    ("between with one bound", "byMatch", {**EU, "year": ("between", 1)}, "'year': ('between', 1) is not a condition"),
    ("an empty key", "byMatch", {}, "the key must be a non-empty dict of attribute to value"),
    ("not a dict", "byMatch", ["a", "eu"], "the key must be a non-empty dict"),
]  # fmt: skip


@pytest.mark.parametrize(("index", "key", "message"), [c[1:] for c in BAD_KEYS], ids=[c[0] for c in BAD_KEYS])
def test_a_key_dynamodb_refuses_is_refused_in_one_line_before_any_call(
    index: str, key: Any, message: str
) -> None:
    docs = DocClient(TABLE, dynamodb=NoCalls(), s3=NoCalls(), indexes=DECLARED)
    with pytest.raises(ValidationError) as refused:
        docs.query_index(index, key)
    text = str(refused.value)
    assert message in text and "\n" not in text, text
    assert refused.value.step == "validate"


def raw_query(ddb: Any, key: dict[str, Any]) -> Callable[[], Any]:
    index = IndexKeys(
        "byMatch", (("tenant", "S"), ("region", "S")), (("year", "N"), ("round", "S"), ("seq", "N"))
    )
    return lambda: ddb.query(TableName=TABLE, IndexName="byMatch", **_unchecked(index, key))


def _unchecked(index: IndexKeys, key: dict[str, Any]) -> dict[str, Any]:
    """The key condition as written, without the client's refusal: each attribute with = in the order given."""
    names_ = {f"#k{n}": a for n, a in enumerate(key)}
    values = {
        f":k{n}": ({"N": str(v)} if isinstance(v, int) else {"S": v}) for n, v in enumerate(key.values())
    }
    expression = " AND ".join(f"#k{n} = :k{n}" for n in range(len(key)))
    return {
        "KeyConditionExpression": expression,
        "ExpressionAttributeNames": names_,
        "ExpressionAttributeValues": values,
    }


@pytest.mark.parametrize(
    "key",
    [{"tenant": "a"}, {**EU, "round": "r0"}, {**EU, "year": 2024, "seq": 1}],
    ids=[
        "a partition attribute missing",
        "a sort attribute skipped",
        "a sort attribute skipped in the middle",
    ],
)
def test_what_the_client_refuses_the_local_aws_refuses_too(ddb: Any, key: dict[str, Any]) -> None:
    # the client's refusal is DynamoDB's rule: sent as is, the local AWS answers ValidationException
    with pytest.raises(ValidationError):
        key_condition(
            IndexKeys(
                "byMatch", (("tenant", "S"), ("region", "S")), (("year", "N"), ("round", "S"), ("seq", "N"))
            ),
            key,
        )
    with pytest.raises(ClientError) as answered:
        raw_query(ddb, key)()
    assert answered.value.response["Error"]["Code"] == "ValidationException"


def test_the_key_schema_comes_from_the_stacks_knobs_output() -> None:
    config = resolve_config(context={"gsi": "gsi1", "table_base": "mak"}, environ={}, indexes=DECLARED)
    outputs = {names.OUT_TABLE_NAME: TABLE, names.OUT_KNOBS: config.deployed_record()}
    deployment = Deployment.from_outputs(outputs)
    assert {i.name: (i.partition, i.sort) for i in deployment.indexes} == {
        "gsi1": ((("gsi1pk", "S"),), (("gsi1sk", "S"),)),
        "byMatch": ((("tenant", "S"), ("region", "S")), (("year", "N"), ("round", "S"), ("seq", "N"))),
        "byOwner": ((("owner", "S"),), (("at", "N"),)),
    }
    docs = DocClient.from_deployment(deployment, dynamodb=NoCalls())
    with pytest.raises(ValidationError, match="sort attribute 'seq' is given without 'round'"):
        docs.query_index("byMatch", {**EU, "year": 1, "seq": 2})
    assert json.loads(outputs[names.OUT_KNOBS])["indexes"]  # the record the client read


def test_without_a_recorded_schema_describe_table_gives_it(ddb: Any) -> None:
    docs = docs_of(ddb)
    matches(docs)
    assert pks(docs.query_index("byMatch", {**EU, "year": 2025})) == ["m1", "m3"]
    with pytest.raises(ValidationError, match="known: byMatch, byOwner"):
        docs.query_index("byNothing", EU)


def test_a_bad_indexes_option_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="index 'byMatch': partition = \\['tenant'\\]"):
        DocClient(TABLE, indexes={"byMatch": {"partition": ["tenant"]}})


def test_the_generic_index_name_the_client_derives_is_the_contracts() -> None:
    from doctable.client import rules

    assert rules.GSI_INDEX == names.GSI_NAME
