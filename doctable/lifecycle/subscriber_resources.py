"""A deployed stack's subscribers' resources as teardown names them: each subscriber's function, log group,
mapping and failure bucket, found by the physical names the stack's outputs give them (``Subscriber<Id><What>``),
never by a logical-id prefix, which one subscriber's name could share with another's."""

from __future__ import annotations

from contract import names
from doctable.core.deployment import Deployment

NAMED = (
    names.OUT_SUBSCRIBER_FUNCTION,
    names.OUT_SUBSCRIBER_LOG_GROUP,
    names.OUT_SUBSCRIBER_MAPPING,
    names.OUT_SUBSCRIBER_FAILURE_BUCKET,
)


def subscriber_owners(deployment: Deployment) -> dict[str, str]:
    """Physical id -> the name of the subscriber it belongs to, for each resource a subscriber's output names."""
    owners: dict[str, str] = {}
    for spec in deployment.config.subscribers:
        for what in NAMED:
            physical = deployment.out(names.subscriber_output(spec.name, what))
            if physical:
                owners[physical] = spec.name
    return owners


def subscriber_mappings(deployment: Deployment) -> dict[str, str]:
    """Each subscriber's mapping UUID -> its name (teardown probes each mapping's absence by its UUID)."""
    found = {
        spec.name: deployment.out(names.subscriber_output(spec.name, names.OUT_SUBSCRIBER_MAPPING))
        for spec in deployment.config.subscribers
    }
    return {uuid: name for name, uuid in found.items() if uuid}


def retained_key(subscriber: str) -> str:
    """The ledger's ``retained`` key of a subscriber's failure bucket kept on purpose."""
    return f"subscriber_{subscriber}_failure_bucket"
