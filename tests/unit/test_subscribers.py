"""Subscribers declared in the settings file (contract/subscribers.py, resolved by contract/knobs/__init__.py): what a
declaration becomes, what a stack records of it, and every bad input as one problem naming the subscriber and
what is allowed; the stream's reader limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contract.knobs import ConfigError, resolve_config, subscribers_of_record
from contract.settings.resolve import resolve_settings

ROOT = Path(__file__).resolve().parents[2]
HANDLER = "examples/subscribers/search.py:handler"
STREAM = {"stream": "new-and-old"}


def resolve(subscribers: dict[str, Any], **knobs: str) -> Any:
    return resolve_config(context={**STREAM, **knobs}, environ={}, subscribers=subscribers, settings_dir=ROOT)


def problems(subscribers: dict[str, Any], **knobs: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        resolve(subscribers, **knobs)
    return caught.value.problems


def test_a_declaration_becomes_a_subscriber_with_its_options() -> None:
    config = resolve(
        {
            "search": {
                "handler": HANDLER,
                "filters": ['{"eventName": ["INSERT", "MODIFY"]}'],
                "batch_size": 25,
                "memory": 256,
                "grants": ["table:read", "blobs:read"],
                "environment": {"SEARCH_TABLE": "search-dev"},
            }
        }
    )
    (spec,) = config.subscribers
    assert (spec.name, spec.handler_file, spec.function, spec.module) == (
        "search", "examples/subscribers/search.py", "handler", "search"
    )  # fmt: skip
    assert spec.filters == ('{"eventName":["INSERT","MODIFY"]}',)
    assert dict(spec.options) == {"batch_size": "25", "memory": "256"}
    assert [g.resource for g in spec.grants] == ["table", "blobs"]
    assert spec.environment == (("SEARCH_TABLE", "search-dev"),)
    assert spec.path == str(ROOT / "examples/subscribers/search.py")


def test_the_stack_records_the_declarations_and_reads_them_back() -> None:
    config = resolve({"search": {"handler": HANDLER, "batch_size": 25}})
    record = config.deployed_record()
    again = resolve_config(context={**STREAM}, environ={}, subscribers=subscribers_of_record(record))
    assert again.subscribers == config.subscribers
    assert json.loads(json.loads(record)["subscribers"]) == {"search": {"handler": HANDLER, "batch_size": 25}}


def test_an_environment_declaring_subscribers_replaces_the_defaults(tmp_path: Path) -> None:
    (tmp_path / "subscribers").mkdir()
    (tmp_path / "subscribers" / "audit.py").write_text("def handler(event, context):\n    return None\n")
    path = tmp_path / "doctable.toml"
    path.write_text(
        '[defaults]\nstream = "new-and-old"\n[defaults.subscribers.audit]\nhandler = "subscribers/audit.py:handler"\n'
        '[environments.dev]\ntier = "dev"\n[environments.stg]\ntier = "stg"\n[environments.stg.subscribers]\n'
    )
    dev = resolve_settings({"env": "dev"}, {}, config_path=path).config
    stg = resolve_settings({"env": "stg"}, {}, config_path=path).config
    assert [s.name for s in dev.subscribers] == ["audit"] and stg.subscribers == ()


@pytest.mark.parametrize(
    ("subscribers", "knobs", "expected"),
    [
        (
            {"Search": {"handler": HANDLER}},
            {},
            "subscriber 'Search': the name is not allowed; allowed: [a-z][a-z0-9-]*",
        ),
        (
            {"search": {"handler": "search.py"}},
            {},
            "handler = 'search.py' is malformed; allowed: \"<file>.py:<function>\"",
        ),
        ({"search": {"handler": "nope/missing.py:handler"}}, {}, "handler file nope/missing.py not found"),
        (
            {"search": {"handler": "examples/subscribers/search.py:handle"}},
            {},
            "handler function handle is not defined in examples/subscribers/search.py; the file defines: ",
        ),
        ({"search": {"handler": HANDLER, "filters": ["INSERT"]}}, {}, "filter 'INSERT' is not a JSON object"),
        (
            {"search": {"handler": HANDLER, "filters": ['{"eventname": ["INSERT"]}']}},
            {},
            "names eventname, which DynamoDB stream records lack",
        ),
        (
            {"search": {"handler": HANDLER, "filters": ['{"dynamodb": {"NewImages": {}}}']}},
            {},
            "names dynamodb.NewImages, which DynamoDB stream records lack",
        ),
        (
            {"search": {"handler": HANDLER, "filters": [f'{{"eventName": ["E{i}"]}}' for i in range(6)]}},
            {},
            "6 filters; allowed: at most 5",
        ),
        (
            {"search": {"handler": HANDLER, "grants": ["table:admin"]}},
            {},
            "grant 'table:admin' does not exist",
        ),
        (
            {
                "search": {
                    "handler": HANDLER,
                    "grants": [
                        {"resource": "arn:aws:sqs:us-east-1:123456789012:*", "actions": ["sqs:SendMessage"]}
                    ],
                }
            },
            {},
            "is not one ARN; allowed: an ARN without *",
        ),
        (
            {
                "search": {
                    "handler": HANDLER,
                    "grants": [{"resource": "arn:aws:s3:::blob?", "actions": ["s3:GetObject"]}],
                }
            },
            {},
            "grant resource 'arn:aws:s3:::blob?' is not one ARN; allowed: an ARN without * or ?",
        ),
        (
            {
                "search": {
                    "handler": HANDLER,
                    "grants": [
                        {
                            "resource": "arn:aws:iam::123456789012:role/admin",
                            "actions": ["iam:PassRole", "sts:AssumeRole"],
                        }
                    ],
                }
            },
            {},
            "grant actions iam:PassRole (an IAM action: identities are not a subscriber's), sts:AssumeRole (an STS "
            "action: identities are not a subscriber's) may not be granted to a subscriber",
        ),
        (
            {
                "search": {
                    "handler": HANDLER,
                    "grants": [
                        {
                            "resource": "arn:aws:s3:::their-blobs",
                            "actions": ["s3:PutBucketPolicy", "s3:GetObject"],
                        }
                    ],
                }
            },
            {},
            "grant actions s3:PutBucketPolicy (access level Permissions management) may not be granted",
        ),
        (
            {
                "search": {
                    "handler": HANDLER,
                    "grants": [
                        {
                            "resource": "arn:aws:kms:us-east-1:123456789012:key/k",
                            "actions": ["kms:CreateGrant", "kms:Decryptt"],
                        }
                    ],
                }
            },
            {},
            "kms:CreateGrant (access level Permissions management), kms:Decryptt (not an action of the Service "
            "Authorization Reference",
        ),
        (
            {"search": {"handler": HANDLER, "batch_size": 0}},
            {},
            "subscriber 'search': batch_size: batch_size='0' is out of range",
        ),
        (
            {"search": {"handler": HANDLER, "memory": "lots"}},
            {},
            "subscriber 'search': memory: memory='lots'",
        ),
        (
            {"search": {"handler": HANDLER, "environment": {"DB_PASSWORD": "hunter2"}}},
            {},
            "environment variable DB_PASSWORD looks like a secret written in the file",
        ),
        (
            {"search": {"handler": HANDLER, "environment": {"KEY": "AKIAABCDEFGHIJKLMNOP"}}},
            {},
            "environment variable KEY looks like a secret written in the file",
        ),
        (
            {"search": {"handler": HANDLER, "environment": {"AWS_REGION": "x"}}},
            {},
            "environment variable 'AWS_REGION' is not allowed",
        ),
        (
            {"search": {"handler": HANDLER, "source": "sqs"}},
            {},
            "source = 'sqs' is not allowed; allowed: dynamodb|kinesis",
        ),
        (
            {"search": {"handler": HANDLER, "source": "kinesis"}},
            {},
            'source = "kinesis" needs the table\'s Kinesis destination',
        ),
        (
            {"search": {"handler": HANDLER, "retries": 3}},
            {},
            "retries is not a subscriber setting; allowed: ",
        ),
        (
            {"search": {"handler": HANDLER, "requirements": "no-such-requirements.txt"}},
            {},
            "requirements file no-such-requirements.txt not found",
        ),
        (
            {"a": {"handler": HANDLER}, "b": {"handler": HANDLER}},
            {},
            "3 readers of the table's DynamoDB stream (the cleanup consumer, a, b); allowed: at most 2 per shard",
        ),
        (
            {"a": {"handler": HANDLER, "regions": "everywhere"}},
            {"replicas": "us-west-2"},
            "subscriber 'a': regions = 'everywhere' is not allowed; allowed: \"home\" (the default), \"all\" or a "
            "list of the table's regions",
        ),
        (
            {"a": {"handler": HANDLER, "regions": ["us-east-1", "eu-west-3"]}},
            {"replicas": "us-west-2"},
            "subscriber 'a': regions = ['us-east-1', 'eu-west-3'] names us-east-1, eu-west-3, not all the table's; "
            'allowed: "home", "all" or a list of the table\'s regions (the home region and us-west-2)',
        ),
        (
            {"a": {"handler": HANDLER, "source": "kinesis"}},
            {"replicas": "us-west-2"},
            "subscriber 'a': source = \"kinesis\" on a global table: a Kinesis destination is per replica and per "
            'region and is not built with replicas; allowed: source = "dynamodb"',
        ),
        (
            {
                "a": {"handler": HANDLER, "regions": ["us-west-2"]},
                "b": {"handler": HANDLER, "regions": "all"},
            },
            {"replicas": "us-west-2"},
            "3 readers of the replica stream in us-west-2 (the cleanup consumer, a, b); allowed: at most 2 per shard "
            "in each region (more are throttled; AWS recommends 1 on a global table)",
        ),
        (
            {"search-projection-v2": {"handler": HANDLER}},
            {"table_base": "customer-documents"},
            "subscriber 'search-projection-v2': its failure bucket <table>-<account>-<region>-search-projection-v2-"
            "failures of table customer-documents-dev would be 80 characters (bucket_names=exact, the region "
            "counted as the longest, 14); allowed: at most 63 (S3): a subscriber name of at most 3 characters here",
        ),
        (
            {f"k{n}": {"handler": HANDLER, "source": "kinesis"} for n in range(21)},
            {"kinesis": "on"},
            "21 subscribers read the Kinesis destination, each through its own enhanced fan-out consumer; allowed: at "
            "most 20 (Kinesis registers at most 20 consumers per stream)",
        ),
    ],
)
def test_each_bad_subscriber_is_one_problem_naming_it_and_what_is_allowed(
    subscribers: dict[str, Any], knobs: dict[str, str], expected: str
) -> None:
    knobs = {k: v for k, v in knobs.items() if k != "region"}
    found = problems(subscribers, **knobs)
    assert len(found) == 1 and expected in found[0], found


def test_the_reader_limit_counts_only_direct_readers() -> None:
    # GIVEN the cleanup consumer and one direct subscriber (two readers), and two more on the Kinesis destination
    config = resolve(
        {
            "a": {"handler": HANDLER},
            "b": {"handler": HANDLER, "source": "kinesis"},
            "c": {"handler": HANDLER, "source": "kinesis"},
        },
        kinesis="on",
    )
    assert [s.name for s in config.subscribers] == ["a", "b", "c"]


def test_a_secret_given_as_a_reference_is_allowed() -> None:
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:search-token"
    (spec,) = resolve({"search": {"handler": HANDLER, "environment": {"API_TOKEN": arn}}}).subscribers
    assert spec.environment == (("API_TOKEN", arn),)


# ------------------------------------------------------------------------------------------ day 2
@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        ({}, {"a": {"handler": HANDLER}}, [("subscriber.added", "CHANGE", False)]),
        ({"a": {"handler": HANDLER}}, {}, [("subscriber.removed", "CHANGE", True)]),
        (
            {"a": {"handler": HANDLER}},
            {"a": {"handler": HANDLER, "starting_position": "latest"}},
            [("subscriber.replaced", "CHANGE", True)],
        ),
        (
            {"a": {"handler": HANDLER}},
            {"a": {"handler": HANDLER, "source": "kinesis"}},
            [("subscriber.replaced", "CHANGE", True)],
        ),
        (
            {"a": {"handler": HANDLER}},
            {"a": {"handler": HANDLER, "batch_size": 7}},
            [("subscriber.updated", "CHANGE", False)],
        ),
        (
            {"a": {"handler": HANDLER}},
            {"a": {"handler": HANDLER, "filters": ['{"eventName": ["INSERT"]}']}},
            [("subscriber.updated", "CHANGE", False)],
        ),
        ({"a": {"handler": HANDLER}}, {"a": {"handler": HANDLER}}, []),
    ],
)
def test_a_subscriber_change_is_a_finding_and_removing_or_replacing_one_goes_through_the_gate(
    before: dict[str, Any], after: dict[str, Any], expected: list[tuple[str, str, bool]]
) -> None:
    from doctable.capabilities.consumer import subscriber_findings

    found = subscriber_findings(resolve(before, kinesis="on"), resolve(after, kinesis="on"))
    assert [(f.code, f.level.value, f.destructive) for f in found] == expected


def test_a_third_kinesis_reader_moves_the_kinesis_subscribers_to_fan_out_consumers_through_the_gate() -> None:
    from doctable.capabilities.consumer import subscriber_findings

    # GIVEN the consumer on Kinesis and one subscriber on it (two readers: shared reads)
    one = {"a": {"handler": HANDLER, "source": "kinesis"}}
    before = resolve(one, kinesis="on", consumer_source="kinesis")
    # WHEN a second subscriber on Kinesis is declared (three readers: each subscriber through its own consumer)
    after = resolve(
        {**one, "b": {"handler": HANDLER, "source": "kinesis"}}, kinesis="on", consumer_source="kinesis"
    )
    found = subscriber_findings(before, after)
    # THEN the new one is added and the existing one's mapping is replaced (another source ARN): destructive
    assert [(f.code, f.subject, f.destructive) for f in found] == [
        ("subscriber.added", "subscriber b", False),
        ("subscriber.replaced", "subscriber a", True),
    ]
    replaced = found[1]
    assert (replaced.before, replaced.after) == (
        ["kinesis(shared)", "trim-horizon"],
        ["kinesis(fan-out)", "trim-horizon"],
    )
