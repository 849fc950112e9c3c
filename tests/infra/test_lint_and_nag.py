"""cfn-lint on every synthesized template of the matrix; cdk-nag clean with a reason on every acknowledgement."""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import pytest

from contract.knobs import ENV_VALUES
from tests.infra.synth import cfn_lint, synth
from tooling import toolchain

ROOT = Path(__file__).resolve().parents[2]
MATRIX = [
    dict(gsi=g, ttl=t, stream=s, pitr=p, env=e)
    for g, t, s, p, e in itertools.product(
        ("none", "gsi1"), ("off", "on"), ("none", "new-and-old"), ("off", "on"), ENV_VALUES
    )
]
VARIANTS = [
    dict(stream="new-and-old", blob_prefix_cleanup="on", blob_root="blobs/", starting_position="latest"),
    dict(stream="new-and-old", powertools="bundled", architecture="x86_64"),
    dict(stream="new-and-old", blob_bucket="their-blobs", blob_key_reuse="never", snapstart="on"),
    dict(stream="new-and-old", consumer="arn:aws:lambda:us-east-1:123456789012:function:theirs"),
    dict(stream="new-and-old", consumer="none"),
    dict(stream="new-and-old", deploy_target="local"),
    # Every table option set, in prod with its protections turned off explicitly (the synth warnings' shape)
    dict(
        stream="new-and-old",
        gsi="gsi1",
        ttl="on",
        env="prod",
        table_class="standard-ia",
        max_read="20000",
        max_write="8000",
        warm_read="15000",
        warm_write="5000",
        pitr="on",
        pitr_days="7",
        deletion_protection="off",
        contributor_insights="accessed-and-throttled-keys",
    ),
    dict(stream="new-and-old", env="prod", pitr="off", contributor_insights="throttled-keys"),
    dict(stream="new-and-old", encryption="customer-managed", resource_policy="examples/table-policy.json"),
    dict(stream="new-and-old", encryption="customer-managed", env="prod", blob_bucket="their-blobs"),
    dict(
        stream="new-and-old",
        encryption="customer-managed",
        kms_key="arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    ),
    dict(stream="new-and-old", encryption="aws-managed"),
]


# gsi and ttl change only the table's GlobalSecondaryIndexes and TimeToLiveSpecification, each independent of the
# other knobs' resources: linted both off and both on. Per environment, the three switches (gsi and ttl together,
# the stream, PITR) are linted as an orthogonal array: the four shapes whose count of switches on is even cover
# every pair of their values (each on and off beside each on and off of each other), every property linted set
# and unset, at half the templates of all eight (cfn-lint is the suite's longest test; test_table_matrix.py
# asserts all 64 shapes' tables).
LINTED = [
    k
    for k in MATRIX
    if (k["gsi"], k["ttl"]) in (("none", "off"), ("gsi1", "on"))
    and ((k["gsi"] == "gsi1") + (k["stream"] == "new-and-old") + (k["pitr"] == "on")) % 2 == 0
]


def test_cfn_lint_is_clean_on_every_template(tmp_path: Path) -> None:
    # GIVEN every shape of the matrix (gsi and ttl off and on together) and the variants, written side by side
    for i, knobs in enumerate(LINTED + VARIANTS):
        _, template, _ = synth(**knobs)
        (tmp_path / f"t{i:03d}.template.json").write_text(json.dumps(template))
    # WHEN cfn-lint checks them all with the project's configuration
    result = cfn_lint(tmp_path)
    # THEN it reports nothing
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "knobs", MATRIX[::7] + VARIANTS, ids=lambda k: "-".join(f"{a}={b}" for a, b in k.items())
)
def test_cdk_nag_has_no_unacknowledged_finding_and_every_acknowledgement_has_a_reason(
    knobs: dict[str, str],
) -> None:
    # synth() itself raises when cdk-nag reports an unacknowledged finding
    _, _, outdir = synth(**knobs)
    report = json.loads((outdir / "validation-report.json").read_text())
    # (a template with nothing to report yields no plugin report at all)
    for plugin in report["pluginReports"]:
        assert plugin["pluginName"] == "AwsSolutions"
        assert plugin["conclusion"] == "success"
        assert plugin["violations"] == []
        for suppressed in plugin["suppressedViolations"]:
            assert len(suppressed["reason"]) >= 40, suppressed["ruleName"]
    if knobs.get("stream") == "new-and-old":
        assert report["pluginReports"], "the consumer's acknowledged findings must appear in the report"


def test_cdk_synth_cli_rejects_an_invalid_knob_naming_it_and_the_allowed_values() -> None:
    # GIVEN the real CDK CLI (make setup installs it) and two bad knobs
    tools = toolchain.find()
    env = tools.environment()
    # WHEN synth runs
    result = subprocess.run(
        [
            *tools.cdk(),
            "synth",
            "-q",
            "-c",
            "gsi=gsi2",
            "-c",
            "env=Qa",
            "-o",
            "/tmp/doctable-bad",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=180,
    )
    # THEN it exits non-zero with one message naming both
    assert result.returncode != 0
    assert "gsi='gsi2' is not allowed; allowed values: none|gsi1" in result.stderr
    assert "env='Qa' is not an environment name; allowed: lower-case letters, digits and -" in result.stderr
    assert "Traceback" not in result.stderr
