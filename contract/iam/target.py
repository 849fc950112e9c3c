"""Where a doctable IAM policy applies (one environment's knobs in one account and region) and the ARNs of what
its stack creates, named as CloudFormation names them; and one Allow statement. Standard library only, as
contract/iam/policies.py, which builds each command's statements from these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contract import names
from contract.iam.bootstrap import BOOTSTRAP_QUALIFIER, bootstrap_role_arn
from contract.knobs import DocTableConfig

# With bucket_names=generated, CloudFormation names a resource it names itself ``<stack>-<logical id>-<random>``; for
# a bucket lower case and within S3's 63 characters, so the stack name is cut to what is left: 14 characters for
# this stack's longest bucket logical id (StreamConsumerFailureBucket + its 8-character hash, 35 characters, + 2
# dashes + 12). With bucket_names=exact the stack names them itself (contract.names.bucket_name).
GENERATED_BUCKET_STACK_CHARS = 14
FAILURE_PREFIX = "aws/lambda/"  # where Lambda's S3 on-failure destination writes (doctable/operate/replay.py)


def partition_of(region: str) -> str:
    """The ARN partition of a region."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def arn_of(partition: str, service: str, region: str, account: str, resource: str) -> str:
    """An ARN (``region``, ``account``: empty for a service whose ARNs name none)."""
    return f"arn:{partition}:{service}:{region}:{account}:{resource}"


@dataclass(frozen=True)
class Statement:
    """One Allow statement: its Sid says what it is for (and, for ``"*"``, why AWS allows no resource)."""

    sid: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    condition: dict[str, dict[str, list[str]]] | None = None

    def document(self) -> dict[str, Any]:
        statement: dict[str, Any] = {
            "Sid": self.sid,
            "Effect": "Allow",
            "Action": sorted(self.actions),
            "Resource": list(self.resources),
        }
        if self.condition:
            statement["Condition"] = self.condition
        return statement


