"""The console script's ``doctable plan``: its parser (the workload's figures as text, each checked and named by its
flag in one line), the :class:`~doctable.cli.arguments.Call` of ``doctable.api.plan`` and the plan's rendering (its
text, or ``to_json()`` with ``--json``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from doctable.cli.arguments import Call, add_command, add_knob_arguments, print_json

if TYPE_CHECKING:
    from doctable.plan.cost import Plan


def no_func(args: argparse.Namespace) -> int:  # pragma: no cover - main calls the API for this command
    raise AssertionError(f"doctable {args.command} runs through doctable.api")


def plan_call(args: argparse.Namespace) -> Call:
    """The workload's figures from their text (one line naming the flag and its range when one is not a number in
    it), the ``--subscriber-ms`` pairs as {name: milliseconds}."""
    from doctable.plan.readers import subscriber_ms_pairs
    from doctable.plan.workload import workload_number

    figures = ("writes_per_second", "item_kb", "delete_ratio", "blobs_per_item", "manifest_share",
               "index_share", "stored_items")  # fmt: skip
    kwargs: dict[str, Any] = {name: workload_number(name, getattr(args, name)) for name in figures}
    for name in ("blobs_per_item", "stored_items"):
        kwargs[name] = int(kwargs[name])
    kwargs["subscriber_ms"] = subscriber_ms_pairs(args.subscriber_ms or [])
    return Call("plan", kwargs)


def render_plan(result: Plan, args: argparse.Namespace) -> int:
    if args.json:
        print_json(result.to_json())
    else:
        print(result.text())
    return 0


def register(sub: Any) -> None:
    # No AWS call; the knobs' arguments, no -q, its --json last.
    plan = add_command(
        sub,
        "plan",
        no_func,
        help="capacity and cost of a workload on the knobs' shape (shards, consumers, S3 rates, monthly USD); "
        "no AWS call",
        description="Model one workload (writes per second, item size, delete ratio, blobs per item, the share of "
        "manifest entries and index keys) on the shape the settings give: stream shards, concurrent consumers, "
        "time per batch and iterator-age risk, S3 request rates, monthly cost; every figure with its source.",
        guard=False,
    )
    add_knob_arguments(plan)
    plan.add_argument("--writes-per-second", metavar="N", required=True, help="table writes per second")
    plan.add_argument("--item-kb", default="1", metavar="KB", help="item size in KB (1)")
    plan.add_argument("--delete-ratio", default="0.1", metavar="R", help="share of writes that delete (0.1)")
    plan.add_argument("--blobs-per-item", default="1", metavar="N", help="blobs an item lists (1)")
    plan.add_argument(
        "--manifest-share",
        default="1",
        metavar="R",
        help="share of blob keys listed as manifest entries with their ETag, as doctable.client writes them (1); "
        "0 for an application writing plain keys (each costs a HEAD)",
    )
    plan.add_argument(
        "--index-share",
        default="1",
        metavar="R",
        help="share of writes whose item carries each index's keys (1)",
    )
    plan.add_argument(
        "--stored-items",
        default="0",
        metavar="N",
        help="items kept in the table, to price storage (0: not priced)",
    )
    plan.add_argument(
        "--subscriber-ms",
        action="append",
        metavar="NAME=MS",
        help="a subscriber's milliseconds per record (repeatable): plan says the records per second per shard it "
        "sustains and warns when its shards deliver more; not measured (plan makes no AWS call)",
    )
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.set_defaults(call=plan_call, render=render_plan)
