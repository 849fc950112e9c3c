"""CloudFormation resource types moto lacks: S3::BucketPolicy, SNS::TopicPolicy, CloudWatch::Alarm, Lambda::Alias.

Defining a ``CloudFormationModel`` subclass registers it (moto finds models by ``__subclasses__``): the classes
below are registered when this module is imported; installing ``PATCHES`` clears moto's cached model maps. moto's
``AWS::Lambda::Version`` is completed here: Ref is the version's ARN, ``Fn::GetAtt [V, Version]`` its number,
deleting the resource deletes the version, and a version whose SnapStart init failed fails the resource.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from moto.core.common_models import CloudFormationModel

from local.patching import Patches, Target, replace, truthy
from local.services.cloudformation.resource import Resource

_LAMBDA = "moto.awslambda.models"
PATCHES = Patches()


def _lambda_backend(account_id: str, region: str) -> Any:
    from moto.awslambda.models import lambda_backends

    return lambda_backends[account_id][region]


def _s3_backend(account_id: str, region: str) -> Any:
    from moto.s3.models import s3_backends
    from moto.utilities.utils import get_partition

    return s3_backends[account_id][get_partition(region)]


def _cloudwatch_backend(account_id: str, region: str) -> Any:
    from moto.cloudwatch.models import cloudwatch_backends

    return cloudwatch_backends[account_id][region]


class BucketPolicy(Resource, CloudFormationModel):
    """AWS::S3::BucketPolicy: the bucket's policy (Ref is the bucket's name); deleting it removes the policy."""

    TYPE = "AWS::S3::BucketPolicy"
    PHYSICAL_ID = "bucket"

    def __init__(self, bucket: str, account_id: str, region: str):
        self.bucket = bucket
        self.account_id = account_id
        self.region = region

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kw: Any,
    ) -> BucketPolicy:
        properties = cloudformation_json["Properties"]
        backend = _s3_backend(account_id, region_name)
        document = properties["PolicyDocument"]
        backend.put_bucket_policy(properties["Bucket"], json.dumps(document).encode("utf-8"))
        return cls(properties["Bucket"], account_id, region_name)

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[override]
        cls, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
        account_id: str, region_name: str,
    ) -> BucketPolicy:  # fmt: skip
        original_resource.delete(account_id, region_name)
        return cls.create_from_cloudformation_json(
            new_resource_name, cloudformation_json, account_id, region_name
        )

    def delete(self, account_id: str, region_name: str) -> None:
        backend = _s3_backend(account_id, region_name)
        with contextlib.suppress(Exception):  # the bucket is gone already
            backend.delete_bucket_policy(self.bucket)


class Alarm(Resource, CloudFormationModel):
    """AWS::CloudWatch::Alarm: a metric alarm (Ref is its name, ``Arn`` its ARN); an update replaces it."""

    TYPE = "AWS::CloudWatch::Alarm"
    NAME_PROPERTY = "AlarmName"
    PHYSICAL_ID = "name"
    ATTRIBUTES = ("Arn",)

    def __init__(self, name: str, account_id: str, region: str):
        self.name = name
        self.account_id = account_id
        self.region = region

    def get_cfn_attribute(self, attribute_name: str) -> str:
        return f"arn:aws:cloudwatch:{self.region}:{self.account_id}:alarm:{self.name}"

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kw: Any,
    ) -> Alarm:
        p = cloudformation_json["Properties"]
        name = p.get("AlarmName", resource_name)
        _cloudwatch_backend(account_id, region_name).put_metric_alarm(
            name=name,
            namespace=p.get("Namespace"),
            metric_name=p.get("MetricName"),
            comparison_operator=p.get("ComparisonOperator"),
            evaluation_periods=p.get("EvaluationPeriods"),
            period=p.get("Period"),
            threshold=p.get("Threshold"),
            statistic=p.get("Statistic"),
            description=p.get("AlarmDescription"),
            dimensions=list(p.get("Dimensions", [])),
            alarm_actions=p.get("AlarmActions", []),
            ok_actions=p.get("OKActions", []),
            insufficient_data_actions=p.get("InsufficientDataActions", []),
            datapoints_to_alarm=p.get("DatapointsToAlarm"),
            extended_statistic=p.get("ExtendedStatistic"),
            unit=p.get("Unit"),
            actions_enabled=truthy(p.get("ActionsEnabled", True)),
            treat_missing_data=p.get("TreatMissingData"),
        )
        return cls(name, account_id, region_name)

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[override]
        cls, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
        account_id: str, region_name: str,
    ) -> Alarm:  # fmt: skip
        original_resource.delete(account_id, region_name)
        return cls.create_from_cloudformation_json(
            cloudformation_json["Properties"].get("AlarmName", original_resource.name),
            cloudformation_json, account_id, region_name,
        )  # fmt: skip

    def delete(self, account_id: str, region_name: str) -> None:
        _cloudwatch_backend(account_id, region_name).delete_alarms([self.name])


class TopicPolicy(Resource, CloudFormationModel):
    """AWS::SNS::TopicPolicy: the policy of each of its topics (Ref is its logical id)."""

    TYPE = "AWS::SNS::TopicPolicy"
    PHYSICAL_ID = "logical"

    def __init__(self, topics: list[str], logical: str):
        self.topics = topics
        self.logical = logical

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kw: Any,
    ) -> TopicPolicy:
        from moto.sns.models import sns_backends

        properties = cloudformation_json["Properties"]
        topics = list(properties.get("Topics", []))
        for arn in topics:
            sns_backends[account_id][arn.split(":")[3]].set_topic_attribute(
                arn, "policy", json.dumps(properties.get("PolicyDocument", {}))
            )
        return cls(topics, resource_name)

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[override]
        cls, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
        account_id: str, region_name: str,
    ) -> TopicPolicy:  # fmt: skip
        return cls.create_from_cloudformation_json(
            new_resource_name, cloudformation_json, account_id, region_name
        )

    def delete(self, account_id: str, region_name: str) -> None:
        pass  # the topic keeps its last policy; deleting the topic removes it


class Alias(Resource, CloudFormationModel):
    """AWS::Lambda::Alias: Ref is the alias ARN; Name and FunctionName replace it, the rest updates in place."""

    TYPE = "AWS::Lambda::Alias"
    PHYSICAL_ID = "arn"
    ATTRIBUTES = ("AliasArn",)

    def __init__(self, arn: str, name: str, function_name: str):
        self.arn = arn
        self.name = name
        self.function_name = function_name

    def get_cfn_attribute(self, attribute_name: str) -> str:
        return self.arn

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kw: Any,
    ) -> Alias:
        properties = cloudformation_json["Properties"]
        backend = _lambda_backend(account_id, region_name)
        function = backend.get_function(properties["FunctionName"])
        alias = backend.create_alias(
            properties["Name"],
            function.function_name,
            str(properties["FunctionVersion"]),
            properties.get("Description", ""),
            properties.get("RoutingConfig"),
        )
        return cls(alias.arn, properties["Name"], function.function_name)

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[override]
        cls, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
        account_id: str, region_name: str,
    ) -> Alias:  # fmt: skip
        properties = cloudformation_json["Properties"]
        _lambda_backend(account_id, region_name).update_alias(
            original_resource.name,
            original_resource.function_name,
            str(properties["FunctionVersion"]),
            properties.get("Description", ""),
            properties.get("RoutingConfig"),
        )
        return original_resource  # type: ignore[no-any-return]

    def delete(self, account_id: str, region_name: str) -> None:
        from moto.awslambda.exceptions import UnknownFunctionException

        # Lambda deletes a function's aliases with it: an alias whose function is already gone is gone.
        with contextlib.suppress(UnknownFunctionException):
            _lambda_backend(account_id, region_name).delete_alias(self.name, self.function_name)


class VersionNotStabilized(Exception):
    """CloudFormation's answer when a published version ends Failed (its SnapStart init failed)."""

    error_type = "NotStabilized"

    def __init__(self, arn: str, reason: str):
        self.message = (
            f"Resource of type 'AWS::Lambda::Version' with identifier '{arn}' did not stabilize. "
            f"Status Reason is {reason}"
        )
        super().__init__(self.message)


