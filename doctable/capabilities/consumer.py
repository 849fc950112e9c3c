"""What changing the built-in consumer's function on a live stack does: preflight's lines for its knobs (memory,
timeout, architecture, Powertools packaging, snapstart and the environment the blob knobs write), read from the
consumer shapes the deployed and target knobs declare, the blob bucket leaving the stack, and the stack's buckets
named another way (bucket_names)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from contract import names
from contract.findings import Finding, Level
from contract.knobs import KEY_REUSE_NEVER, OFF, ON, RETAINING_TIERS, DocTableConfig
from contract.shape import consumer_shape
from contract.subscribers import HOME, fans_out

if TYPE_CHECKING:
    from contract.subscribers import SubscriberSpec
    from doctable.capabilities.protocol import Observed

SUBJECT = "consumer function"
BUCKET_SUBJECT = "blob bucket"
CREATED = "created by the stack"
# A function update: Lambda starts new execution environments with it, batches in flight finish on the old code.
IN_PLACE = "in place: batches polled after the update run the new configuration"
CHANGED, REPUBLISHED = "consumer.changed", "consumer.republished"
PREFIX_CLEANUP_ON, KEY_REUSE_NEVER_CODE = "consumer.prefix_cleanup_enabled", "consumer.key_reuse_never"
RENAMED = "bucket.renamed"
BUCKET_MOVE_DOC = "docs/environments.md, 'Moving to exact bucket names'"


def creates_blob_bucket(config: DocTableConfig) -> bool:
    """The stack builds the blob bucket: the built-in consumer with no blob_bucket of the user's."""
    return config.builtin_consumer and not config.blob_bucket


def findings(deployed: DocTableConfig, target: DocTableConfig) -> list[Finding]:
    """Preflight's CHANGE findings for each consumer setting the deploy changes (before/after: the knobs'
    values), and the blob bucket leaving the stack."""
    found = bucket_findings(deployed, target) + rename_findings(deployed, target)
    before, after = consumer_shape(deployed), consumer_shape(target)
    if before is None or after is None:
        return found  # the function is created or deleted: the mapping line says so

    def change(what: str, live: object, want: object, effect: str, was: object, now: object) -> None:
        found.append(
            Finding(Level.CHANGE, CHANGED, f"{SUBJECT} {what}", str(live), str(want), effect, False, was, now)
        )

    if before.memory != after.memory:
        change(
            "memory", f"{before.memory} MB", f"{after.memory} MB", f"{IN_PLACE} (CPU scales with memory)",
            before.memory, after.memory,
        )  # fmt: skip
    if before.timeout != after.timeout:
        change(
            "timeout", f"{before.timeout} s", f"{after.timeout} s", IN_PLACE, before.timeout, after.timeout
        )
    if before.architecture != after.architecture:
        change(
            "architecture", before.architecture, after.architecture, f"{IN_PLACE}; the layer of that architecture",
            before.architecture, after.architecture,
        )  # fmt: skip
    if deployed.powertools != target.powertools:
        change(
            "powertools", deployed.powertools, target.powertools,
            f"{IN_PLACE}; the code asset changes (Powertools from the public layer, or bundled in the zip)",
            deployed.powertools, target.powertools,
        )  # fmt: skip
    # From a bucket of the user's (leaving the stack's own is bucket_findings' line).
    if deployed.blob_bucket != target.blob_bucket and not creates_blob_bucket(deployed):
        change(
            names.ENV_BLOB_BUCKET, deployed.blob_bucket, target.blob_bucket or CREATED,
            f"{IN_PLACE}; blobs already in {deployed.blob_bucket} stay there, and cleanup no longer reaches them",
            deployed.blob_bucket, target.blob_bucket or None,
        )  # fmt: skip
    for variable in (names.ENV_BLOB_ROOT, names.ENV_BLOB_PREFIX_CLEANUP, names.ENV_BLOB_KEY_REUSE):
        was, now = before.environment.get(variable), after.environment.get(variable)
        if was != now:
            found.append(_environment_finding(deployed, target, variable, was, now))
    if before.snapstart != after.snapstart:
        if after.snapstart:
            effect = (
                "SnapStart on: the deploy publishes a version (Lambda runs the init, clients included, and snapshots "
                "it; the deploy waits for that) and moves the mapping's alias to it; each later change publishes "
                "the next one and deletes the old; the cached snapshot is charged while its version exists"
            )
        else:
            effect = (
                "SnapStart off: the mapping's alias moves back to $LATEST and the published version (its snapshot "
                "and its charge) is deleted; new environments import the code again"
            )
        change(
            "snapstart", ON if before.snapstart else OFF, ON if after.snapstart else OFF, effect,
            before.snapstart, after.snapstart,
        )  # fmt: skip
    # The function's configuration changed (its BLOB_BUCKET too): with SnapStart kept on, a version is published.
    changed = deployed.blob_bucket != target.blob_bucket or any(f.subject.startswith(SUBJECT) for f in found)
    if changed and before.snapstart and after.snapstart:
        found.append(
            Finding(
                Level.CHANGE, REPUBLISHED, f"{SUBJECT} version", "published", "published again",
                "snapstart=on: the change publishes the next version (the deploy waits for its init and snapshot), "
                "the alias moves to it, the old is deleted",
            )
        )  # fmt: skip
    return found


