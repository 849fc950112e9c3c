"""The stack's private buckets (the blob bucket, the failure buckets of the consumer and of each subscriber): all
public access blocked, TLS only, owner-enforced objects, and kept with their objects when a new name replaces them."""

from __future__ import annotations

from aws_cdk import CfnDeletionPolicy, RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.synth.nag import acknowledge


def private_bucket(
    scope: Construct,
    construct_id: str,
    *,
    removal: RemovalPolicy,
    audit_reason: str,
    bucket_name: str | None = None,
    encryption: s3.BucketEncryption = s3.BucketEncryption.S3_MANAGED,
    key: kms.IKey | None = None,
) -> s3.Bucket:
    """A private bucket; ``audit_reason``: why it has no server access logs (cdk-nag's S1)."""
    bucket = s3.Bucket(
        scope,
        construct_id,
        bucket_name=bucket_name,
        encryption=encryption,
        encryption_key=key,
        # One data key per bucket instead of a KMS request per object (a no-op with S3-managed keys).
        bucket_key_enabled=encryption != s3.BucketEncryption.S3_MANAGED,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        removal_policy=removal,
    )
    # A bucket is replaced only when its name changes (bucket_names): CloudFormation keeps the old one, with its
    # objects, outside the stack (docs/environments.md says how to move them).
    cfn_bucket = bucket.node.default_child
    assert isinstance(cfn_bucket, s3.CfnBucket)
    cfn_bucket.cfn_options.update_replace_policy = CfnDeletionPolicy.RETAIN
    acknowledge(bucket, "AwsSolutions::AwsSolutions-S1", audit_reason)
    return bucket
