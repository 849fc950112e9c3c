"""Kinesis Data Streams: AWS::Kinesis::Stream as CloudFormation creates it, and records read by local/pollers/streams.py.

moto's stream model drops StreamModeDetails, StreamEncryption and the ``Name`` in templates (and replaces a
stream when a template names a ``BucketName``); here a template's stream is created with its mode (ON_DEMAND:
moto's four shards), its encryption (``KMS`` with the key as given, reported by DescribeStream and
DescribeStreamSummary), its retention period and tags, updated in place (mode, encryption, retention, shard
count, tags) or replaced when its name changes. Resharding leaves a parent's records in the parent and writes to
the open children only. A record put into a stream wakes the event-source mapping
pollers; moto's own delivery to Lambda (from inside PutRecord) is switched off in local/services/awslambda/mappings.py.
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any

from local.patching import Patches, Target, tags_dict

_MODELS = "moto.kinesis.models"
PATCHES = Patches()

ON_DEMAND = "ON_DEMAND"
ON_DEMAND_SHARDS = 4  # moto's fixed count; AWS starts an on-demand stream with 4 shards and scales them


@PATCHES.replace(Target(_MODELS, "Stream.put_record", ("self", "partition_key", "explicit_hash_key", "data")))
def put_record(self: Any, partition_key: str, explicit_hash_key: Any, data: str) -> tuple[str, str]:
    """A record put into a stream wakes the event-source mapping pollers (moto's own delivery is off)."""
    self.lambda_event_source_mappings.clear()  # moto's delivery: local/pollers/streams.py's pollers deliver instead
    result = PATCHES.original(put_record)(self, partition_key, explicit_hash_key, data)
    from local.pollers.streams import get_manager

    with contextlib.suppress(RuntimeError):  # no mapping manager: moto used without the server
        get_manager().wake()
    return result  # type: ignore[no-any-return]


# Resharding as on AWS: a closed parent keeps its records (moto moved or copied them into the children) and
# takes no new ones (moto kept writing to the parent, the first shard covering the key).


@PATCHES.replace(Target(_MODELS, "Stream.get_shard_for_key", ("self", "partition_key", "explicit_hash_key")))
def get_shard_for_key(self: Any, partition_key: str, explicit_hash_key: Any) -> Any:
    """A record is written to the open shard covering its key, never to a closed parent."""
    shard = PATCHES.original(get_shard_for_key)(
        self, partition_key, explicit_hash_key
    )  # moto validates, finds
    if shard is None or shard.is_open:
        return shard
    if explicit_hash_key:
        key = int(explicit_hash_key)
    else:
        key = int(hashlib.md5(partition_key.encode("utf-8"), usedforsecurity=False).hexdigest(), 16)
    shards = list(self.shards.values())
    return next((s for s in shards if s.is_open and s.starting_hash <= key < s.ending_hash), shard)


@PATCHES.replace(Target(_MODELS, "Stream.split_shard", ("self", "shard_to_split", "new_starting_hash_key")))
def split_shard(self: Any, shard_to_split: str, new_starting_hash_key: str) -> None:
    """SplitShard leaves the parent's records in the parent (moto moved them into the children)."""
    _keeping_records(PATCHES.original(split_shard), self, shard_to_split, new_starting_hash_key)


@PATCHES.replace(
    Target(_MODELS, "Stream.merge_shards", ("self", "shard_to_merge", "adjacent_shard_to_merge"))
)
def merge_shards(self: Any, shard_to_merge: str, adjacent_shard_to_merge: str) -> None:
    """MergeShards leaves the parents' records in the parents (moto copied them into the child)."""
    _keeping_records(PATCHES.original(merge_shards), self, shard_to_merge, adjacent_shard_to_merge)


def _keeping_records(original: Any, stream: Any, first: str, second: str) -> None:
    """Run moto's resharding ``original`` with the parents' records set aside, then give them back."""
    parents = [stream.shards[name] for name in (first, second) if name in stream.shards]
    kept = [(shard, shard.records) for shard in parents]
    for shard in parents:
        shard.records = type(shard.records)()
    try:
        original(stream, first, second)
    finally:
        for shard, records in kept:
            shard.records = records


@PATCHES.replace(Target(_MODELS, "Stream.to_json", ("self", "shard_limit")))
def to_json(self: Any, shard_limit: int | None = None) -> dict[str, Any]:
    """DescribeStream reports StreamModeDetails, and no KeyId for an unencrypted stream."""
    result = PATCHES.original(to_json)(self, shard_limit)
    body = result["StreamDescription"]
    body["StreamModeDetails"] = dict(self.stream_mode)
    if body.get("KeyId") is None:
        body.pop("KeyId", None)  # AWS reports no KeyId for an unencrypted stream
    return result  # type: ignore[no-any-return]


@PATCHES.replace(Target(_MODELS, "Stream.to_json_summary", ("self",)))
def to_json_summary(self: Any) -> dict[str, Any]:
    """DescribeStreamSummary counts the open shards only, and reports no KeyId for an unencrypted stream."""
    result = PATCHES.original(to_json_summary)(self)
    body = result["StreamDescriptionSummary"]
    body["OpenShardCount"] = len([s for s in self.shards.values() if s.is_open])
    if body.get("KeyId") is None:
        body.pop("KeyId", None)
    return result  # type: ignore[no-any-return]


def _encryption(stream: Any, spec: dict[str, Any] | None) -> None:
    if spec and spec.get("EncryptionType", "NONE") != "NONE":
        stream.encryption_type = str(spec["EncryptionType"])
        stream.key_id = spec.get("KeyId")
    else:
        stream.encryption_type = "NONE"
        stream.key_id = None


def _mode(properties: dict[str, Any]) -> dict[str, str]:
    details = properties.get("StreamModeDetails") or {}
    return {"StreamMode": str(details.get("StreamMode") or "PROVISIONED")}


@PATCHES.replace(Target(_MODELS, "Stream.create_from_cloudformation_json"), wrap=classmethod)
def create_from_cloudformation_json(
    cls: Any, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str,
    **kwargs: Any,
) -> Any:  # fmt: skip
    """A template's stream is created with its Name, mode, encryption, retention period and tags."""
    from moto.kinesis import models as km

    properties = cloudformation_json.get("Properties", {}) or {}
    name = str(properties.get("Name") or resource_name)
    mode = _mode(properties)
    backend = km.kinesis_backends[account_id][region_name]
    stream = backend.create_stream(
        name,
        int(properties.get("ShardCount", 1)) if mode["StreamMode"] != ON_DEMAND else ON_DEMAND_SHARDS,
        stream_mode=mode,
        retention_period_hours=int(properties.get("RetentionPeriodHours", 24)),
    )
    _encryption(stream, properties.get("StreamEncryption"))
    stream.tags = tags_dict(properties.get("Tags"))
    return stream


@PATCHES.replace(Target(_MODELS, "Stream.update_from_cloudformation_json"), wrap=classmethod)
def update_from_cloudformation_json(
    cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
    account_id: str, region_name: str,
) -> Any:  # fmt: skip
    """An updated template's stream changes its mode, shard count, retention, encryption and tags in place; a
    new Name replaces it."""
    from moto.kinesis import models as km

    properties = cloudformation_json.get("Properties", {}) or {}
    stream = original_resource
    if properties.get("Name") and properties["Name"] != stream.stream_name:
        # A new name replaces the stream (its records do not move), as on AWS.
        new = cls.create_from_cloudformation_json(
            properties["Name"], cloudformation_json, account_id, region_name
        )
        km.kinesis_backends[account_id][region_name].delete_stream(None, stream.stream_name)
        return new
    mode = _mode(properties)
    if mode != stream.stream_mode:
        stream.stream_mode = mode
    if mode["StreamMode"] != ON_DEMAND and "ShardCount" in properties:
        wanted = int(properties["ShardCount"])
        if wanted != len([s for s in stream.shards.values() if s.is_open]):
            stream.update_shard_count(wanted)
    stream.retention_period_hours = int(properties.get("RetentionPeriodHours", 24))
    _encryption(stream, properties.get("StreamEncryption"))
    stream.tags = tags_dict(properties.get("Tags"))
    return stream


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_MODELS, "Stream.update_shard_count", ("self", "target_shard_count")),
    Target(_MODELS, "kinesis_backends"),
    Target(
        _MODELS,
        "KinesisBackend.create_stream",
        ("self", "stream_name", "shard_count", "stream_mode", "retention_period_hours"),
    ),
    Target(_MODELS, "KinesisBackend.delete_stream", ("self", "stream_arn", "stream_name")),
)
