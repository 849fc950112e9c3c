"""Blob manifests in the consumer's domain model (docs/data-contract.md): ``blobs`` entries that are plain keys
or maps ``{key, etag, size}``, parsed once per image; a malformed map fails its record (retried, then kept on
the failure destination), and the plan carries each dropped key's recorded ETag."""

from __future__ import annotations

from typing import Any

import pytest
from stream_consumer.domain import (
    BlobEntry,
    MalformedRecordError,
    parse_batch,
    parse_record,
    plan_cleanup,
    retained_keys,
)

from tests.unit.events import TABLE, av, image, modify, record, remove, seq

PREFIX = "blobs/doc#1/v#1/"
A, B, C = PREFIX + "a.pdf", PREFIX + "b.pdf", PREFIX + "c.pdf"
ETAG_A = '"0cc175b9c0f1b6a831c399e269772661"'
ETAG_B = '"92eb5ffee6ae2fec3ad71c777531578f-2"'  # a multipart upload's ETag


def entry(key: Any, etag: Any = ETAG_A, size: Any = 1, **more: Any) -> dict[str, Any]:
    """A manifest entry as the application writes it (``None`` leaves a field out)."""
    fields = {"key": key, "etag": etag, "size": size, **more}
    return {name: value for name, value in fields.items() if value is not None}


def with_blobs(blobs_av: dict[str, Any]) -> dict[str, Any]:
    old = image("doc#1", "v#1")
    old["blobs"] = blobs_av
    return old


# ------------------------------------------------------------------------------------------------ parsing
def test_both_forms_parse_into_entries_in_listed_order():
    # GIVEN an old image mixing a plain key, a manifest entry and a manifest entry with an extra attribute
    blobs = [A, entry(B, ETAG_B, 2048), entry(C, "0cc175b9c0f1b6a831c399e269772661", None, contentType="pdf")]

    # WHEN the record is parsed
    parsed = parse_record(remove(1, "doc#1", "v#1", blobs))

    # THEN each entry keeps its key; the ETag is quoted as S3 returns it; size is optional; others are ignored
    assert parsed.old_entries == (
        BlobEntry(A),
        BlobEntry(B, ETAG_B, 2048),
        BlobEntry(C, ETAG_A, None),
    )
    assert parsed.old_blobs == [A, B, C]


def test_a_string_set_and_a_plain_list_stay_plain_keys():
    as_set = parse_record(remove(1, "doc#1", "v#1", [B, A], as_set=True))
    assert as_set.old_entries == (BlobEntry(A), BlobEntry(B))  # sorted: a set has no order
    assert parse_record(remove(1, "doc#1", "v#1", [A])).old_entries == (BlobEntry(A),)


def test_non_string_plain_entries_are_kept_for_refusal_not_failed():
    # GIVEN a list holding a number beside a manifest entry (a number names no blob: refused, as before)
    parsed = parse_record(remove(1, "doc#1", "v#1", [42, entry(A)]))
    plan = plan_cleanup(parsed, "blobs/", prefix_cleanup=False)
    assert plan.keys == (A,)
    assert [(r.key, r.reason) for r in plan.refused] == [(42, "not-a-string")]


MALFORMED = [
    pytest.param(av([{"etag": ETAG_A}]), "OldImage.blobs[0] is a map without 'key'", id="no-key"),
    pytest.param(av([A, {"Key": A, "etag": ETAG_A}]), "OldImage.blobs[1] is a map without 'key'", id="key-case"),
    pytest.param(av([entry(7)]), "OldImage.blobs[0].key must be a string, got the number 7", id="key-number"),
    pytest.param(av([entry(None)]), "OldImage.blobs[0] is a map without 'key'", id="key-absent"),
    pytest.param(
        {"L": [{"M": {"key": {"NULL": True}, "etag": {"S": ETAG_A}}}]},
        "OldImage.blobs[0].key must be a string, got null",
        id="key-null",
    ),
    pytest.param(av([entry(A, etag=None)]), "OldImage.blobs[0] has no 'etag'", id="no-etag"),
    pytest.param(av([entry(A, etag=5)]), "etag must be an S3 ETag (hex, optionally quoted), got the number 5", id="etag-number"),
    pytest.param(av([entry(A, etag="*")]), "got '*'", id="etag-any-object"),
    pytest.param(av([entry(A, etag='W/"abc"')]), "got 'W/\"abc\"'", id="etag-weak"),
    pytest.param(av([entry(A, etag="")]), "got ''", id="etag-empty"),
    pytest.param(av([entry(A, etag='"abc')]), "got '\"abc'", id="etag-unbalanced-quote"),
    pytest.param(av([entry(A, etag="ab c")]), "got 'ab c'", id="etag-space"),
    pytest.param(av([entry(A, etag={"v": 1})]), "got a dict", id="etag-map"),
    pytest.param(av([entry(A, size=-1)]), "size must be a whole number of bytes, got the number -1", id="size-negative"),
    pytest.param(av([entry(A, size="12")]), "size must be a whole number of bytes, got '12'", id="size-string"),
    pytest.param(
        {"L": [{"M": {"key": {"S": A}, "etag": {"S": ETAG_A}, "size": {"N": "1.5"}}}]},
        "got the number 1.5",
        id="size-fraction",
    ),
    pytest.param(av([entry(A, size=True)]), "got a bool", id="size-bool"),
    pytest.param(
        av([entry(A, ETAG_A), entry(A, ETAG_B)]),
        f"OldImage.blobs lists {A!r} with two ETags, {ETAG_A} and {ETAG_B}",
        id="two-etags",
    ),
    pytest.param(av({"key": A, "etag": ETAG_A}), "OldImage.blobs must be a list or a string set, got dict", id="a-map"),
]  # fmt: skip