@dataclass(frozen=True)
class Target:
    """Where the policies apply: one environment's knobs in one account and region."""

    config: DocTableConfig
    account: str
    region: str
    partition: str = field(default="")
    # With bucket_names=generated, the deployed stack's bucket names (its FailureBucketName and BlobBucketName
    # outputs), when `doctable policy` could read them: the S3 statements then name these buckets exactly instead
    # of the pattern that every environment's generated bucket names share.
    deployed_failure_bucket: str = ""
    deployed_blob_bucket: str = ""
    qualifier: str = BOOTSTRAP_QUALIFIER  # the CDK bootstrap the environment deploys through

    def __post_init__(self) -> None:
        if not self.partition:
            object.__setattr__(self, "partition", partition_of(self.region))

    def arn(self, service: str, resource: str, *, region: bool = True, account: bool = True) -> str:
        return arn_of(
            self.partition, service, self.region if region else "", self.account if account else "", resource
        )

    # ---- the stack's names
    @property
    def stack(self) -> str:
        return self.config.stack_name

    @property
    def stack_arn(self) -> str:
        return self.arn("cloudformation", f"stack/{self.stack}/*")

    @property
    def table_arn(self) -> str:
        return self.arn("dynamodb", f"table/{self.config.table_name}")

    @property
    def functions(self) -> tuple[str, ...]:
        """The consumer the mapping invokes: the stack's (any of its versions and aliases), or the borrowed one."""
        borrowed = self.config.borrowed_consumer_arn
        if borrowed:
            return (borrowed, f"{borrowed}:*")
        return (self.arn("lambda", f"function:{self.stack}-*"),)

    @property
    def log_groups(self) -> tuple[str, ...]:
        return (self.arn("logs", f"log-group:{self.stack}-*"),)

    @property
    def mappings(self) -> tuple[str, ...]:
        # A mapping's ARN ends in a UUID known only once CloudFormation made it: any mapping of the account and
        # region, narrowed by the function it invokes where Lambda offers that key.
        return (self.arn("lambda", "event-source-mapping:*"),)

    @property
    def generated_buckets(self) -> str:
        return self.stack.lower()[:GENERATED_BUCKET_STACK_CHARS] + "*"

    def named_bucket(self, suffix: str) -> str:
        """The exact name the stack gives its blob or failure bucket (bucket_names=exact) in this account and region."""
        return names.bucket_name(self.config.table_name, self.account, self.region, suffix)

    @property
    def failure_bucket(self) -> str:
        """The stack's failure bucket: its exact name; with bucket_names=generated its deployed name, else the
        generated-name pattern."""
        if self.config.exact_bucket_names:
            return self.named_bucket(names.FAILURE_BUCKET_SUFFIX)
        return self.deployed_failure_bucket or self.generated_buckets

    @property
    def blob_bucket(self) -> str:
        """The blob bucket: the user's, the stack's exact name; with bucket_names=generated the deployed stack's,
        else the generated-name pattern."""
        if self.config.blob_bucket:
            return self.config.blob_bucket
        if self.config.exact_bucket_names:
            return self.named_bucket(names.BLOB_BUCKET_SUFFIX)
        return self.deployed_blob_bucket or self.generated_buckets

    @property
    def subscriber_failure_buckets(self) -> tuple[str, ...]:
        """Each subscriber's own failure bucket: its exact name (bucket_names=exact) in each region it runs in, else
        the generated-name pattern."""
        subscribers = self.config.subscribers
        if not subscribers:
            return ()
        if self.config.exact_bucket_names:
            replicas = self.config.replicas
            return tuple(
                names.bucket_name(
                    self.config.table_name, self.account, region, names.subscriber_failure_suffix(s.name)
                )
                for s in subscribers
                # on a global table, its bucket in each region it runs in (the replica stacks hold theirs)
                for region in ((self.region,) if s.runs_in(replicas) else ()) + s.replica_regions(replicas)
            )
        return (self.generated_buckets,)

    @property
    def stack_buckets(self) -> tuple[str, ...]:
        """The buckets the stack's commands empty: the failure bucket, each subscriber's, and the blob bucket (the
        stack's or the user's) when there is a built-in consumer or a blob_bucket; one pattern when neither name is
        known."""
        buckets = {self.failure_bucket, *self.subscriber_failure_buckets}
        known = self.config.exact_bucket_names or self.deployed_blob_bucket
        if self.config.blob_bucket or (self.config.builtin_consumer and known):
            buckets.add(self.blob_bucket)
        return tuple(sorted(buckets))

    @property
    def exact_buckets(self) -> bool:
        """The S3 statements name the buckets exactly (bucket_names=exact, or the deployed stack's names read),
        not the pattern other environments share."""
        return self.config.exact_bucket_names or bool(self.deployed_failure_bucket)

    def bucket_arn(self, bucket: str, key: str | None = None) -> str:
        return f"arn:{self.partition}:s3:::{bucket}" + (f"/{key}" if key is not None else "")

    @property
    def kinesis_streams(self) -> tuple[str, ...]:
        borrowed = self.config.borrowed_kinesis_arn
        return (borrowed,) if borrowed else (self.arn("kinesis", f"stream/{self.stack}-*"),)

    @property
    def kms_keys(self) -> tuple[str, ...]:
        borrowed = self.config.borrowed_kms_key_arn
        # A key the stack creates (or AWS's aws/dynamodb key) is named by an id known only once it exists.
        return (borrowed,) if borrowed else (self.arn("kms", "key/*"),)

    def bootstrap_role(self, kind: str) -> str:
        # The CLI assumes these roles; they hold the deploy's own rights.
        return bootstrap_role_arn(self.partition, self.account, self.region, kind, self.qualifier)

    @property
    def stack_roles(self) -> tuple[str, ...]:
        return (self.arn("iam", f"role/{self.stack}-*", region=False),)
