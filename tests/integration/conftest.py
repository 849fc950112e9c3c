"""Integration fixtures: the embedded local AWS, bootstrapped and deployed with the real CDK CLI.

One local AWS per test session (started the way ``doctable local up`` starts it, on a free port, with its state
in a temporary directory), ``cdk bootstrap`` once, then each stack shape deployed once with ``cdk deploy`` (the
project's CLI on its pinned Node.js) from the project root, its outputs read back from CloudFormation. Helpers:
tests/support/localaws.py.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from tests.support import localaws as lt

TTL_CHANGE_INTERVAL_ENV = "DOCTABLE_LOCAL_TTL_CHANGE_INTERVAL_SECONDS"


@pytest.fixture(scope="session")
def local_aws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[lt.LocalAWS]:
    if not lt.CDK_BIN.exists():
        message = "the CDK CLI is not installed: run `npm ci` in the project root"
        if os.environ.get("CI"):
            pytest.fail(message)  # in CI a missing CLI is a broken set-up, not a reason to skip
        pytest.skip(message)
    # DynamoDB refuses a second TTL change within about an hour; the shared server shortens that interval so the
    # tests that toggle TTL run instead of skipping (read by the server process when it starts).
    previous = os.environ.get(TTL_CHANGE_INTERVAL_ENV)
    os.environ[TTL_CHANGE_INTERVAL_ENV] = "10"
    try:
        with lt.private_local_aws(tmp_path_factory.mktemp("local-aws")) as aws:
            yield aws
    finally:
        if previous is None:
            os.environ.pop(TTL_CHANGE_INTERVAL_ENV, None)
        else:
            os.environ[TTL_CHANGE_INTERVAL_ENV] = previous


@pytest.fixture(scope="session")
def bootstrapped(local_aws: lt.LocalAWS, tmp_path_factory: pytest.TempPathFactory) -> lt.api.CdkRun:
    out = tmp_path_factory.mktemp("cdk-bootstrap")
    try:
        return lt.run_cdk(local_aws, ["bootstrap", f"aws://{lt.ACCOUNT}/{lt.REGION}"], out)
    except lt.CdkFailed as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def deploy(
    local_aws: lt.LocalAWS, bootstrapped: lt.api.CdkRun, tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., lt.Deployed]:
    def _run(knobs: dict[str, str], extra: list[str] | None = None) -> lt.Deployed:
        try:
            return lt.deploy(local_aws, knobs, tmp_path_factory.mktemp("cdk-out"), extra)
        except lt.CdkFailed as exc:
            pytest.fail(str(exc))

    return _run


@pytest.fixture(scope="session")
def flat_stack(deploy: Callable[..., lt.Deployed]) -> lt.Deployed:
    return deploy(lt.FLAT)


@pytest.fixture(scope="session")
def _full_stack_holder() -> dict[str, lt.Deployed]:
    return {}


@pytest.fixture
def full_stack(
    local_aws: lt.LocalAWS, deploy: Callable[..., lt.Deployed], _full_stack_holder: dict[str, lt.Deployed]
) -> lt.Deployed:
    """The full shape, deployed once and again only if a test destroyed it (test_destroy_removes_everything does).

    A redeployed stack has new physical names (its buckets), so the outputs are those of the live incarnation.
    """
    current = _full_stack_holder.get("stack")
    if current is None or not _stack_is_live(local_aws, current.name):
        _full_stack_holder["stack"] = deploy(lt.FULL)
    return _full_stack_holder["stack"]


def _stack_is_live(local_aws: lt.LocalAWS, name: str) -> bool:
    cfn = local_aws.client("cloudformation")
    try:
        stacks = cfn.describe_stacks(StackName=name)["Stacks"]
    except (
        cfn.exceptions.ClientError
    ):  # "Stack with id ... does not exist", as AWS answers for a deleted stack
        return False
    return bool(stacks) and stacks[0]["StackStatus"] != "DELETE_COMPLETE"
