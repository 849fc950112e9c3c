"""The environment's lock through doctable.api (in-process moto, the commands' own session): ``api.unlock`` of a
Target, the lock located in the bootstrap bucket of the environment's qualifier, and a command of the API that
changes the environment refused while another holds its lock, or run once it is released."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.iam.lock import lock_bucket, lock_key
from doctable import api
from doctable.core.aws import Aws
from doctable.lifecycle import lock
from doctable.lifecycle.locking import environment_lock

pytestmark = pytest.mark.unit

ACCOUNT, REGION = "123456789012", "eu-west-1"
SETTINGS = (
    f'[defaults]\ntable_base = "items"\n\n[environments.stg]\nqualifier = "dtstg"\nregion = "{REGION}"\n'
)
BUCKET = lock_bucket(ACCOUNT, REGION, "dtstg")
KEY = lock_key("doctable-items-stg")


@pytest.fixture
def s3(moto_env: Aws, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """GIVEN stg bound to its own qualifier, and that bootstrap's assets bucket."""
    path = tmp_path / "doctable.toml"
    path.write_text(SETTINGS)
    monkeypatch.setenv("DOCTABLE_CONFIG", str(path))
    client = moto_env.client("s3")
    client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    yield client


def held(s3: Any) -> dict[str, Any]:
    return dict(json.loads(s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read()))


def test_the_lock_of_a_target_is_in_its_qualifiers_bootstrap_bucket_and_names_the_checkout(s3: Any) -> None:
    with environment_lock(api.Target(env="stg", quiet=True), "deploy") as taken:
        body = held(s3)
        assert body["id"] == taken.id and body["command"] == "doctable deploy --env stg"
        assert body["checkout"].endswith(str(Path(body["checkout"]).name)) and body["env"] == "stg"
        # WHEN another command of the API wants it THEN it is refused naming the holder
        with (
            pytest.raises(lock.EnvironmentLocked) as refused,
            environment_lock(api.Target(env="stg"), "teardown"),
        ):
            pass
        assert refused.value.fields["holder_id"] == taken.id
    # AND once released nothing is left
    assert s3.list_objects_v2(Bucket=BUCKET).get("KeyCount", 0) == 0


def test_api_unlock_breaks_the_holders_id_only(s3: Any) -> None:
    with environment_lock(api.Target(env="stg", quiet=True), "deploy") as taken:
        with pytest.raises(api.UserError) as wrong:
            api.unlock(api.Target(env="stg"), lock_id="other")
        assert wrong.value.code == "env.lock_id" and wrong.value.fields["holder_id"] == taken.id
        result = api.unlock(api.Target(env="stg"), lock_id=taken.id)
        assert isinstance(result, api.UnlockResult)
        assert (result.env, result.stack, result.lock) == (
            "stg",
            "doctable-items-stg",
            f"s3://{BUCKET}/{KEY}",
        )
        assert result.broken.id == taken.id and result.to_json()["kind"] == "doctable-unlock"
    with pytest.raises(api.UserError, match="is not locked"):
        api.unlock(api.Target(env="stg"), lock_id=taken.id)