# moto's ``AWS::Lambda::Version`` with the ARN as its Ref, its attributes, deletion and a failed publish.
@PATCHES.replace(Target(_LAMBDA, "LambdaVersion.create_from_cloudformation_json"), wrap=classmethod)
def version_create_from_cloudformation_json(
    cls: Any,
    resource_name: str,
    cloudformation_json: dict[str, Any],
    account_id: str,
    region_name: str,
    **kw: Any,
) -> Any:
    """A template's version is published with its Description; one that ends Failed fails the resource."""
    properties = cloudformation_json["Properties"]
    backend = _lambda_backend(account_id, region_name)
    fn: Any = backend.publish_version(properties["FunctionName"], properties.get("Description", ""))
    if fn.state == "Failed":
        # CloudFormation deletes the failed version when it rolls the resource back.
        backend.delete_function(fn.function_name, str(fn.version))
        raise VersionNotStabilized(fn.function_arn, fn.state_reason)
    version = cls({"Version": fn.version})
    version.arn = fn.function_arn
    version.function_name = fn.function_name
    return version


@PATCHES.replace(Target(_LAMBDA, "LambdaVersion.update_from_cloudformation_json"), wrap=classmethod)
def version_update_from_cloudformation_json(
    cls: Any, original_resource: Any, new_resource_name: str, cloudformation_json: dict[str, Any],
    account_id: str, region_name: str,
) -> Any:  # fmt: skip
    """An updated version stays the version it is (nothing of it is updated in place)."""
    return original_resource  # what is left to update in place (provisioned concurrency) is not modelled