def bucket_findings(deployed: DocTableConfig, target: DocTableConfig) -> list[Finding]:
    """The blob bucket the stack created leaves it: the built-in consumer goes, or blob_bucket names the user's."""
    if not creates_blob_bucket(deployed) or creates_blob_bucket(target):
        return []
    if deployed.retain_on_delete:
        fate = (
            f"it is RETAINED (env={deployed.env}, tier {deployed.tier}: the {'|'.join(RETAINING_TIERS)} tiers keep it) with every blob in it, "
            "outside the stack from then on (billed until you delete it)"
        )
    else:
        fate = (
            "CloudFormation deletes it: an empty bucket is gone; one still holding blobs refuses the delete and "
            "is left behind, outside the stack"
            + (
                " under its exact name, which a later deploy creating the bucket again cannot take until it is "
                "gone (move its blobs, then delete it)"
                if deployed.exact_bucket_names
                else ""
            )
        )
    now = (
        f"the consumer writes and cleans blobs in {target.blob_bucket} instead"
        if target.builtin_consumer
        else "nothing cleans its blobs any more"
    )
    return [
        Finding(
            Level.CHANGE, "bucket.leaves_stack", BUCKET_SUBJECT, CREATED, target.blob_bucket or "absent",
            f"the stack stops owning its blob bucket: {fate}; {now}",
            True, CREATED, target.blob_bucket or None,
        )
    ]  # fmt: skip


def rename_findings(deployed: DocTableConfig, target: DocTableConfig) -> list[Finding]:
    """bucket_names changes while the stack keeps its buckets: a bucket's name is fixed at creation, so each is
    replaced; the old ones stay, outside the stack, with their objects (UpdateReplacePolicy Retain)."""
    if deployed.bucket_names == target.bucket_names:
        return []
    renamed = [
        what
        for what, kept in (
            ("blob", creates_blob_bucket(deployed) and creates_blob_bucket(target)),
            ("failure", deployed.has_mapping and target.has_mapping),
        )
        if kept
    ]
    if not renamed:
        return []  # a bucket created or deleted: its own finding says so
    keep = f'bucket_names = "{deployed.bucket_names}" in [environments.{target.env}]'
    effect = (
        f"a bucket's name is fixed at creation: CloudFormation creates the {' and '.join(renamed)} bucket under "
        f"{target.bucket_names} names and keeps the old one{'s' if len(renamed) > 1 else ''} with every object, "
        "outside the stack; the consumer, replay and DocClient.from_stack use the new names from then on, so "
        f"existing blobs and failed batches are copied over by hand ({BUCKET_MOVE_DOC}); or keep the names: {keep}"
    )
    if "blob" in renamed and (deployed.customer_managed_key or deployed.aws_managed_key):
        effect += (
            f"; with encryption={deployed.encryption} a copied blob gets a new ETag, and a read by the ETag its "
            f"item recorded fails: keep the names ({keep})"
        )
    return [
        Finding(
            Level.CHANGE, RENAMED, f"{' and '.join(renamed)} bucket names", deployed.bucket_names,
            target.bucket_names, effect, True, deployed.bucket_names, target.bucket_names,
        )
    ]  # fmt: skip


