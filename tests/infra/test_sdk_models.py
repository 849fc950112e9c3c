"""The botocore models the consumer's asset carries: cut from the installed botocore's, complete for the
operations the consumer calls, and the only models its clients load when staged."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from botocore import xform_name

from contract import names
from tooling.asset import latest_model, sdk_models, stage_package, trim_model

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "functions" / "stream_consumer"


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["shape"]} if isinstance(node.get("shape"), str) else set()
        return found.union(*(_refs(v) for k, v in node.items() if k != "shape"))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


def _documented(node: Any) -> bool:
    if isinstance(node, dict):
        return any((k == "documentation" and isinstance(v, str)) or _documented(v) for k, v in node.items())
    if isinstance(node, list):
        return any(_documented(v) for v in node)
    return False


SAMPLE = {
    "version": "2.0",
    "metadata": {"serviceId": "Sample", "protocol": "json"},
    "documentation": "<p>about the service</p>",
    "operations": {
        "Get": {"input": {"shape": "GetIn"}, "output": {"shape": "GetOut"}, "errors": [{"shape": "Gone"}],
                "documentation": "<p>get</p>"},
        "Put": {"input": {"shape": "PutIn"}},
    },
    "shapes": {
        "GetIn": {"type": "structure", "members": {"Z": {"shape": "Name"}, "A": {"shape": "Names"}}},
        "GetOut": {"type": "structure", "members": {"documentation": {"shape": "Name"}, "Tags": {"shape": "TagMap"}}},
        "Gone": {"type": "structure", "members": {}, "exception": True},
        "Names": {"type": "list", "member": {"shape": "Name"}},
        "TagMap": {"type": "map", "key": {"shape": "Name"}, "value": {"shape": "Count"}},
        "Name": {"type": "string", "documentation": "<p>a name</p>"},
        "Count": {"type": "integer"},
        "PutIn": {"type": "structure", "members": {"Blob": {"shape": "Body"}}},
        "Body": {"type": "blob"},
    },
}  # fmt: skip


def test_trim_keeps_the_operations_and_every_shape_they_reach() -> None:
    trimmed = trim_model(SAMPLE, ("Get",))
    assert list(trimmed["operations"]) == ["Get"]
    # members, list members, map keys and values, and errors are followed; what only Put reaches is dropped
    assert set(trimmed["shapes"]) == {"GetIn", "GetOut", "Gone", "Names", "TagMap", "Name", "Count"}
    # AND the model's own order is kept (a structure's member order is the order botocore serializes in)
    assert list(trimmed["shapes"]["GetIn"]["members"]) == ["Z", "A"]
    assert list(trimmed["shapes"]) == [s for s in SAMPLE["shapes"] if s in trimmed["shapes"]]
    # AND the operations' and shapes' documentation strings go, but a member named "documentation" stays
    assert not _documented(trimmed["operations"]) and not _documented(trimmed["shapes"])
    assert "documentation" in trimmed["shapes"]["GetOut"]["members"]
    # AND the rest of the model is whole (botocore reads some of its documentation)
    assert {k: v for k, v in trimmed.items() if k not in ("operations", "shapes")} == {
        k: v for k, v in SAMPLE.items() if k not in ("operations", "shapes")
    }


def test_trim_refuses_an_operation_the_model_lacks() -> None:
    with pytest.raises(RuntimeError, match=r"no operation \['Delete'\]"):
        trim_model(SAMPLE, ("Get", "Delete"))


@pytest.mark.parametrize("service", sorted(names.CONSUMER_SDK_OPERATIONS))
def test_staged_models_are_the_installed_models_cut_to_the_consumers_operations(service: str) -> None:
    version, full = latest_model(service)
    path = f"{names.SDK_MODELS_DIR}/{service}/{version}/service-2.json"
    staged = json.loads(sdk_models()[path])
    assert sorted(staged["operations"]) == sorted(names.CONSUMER_SDK_OPERATIONS[service])
    # closed: every shape referenced is defined
    assert _refs(staged) <= set(staged["shapes"])
    # faithful: each operation and shape is botocore's own, documentation aside
    for kind in ("operations", "shapes"):
        for name, body in staged[kind].items():
            assert body == _strip(full[kind][name]), f"{service} {kind} {name}"
    # AND everything beside the operations and shapes is the installed model's, whole
    for key in set(full) | set(staged):
        if key not in ("operations", "shapes"):
            assert staged.get(key) == full.get(key), key


def _strip(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items() if not (k == "documentation" and isinstance(v, str))}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def _operations_called(source: str) -> set[tuple[str, str]]:
    """(receiver, botocore method name) of every ``<x>.client.<method>(...)`` and ``get_paginator("<name>")``."""
    found: set[tuple[str, str]] = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        target = node.func.value
        if isinstance(target, ast.Attribute) and target.attr == "client":
            if node.func.attr == "get_paginator" and isinstance(node.args[0], ast.Constant):
                found.add(("paginator", node.args[0].value))
            else:
                found.add(("call", node.func.attr))
    return found


def test_every_call_the_consumer_makes_is_in_its_models() -> None:
    # GIVEN every AWS call in the consumer's sources, and the client each module builds
    allowed = {xform_name(op) for ops in names.CONSUMER_SDK_OPERATIONS.values() for op in ops}
    called: set[str] = set()
    for module in sorted(PACKAGE.glob("*.py")):
        called |= {method for _, method in _operations_called(module.read_text())}
    # THEN each one is an operation the staged models hold (a new call without its model fails here, not on
    # Lambda with "object has no attribute")
    assert called, "the scan found no call: it no longer recognises the consumer's client calls"
    assert called <= allowed, sorted(called - allowed)
    assert allowed <= called, f"models of operations the consumer no longer calls: {sorted(allowed - called)}"


def test_staged_consumer_builds_its_clients_from_its_models(tmp_path: Path) -> None:
    # GIVEN the staged asset, and an AWS_DATA_PATH of the user's own
    stage = stage_package(PACKAGE, tmp_path / "build")
    own = tmp_path / "own-models"
    own.mkdir()
    script = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); "
        "from stream_consumer import blob_store; "
        "s3, ddb = blob_store.lazy_client('s3'), blob_store.lazy_client('dynamodb'); "
        "loader = blob_store._session.get_component('data_loader'); "
        "print(json.dumps([sorted(s3.meta.service_model.operation_names), "
        "sorted(ddb.meta.service_model.operation_names), loader.search_paths]))"
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DATA_PATH": str(own),
    }
    # WHEN a fresh interpreter builds the consumer's two clients from the stage
    result = subprocess.run(
        [sys.executable, "-c", script, str(stage)], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    s3_ops, ddb_ops, paths = json.loads(result.stdout.splitlines()[-1])
    # THEN they hold exactly the consumer's operations
    assert s3_ops == sorted(names.CONSUMER_SDK_OPERATIONS["s3"])
    assert ddb_ops == sorted(names.CONSUMER_SDK_OPERATIONS["dynamodb"])
    # AND the user's data path still comes first, the stage's models next, botocore's own after them
    models = str(stage / "stream_consumer" / names.SDK_MODELS_DIR)
    assert paths[:2] == [str(own), models]
    assert len(paths) > 2


def test_unstaged_consumer_uses_botocore_models(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the sources as they are in the repository (no sdk_models/ beside them)
    assert not (PACKAGE / names.SDK_MODELS_DIR).exists()
    from stream_consumer import blob_store

    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setattr(blob_store, "_session", None)
    # THEN the client is botocore's whole model
    assert "PutObject" in blob_store.lazy_client("s3").meta.service_model.operation_names


# Drives the consumer's own adapters (S3BlobStore, DynamoLiveItems) through botocore's whole request path
# (parameter validation, serialization, endpoint rules, signing, parsing); each request is answered at
# before-send. Prints the requests sent and what the adapters returned. argv[1]: a staged asset, or nothing for
# the sources as they are.
DRIVE = r"""
import io, json, sys
if len(sys.argv) > 1:
    sys.path.insert(0, sys.argv[1])