@PATCHES.replace(Target(_LAMBDA, "LambdaVersion.has_cfn_attr"), wrap=classmethod)
def version_has_cfn_attr(cls: Any, attr: str) -> bool:
    """A version's ``Fn::GetAtt`` attributes: Version and FunctionArn."""
    return attr in ("Version", "FunctionArn")


def version_physical_resource_id(self: Any) -> str:
    """A version's Ref: its ARN."""
    return str(self.arn)


def version_get_cfn_attribute(self: Any, attribute_name: str) -> str:
    """``Fn::GetAtt [V, Version]`` is the version's number; FunctionArn its ARN."""
    return str(self.version) if attribute_name == "Version" else str(self.arn)


def version_delete(self: Any, account_id: str, region_name: str) -> None:
    """Deleting the resource deletes the version."""
    from moto.awslambda.exceptions import UnknownFunctionException

    # Deleting the function deleted its versions: a version whose function is gone is gone.
    with contextlib.suppress(UnknownFunctionException):
        _lambda_backend(account_id, region_name).delete_function(self.function_name, str(self.version))


@PATCHES.on_install
def _complete_lambda_version() -> None:
    """The attributes moto's LambdaVersion lacks (no Target can name one before it exists): Ref, GetAtt, delete."""
    from moto.awslambda.models import LambdaVersion

    replace(LambdaVersion, "physical_resource_id", property(version_physical_resource_id))
    replace(LambdaVersion, "get_cfn_attribute", version_get_cfn_attribute)
    replace(LambdaVersion, "delete", version_delete)


def clear_model_maps() -> None:
    """moto's cached model maps cleared, so that CloudFormation finds a model registered since (a module-level
    CloudFormationModel subclass of local/ is one)."""
    from moto.cloudformation import parsing as cp

    for cached in (cp.get_model_list, cp.get_model_map, cp.get_name_type_map):
        cached.cache_clear()


PATCHES.on_install(clear_model_maps)
# What ``clear_model_maps`` and a registered model rely on.
MODEL_MAP_TARGETS = (
    Target("moto.cloudformation.parsing", "get_model_list"),
    Target("moto.cloudformation.parsing", "get_model_map"),
    Target("moto.cloudformation.parsing", "get_name_type_map"),
    Target("moto.core.common_models", "CloudFormationModel"),
)
# Every moto internal this module relies on: what it replaces, and what it reads or calls.
MOTO_TARGETS = (
    *PATCHES.targets,
    *MODEL_MAP_TARGETS,
    Target(_LAMBDA, "lambda_backends"),
    Target(_LAMBDA, "LambdaVersion.__init__", ("self", "spec")),
    Target(_LAMBDA, "LambdaBackend.publish_version", ("self", "function_name", "description")),
    Target(_LAMBDA, "LambdaBackend.delete_function", ("self", "function_name", "qualifier")),
    Target(_LAMBDA, "LambdaBackend.create_alias", ("self", "name", "function_name")),
    Target(_LAMBDA, "LambdaBackend.update_alias", ("self", "name", "function_name")),
    Target(_LAMBDA, "LambdaBackend.delete_alias", ("self", "name", "function_name")),
    Target("moto.s3.models", "S3Backend.put_bucket_policy", ("self", "bucket_name", "policy")),
    Target("moto.s3.models", "S3Backend.delete_bucket_policy", ("self", "bucket_name")),
    Target("moto.cloudwatch.models", "CloudWatchBackend.put_metric_alarm"),
    Target("moto.cloudwatch.models", "CloudWatchBackend.delete_alarms", ("self", "alarm_names")),
    Target(
        "moto.sns.models",
        "SNSBackend.set_topic_attribute",
        ("self", "topic_arn", "attribute_name", "attribute_value"),
    ),
)