def _environment_finding(
    deployed: DocTableConfig, target: DocTableConfig, variable: str, was: str | None, now: str | None
) -> Finding:
    """The finding for one variable the blob knobs write; turning cleanup wider is destructive."""
    code, destructive = CHANGED, False
    if variable == names.ENV_BLOB_KEY_REUSE:
        before: object = deployed.blob_key_reuse
        after: object = target.blob_key_reuse
        if now == KEY_REUSE_NEVER:
            # A key listed again after its drop is deleted anyway: the blob behind a live item is lost.
            code, destructive = KEY_REUSE_NEVER_CODE, True
            effect = (
                f"{IN_PLACE}; from then on a dropped key is deleted at once, unchecked (your promise that keys are "
                "never listed again), and the role loses s3:GetObject and dynamodb:BatchGetItem"
            )
        else:
            effect = f"{IN_PLACE}; each dropped key is checked again before its delete (HEAD, item read)"
    elif variable == names.ENV_BLOB_ROOT:
        before, after = deployed.blob_root, target.blob_root
        effect = f"{IN_PLACE}; keys outside the new root are refused from then on (blobs already there stay)"
    else:
        before, after = deployed.blob_prefix_cleanup, target.blob_prefix_cleanup
        if target.blob_prefix_cleanup:
            # A REMOVE then deletes every object under the item's prefix, those no record ever listed too.
            code, destructive = PREFIX_CLEANUP_ON, True
        effect = f"{IN_PLACE}; a REMOVE without images clears the item's prefix only when on"
    return Finding(
        Level.CHANGE, code, f"{SUBJECT} {variable}", repr(was), repr(now), effect, destructive, before, after
    )


# ------------------------------------------------------------------------------------------- subscribers
SUBSCRIBER_ADDED, SUBSCRIBER_REMOVED = "subscriber.added", "subscriber.removed"
SUBSCRIBER_REPLACED, SUBSCRIBER_UPDATED = "subscriber.replaced", "subscriber.updated"
REGION_ADDED, REGION_REMOVED = "subscriber.region_added", "subscriber.region_removed"


def _regions(spec: SubscriberSpec, config: DocTableConfig) -> set[str]:
    """Where a subscriber runs: "home" and the replica regions."""
    return ({HOME} if spec.runs_in(config.replicas) else set()) | set(spec.replica_regions(config.replicas))


def region_findings(name: str, before: SubscriberSpec, after: SubscriberSpec, deployed: DocTableConfig,
                    target: DocTableConfig) -> list[Finding]:  # fmt: skip
    """A subscriber of a global table added to a region (its stack there deploys it) or taken out of one the
    table keeps (destructive: its function, mapping and failure bucket there go; a region the table itself leaves
    is replica.removed's)."""
    was, now = _regions(before, deployed), _regions(after, target)
    kept = {HOME, *target.replicas}
    found = [
        Finding(
            Level.CHANGE, REGION_ADDED, f"subscriber {name}", "absent", region,
            f"its function and mapping are created in {region} on that region's replica stream (its stack there)",
            False, None, region,
        )
        for region in sorted(now - was)
    ]  # fmt: skip
    found += [
        Finding(
            Level.CHANGE, REGION_REMOVED, f"subscriber {name}", region, "absent",
            f"its function, mapping and log group in {region} are deleted: the changes after this deploy never reach "
            "it there; its failure bucket there goes with it (kept where the tier keeps data)", True, region, None,
        )
        for region in sorted((was - now) & kept)
    ]  # fmt: skip
    return found


