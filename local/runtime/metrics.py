"""CloudWatch metrics a deployed function produces on AWS, put into the local CloudWatch backend.

- ``AWS/Lambda`` per invocation (dimension FunctionName): Invocations, Errors, Duration, and IteratorAge for
  invocations by a stream mapping (the age of the batch's last record when the function was invoked);
- ``AWS/Lambda`` per event-source mapping with MetricsConfig EventCount (dimension EventSourceMappingUUID):
  PolledEventCount, FilteredOutEventCount, InvokedEventCount, FailedInvokeEventCount,
  OnFailureDestinationDeliveredEventCount, DroppedEventCount;
- embedded metric format (EMF) log lines, e.g. Powertools ``Metrics``: CloudWatch Logs extracts them on AWS.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from local import incidents
from local.patching import Target

log = logging.getLogger("doctable.local.metrics")

MOTO_TARGETS = (
    Target("moto.cloudwatch.models", "cloudwatch_backends"),
    Target(
        "moto.cloudwatch.models", "CloudWatchBackend.put_metric_data", ("self", "namespace", "metric_data")
    ),
)


def _put(account_id: str, region: str, namespace: str, data: list[dict[str, Any]]) -> None:
    from moto.cloudwatch.models import cloudwatch_backends

    if not data:
        return
    try:
        cloudwatch_backends[account_id][region].put_metric_data(namespace, data)
    except Exception as exc:  # a metric lost does not fail the invocation; it is an incident a test sees
        incidents.record(f"metrics.put.{namespace}", exc)


def lambda_invocation(
    account_id: str,
    region: str,
    function_name: str,
    duration_ms: float,
    errored: bool,
    iterator_age_ms: float | None,
) -> None:
    dims = [{"Name": "FunctionName", "Value": function_name}]
    data = [
        {"MetricName": "Invocations", "Value": 1.0, "Unit": "Count", "Dimensions": dims},
        {"MetricName": "Errors", "Value": 1.0 if errored else 0.0, "Unit": "Count", "Dimensions": dims},
        {
            "MetricName": "Duration",
            "Value": round(duration_ms, 2),
            "Unit": "Milliseconds",
            "Dimensions": dims,
        },
    ]
    if iterator_age_ms is not None:
        data.append(
            {
                "MetricName": "IteratorAge",
                "Value": max(iterator_age_ms, 0.0),
                "Unit": "Milliseconds",
                "Dimensions": dims,
            }
        )
    _put(account_id, region, "AWS/Lambda", data)


def emf_line(account_id: str, region: str, line: str) -> None:
    """Extract the metrics of one embedded-metric-format log line (anything else is ignored)."""
    if '"_aws"' not in line or '"CloudWatchMetrics"' not in line:
        return
    try:
        document = json.loads(line)
        directives = document["_aws"]["CloudWatchMetrics"]
    except (ValueError, KeyError, TypeError):
        return
    for directive in directives:
        namespace = directive.get("Namespace")
        if not namespace:
            continue
        dimension_sets = directive.get("Dimensions") or [[]]
        data: list[dict[str, Any]] = []
        for dimension_set in dimension_sets:
            dims = [
                {"Name": name, "Value": str(document[name])} for name in dimension_set if name in document
            ]
            for metric in directive.get("Metrics", []):
                value = document.get(metric.get("Name"))
                values = value if isinstance(value, list) else [value]
                for item in values:
                    if isinstance(item, (int, float)) and not isinstance(item, bool):
                        data.append(
                            {
                                "MetricName": metric["Name"],
                                "Value": float(item),
                                "Unit": metric.get("Unit", "None"),
                                "Dimensions": dims,
                            }
                        )
        _put(account_id, region, namespace, data)


def mapping_events(account_id: str, region: str, mapping_uuid: str, counts: dict[str, int]) -> None:
    """An event-source mapping's EventCount metrics (its MetricsConfig opts in), per EventSourceMappingUUID."""
    dims = [{"Name": "EventSourceMappingUUID", "Value": mapping_uuid}]
    data = [
        {"MetricName": name, "Value": float(count), "Unit": "Count", "Dimensions": dims}
        for name, count in counts.items()
    ]
    _put(account_id, region, "AWS/Lambda", data)