from botocore.awsrequest import AWSResponse
from stream_consumer.blob_store import S3BlobStore, lazy_client
from stream_consumer.live_items import DynamoLiveItems

NS = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
ANSWERS = {
    "HeadObject": (200, {"ETag": '"e1"', "Last-Modified": "Tue, 01 Dec 2026 12:00:00 GMT", "Content-Length": "5"},
                   b""),
    "DeleteObjects": (200, {}, (f'<DeleteResult {NS}><Deleted><Key>r/a</Key></Deleted><Error><Key>r/b</Key>'
                               '<Code>PreconditionFailed</Code><Message>no</Message></Error><Error><Key>r/c</Key>'
                               '<Code>AccessDenied</Code><Message>Access Denied</Message></Error></DeleteResult>'
                               ).encode()),
    "ListObjectsV2": (200, {}, (f'<ListBucketResult {NS}><Name>bkt</Name><Prefix>r/</Prefix><KeyCount>2</KeyCount>'
                               '<MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated><Contents><Key>r/a</Key>'
                               '<LastModified>2026-12-01T12:00:00.000Z</LastModified><ETag>"e1"</ETag><Size>5</Size>'
                               '<StorageClass>STANDARD</StorageClass></Contents><Contents><Key>r/b</Key>'
                               '<LastModified>2026-12-01T12:00:00.000Z</LastModified><ETag>"e2"</ETag><Size>5</Size>'
                               '<StorageClass>STANDARD</StorageClass></Contents></ListBucketResult>').encode()),
    "BatchGetItem": (200, {}, json.dumps({"Responses": {"tbl": [
        {"pk": {"S": "p"}, "sk": {"S": "s"}, "blobs": {"L": [{"S": "r/a"}, {"S": "r/b"}]}}]},
        "UnprocessedKeys": {}}).encode()),
}
VARYING = {"authorization", "x-amz-date", "amz-sdk-invocation-id", "amz-sdk-request"}
sent = []