def _reads(spec: SubscriberSpec, config: DocTableConfig) -> tuple[str, ...]:
    """What a subscriber's mapping reads and from where: a change of any is a new mapping (on Kinesis, shared reads
    or its own enhanced fan-out consumer: another source ARN)."""
    source = spec.source
    if spec.reads_kinesis:
        source += "(fan-out)" if fans_out(config.subscribers, config.reads_kinesis) else "(shared)"
    return source, spec.option("starting_position") or config.starting_position


def subscriber_findings(deployed: DocTableConfig, target: DocTableConfig) -> list[Finding]:
    """Each subscriber the deploy adds, removes, replaces (another source or starting position: a new mapping)
    or updates in place (filters, batching, its function's settings, environment, grants)."""
    before = {s.name: s for s in deployed.subscribers}
    after = {s.name: s for s in target.subscribers}
    found = [
        Finding(
            Level.CHANGE, SUBSCRIBER_ADDED, f"subscriber {name}", "absent", after[name].handler_file,
            "a new function and mapping, reading from its starting position (from LATEST: the changes made before "
            "its poller settles never reach it)", False, None, name,
        )
        for name in sorted(after.keys() - before.keys())
    ]  # fmt: skip
    found += [
        Finding(
            Level.CHANGE, SUBSCRIBER_REMOVED, f"subscriber {name}", before[name].handler_file, "absent",
            "its function, mapping and log group are deleted: the changes after this deploy never reach it; its "
            "failure bucket goes with it (kept, with its failed batches, where the tier keeps data)", True, name, None,
        )
        for name in sorted(before.keys() - after.keys())
    ]  # fmt: skip
    for name in sorted(before.keys() & after.keys()):
        if target.is_global or deployed.is_global:
            found += region_findings(name, before[name], after[name], deployed, target)
        was, now = _reads(before[name], deployed), _reads(after[name], target)
        if was != now:
            found.append(
                Finding(
                    Level.CHANGE, SUBSCRIBER_REPLACED, f"subscriber {name}", "/".join(was), "/".join(now),
                    "a new mapping replaces its mapping: it skips the changes made while the new one settles, or "
                    "re-reads what its source still holds", True, list(was), list(now),
                )
            )  # fmt: skip
        elif before[name] != after[name]:
            found.append(
                Finding(
                    Level.CHANGE, SUBSCRIBER_UPDATED, f"subscriber {name}", "deployed declaration", "declared",
                    "updated in place (its filters, batching, function settings, environment or grants): batches "
                    "polled after the update run with it", False, name, name,
                )
            )  # fmt: skip
    return found


class ConsumerCapability:
    """The built-in consumer's function and blob bucket: findings of a change against the recorded knobs."""

    name = "consumer"
    compares_live = False
    codes = frozenset(
        {
            CHANGED, REPUBLISHED, PREFIX_CLEANUP_ON, KEY_REUSE_NEVER_CODE, "bucket.leaves_stack", RENAMED,
            SUBSCRIBER_ADDED, SUBSCRIBER_REMOVED, SUBSCRIBER_REPLACED, SUBSCRIBER_UPDATED,
            REGION_ADDED, REGION_REMOVED,
        }
    )  # fmt: skip

    def findings(self, observed: Observed) -> list[Finding]:
        if not observed.deployment.recorded:
            found = subscriber_findings(replace(observed.target, subscribers=()), observed.target)
        else:
            found = findings(observed.deployed, observed.target)
            found += subscriber_findings(observed.deployed, observed.target)
        return found


CONSUMER = ConsumerCapability()
