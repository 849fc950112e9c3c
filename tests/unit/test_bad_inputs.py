"""Bad input, tried: every case of ``tests/unit/bad_inputs.py`` against the real code, and the document built from them.

Each case feeds one bad input to the real code and must observe its expected fragments (a clear error naming
the input, or where the input ends up). The last test fails when ``docs/bad-input.md`` is not exactly the
table rendered from these observations: regenerate it with ``make bad-input-doc``
(``.venv/bin/python -m tests.unit.bad_inputs --write``).
"""

from __future__ import annotations

import pytest

from tests.unit import bad_inputs as bi


@pytest.mark.parametrize("case", bi.CASES, ids=[c.id for c in bi.CASES])
def test_bad_input_gets_what_the_table_says(case: bi.Case) -> None:
    # GIVEN one bad input  WHEN it is fed to the real code
    observed = bi.observe(case.id)
    # THEN the outcome carries every expected fragment (the error names the input; nothing is lost)
    missing = [fragment for fragment in case.expect if fragment not in observed]
    assert not missing, f"{case.bad_input}: {missing} not in the observed outcome:\n{observed}"
    assert "HARNESS ERROR" not in observed and "TRACEBACK" not in observed


def test_every_area_the_issue_names_is_covered() -> None:
    ids = {c.id for c in bi.CASES}
    for required in (
        "knob-batch_size-10001",
        "contradiction-batch-size-5000-without-batching-window",
        "event-empty",
        "event-sqs",
        "record-no-keys",
        "record-no-sequence-number",
        "image-blobs-number",
        "image-blobs-map",
        "image-blobs-non-string",
        "key-pk-with-slash",
        "record-keys-only",
        "batch-10001",
        "bucket-missing",
        "cold-blob-bucket-unset",
        "cold-blob-root-x",
        "cold-blob-prefix-cleanup-maybe",
        "cli-bad-knob",
        "cli-malformed-pair",
        "cli-unreachable-endpoint",
    ):
        assert required in ids, required
    # every knob has at least one invalid value in the table
    from contract.knobs import KNOB_DEFAULTS

    tried = {c.id.split("-")[1] for c in bi.CASES if c.id.startswith("knob-")}
    assert set(KNOB_DEFAULTS) <= tried, set(KNOB_DEFAULTS) - tried


def test_rendering_is_normalized() -> None:
    # GIVEN every case observed  THEN the text holds no per-run value: no object address, no raw sequence number
    # (that two runs render the same text is what the next test proves: the committed document came from an
    # earlier run, and this run must render it byte for byte)
    text = bi.render({c.id: bi.observe(c.id) for c in bi.CASES})
    assert " at 0x" not in text
    assert bi.seq(1) not in text  # sequence numbers are normalized to seqN


def test_the_document_is_current() -> None:
    # GIVEN the table rendered from what the code does now  THEN docs/bad-input.md is exactly it
    expected = bi.render()
    current = bi.DOC_PATH.read_text() if bi.DOC_PATH.exists() else ""
    assert current == expected, (
        f"{bi.DOC_PATH.relative_to(bi.ROOT)} is stale: run `make bad-input-doc` (.venv/bin/{bi.GENERATOR})"
    )
