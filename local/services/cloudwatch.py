"""CloudWatch dashboards as AWS keeps them: global to the account, the body validated, and from templates.

- Dashboards are global, not regional (PutDashboard's documentation): one account's dashboards are kept in one
  place (its partition's first region), so a dashboard put in one region is got, listed and deleted from any.
- PutDashboard refuses a DashboardName that is not 1-255 of A-Z, a-z, 0-9, ``-`` and ``_`` (InvalidParameterValue)
  and a DashboardBody whose structure CloudWatch rejects (InvalidParameterInput "The dashboard body is invalid,
  there are N validation errors:" and the errors as JSON, each also in DashboardValidationMessages): a body that is
  not an object, without a ``widgets`` array, a widget that is not an object, a metric widget's ``metrics`` row
  that is not an array. moto checked only that the body is JSON.
- DeleteDashboards deletes every named dashboard that exists, then answers ResourceNotFound for the others (moto
  deleted none when one was missing).
- Tags: PutDashboard's apply when it creates the dashboard (an update's are ignored, as its documentation says), a
  template's are the dashboard's (an update replaces them), ListTagsForResource reads them, deleting the dashboard
  drops them (moto kept none).
- AWS::CloudWatch::Dashboard: its body is checked as PutDashboard checks it (the stack fails with CloudWatch's
  message), an update puts the new body and tags in place, and a new DashboardName replaces it
  (cloudformation/updates.py).
"""

from __future__ import annotations

import json
import re
from typing import Any

from local.patching import Patches, Target

_MODELS = "moto.cloudwatch.models"
_RESPONSES = "moto.cloudwatch.responses"
PATCHES = Patches()

NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,255}$")
# Where an account's dashboards live: the first region of the partition a region belongs to.
_HOME = (("cn-", "cn-north-1"), ("us-gov-", "us-gov-west-1"))
METRICS_ROW = 'Field "metrics" has to be an array of array of strings, with an optional metricRenderer object as last element'


def invalid_body_message(problems: list[tuple[str, str]]) -> str:
    """CloudWatch's message for a body it refuses: the count, then each (dataPath, message) as indented JSON."""
    listed = json.dumps([{"dataPath": path, "message": message} for path, message in problems], indent=2)
    return f"The dashboard body is invalid, there are {len(problems)} validation errors:\n{listed}"


def body_problems(body: Any) -> list[tuple[str, str]]:
    """The (dataPath, message) of each structural error CloudWatch reports for a parsed body, in order."""
    if not isinstance(body, dict):
        return [("", "Should be object")]
    if "widgets" not in body:
        return [("", "Should have required property 'widgets'")]
    widgets = body["widgets"]
    if not isinstance(widgets, list):
        return [("/widgets", "Should be array")]
    problems: list[tuple[str, str]] = []
    for index, widget in enumerate(widgets):
        if not isinstance(widget, dict):
            problems.append((f"/widgets/{index}", "Should be object"))
            continue
        properties = widget.get("properties")
        rows = properties.get("metrics") if isinstance(properties, dict) else None
        if widget.get("type") != "metric" or not isinstance(rows, list):
            continue
        for number, row in enumerate(rows):
            if not isinstance(row, list):
                path = f"/widgets/{index}/properties/metrics/{number}"
                problems += [(path, "Should be array"), (path, METRICS_ROW)]
    return problems


def check_name(name: Any) -> None:
    """InvalidParameterValue for a name CloudWatch does not accept (CloudWatch's words, as CloudFormation quotes
    them)."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        from moto.cloudwatch.exceptions import InvalidParameterValue

        raise InvalidParameterValue(
            f"The value {name} for field DashboardName contains invalid characters. It can only contain "
            "alphanumerics, dash (-) and underscore (_)."
        )


def check_body(text: Any) -> None:
    """CloudWatch's InvalidParameterInput for a body it refuses: not JSON (moto's words), or its structure."""
    from moto.cloudwatch.exceptions import DashboardInvalidInputError

    try:
        body = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        body = None
    if not isinstance(text, str) or (body is None and text.strip() != "null"):
        raise DashboardInvalidInputError("Body is invalid JSON")
    problems = body_problems(body)
    if problems:
        error = DashboardInvalidInputError(invalid_body_message(problems))
        # moto answers an exception's attributes named as its error shape's members (dashboardValidationMessages)
        messages = [{"DataPath": p, "Message": m} for p, m in problems]
        error.dashboard_validation_messages = messages  # type: ignore[attr-defined]
        raise error


def home(backend: Any) -> Any:
    """The backend that keeps ``backend``'s account's dashboards (they are global to the account)."""
    from moto.cloudwatch.models import cloudwatch_backends

    region = next((first for prefix, first in _HOME if backend.region_name.startswith(prefix)), "us-east-1")
    return cloudwatch_backends[backend.account_id][region]


@PATCHES.replace(Target(_MODELS, "CloudWatchBackend.put_dashboard", ("self", "name", "body")))
def put_dashboard(self: Any, name: str, body: str) -> Any:
    """The account's dashboard, wherever it is put."""
    return PATCHES.original(put_dashboard)(home(self), name, body)


