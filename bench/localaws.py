"""The local AWS's own cost of answering DynamoDB as AWS does: requests per second for PutItem, a conditional
UpdateItem and a Query, with the request handling of local/services/dynamodb/api (the model's constraints, the
expressions' parser and evaluator, the legacy parameters' rewrite, ...: CHECKS) and without it, in the same run.

boto3 against moto in process, with every other adaptation of the local AWS installed in both runs: what differs
is the checking alone. The figure is the ratio checked/unchecked (1.0 costs nothing); the absolute rates are
moto's and this machine's, not AWS's.

Beside it, the cost of checking signatures (local/auth/sigv4.py): signed GetItem requests through the server's
auth middleware into moto's app, per second, with the signature recomputed and with its check left out (the same
run, the same middleware: what differs is the verification alone).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

# The request handling measured: the model's checks, the expressions' parser and evaluator, the legacy parameters'
# rewrite and the consumed capacity at the operations' entry, projections, number arithmetic and update functions.
CHECKS = (
    "local.services.dynamodb.api.wire",
    "local.services.dynamodb.api.conditions",
    "local.services.dynamodb.api.operations",
    "local.services.dynamodb.api.projection",
    "local.services.dynamodb.api.numbers",
    "local.services.dynamodb.api.updates",
    "local.services.dynamodb.api.keys",
    "local.services.dynamodb.transactions",
    "local.services.dynamodb.items",
    "local.services.dynamodb.tags",
)
OPERATIONS = ("PutItem", "UpdateItem (conditional)", "Query")
TARGET_RATIO = 0.8  # the checks may cost at most a fifth of the local AWS's rate


def _client() -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="bench", aws_secret_access_key="bench",
        config=Config(retries={"total_max_attempts": 1}),
    )  # fmt: skip


def _requests(ddb: Any) -> dict[str, Callable[[int], None]]:
    item = {"pk": {"S": "doc"}, "sk": {"S": "v0"}, "blobs": {"L": [{"S": "doc/v0/a.bin"}]}, "n": {"N": "1"}}

    def put(i: int) -> None:
        ddb.put_item(TableName="bench-items", Item={**item, "sk": {"S": f"v{i % 50}"}})

    def update(i: int) -> None:
        ddb.update_item(
            TableName="bench-items", Key={"pk": {"S": "doc"}, "sk": {"S": f"v{i % 50}"}},
            UpdateExpression="SET n = n + :one", ConditionExpression="attribute_exists(pk) AND n >= :zero",
            ExpressionAttributeValues={":one": {"N": "1"}, ":zero": {"N": "0"}},
        )  # fmt: skip

    def query(_: int) -> None:
        ddb.query(
            TableName="bench-items", KeyConditionExpression="pk = :pk", FilterExpression="n > :zero",
            ExpressionAttributeValues={":pk": {"S": "doc"}, ":zero": {"N": "0"}},
        )  # fmt: skip

    return dict(zip(OPERATIONS, (put, update, query), strict=True))


def _rates(checked: bool, seconds: float) -> dict[str, float]:
    from moto import mock_aws

    from local import patching, services

    point = patching.checkpoint()
    try:
        names = services.PATCHING if checked else tuple(n for n in services.PATCHING if n not in CHECKS)
        patching.install(*(module.PATCHES for module in services.modules(names)))
        with mock_aws():
            ddb = _client()
            ddb.create_table(
                TableName="bench-items", BillingMode="PAY_PER_REQUEST",
                KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                      {"AttributeName": "sk", "AttributeType": "S"}],
            )  # fmt: skip
            rates: dict[str, float] = {}
            for name, request in _requests(ddb).items():
                for i in range(20):  # warm: the model, the parser, the first items
                    request(i)
                count, started = 0, time.perf_counter()
                while time.perf_counter() - started < seconds:
                    request(count)
                    count += 1
                rates[name] = count / (time.perf_counter() - started)
            return rates
    finally:
        patching.rollback(point)


def _signed_rate(verified: bool, seconds: float, operation: str = "GetItem") -> float:
    """Signed requests per second through the auth middleware into moto's app: DynamoDB GetItem, or S3 PutObject
    of 64 KiB with its payload signed and a CRC32 (the signature, the payload hash and the checksum checked)."""
    from botocore.auth import S3SigV4Auth, SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    from moto import mock_aws
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    from local import patching, services, state
    from local.auth import middleware, payload, principals, sigv4
    from local.services import iam as local_iam
    from tests.support.signed import environ

    point = patching.checkpoint()
    original, original_body = sigv4.problem, payload.check
    credentials = Credentials(state.ACCESS_KEY_ID, state.SECRET_ACCESS_KEY)
    try:
        patching.install(*(module.PATCHES for module in services.modules()))
        if not verified:  # the baseline: the same request, its signature (and body) unchecked
            sigv4.problem = lambda *args, **kwargs: None
            payload.check = lambda *args, **kwargs: None
        with mock_aws():
            principals.ensure_admin_deployer(local_iam.ensure_aws_managed_policy)
            app = middleware.AuthMiddleware(DomainDispatcherApplication(create_backend_app))
            if operation == "PutObject":
                import base64
                import zlib

                import boto3

                boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="bench-blobs")
                data = b"x" * 65536
                crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
                request = AWSRequest("PUT", "http://localhost:4599/bench-blobs/doc", data=data,
                                     headers={"x-amz-checksum-crc32": crc})  # fmt: skip
                S3SigV4Auth(credentials, "s3", "us-east-1").add_auth(request)
            else:
                ddb = _client()
                ddb.create_table(
                    TableName="bench-items", BillingMode="PAY_PER_REQUEST",
                    KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                    AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                )  # fmt: skip
                ddb.put_item(TableName="bench-items", Item={"pk": {"S": "doc"}, "n": {"N": "1"}})
                body = b'{"TableName": "bench-items", "Key": {"pk": {"S": "doc"}}}'
                request = AWSRequest("POST", "https://localhost:4599/", data=body, headers={
                    "X-Amz-Target": "DynamoDB_20120810.GetItem", "Content-Type": "application/x-amz-json-1.0"})  # fmt: skip
                SigV4Auth(credentials, "dynamodb", "us-east-1").add_auth(request)
            statuses: list[str] = []

            def start_response(status: str, headers: Any) -> None:
                statuses.append(status)

            def send() -> None:
                b"".join(app(environ(request), start_response))

            for _ in range(20):
                send()
            assert set(statuses) == {"200 OK"}, f"the signed {operation} was refused: {statuses[-1]}"
            count, started = 0, time.perf_counter()
            while time.perf_counter() - started < seconds:
                send()
                count += 1
            return count / (time.perf_counter() - started)
    finally:
        sigv4.problem, payload.check = original, original_body
        patching.rollback(point)


def run(seconds: float = 3.0, rounds: int = 3) -> dict[str, Any]:
    """Each operation's rate with and without the checks, alternating ``rounds`` times (the best of each kept)."""
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        os.environ.pop(name, None)
    best: dict[str, dict[str, float]] = {"checked": {}, "unchecked": {}}
    signed = {"verified": 0.0, "unverified": 0.0}
    put = {"verified": 0.0, "unverified": 0.0}
    for _ in range(rounds):
        for kind in ("unchecked", "checked"):
            for name, rate in _rates(kind == "checked", seconds).items():
                best[kind][name] = max(best[kind].get(name, 0.0), rate)
        for kind in ("unverified", "verified"):
            signed[kind] = max(signed[kind], _signed_rate(kind == "verified", seconds))
            put[kind] = max(put[kind], _signed_rate(kind == "verified", seconds, "PutObject"))
    return {
        "seconds": seconds,
        "rounds": rounds,
        "rates": best,
        "ratios": {name: best["checked"][name] / best["unchecked"][name] for name in OPERATIONS},
        "signed": {**signed, "ratio": signed["verified"] / signed["unverified"]},
        "signed_put": {**put, "ratio": put["verified"] / put["unverified"]},
    }


