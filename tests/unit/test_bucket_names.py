"""The stack's buckets named exactly (bucket_names): the name, the room it leaves the environment name, a stack
recorded before the knob, and the deploy gate's finding when an existing stack's buckets would be renamed."""

from __future__ import annotations

import json

import pytest

from contract import names
from contract.findings import destructive
from contract.knobs import ConfigError, knobs_from_record, name_limits, resolve_config
from doctable.capabilities import consumer as consumer_plan
from doctable.lifecycle.deploy import gate
from tests.support import ops as ot

pytestmark = pytest.mark.unit

STREAM = {"stream": "new-and-old"}
ACCOUNT, LONGEST_REGION = "111122223333", "ap-southeast-5"


def test_the_names_are_the_table_account_region_and_kind_within_s3s_limit() -> None:
    # GIVEN the longest environment name the default table_base leaves room for
    config = ot.config_of(env="e" * 20, tier="dev")
    # WHEN its buckets are named in the longest region
    failures = names.bucket_name(config.table_name, ACCOUNT, LONGEST_REGION, names.FAILURE_BUCKET_SUFFIX)
    blobs = names.bucket_name(config.table_name, ACCOUNT, LONGEST_REGION, names.BLOB_BUCKET_SUFFIX)
    # THEN both fit S3's 63 characters, the failure bucket's exactly
    assert failures == f"items-{'e' * 20}-{ACCOUNT}-{LONGEST_REGION}-failures"
    assert (len(failures), len(blobs)) == (63, 60)
    assert len(LONGEST_REGION) == names.REGION_NAME_MAX


def test_one_more_character_is_one_line_naming_the_failure_bucket() -> None:
    # GIVEN an environment name one character longer
    with pytest.raises(ConfigError) as caught:
        ot.config_of(env="e" * 21, tier="dev")
    # THEN one problem names the bucket and the room left
    (problem,) = caught.value.problems
    assert "the failure bucket name <table_base>-<env>-<account>-<region>-failures" in problem
    assert "64 characters; allowed: at most 63 (an environment name of at most 20 characters)" in problem
    # AND with bucket_names=generated the stack name is the bound again
    assert ot.config_of(env="e" * 21, tier="dev", bucket_names="generated").env == "e" * 21
    what, _, _ = name_limits("items", exact_buckets=False)[0]
    assert "failure bucket" not in what


@pytest.mark.parametrize("table_base", ["-items", "xn--items", "sthree-items"])
def test_a_table_base_s3_refuses_to_begin_a_bucket_name_is_refused(table_base: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ot.config_of(table_base=table_base)
    (problem,) = caught.value.problems
    assert problem.startswith(f"table_base={table_base!r} begins the bucket names")
    assert ot.config_of(table_base=table_base, bucket_names="generated").table_base == table_base


def test_a_record_without_the_knob_reads_as_generated_names() -> None:
    # GIVEN a knob record written before bucket_names existed
    old = {k: v for k, v in ot.config_of(**STREAM).knob_values().items() if k != "bucket_names"}
    # THEN the stack it describes has generated names; a record that says exact keeps exact
    assert knobs_from_record(json.dumps(old))["bucket_names"] == "generated"
    assert knobs_from_record(json.dumps({**old, "bucket_names": "exact"}))["bucket_names"] == "exact"
    recorded = resolve_config(defaults=knobs_from_record(json.dumps(old)))
    assert not recorded.exact_bucket_names


def codes(deployed: dict[str, str], target: dict[str, str]) -> dict[str, bool]:
    found = consumer_plan.findings(ot.config_of(**deployed), ot.config_of(**target))
    return {f.code: f.destructive for f in found}


@pytest.mark.parametrize(("start", "end"), [("generated", "exact"), ("exact", "generated")])
def test_renaming_an_existing_stacks_buckets_is_destructive_either_way(start: str, end: str) -> None:
    assert codes({**STREAM, "bucket_names": start}, {**STREAM, "bucket_names": end}) == {
        "bucket.renamed": True
    }


def test_the_finding_names_both_buckets_and_what_keeps_the_names() -> None:
    # GIVEN a stack with generated names  WHEN the settings leave bucket_names at its default (exact)
    (finding,) = consumer_plan.rename_findings(
        ot.config_of(**STREAM, bucket_names="generated"), ot.config_of(**STREAM)
    )
    # THEN the finding's values say which buckets go from which naming to which
    assert (finding.subject, finding.before, finding.after) == (
        "blob and failure bucket names",
        "generated",
        "exact",
    )
    assert 'bucket_names = "generated" in [environments.dev]' in finding.effect
    # AND the deploy gate refuses it without an explicit yes
    assert gate([finding], allow=False, interactive=False) == [finding]
    assert gate([finding], allow=True, interactive=False) == []


def test_with_a_kms_key_the_finding_says_a_copy_changes_the_etags() -> None:
    deployed = ot.config_of(**STREAM, bucket_names="generated", encryption="aws-managed")
    (finding,) = consumer_plan.rename_findings(deployed, ot.config_of(**STREAM, encryption="aws-managed"))
    assert "with encryption=aws-managed a copied blob gets a new ETag" in finding.effect


@pytest.mark.parametrize(
    ("deployed", "target", "subject"),
    [
        # the failure bucket alone: a borrowed consumer has no blob bucket of the stack's
        ({"consumer": "arn:aws:lambda:eu-west-1:111122223333:function:f"},) * 2 + ("failure bucket names",),
        # the blob bucket of the user's is never the stack's
        ({"blob_bucket": "mine"},) * 2 + ("failure bucket names",),
    ],
)
def test_only_the_stacks_own_buckets_are_renamed(
    deployed: dict[str, str], target: dict[str, str], subject: str
) -> None:
    found = consumer_plan.rename_findings(
        ot.config_of(**STREAM, **deployed, bucket_names="generated"), ot.config_of(**STREAM, **target)
    )
    assert [(f.code, f.subject) for f in found] == [("bucket.renamed", subject)]


def test_buckets_created_or_absent_are_not_renamed() -> None:
    # a table without a stream has no bucket; one that gains the consumer creates its buckets under exact names
    assert consumer_plan.rename_findings(ot.config_of(bucket_names="generated"), ot.config_of()) == []
    assert codes({"bucket_names": "generated"}, STREAM) == {}
    assert destructive(consumer_plan.findings(ot.config_of(**STREAM), ot.config_of(**STREAM))) == []
