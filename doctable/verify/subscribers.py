"""verify's row per subscriber (contract/subscribers.py): its function runs doctable's wrapper with its declared
handler, and its event-source mapping is Enabled on its declared source, with its declared filters and the stack's
tags. Read-only: GetFunctionConfiguration, GetEventSourceMapping, ListTags."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from contract import names
from doctable.verify.record import CheckFailed

if TYPE_CHECKING:
    from contract.knobs import DocTableConfig
    from contract.subscribers import SubscriberSpec
    from doctable.core.aws import Aws
    from doctable.core.deployment import Deployment

PREFIX = "subscriber:"
ENABLED = "Enabled"


def subscriber_rows(config: DocTableConfig) -> list[tuple[str, str, str]]:
    """(row id, check, expected): one row per declared subscriber."""
    return [
        (
            f"{PREFIX}{spec.name}",
            f"subscriber {spec.name} as declared",
            f"wrapper around {spec.handler_file}:{spec.function}; mapping {ENABLED} on its {spec.source} source, "
            f"{len(spec.filters)} filter(s) as declared, tagged",
        )
        for spec in config.subscribers
    ]


def _patterns(mapping: dict[str, Any]) -> list[Any]:
    return [json.loads(f["Pattern"]) for f in (mapping.get("FilterCriteria") or {}).get("Filters", [])]


def _declared_patterns(spec: SubscriberSpec) -> list[Any]:
    return [{"data": json.loads(p)} if spec.reads_kinesis else json.loads(p) for p in spec.filters]


def _check(aws: Aws, deployment: Deployment, spec: SubscriberSpec) -> str:
    function = deployment.out(names.subscriber_output(spec.name, names.OUT_SUBSCRIBER_FUNCTION))
    uuid_ = deployment.out(names.subscriber_output(spec.name, names.OUT_SUBSCRIBER_MAPPING))
    if not function or not uuid_:
        raise CheckFailed(f"the stack has no outputs for subscriber {spec.name}: deploy it")
    lam = aws.client("lambda")
    configuration = lam.get_function_configuration(FunctionName=function)
    mapping = lam.get_event_source_mapping(UUID=uuid_)
    problems = []
    handler = (
        (configuration.get("Environment") or {}).get("Variables", {}).get(names.ENV_SUBSCRIBER_HANDLER, "")
    )
    if configuration.get("Handler") != names.SUBSCRIBER_HANDLER or not handler.endswith(f":{spec.function}"):
        problems.append(
            f"function runs {configuration.get('Handler')} ({handler}), not the wrapper around it"
        )
    if mapping.get("State") != ENABLED:
        problems.append(f"mapping {mapping.get('State')} ({mapping.get('StateTransitionReason', '')})")
    if sorted(map(json.dumps, _patterns(mapping))) != sorted(map(json.dumps, _declared_patterns(spec))):
        problems.append(f"filters {_patterns(mapping)}, declared {_declared_patterns(spec)}")
    tags = lam.list_tags(Resource=mapping["EventSourceMappingArn"]).get("Tags", {})
    missing = {k: v for k, v in deployment.config.tags().items() if tags.get(k) != v}
    if missing:
        problems.append(f"mapping tags lack {missing}")
    if problems:
        raise CheckFailed("; ".join(problems))
    return f"{ENABLED}, {len(spec.filters)} filter(s), wrapper around {handler}"


def subscriber_checks(aws: Aws, deployment: Deployment) -> dict[str, Callable[[], str]]:
    """Row id -> its check: returns what was observed, raises ``CheckFailed(differences)`` when one differs."""
    return {
        f"{PREFIX}{spec.name}": (lambda spec=spec: _check(aws, deployment, spec))  # type: ignore[misc]
        for spec in deployment.config.subscribers
    }
