"""`make local`: the main job on the embedded local AWS, step by step.

Starts the local AWS, bootstraps, deploys env=dev with the stream on (the real CDK CLI, unmodified), then
shows the consumer at work: writes records with blobs, deletes one, and prints that its blobs are gone and
the `stream_records_received` lines read back from the consumer's log group.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import boto3

from contract import names
from contract.knobs import KNOB_DEFAULTS, PROJECT_ROOT, STREAM_NEW_AND_OLD, ConfigError
from contract.settings.resolve import resolve_settings
from doctable import local_adapter as local
from doctable.verify.proof import parse_proof_line

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig

ROOT = PROJECT_ROOT  # where cdk.json is: `cdk` runs there
DEMO_KNOBS = {"env": KNOB_DEFAULTS["env"], "stream": STREAM_NEW_AND_OLD}
WAIT_SECONDS = 60.0
T = TypeVar("T")


class DemoError(Exception):
    pass


def _step(number: int, text: str) -> None:
    print(f"\n[{number}/7] {text}", flush=True)


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _cdk(args: list[str], port: int, log: Path) -> None:
    run = local.run_cdk(args, project_dir=ROOT, port=port, log=log)
    print(f"      done in {run.seconds:.1f}s (full output: {_shown(log)})")


def _wait(what: str, condition: Callable[[], T | None], timeout: float = WAIT_SECONDS) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise DemoError(f"timed out after {timeout:.0f}s waiting for {what}")


def run(keep_running: bool = True, port: int = local.DEFAULT_PORT) -> int:
    """The seven steps on the local AWS at ``port``; it keeps running afterwards unless ``keep_running`` is false."""
    config = _settings()
    log = local.state_dir() / "demo.log"

    _step(1, "Starting the embedded local AWS (moto server mode, no Docker, no account)")
    info = local.start(port)
    print(f"      listening on {info.url}")
    env = local.client_env(info.port)
    outputs = _deploy(config, env, info.port, log)

    ddb, s3, logs = _clients(env, info.url)
    owned = {"ExpectedBucketOwner": env["CDK_DEFAULT_ACCOUNT"]}  # the local AWS's account, the stack's
    table, bucket, log_group = (
        outputs["TableName"],
        outputs["BlobBucketName"],
        outputs["ConsumerLogGroupName"],
    )
    run_id = uuid.uuid4().hex[:6]

    _step(4, "Writing 3 records, each listing 2 blobs uploaded under <pk>/<sk>/")
    records = [(f"doc#{run_id}-{i}", "v1") for i in range(3)]
    written_at = int(time.time() * 1000)
    _write_records(ddb, s3, table, bucket, records, owned)
    _step(5, f"Deleting {records[0][0]}: the consumer should delete its blobs")
    _delete_first(ddb, s3, table, bucket, records, run_id, owned)
    _step(6, f"Reading {names.PROOF_LOG_MESSAGE} from the log group {log_group}")
    _show_proof(logs, log_group, written_at)

    _step(7, "Done")
    if keep_running:
        print("      the local AWS keeps running; point your own shell and `cdk deploy` at it with:")
        print('        eval "$(.venv/bin/doctable local env)"')
        print("      stop it with `make local-down`")
    else:
        local.stop()
        print("      the local AWS is stopped")
    return 0


def _settings() -> DocTableConfig:
    """The settings as the app run by `cdk deploy` below resolves them: the settings file, then these -c
    overrides."""
    try:
        return resolve_settings(context=DEMO_KNOBS, environ=os.environ).config
    except ConfigError as exc:
        raise DemoError("invalid settings: " + "; ".join(exc.problems)) from None


def _deploy(config: DocTableConfig, env: dict[str, str], port: int, log: Path) -> dict[str, str]:
    """Steps 2 and 3: cdk bootstrap, then cdk deploy of the stack; its outputs, the demo's printed."""
    _step(2, "cdk bootstrap (the CDK CLI from package.json, pointed at the local AWS)")
    _cdk(["bootstrap", f"aws://{env['CDK_DEFAULT_ACCOUNT']}/{env['CDK_DEFAULT_REGION']}"], port, log)

    _step(3, f"cdk deploy {config.stack_name} with " + " ".join(f"-c {k}={v}" for k, v in DEMO_KNOBS.items()))
    outputs_file = local.state_dir() / f"outputs-{config.env}.json"
    context = [arg for k, v in DEMO_KNOBS.items() for arg in ("-c", f"{k}={v}")]
    _cdk(
        ["deploy", *context, "--require-approval", "never", "--outputs-file", str(outputs_file)],
        port,
        log,
    )
    outputs: dict[str, str] = json.loads(outputs_file.read_text())[config.stack_name]
    for key in ("TableName", "StreamArn", "ConsumerFunctionName", "BlobBucketName", "ConsumerLogGroupName"):
        print(f"      {key:22} {outputs[key]}")
    return outputs