@PATCHES.replace(Target(_MODELS, "CloudWatchBackend.get_dashboard", ("self", "dashboard")))
def get_dashboard(self: Any, dashboard: str) -> Any:
    return PATCHES.original(get_dashboard)(home(self), dashboard)


@PATCHES.replace(Target(_MODELS, "CloudWatchBackend.list_dashboards", ("self", "prefix")))
def list_dashboards(self: Any, prefix: str = "") -> Any:
    return PATCHES.original(list_dashboards)(home(self), prefix)


@PATCHES.replace(Target(_MODELS, "CloudWatchBackend.delete_dashboards", ("self", "dashboards")))
def delete_dashboards(self: Any, dashboards: list[str]) -> str | None:
    """Deletes each named dashboard that exists, and its tags; the error (moto's words) names those that did not."""
    keeper = home(self)
    missing = [name for name in dashboards if name not in keeper.dashboards]
    for name in dashboards:
        gone = keeper.dashboards.pop(name, None)
        if gone is not None:
            keeper.tagger.delete_all_tags_for_resource(gone.arn)
    return f"The specified dashboard does not exist. [{', '.join(missing)}]" if missing else None


@PATCHES.replace(Target(_MODELS, "CloudWatchBackend.list_tags_for_resource", ("self", "arn")))
def list_tags_for_resource(self: Any, arn: str) -> dict[str, str]:
    """A dashboard's tags are its account's, whichever region is asked."""
    backend = home(self) if ":dashboard/" in arn else self
    return PATCHES.original(list_tags_for_resource)(backend, arn)


def set_tags(backend: Any, dashboard: Any, tags: list[dict[str, str]]) -> None:
    """``dashboard``'s tags become ``tags`` (Key/Value pairs)."""
    keeper = home(backend)
    keeper.tagger.delete_all_tags_for_resource(dashboard.arn)
    if tags:
        keeper.tagger.tag_resource(dashboard.arn, [{"Key": t["Key"], "Value": t["Value"]} for t in tags])


@PATCHES.replace(Target(_RESPONSES, "CloudWatchResponse.put_dashboard", ("self",)))
def put_dashboard_response(self: Any) -> Any:
    """PutDashboard with CloudWatch's checks of the name and the body; its Tags apply to a new dashboard only."""
    name = self._get_param("DashboardName")
    check_name(name)
    check_body(self._get_param("DashboardBody"))
    backend = self.cloudwatch_backend
    new = backend.get_dashboard(name) is None
    answer = PATCHES.original(put_dashboard_response)(self)
    tags = self._get_param("Tags", [])
    if new and tags:
        set_tags(backend, backend.get_dashboard(name), tags)
    return answer


@PATCHES.replace(Target(_MODELS, "Dashboard.create_from_cloudformation_json"), wrap=classmethod)
def create_from_cloudformation_json(
    cls: Any, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str, **kw: Any
) -> Any:  # fmt: skip
    """A template's dashboard, checked as PutDashboard checks it."""
    properties = cloudformation_json["Properties"]
    if "DashboardName" in properties:
        check_name(properties["DashboardName"])
    check_body(properties.get("DashboardBody"))
    original = PATCHES.original(create_from_cloudformation_json)
    dashboard = original(cls, resource_name, cloudformation_json, account_id, region_name, **kw)
    set_tags(_backend(account_id, region_name), dashboard, properties.get("Tags") or [])
    return dashboard


@PATCHES.replace(Target(_MODELS, "Dashboard.update_from_cloudformation_json"), wrap=classmethod)
def update_from_cloudformation_json(
    cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
    account_id: str, region_name: str,
) -> Any:  # fmt: skip
    """The new body and tags in place (a new DashboardName replaces the dashboard: cloudformation/updates.py
    REPLACING)."""
    properties = cloudformation_json["Properties"]
    check_body(properties.get("DashboardBody"))
    backend = _backend(account_id, region_name)
    dashboard = backend.put_dashboard(name=original_resource.name, body=properties["DashboardBody"])
    set_tags(backend, dashboard, properties.get("Tags") or [])
    return dashboard


def _backend(account_id: str, region_name: str) -> Any:
    from moto.cloudwatch.models import cloudwatch_backends

    return cloudwatch_backends[account_id][region_name]


# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    Target(_MODELS, "cloudwatch_backends"),
    Target("moto.cloudwatch.exceptions", "DashboardInvalidInputError"),
    Target("moto.cloudwatch.exceptions", "InvalidParameterValue"),
    Target(_RESPONSES, "CloudWatchResponse._get_param"),
    Target(_RESPONSES, "CloudWatchResponse.cloudwatch_backend"),
    Target("moto.utilities.tagging_service", "TaggingService.tag_resource", ("self", "arn", "tags")),
    Target("moto.utilities.tagging_service", "TaggingService.delete_all_tags_for_resource", ("self", "arn")),
)
