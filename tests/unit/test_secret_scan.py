"""A subscriber's environment values scanned by detect-secrets (contract/secret_scan.py): each secret the issue
found passing is refused by the plugin that knows its format, what is not a secret passes, and a scanner that
cannot run refuses."""

from __future__ import annotations

import importlib.util

import pytest

from contract import secret_scan
from contract.secret_scan import check_environment, secrets_in

pytestmark = pytest.mark.unit

AT = "subscriber 'search'"
GITHUB = "ghp_" + "1234567890abcdefghijABCDEFGHIJ123456"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"
ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:db-AbCdEf"


def test_each_secret_is_found_by_the_plugin_that_knows_its_format() -> None:
    # GIVEN values that passed the hand regexes (the first four) and those they refused
    found = secrets_in(
        {
            "DB_PASS": "hunter2",
            "GH": GITHUB,
            "PAYMENTS": STRIPE,
            "UPSTREAM": "https://u:pw@host",
            "KEY": "AKIAABCDEFGHIJKLMNOP",
            "TLS": PRIVATE_KEY,
        }
    )
    # THEN each is reported with detect-secrets' own secret type
    assert found == {
        "DB_PASS": ("Secret Keyword",),
        "GH": ("GitHub Token",),
        "PAYMENTS": ("Stripe Access Key",),
        "UPSTREAM": ("Basic Auth Credentials",),
        "KEY": ("AWS Access Key",),
        "TLS": ("Private Key",),
    }


def test_ordinary_values_are_not_secrets() -> None:
    # GIVEN names, URLs, a digest and a key id (entropy alone would take the last two for keys)
    values = {
        "SEARCH_TABLE": "search-prod",
        "LEVEL": "INFO",
        "ENDPOINT": "https://search.example.com/v1",
        "DIGEST": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "KMS_KEY": "1234abcd-12ab-34cd-56ef-1234567890ab",
        "QUOTED": 'say "hi"',
    }
    assert secrets_in(values) == {}


def test_the_environment_keeps_references_and_refuses_each_secret_once() -> None:
    problems: list[str] = []
    kept = check_environment(
        problems,
        AT,
        {"DB_PASS": "hunter2", "DB_PASSWORD": ARN, "API_TOKEN": "", "GH": GITHUB, "LEVEL": "INFO"},
        scan=True,
    )
    # THEN the reference and the ordinary value stay; each secret is one problem naming its variable
    assert kept == (("DB_PASSWORD", ARN), ("LEVEL", "INFO"))
    assert len(problems) == 3
    assert sorted(p.split("environment variable ")[1].split()[0] for p in problems) == [
        "API_TOKEN",
        "DB_PASS",
        "GH",
    ]
    assert all(p.startswith(AT) and "allowed: the secret's ARN" in p and "\n" not in p for p in problems)
    # AND no problem repeats the secret itself
    assert not any(GITHUB in p or "hunter2" in p for p in problems)


def test_a_stacks_record_is_not_scanned_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the scanner missing: a record read back (scan=False) was scanned when it was deployed
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    problems: list[str] = []
    assert check_environment(problems, AT, {"LEVEL": "INFO"}, scan=False) == (("LEVEL", "INFO"),)
    assert problems == []


def test_a_scanner_that_cannot_run_refuses_the_values(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN detect-secrets not installed
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == secret_scan.SCANNER else real(name, *a)
    )
    problems: list[str] = []
    # THEN the literal values are refused in one problem (a check that cannot run denies); nothing is kept
    assert check_environment(problems, AT, {"NEW_LEVEL": "DEBUG"}, scan=True) == ()
    assert len(problems) == 1 and "detect-secrets is not installed" in problems[0]
    # AND references alone need no scan
    problems.clear()
    assert check_environment(problems, AT, {"DB_PASSWORD": ARN}, scan=True) == (("DB_PASSWORD", ARN),)
    assert problems == []