def _clients(env: dict[str, str], url: str) -> tuple[Any, Any, Any]:
    """DynamoDB, S3 and CloudWatch Logs clients on the local AWS at ``url``."""
    session = boto3.session.Session(
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name=env["AWS_REGION"],
    )
    ddb, s3, logs = (
        session.client(n, endpoint_url=url, verify=env["AWS_CA_BUNDLE"]) for n in ("dynamodb", "s3", "logs")
    )
    return ddb, s3, logs


def _write_records(
    ddb: Any, s3: Any, table: str, bucket: str, records: list[tuple[str, str]], owned: dict[str, str]
) -> None:
    """Step 4: each record's two blobs uploaded under <pk>/<sk>/, then the item listing them."""
    for pk, sk in records:
        keys = [f"{pk}/{sk}/page-{n}.pdf" for n in (1, 2)]
        for key in keys:
            s3.put_object(Bucket=bucket, Key=key, Body=f"blob of {pk}".encode(), **owned)
        ddb.put_item(
            TableName=table,
            Item={
                "pk": {"S": pk},
                "sk": {"S": sk},
                "title": {"S": f"demo {pk}"},
                "blobs": {"L": [{"S": k} for k in keys]},
            },
        )
        print(f"      put {pk}/{sk} with blobs {keys}")


def _delete_first(
    ddb: Any,
    s3: Any,
    table: str,
    bucket: str,
    records: list[tuple[str, str]],
    run_id: str,
    owned: dict[str, str],
) -> None:
    """Step 5: the first record deleted; its blobs must go, the live records' 4 stay."""
    doomed_prefix = f"{records[0][0]}/{records[0][1]}/"
    ddb.delete_item(TableName=table, Key={"pk": {"S": records[0][0]}, "sk": {"S": records[0][1]}})
    started = time.monotonic()

    def _doomed_gone() -> bool:
        return s3.list_objects_v2(Bucket=bucket, Prefix=doomed_prefix, **owned).get("KeyCount", 0) == 0

    _wait(f"the blobs under {doomed_prefix} to be deleted", _doomed_gone)
    print(f"      blobs under {doomed_prefix} are gone ({time.monotonic() - started:.2f}s after delete_item)")
    left = sorted(
        o["Key"]
        for o in s3.list_objects_v2(Bucket=bucket, Prefix=f"doc#{run_id}", **owned).get("Contents", [])
    )
    print(f"      blobs still there (their records live): {len(left)}")
    for key in left:
        print(f"        {key}")
    if len(left) != 4:
        raise DemoError(f"expected the 4 blobs of the 2 live records to remain, found {len(left)}")


def _show_proof(logs: Any, log_group: str, written_at: int) -> None:
    """Step 6: the consumer's proof lines covering the 4 writes, read back from its log group."""

    def _covering() -> list[dict[str, Any]] | None:
        events = logs.filter_log_events(
            logGroupName=log_group, startTime=written_at - 1000, filterPattern=f'"{names.PROOF_LOG_MESSAGE}"'
        ).get("events", [])
        found = [line for e in events if (line := parse_proof_line(e["message"]))]
        return found if sum(int(x.get("record_count", 0)) for x in found) >= 4 else None

    lines = _wait(f"{names.PROOF_LOG_MESSAGE} lines covering the 4 writes", _covering)
    for line in lines:
        print(
            "      stream_records_received: record_count={record_count} event_names={event_names} "
            "table={table_name} sequence {first_sequence_number}..{last_sequence_number}".format(**line)
        )


def default_port() -> int:
    """The local AWS's port: $DOCTABLE_LOCAL_PORT, else the adapter's default."""
    return int(os.environ.get("DOCTABLE_LOCAL_PORT", local.DEFAULT_PORT))


def make_local(*, down: bool = False, port: int | None = None) -> int:
    """``make local``: the seven steps (:func:`run`) on the local AWS at ``port`` (None: :func:`default_port`),
    which is stopped at the end when ``down``. 0, or 1 with the failure in one line on stderr."""
    try:
        return run(keep_running=not down, port=default_port() if port is None else port)
    except (DemoError, local.LocalError) as exc:
        print(f"\nmake local failed: {exc}", file=sys.stderr)
        return 1
    finally:
        if down:
            local.stop()
