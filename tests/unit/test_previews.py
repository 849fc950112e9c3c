"""Preview environments without AWS: the [previews] table, the preview context as the CLI and the CDK app pass it,
the borrowed resources and names refused, which live stacks are previews and which have expired, and the AWS
clock read from a Date header."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from contract.knobs import PREVIEW_CONTEXT, ConfigError, user_context
from contract.settings import preview as rules
from contract.settings.resolve import parse_settings, resolve_settings
from doctable.core.errors import UserError
from doctable.operate.preview import aws_time

pytestmark = pytest.mark.unit

SETTINGS = """\
[defaults]
table_base = "items"

[environments.dev]

[environments.stg]
stream = "new-and-old"
deletion_protection = "on"

[environments.prod]
stream = "new-and-old"
blob_bucket = "shared-blobs"
"""
EXPIRES = "2030-01-01T00:00:00Z"


def settings_file(tmp_path: Path, text: str = SETTINGS) -> Path:
    path = tmp_path / "doctable.toml"
    path.write_text(text)
    return path


def preview_context(env: str, of: str, expires: str = EXPIRES) -> dict[str, str]:
    return {"env": env, PREVIEW_CONTEXT: rules.Preview(of, expires).context_value()}


def problems(path: Path, context: dict[str, str]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        resolve_settings(context, {}, config_path=path)
    return caught.value.problems


def test_a_preview_takes_its_templates_settings_as_a_dev_tier_environment(tmp_path: Path) -> None:
    # GIVEN stg with a stream and deletion protection  WHEN preview pr-12 resolves from it
    resolved = resolve_settings(preview_context("pr-12", "stg"), {}, config_path=settings_file(tmp_path))
    config = resolved.config
    # THEN it has stg's knobs, the dev tier (no protection, no RETAIN) and the preview's tags
    assert (config.env, config.stream, config.tier) == ("pr-12", "new-and-old", "dev")
    assert (config.deletion_protection, config.retain_on_delete) == (False, False)
    assert config.stack_name == "doctable-items-pr-12"
    tags = config.tags()
    assert {k: tags[k] for k in ("Environment", "Tier", "PreviewOf", "ExpiresAt")} == {
        "Environment": "pr-12",
        "Tier": "dev",
        "PreviewOf": "stg",
        "ExpiresAt": EXPIRES,
    }
    assert resolved.as_dict()["preview"] == {"from": "stg", "expires_at": EXPIRES}
    # AND the preview fields are not knobs: the stack's knob record does not carry them
    assert "preview_of" not in config.knob_values()


def test_the_app_reads_the_preview_from_namespaced_context(tmp_path: Path) -> None:
    # GIVEN the context the CDK CLI hands app.py (CDK's own keys beside it)
    context = {
        "@aws-cdk/core:flag": True,
        "aws:cdk:version-reporting": False,
        **preview_context("pr-3", "dev"),
    }
    # WHEN the app picks what the settings resolve
    picked = user_context(context)
    # THEN the preview is kept for the settings, CDK's keys are not
    assert set(picked) == {"env", PREVIEW_CONTEXT}
    assert resolve_settings(picked, {}, config_path=settings_file(tmp_path)).config.preview_of == "dev"


def test_the_previews_table_sets_the_prefix_and_knobs_over_the_template(tmp_path: Path) -> None:
    text = SETTINGS + '\n[previews]\nprefix = "pv-"\nblob_bucket = ""\nttl = "on"\n'
    path = settings_file(tmp_path, text)
    config = resolve_settings(preview_context("pv-1", "prod"), {}, config_path=path).config
    # THEN the borrowed bucket is unset for previews, and [previews]' knob applies
    assert (config.blob_bucket, config.ttl, config.stack_name) == ("", "on", "doctable-items-pv-1")
    assert parse_settings(text, path).preview_stack_name("prod", "pv-1") == "doctable-items-pv-1"


@pytest.mark.parametrize(
    ("knob", "value", "code"),
    [
        ("blob_bucket", '"shared-blobs"', "blob_bucket='shared-blobs' is a borrowed resource"),
        ("kinesis", '"arn:aws:kinesis:eu-west-1:123456789012:stream/s"', "kinesis='arn:aws:kinesis"),
        ("consumer", '"arn:aws:lambda:eu-west-1:123456789012:function:f"', "consumer='arn:aws:lambda"),
        (
            "kms_key",
            '"arn:aws:kms:eu-west-1:123456789012:key/0123abcd-0123-0123-0123-0123456789ab"',
            "kms_key='arn:aws:kms",
        ),
        ("replicas", '["us-west-2"]', "replicas='us-west-2' is a borrowed resource"),
    ],
)
def test_each_borrowed_resource_is_refused_in_one_line(
    tmp_path: Path, knob: str, value: str, code: str
) -> None:
    extra = {"kms_key": 'encryption = "customer-managed"\n', "replicas": 'region = "eu-west-1"\n'}.get(
        knob, ""
    )
    text = f'[environments.stg]\nstream = "new-and-old"\n{extra}{knob} = {value}\n'
    found = problems(settings_file(tmp_path, text), preview_context("pr-1", "stg"))
    assert len(found) == 1
    assert found[0].startswith(f"preview pr-1 from stg: {code}")
    assert "allowed: previews own every resource" in found[0]


@pytest.mark.parametrize(
    ("env", "of", "text", "expected"),
    [
        ("xx-1", "stg", SETTINGS, "does not begin with the preview prefix 'pr-'"),
        ("pr-1", "qa", SETTINGS, "preview pr-1 from qa: environment 'qa' is not declared"),
        ("pr-1", "stg", SETTINGS + "\n[environments.pr-1]\n", "begins with the preview prefix 'pr-'"),
        (
            "pr-1",
            "stg",
            '[environments.stg]\n\n[environments.pr]\ntier = "dev"\n',
            "begins with environment pr's stack doctable-items-pr;",
        ),
        ("pr-1", "stg", SETTINGS + '\n[previews]\ndeletion_protection = "on"\n', "deletion_protection='on'"),
        ("pr-1", "stg", SETTINGS + "\n[previews]\nprefix = 7\n", "prefix = 7 is not a preview prefix"),
    ],
)
def test_names_and_protection_a_preview_may_not_have_are_refused(
    tmp_path: Path, env: str, of: str, text: str, expected: str
) -> None:
    found = problems(settings_file(tmp_path, text), preview_context(env, of))
    assert any(expected in p for p in found), found


def test_a_bad_preview_context_and_an_undeclared_env_without_one_are_refused(tmp_path: Path) -> None:
    path = settings_file(tmp_path)
    assert "expires_at='soon' is not a time" in problems(path, preview_context("pr-1", "stg", "soon"))[0]
    assert "environment 'pr-1' is not declared" in problems(path, {"env": "pr-1"})[0]


@pytest.mark.parametrize(("text", "seconds"), [("30m", 1800), ("72h", 259200), ("7d", 604800)])
def test_lifetimes(text: str, seconds: int) -> None:
    assert rules.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["0h", "3x", "91d", "", "1.5h"])
def test_bad_lifetimes_are_refused(text: str) -> None:
    with pytest.raises(rules.PreviewError, match="is not a preview lifetime; allowed:"):
        rules.parse_duration(text)


DECLARED = {"dev": "doctable-items-dev", "stg": "doctable-items-stg", "prod": "doctable-items-prod"}
TAGS = {
    "ManagedBy": "ephemera",
    "Source": "doctable",
    "Project": "items-app",
    "Environment": "pr-7",
    "Tier": "dev",
    "PreviewOf": "stg",
    "ExpiresAt": "2030-01-01T12:00:00Z",
}


def classify(stack: str = "doctable-items-pr-7", **tags: Any) -> rules.PreviewStack | rules.NotPreview:
    return rules.classify(
        stack,
        {k: v for k, v in {**TAGS, **tags}.items() if v is not None},
        prefix="pr-",
        project="items-app",
        declared=DECLARED,
        stack_of=lambda template, env: f"doctable-items-{env}",
    )


def test_a_preview_stack_is_found_by_its_tags_and_expires_by_the_given_clock() -> None:
    found = classify()
    assert isinstance(found, rules.PreviewStack)
    assert (found.env, found.template) == ("pr-7", "stg")
    before = dt.datetime(2030, 1, 1, 11, 59, 59, tzinfo=dt.UTC)
    assert (found.expired(before), found.expired(before + dt.timedelta(seconds=1))) == (False, True)


@pytest.mark.parametrize(
    ("stack", "tags", "code"),
    [
        ("doctable-items-pr-7", {"ManagedBy": None}, "preview.not_managed"),
        ("doctable-items-pr-7", {"Source": "another"}, "preview.other_source"),
        ("doctable-items-pr-7", {"Project": None}, "preview.project_untagged"),
        ("doctable-items-pr-7", {"Project": "other-app"}, "preview.other_project"),
        ("doctable-items-pr-7", {"PreviewOf": None}, "preview.no_template"),
        ("doctable-items-pr-7", {"ExpiresAt": "tomorrow"}, "preview.no_expiry"),
        ("doctable-items-qa-7", {"Environment": "qa-7"}, "preview.no_prefix"),
        ("doctable-items-stg", {"Environment": "stg"}, "preview.no_prefix"),
        ("doctable-other-pr-7", {}, "preview.other_stack"),
        ("doctable-items-dev-pr-7", {}, "preview.extends_declared"),
    ],
)
def test_a_stack_that_is_not_a_preview_of_this_project_is_never_selected(
    stack: str, tags: dict[str, Any], code: str
) -> None:
    verdict = classify(stack, **tags)
    assert isinstance(verdict, rules.NotPreview) and verdict.code == code


def test_a_declared_environment_carrying_the_prefix_is_never_a_preview() -> None:
    verdict = rules.classify(
        "doctable-items-pr-7",
        TAGS,
        prefix="pr-",
        project="items-app",
        declared={**DECLARED, "pr-7": "doctable-items-pr-7"},
        stack_of=lambda template, env: f"doctable-items-{env}",
    )
    assert verdict == "environment pr-7 is declared in the settings"


def test_expiry_is_judged_by_the_date_header_of_aws_answer() -> None:
    page = {"ResponseMetadata": {"HTTPHeaders": {"date": "Sat, 05 Dec 2026 03:13:34 GMT"}}}
    assert aws_time(page) == dt.datetime(2026, 12, 5, 3, 13, 34, tzinfo=dt.UTC)
    with pytest.raises(UserError, match="no readable Date header"):
        aws_time({"ResponseMetadata": {"HTTPHeaders": {}}})


def test_the_preview_role_trusts_pull_request_jobs_only() -> None:
    from contract.iam import policies as iam

    document = iam.ci_trust_policy(
        account="123456789012", repo="octo/doctable", env="stg", tier="stg", preview=True
    )
    (statement,) = document["Statement"]
    condition = statement["Condition"]["StringEquals"]
    # pinned to the previews' reusable workflow as main holds it: a workflow the pull request adds or edits runs at
    # its own ref (refs/pull/N/merge), whose subject IAM refuses
    assert condition["token.actions.githubusercontent.com:sub"] == [
        "repo:octo/doctable:pull_request:job_workflow_ref:octo/doctable/.github/workflows/preview-deploy.yml@refs/heads/main"
    ]


def test_the_preview_policy_names_the_previews_resources_and_no_declared_environments(tmp_path: Path) -> None:
    from contract.iam import (
        policies as iam,  # GIVEN stg with its consumer (a stream, the built-in consumer and its buckets)
    )

    path = settings_file(tmp_path, '[environments.stg]\nstream = "new-and-old"\n\n[environments.prod]\n')
    config = resolve_settings({"env": "stg"}, {}, config_path=path).config
    # WHEN the preview role's policy is computed for every preview of it
    target = iam.Target(rules.pattern_config(config, "pr-"), "123456789012", "eu-west-1")
    statements = iam.preview_statements(target)
    # THEN every resource is a preview's (pr-*) or one of the unscoped actions', never stg's or prod's
    resources = {r for s in statements for r in s.resources}
    # (the bootstrap's roles and its stack, read by preflight, are the previews' own bootstrap's)
    scoped = resources - {"*"} - {r for r in resources if ":role/cdk-" in r or ":stack/CDKToolkit" in r}
    assert scoped and all("pr-*" in r or "event-source-mapping" in r for r in scoped), sorted(scoped)
    assert not any("-stg" in r or "-prod" in r for r in resources)
    assert {s.sid for s in iam.unscoped(statements)} >= {"DescribeStacksOfRegionAcceptsNoResource"}
    assert all(s.sid.endswith("AcceptsNoResource") or s.sid.endswith("NoResourceType") or "*" not in s.resources
               for s in statements if "*" in s.resources)  # fmt: skip


def test_a_previews_prod_account_warning_is_among_the_deploys_findings(
    tmp_path: Path, moto_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from doctable.core.target import Target
    from doctable.operate import preview

    # GIVEN a prod-tier stack in the region a preview deploys to
    monkeypatch.setenv("DOCTABLE_CONFIG", str(settings_file(tmp_path)))
    moto_env.client("cloudformation").create_stack(
        StackName="doctable-items-prod", Tags=[{"Key": "Tier", "Value": "prod"}],
        TemplateBody=json.dumps({"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}}),
    )  # fmt: skip
    handed: list[tuple[Target, dict[str, Any]]] = []

    def deployer(target: Target, **options: Any) -> str:
        handed.append((target, options))
        return "deployed"

    # WHEN the preview deploys
    assert preview.deploy(
        Target(quiet=True), name="7", template="stg", deployer=deployer, no_verify=True
    ) == ("deployed")
    # THEN the deploy it runs is the preview's environment, with the warning among its findings (so its --json
    # report names it) and the options it was given
    ((target, options),) = handed
    assert target.env == "pr-7" and options["no_verify"] is True
    assert [(f.code, f.subject) for f in options["extra_findings"]] == [
        ("preview.prod_account", "stack doctable-items-prod")
    ]


@pytest.mark.parametrize(("given", "env"), [("7", "pr-7"), ("pr-7", "pr-7"), ("pr-pr-7", "pr-pr-7")])
def test_a_preview_named_with_its_prefix_is_not_prefixed_again(given: str, env: str) -> None:
    # `preview deploy pr-7` is preview pr-7, as `--env pr-7` names it (no pr-pr-7); a name whose rest starts
    # with the prefix again is taken once off
    assert rules.preview_env("pr-", given) == env
