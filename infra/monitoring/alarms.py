"""Alarms for what an operator must hear about, published to one topic per environment.

Thresholds (why these numbers):
- iterator age: the mapping's oldest unprocessed record. Above 10 minutes for 3 consecutive minutes the
  consumer is falling behind; `max_record_age` (6 h by default) is far away, so there is time to act before
  records are diverted to the failure bucket.
- consumer errors: any function error (a crash or a timeout fails the whole batch, unlike a partial batch
  failure) in 2 of 3 five-minute periods: one transient error retried successfully is not a page.
- failed batches: any object written to the failure bucket means records left the stream unprocessed; an
  operator must look and replay (`doctable replay`). Threshold 1, one period.
- keys refused: a record listed a blob outside its own prefix. Never deleted, but it means a writer is
  producing records that break the layout contract. Threshold 1, one period. The consumer's metrics carry the
  environment and the table beside the service, and the alarm selects its own stack's: environments sharing an
  account and region never fire each other's alarm.
- dropped events (with mapping_metrics=on): records the mapping discarded (retries or record age exhausted)
  that did NOT reach the failure bucket, because writing there failed (a bucket policy, a deleted bucket).
  Those records are gone without a copy, the one silent loss left; records that did reach the bucket are the
  failed-batches alarm's. Threshold 1, one period, selected by the mapping's UUID.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from constructs import Construct

from contract import names
from contract.knobs import DocTableConfig
from infra.synth.nag import acknowledge

ITERATOR_AGE_MS = 10 * 60 * 1000
FAILED_BATCHES_FILTER_ID = "failed-batches"


class ConsumerAlarms(Construct):
    """A stack's alarm topic (``Alarms/Topic``: the home stack's, and each replica region's own, since an alarm
    notifies a topic of its own region) and the alarms of the stack's built-in consumer.

    ``function`` None: the topic alone, for a stack whose only alarms are its subscribers' (consumer = none); the
    topic keeps its logical id when the consumer is turned on. ``failure_bucket`` None: a replica region's
    consumer, which keeps no failed batches and deletes nothing (no failed-batches or keys-refused alarm).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DocTableConfig,
        function: lambda_.IFunction | None,
        failure_bucket: s3.Bucket | None = None,
        mapping_uuid: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = self._topic(config)
        self.alarms: list[cloudwatch.Alarm] = []
        if function is None:
            return
        if failure_bucket is not None:
            self._count_failed_batches(failure_bucket)
        self.alarms += [self._iterator_age(function), self._consumer_errors(function)]
        if failure_bucket is not None:
            self.alarms += [self._failed_batches(failure_bucket), self._keys_refused(config)]
        if config.has_mapping_metrics and mapping_uuid is not None:
            self.alarms.append(self._dropped_events(mapping_uuid))

    def _topic(self, config: DocTableConfig) -> sns.Topic:
        topic = sns.Topic(
            self, "Topic", display_name=f"doctable {config.table_name} alarms", enforce_ssl=True
        )
        acknowledge(
            topic,
            "AwsSolutions::AwsSolutions-SNS2",
            "The topic carries only alarm names and states; CloudWatch cannot publish to a topic encrypted "
            "with the AWS-managed key, and a customer key per environment costs more than this data warrants.",
        )
        return topic

    @staticmethod
    def _count_failed_batches(failure_bucket: s3.Bucket) -> None:
        """S3 request metrics for the failure bucket: the only way to count objects as they arrive."""
        cfn_bucket = failure_bucket.node.default_child
        assert isinstance(cfn_bucket, s3.CfnBucket)
        cfn_bucket.metrics_configurations = [
            s3.CfnBucket.MetricsConfigurationProperty(id=FAILED_BATCHES_FILTER_ID)
        ]

    def _iterator_age(self, function: lambda_.IFunction) -> cloudwatch.Alarm:
        return self._alarm(
            "IteratorAge",
            function.metric("IteratorAge", statistic="Maximum", period=Duration.minutes(1)),
            threshold=ITERATOR_AGE_MS,
            evaluation_periods=3,
            description="The consumer is falling behind its stream: oldest record older than 10 minutes.",
        )

    def _consumer_errors(self, function: lambda_.IFunction) -> cloudwatch.Alarm:
        return self._alarm(
            "ConsumerErrors",
            function.metric_errors(statistic="Sum", period=Duration.minutes(5)),
            threshold=1,
            evaluation_periods=3,
            datapoints_to_alarm=2,
            description="The consumer crashed or timed out (a whole batch failed) in 2 of the last 3 periods.",
        )

    def _failed_batches(self, failure_bucket: s3.Bucket) -> cloudwatch.Alarm:
        return self._alarm(
            "FailedBatches",
            cloudwatch.Metric(
                namespace="AWS/S3",
                metric_name="PutRequests",
                dimensions_map={
                    "BucketName": failure_bucket.bucket_name,
                    "FilterId": FAILED_BATCHES_FILTER_ID,
                },
                statistic="Sum",
                period=Duration.minutes(5),
            ),
            threshold=1,
            evaluation_periods=1,
            description="A batch exhausted its retries and was kept in the failure bucket: inspect, fix, replay.",
        )

    def _keys_refused(self, config: DocTableConfig) -> cloudwatch.Alarm:
        return self._alarm(
            "KeysRefused",
            cloudwatch.Metric(
                namespace=names.METRICS_NAMESPACE,
                metric_name="KeysRefused",
                # This stack's own series: the consumer publishes under its environment and table too, so
                # another environment's refused keys never fire this alarm.
                dimensions_map={
                    "service": names.SERVICE_NAME,
                    names.METRIC_DIMENSION_ENVIRONMENT: config.env,
                    names.METRIC_DIMENSION_TABLE: config.table_name,
                },
                statistic="Sum",
                period=Duration.minutes(5),
            ),
            threshold=1,
            evaluation_periods=1,
            description="A record listed blob keys outside its own prefix; they were refused, not deleted.",
        )

    def _dropped_events(self, mapping_uuid: str) -> cloudwatch.Alarm:
        return self._alarm(
            "DroppedEvents",
            cloudwatch.Metric(
                namespace="AWS/Lambda",
                metric_name="DroppedEventCount",
                dimensions_map={"EventSourceMappingUUID": mapping_uuid},
                statistic="Sum",
                period=Duration.minutes(5),
            ),
            threshold=1,
            evaluation_periods=1,
            description="The mapping discarded records it could not keep in the failure bucket: "
            "they are lost; check the bucket and its policy.",
        )

    def _alarm(
        self,
        construct_id: str,
        metric: cloudwatch.IMetric,
        *,
        threshold: float,
        evaluation_periods: int,
        description: str,
        datapoints_to_alarm: int | None = None,
    ) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=threshold,
            evaluation_periods=evaluation_periods,
            datapoints_to_alarm=datapoints_to_alarm,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        alarm.add_alarm_action(cw_actions.SnsAction(self.topic))
        return alarm
