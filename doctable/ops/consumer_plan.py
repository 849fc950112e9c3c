"""What changing the built-in consumer's function on a live stack does: preflight's lines for its knobs (memory,
timeout, architecture, Powertools packaging, snapstart and the environment the blob knobs write), read from the
consumer shapes the deployed and target knobs declare."""

from __future__ import annotations

from contract import names
from contract.knobs import KEY_REUSE_NEVER, OFF, ON, DocTableConfig
from contract.shape import consumer_shape

CHANGE = "CHANGE"
SUBJECT = "consumer function"
# A function update: Lambda starts new execution environments with it, batches in flight finish on the old code.
IN_PLACE = "in place: batches polled after the update run the new configuration"


def findings(deployed: DocTableConfig, target: DocTableConfig) -> list[tuple[str, str, str, str, str]]:
    """(level, subject, live, declared, effect) for each consumer setting the deploy changes."""
    before, after = consumer_shape(deployed), consumer_shape(target)
    if before is None or after is None:
        return []  # the function is created or deleted: the mapping line says so
    found: list[tuple[str, str, str, str, str]] = []

    def change(what: str, live: object, want: object, effect: str) -> None:
        found.append((CHANGE, f"{SUBJECT} {what}", str(live), str(want), effect))

    if before.memory != after.memory:
        change("memory", f"{before.memory} MB", f"{after.memory} MB", f"{IN_PLACE} (CPU scales with memory)")
    if before.timeout != after.timeout:
        change("timeout", f"{before.timeout} s", f"{after.timeout} s", IN_PLACE)
    if before.architecture != after.architecture:
        change(
            "architecture",
            before.architecture,
            after.architecture,
            f"{IN_PLACE}; the layer of that architecture",
        )
    if deployed.powertools != target.powertools:
        change(
            "powertools",
            deployed.powertools,
            target.powertools,
            f"{IN_PLACE}; the code asset changes (Powertools from the public layer, or bundled in the zip)",
        )
    for variable in (names.ENV_BLOB_ROOT, names.ENV_BLOB_PREFIX_CLEANUP, names.ENV_BLOB_KEY_REUSE):
        was, now = before.environment.get(variable), after.environment.get(variable)
        if was != now:
            change(variable, repr(was), repr(now), _environment_effect(variable, now))
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
        change("snapstart", ON if before.snapstart else OFF, ON if after.snapstart else OFF, effect)
    if after.snapstart and found and not any(f[1] == f"{SUBJECT} snapstart" for f in found):
        found.append(
            (CHANGE, f"{SUBJECT} version", "published", "published again", "snapstart=on: the change publishes the "
             "next version (the deploy waits for its init and snapshot), the alias moves to it, the old is deleted")
        )  # fmt: skip
    return found


def _environment_effect(variable: str, value: str | None) -> str:
    if variable == names.ENV_BLOB_KEY_REUSE and value == KEY_REUSE_NEVER:
        return (
            f"{IN_PLACE}; from then on a dropped key is deleted at once, unchecked (your promise that keys are never "
            "listed again), and the role loses s3:GetObject and dynamodb:BatchGetItem"
        )
    if variable == names.ENV_BLOB_KEY_REUSE:
        return f"{IN_PLACE}; each dropped key is checked again before its delete (HEAD, item read)"
    if variable == names.ENV_BLOB_ROOT:
        return f"{IN_PLACE}; keys outside the new root are refused from then on (blobs already there stay)"
    return f"{IN_PLACE}; a REMOVE without images clears the item's prefix only when on"