def localaws_figures(section: dict[str, Any]) -> list[dict[str, Any]]:
    from bench.figures import figure

    figures = []
    for name in OPERATIONS:
        ratio = section["ratios"][name]
        figures.append(
            figure(
                f"localaws_{name.split()[0].lower()}_rps",
                f"Local AWS {name}, with DynamoDB's request checks (requests/s)",
                "req/s",
                section["rates"]["checked"][name],
                baseline=section["rates"]["unchecked"][name],
                ratio=ratio,
                target=f">= {TARGET_RATIO:g}x the unchecked rate",
                met=ratio >= TARGET_RATIO,
                note="moto in process, the same adaptations but the checks; best of "
                f"{section['rounds']} alternating rounds of {section['seconds']:g} s",
            )
        )
    signed = section.get("signed")
    if signed:
        figures.append(
            figure(
                "localaws_signed_getitem_rps",
                "Local AWS signed GetItem, with its signature recomputed (requests/s)",
                "req/s",
                signed["verified"],
                baseline=signed["unverified"],
                ratio=signed["ratio"],
                target=f">= {TARGET_RATIO:g}x the rate without the check",
                met=signed["ratio"] >= TARGET_RATIO,
                note="the auth middleware into moto's app in process, the signature check left out in the "
                f"baseline; best of {section['rounds']} alternating rounds of {section['seconds']:g} s",
            )
        )
    put = section.get("signed_put")
    if put:
        figures.append(
            figure(
                "localaws_signed_putobject_rps",
                "Local AWS signed S3 PutObject of 64 KiB, its signature, payload hash and CRC32 checked (requests/s)",
                "req/s",
                put["verified"],
                baseline=put["unverified"],
                ratio=put["ratio"],
                target=f">= {TARGET_RATIO:g}x the rate without the checks",
                met=put["ratio"] >= TARGET_RATIO,
                note="the auth middleware into moto's app in process, the signature and body checks left out in "
                f"the baseline; best of {section['rounds']} alternating rounds of {section['seconds']:g} s",
            )
        )
    return figures