class Raw(io.BytesIO):
    def stream(self, **_):
        yield self.getvalue()

def answer(request, event_name, **_):
    operation = event_name.rsplit(".", 1)[-1]
    body = request.body if isinstance(request.body, (bytes, type(None))) else request.body.read()
    sent.append([operation, request.method, request.url,
                 sorted((k.lower(), v.decode() if isinstance(v, bytes) else v)
                        for k, v in request.headers.items() if k.lower() not in VARYING),
                 (body or b"").decode()])
    status, headers, data = ANSWERS[operation]
    return AWSResponse(request.url, status, headers, Raw(data))

s3, dynamodb = lazy_client("s3"), lazy_client("dynamodb")
for client in (s3, dynamodb):
    client.meta.events.register("before-send", answer)
store = S3BlobStore("bkt", client=s3, owner="123456789012")
seen = store.observe("r/a")
deleted = store.delete_keys(["r/a", "r/b", "r/c"], {"r/b": '"e0"'})
listed = store.list_prefix("r/")
live = DynamoLiveItems("tbl", client=dynamodb).listed_keys([("p", "s"), ("q", "s")])
print(json.dumps({
    "operations": [len(s3.meta.service_model.operation_names), len(dynamodb.meta.service_model.operation_names)],
    "sent": sent,
    "returned": [[seen.etag, seen.last_modified], [dict(deleted.failures), sorted(deleted.changed)], listed,
                 {f"{pk}/{sk}": sorted(keys) for (pk, sk), keys in live.items()}],
}))
"""


def _drive(*stage: Path) -> dict[str, Any]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "_X_AMZN"))},
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "PYTHONPATH": str(ROOT / "functions"),
        "PYTHONHASHSEED": "0",  # the user agent's feature ids come from a set
    }
    result = subprocess.run(
        [sys.executable, "-c", DRIVE, *map(str, stage)], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


def test_the_staged_models_send_and_read_what_botocores_own_models_do(tmp_path: Path) -> None:
    # GIVEN the consumer's adapters driven through every call it makes, once from the staged asset (its own
    # models) and once from the sources (botocore's whole models)
    staged = _drive(stage_package(PACKAGE, tmp_path / "build"))
    whole = _drive()
    assert staged["operations"] == [3, 1] and whole["operations"][0] > 90
    # THEN the requests are the same, byte for byte (signature, date and invocation id aside)
    assert [r[0] for r in staged["sent"]] == ["HeadObject", "DeleteObjects", "ListObjectsV2", "BatchGetItem"]
    assert staged["sent"] == whole["sent"]
    # AND each S3 request names the bucket's expected owner: the trimmed models keep the header
    assert all(["x-amz-expected-bucket-owner", "123456789012"] in r[3] for r in staged["sent"][:3])
    # AND the answers read the same: the HEAD's identity, the refused and changed keys, the listing, the item
    assert staged["returned"] == whole["returned"]
    assert staged["returned"][1] == [{"r/c": "AccessDenied: Access Denied"}, ["r/b"]]