@pytest.mark.parametrize(("blobs", "problem"), MALFORMED)
def test_a_malformed_manifest_entry_fails_the_record_saying_what_is_wrong(
    blobs: dict[str, Any], problem: str
):
    # GIVEN a REMOVE whose old image lists a map that is not a manifest entry
    raw = record("REMOVE", 1, "doc#1", "v#1", old=with_blobs(blobs))

    # WHEN it is parsed  THEN it is malformed (the record fails, is retried, then kept on the failure destination)
    with pytest.raises(MalformedRecordError) as failed:
        parse_record(raw)
    assert problem in failed.value.problem
    assert failed.value.sequence_number == seq(1)


def test_a_malformed_entry_in_the_new_image_fails_the_record_too():
    # GIVEN a MODIFY whose new image's entry is broken: treating it as "not listed" would orphan A
    new = with_blobs(av([entry(A, etag=5)]))
    raw = record("MODIFY", 1, "doc#1", "v#1", old=image("doc#1", "v#1", [entry(A)]), new=new)

    # WHEN it is parsed  THEN it fails, so A is not deleted
    with pytest.raises(MalformedRecordError, match=r"NewImage\.blobs\[0\]\.etag must be an S3 ETag"):
        parse_record(raw)


def test_the_same_key_listed_plain_and_with_its_etag_is_one_key_with_that_etag():
    parsed = parse_record(remove(1, "doc#1", "v#1", [A, entry(A, ETAG_A), entry(A, ETAG_A.strip('"'))]))
    plan = plan_cleanup(parsed, "blobs/", prefix_cleanup=False)
    assert (plan.keys, dict(plan.etags)) == ((A,), {A: ETAG_A})


def test_a_malformed_record_fails_alone_and_the_proof_line_counts_both_forms():
    # GIVEN a good REMOVE with two manifest entries and a plain key, a malformed one, and a MODIFY
    good = remove(1, "doc#1", "v#1", [entry(A), entry(B, ETAG_B), C])
    bad = record("REMOVE", 2, "doc#2", "v#1", old=with_blobs(av([{"etag": ETAG_A}])))
    changed = modify(3, "doc#3", "v#1", [PREFIX + "x"], [])

    # WHEN the batch is parsed
    batch = parse_batch([good, bad, changed], TABLE)

    # THEN only the malformed record is rejected, and the summary counts the parsed old images' entries by form
    assert [r.sequence_number for r in batch.records] == [seq(1), seq(3)]
    assert [(m.sequence_number, m.problem) for m in batch.malformed] == [
        (seq(2), "OldImage.blobs[0] is a map without 'key' (a manifest entry is {key, etag, size})")
    ]
    assert batch.summary.as_log_fields()["old_image_blobs"] == {"with_etag": 2, "without_etag": 2}


# ----------------------------------------------------------------------------------------------- planning
def test_a_remove_plans_every_key_with_the_etags_that_were_recorded():
    parsed = parse_record(remove(1, "doc#1", "v#1", [entry(A), B, entry(C, ETAG_B)]))
    plan = plan_cleanup(parsed, "blobs/", prefix_cleanup=False)
    assert (plan.reason, plan.keys, dict(plan.etags)) == ("deleted", (A, B, C), {A: ETAG_A, C: ETAG_B})


@pytest.mark.parametrize(
    ("old", "new", "orphans"),
    [
        pytest.param([entry(A), entry(B)], [entry(A)], {B: ETAG_A}, id="map-dropped"),
        pytest.param([entry(A)], [entry(A, ETAG_B)], {}, id="re-uploaded-under-the-same-key"),
        pytest.param([entry(A)], [A], {}, id="now-listed-plain"),
        pytest.param([A], [entry(A)], {}, id="now-listed-with-etag"),
        pytest.param([A, entry(B, ETAG_B)], [], {A: None, B: ETAG_B}, id="mixed-all-dropped"),
    ],
)
def test_a_modify_orphans_the_keys_the_new_image_no_longer_lists_in_either_form(old, new, orphans):
    plan = plan_cleanup(parse_record(modify(1, "doc#1", "v#1", old, new)), "blobs/", prefix_cleanup=False)
    assert plan.keys == tuple(orphans)
    assert dict(plan.etags) == {key: etag for key, etag in orphans.items() if etag}


def test_a_manifest_key_outside_the_records_prefix_is_refused_not_failed():
    stray = "blobs/doc#2/v#1/theirs.pdf"
    plan = plan_cleanup(parse_record(remove(1, "doc#1", "v#1", [entry(stray), entry(A)])), "blobs/", False)
    assert (plan.keys, dict(plan.etags)) == ((A,), {A: ETAG_A})
    assert [(r.key, r.reason) for r in plan.refused] == [(stray, "outside-record-prefix")]


def test_a_later_record_listing_a_key_in_either_form_retains_it():
    records = [
        parse_record(modify(1, "doc#1", "v#1", [entry(A), B], [])),
        parse_record(modify(2, "doc#1", "v#1", [], [A, entry(B, ETAG_B)])),
    ]
    assert retained_keys(records) == {0: frozenset({A, B})}
