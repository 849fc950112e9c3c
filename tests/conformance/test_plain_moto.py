"""The local AWS and plain moto side by side: the same scenarios (tests/conformance/scenarios.py) against both;
every difference is a registered behaviour of the local AWS (local/behaviours.py, with its AWS source), and every
answer the local AWS gives conforms to botocore's service model; every request it authorizes names actions,
resources and condition keys IAM's Service Authorization Reference has."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from local import api
from local.auth import requests as iam_requests
from local.behaviours import BEHAVIOURS, matches
from tests.conformance import models, sar, scenarios, servers


@dataclass
class SideBySide:
    moto: scenarios.Run
    local: scenarios.Run

    @property
    def differences(self) -> list[str]:
        return scenarios.differences(self.moto, self.local)


@pytest.fixture(scope="module")
def side_by_side(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SideBySide]:
    directory: Path = tmp_path_factory.mktemp("conformance")
    with servers.plain_moto(directory) as moto, servers.local_aws(directory / "local") as local:
        yield SideBySide(scenarios.run_all(moto), scenarios.run_all(local))


def test_every_difference_from_plain_moto_is_a_registered_behaviour(side_by_side: SideBySide) -> None:
    # GIVEN every difference between plain moto's and the local AWS's outcomes of the same steps
    differences = side_by_side.differences
    patterns = {pattern: b.id for b in BEHAVIOURS for pattern in b.differs}
    # THEN each is explained by a registered behaviour (which names AWS's rule and its source)
    unexplained = [d for d in differences if not any(matches(p, d) for p in patterns)]
    assert unexplained == [], "differences from plain moto that no behaviour of local/behaviours.py explains"
    # AND every difference a behaviour claims still happens (a stale claim would pass anything)
    stale = [f"{b}: {p}" for p, b in patterns.items() if not any(matches(p, d) for d in differences)]
    assert stale == [], "registered differences the scenarios no longer show"


def test_the_scenarios_ran_the_same_steps_and_the_local_aws_refused_what_aws_refuses(
    side_by_side: SideBySide,
) -> None:
    # THEN both servers ran every step, and the refusals the scenarios provoke are the local AWS's answers
    assert list(side_by_side.moto.outcomes) == list(side_by_side.local.outcomes)
    local = side_by_side.local.outcomes
    assert {step: local[step].error for step in local if local[step].error} == {
        "dynamodb.put-item-condition-fails": "ConditionalCheckFailedException",
        "dynamodb.get-item-projection": "ValidationException",
        "dynamodb.get-item-forged": "InvalidSignatureException",
        "s3.put-anonymous": "AccessDenied",
        "s3.put-bad-checksum": "BadDigest",
        "dynamodb.query-missing-index": "ValidationException",
        "dynamodb.ttl-disable-at-once": "ValidationException",
        "dynamodb.add-second-index-at-once": "LimitExceededException",
        "dynamodb.add-index-twice": "ValidationException",
        "dynamodb.delete-protected": "ValidationException",
        "s3.put-if-none-match-exists": "PreconditionFailed",
        "s3.put-if-none-match-etag": "NotImplemented",
        "s3.put-if-match-wrong": "PreconditionFailed",
        "s3.put-if-match-missing": "NoSuchKey",
        "s3.get-missing": "NoSuchKey",
        "s3.delete-if-match-wrong": "PreconditionFailed",
        "s3.delete-if-match-missing": "NoSuchKey",
    }


def test_the_local_aws_swallowed_no_failure_during_the_scenarios(side_by_side: SideBySide) -> None:
    # THEN its health answer records no incident: no exception caught and dropped anywhere in the server
    answer = api.health(side_by_side.local.server.port)
    assert answer is not None and answer["incidents"] == {"count": 0, "recent": []}


def test_every_answer_of_the_local_aws_conforms_to_botocores_model(side_by_side: SideBySide) -> None:
    # GIVEN every answer the local AWS gave during the scenarios (probes included)
    answers = side_by_side.local.server.recorder.answers
    assert len(answers) > 50
    # THEN each parses to its operation's output shape, required members present, no member the model lacks
    # (JSON protocols), and each error code is one the model or the service's common errors name
    problems = sorted({p for answer in answers for p in models.problems(answer)})
    assert problems == []


def test_every_request_is_authorized_as_the_service_authorization_reference_names_it(
    side_by_side: SideBySide, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN every request the scenarios sent the local AWS, read as its IAM check reads it (an alias resolved to
    # the key the local AWS resolved it to: this process has none of its keys)
    key = side_by_side.local.answers["kms.describe-by-alias"]["KeyMetadata"]["Arn"]
    resolve = iam_requests.kms_resource
    monkeypatch.setattr(
        iam_requests,
        "kms_resource",
        lambda data, region: (
            key if str(data.get("KeyId", "")).startswith("alias/") else resolve(data, region)
        ),
    )
    sent = side_by_side.local.server.recorder.sent
    checks = [
        c
        for request in sent
        for c in (
            iam_requests.parse(request.environ(), request.body)
            or iam_requests.anonymous(request.environ(), request.body)  # unsigned: S3's anonymous principal
        ).checks
    ]
    assert len(checks) >= len(sent) > 50
    # THEN each action exists, each resource is one of the action's resource types, each condition key is one
    # of the action's
    problems = sorted(
        {p for c in checks for p in [sar.resource_problem(c.action, c.resource)] if p}
        | {p for c in checks for key in c.context for p in [sar.condition_problem(c.action, key)] if p}
    )
    assert problems == []
