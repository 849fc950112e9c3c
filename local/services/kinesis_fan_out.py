"""Kinesis enhanced fan-out consumers: registered through the API or a template (AWS::Kinesis::StreamConsumer),
and read by an event-source mapping whose EventSourceArn is the consumer's ARN (local/pollers/kinesis.py reads
the consumer's stream, each mapping at its own position, as Lambda's pollers subscribe to each shard).

What moto lacks or gets wrong:
- A consumer's ARN ends with its creation time in epoch seconds (``.../consumer/<name>:<seconds>``, the
  ConsumerARN pattern of botocore's Kinesis model); moto's has no suffix.
- DeregisterStreamConsumer by stream and name removes that consumer; moto's kept that one and removed the others.
- CloudFormation's AWS::Kinesis::StreamConsumer: Ref and ``GetAtt ConsumerARN`` are the ARN; every property is
  create-only (replaced on change, local/services/cloudformation/updates.py REPLACING); deleting deregisters it.
"""

from __future__ import annotations

import calendar
import contextlib
from typing import Any

from moto.core.common_models import CloudFormationModel

from local.patching import Patches, Target
from local.services.cloudformation.resource import Resource

_MODELS = "moto.kinesis.models"
PATCHES = Patches()


def _backend(account_id: str, region: str) -> Any:
    from moto.kinesis.models import kinesis_backends

    return kinesis_backends[account_id][region]


@PATCHES.replace(Target(_MODELS, "Consumer.__init__", ("self", "consumer_name", "account_id", "region_name", "stream_arn")))  # fmt: skip
def consumer_init(self: Any, consumer_name: str, account_id: str, region_name: str, stream_arn: str) -> None:
    """A consumer's ARN ends with ``:<creation time in epoch seconds>``, as AWS gives it."""
    PATCHES.original(consumer_init)(self, consumer_name, account_id, region_name, stream_arn)
    self.consumer_arn = (
        f"{self.consumer_arn}:{calendar.timegm(self.created.timetuple())}"  # created: naive UTC
    )


@PATCHES.replace(
    Target(_MODELS, "KinesisBackend.deregister_stream_consumer", ("self", "stream_arn", "consumer_name", "consumer_arn"))
)  # fmt: skip
def deregister_stream_consumer(self: Any, stream_arn: str, consumer_name: str, consumer_arn: str) -> None:
    """Deregistering by stream and name removes that consumer alone (moto removed every other one)."""
    if stream_arn and consumer_name and not consumer_arn:
        stream = self._find_stream_by_arn(stream_arn)
        consumer_arn = next(
            (c.consumer_arn for c in stream.consumers if c.consumer_name == consumer_name), ""
        )
        if not consumer_arn:
            from moto.kinesis.exceptions import ConsumerNotFound

            raise ConsumerNotFound(consumer=consumer_name, account_id=self.account_id)
        stream_arn = ""
    PATCHES.original(deregister_stream_consumer)(self, stream_arn, consumer_name, consumer_arn)


class StreamConsumer(Resource, CloudFormationModel):
    """AWS::Kinesis::StreamConsumer: a registered enhanced fan-out consumer of a stream."""

    TYPE = "AWS::Kinesis::StreamConsumer"
    PHYSICAL_ID = "arn"
    ATTRIBUTES = ("ConsumerARN", "ConsumerName", "ConsumerStatus", "ConsumerCreationTimestamp", "StreamARN")

    def __init__(self, consumer: Any, account_id: str, region: str):
        self.consumer = consumer
        self.arn = str(consumer.consumer_arn)
        self.account_id = account_id
        self.region = region

    def get_cfn_attribute(self, attribute_name: str) -> str:
        values = self.consumer.to_json(include_stream_arn=True)
        value = values[attribute_name]
        return value.isoformat() if hasattr(value, "isoformat") else str(value)

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kw: Any,
    ) -> StreamConsumer:
        properties = cloudformation_json["Properties"]
        backend = _backend(account_id, region_name)
        consumer = backend.register_stream_consumer(properties["StreamARN"], properties["ConsumerName"])
        return cls(consumer, account_id, region_name)

    def delete(self, account_id: str, region_name: str) -> None:
        from moto.kinesis.exceptions import ConsumerNotFound, ResourceNotFoundError

        # A consumer goes with its stream: one whose stream is already deleted is gone.
        with contextlib.suppress(ConsumerNotFound, ResourceNotFoundError):
            _backend(account_id, region_name).deregister_stream_consumer("", "", self.consumer.consumer_arn)


MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_MODELS, "kinesis_backends"),
    Target(_MODELS, "KinesisBackend.register_stream_consumer", ("self", "stream_arn", "consumer_name")),
    Target(_MODELS, "KinesisBackend._find_stream_by_arn", ("self", "stream_arn")),
    Target(_MODELS, "Consumer.to_json", ("self", "include_stream_arn")),
    Target("moto.kinesis.exceptions", "ConsumerNotFound"),
    Target("moto.kinesis.exceptions", "ResourceNotFoundError"),
)
