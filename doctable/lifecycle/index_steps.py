"""Several GSI creations and deletions in one ``doctable deploy``: CloudFormation takes one per update ("Cannot
perform more than one GSI creation or deletion in a single update"), so the deploy runs one update per index
change, each the declared template with the index changes not yet applied, and waits for each index to be
ACTIVE (or gone) before the next. The steps are computed from the live table, so a run that stops part-way
continues from where the table is at the next ``doctable deploy``."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from contract.knobs import INDEX_STEP_CONTEXT, DocTableConfig
from contract.shape import IndexShape, TableShape, index_declaration, table_shape
from doctable.capabilities.indexes import (
    CREATE,
    DELETE,
    IndexChanges,
    Step,
    gsi_steps,
    index_changes,
    structure,
)
from doctable.core.answers import error_code
from doctable.core.aws import user_errors
from doctable.core.errors import UserError

if TYPE_CHECKING:
    from doctable.core.aws import Aws
    from doctable.core.deployment import Deployment

ACTIVE = "ACTIVE"
POLL_SECONDS = 2.0
REPORT_EVERY = 30.0  # a progress line at least this often while an index is backfilling


@dataclass
class IndexPlan:
    """The index changes of this deploy against the live table, and the updates that apply them."""

    changes: IndexChanges
    steps: list[Step]
    busy: list[str]  # indexes not ACTIVE now: the deploy waits for them first

    @property
    def multi_step(self) -> bool:
        return len(self.steps) > 1


def _managed_table(table: dict[str, Any], deployment: Deployment) -> dict[str, Any]:
    """The live table with only the GSIs the stack manages: an index made outside the stack is not the
    template's, so no step creates or deletes it (preflight reports it as drift)."""
    if not deployment.recorded:
        return table
    managed = {i.name for i in table_shape(deployment.config).indexes}
    gsis = [g for g in table.get("GlobalSecondaryIndexes") or [] if g["IndexName"] in managed]
    return {**table, "GlobalSecondaryIndexes": gsis}


def plan_indexes(aws: Aws, deployment: Deployment, config: DocTableConfig) -> IndexPlan | None:
    """None when the table does not exist yet (a create takes every index at once) or is not the stack's."""
    if not deployment.exists:
        return None
    name = deployment.table_name
    try:
        table = aws.client("dynamodb").describe_table(TableName=name)["Table"]
    except ClientError as exc:
        if error_code(exc) == "ResourceNotFoundException":
            return None
        raise
    shape = table_shape(config)
    managed = _managed_table(table, deployment)
    changes = index_changes(shape, managed)
    busy = [
        g["IndexName"]
        for g in managed.get("GlobalSecondaryIndexes") or []
        if g.get("IndexStatus", ACTIVE) != ACTIVE
    ]
    previous = table_shape(deployment.config) if deployment.recorded else None
    changes = replace(changes, live=_as_templated(changes.live, previous))
    steps = gsi_steps(changes, order=[i.name for i in shape.global_indexes])
    return IndexPlan(changes=changes, steps=steps, busy=busy)


def _as_templated(live: dict[str, IndexShape], previous: TableShape | None) -> dict[str, IndexShape]:
    """Each live index as the previous template declared it (its throughput as written there), so that an
    intermediate template keeps an index not yet changed exactly as it was; one the record does not know keeps
    its live keys and projection, without the warm throughput DynamoDB reports for every index."""
    out = {}
    for name, index in live.items():
        before = previous.index(name) if previous is not None else None
        if before is not None and structure(before) == structure(index):
            out[name] = before
        else:
            out[name] = replace(index, warm_throughput=None)
    return out


def step_context(step: Step, shape: TableShape) -> str:
    """The ``-c doctable:indexStep=...`` value of one intermediate update: the GSIs after the step, and the
    declared LSIs (which only a new table changes)."""
    indexes = [*step.after, *shape.local_indexes]
    return json.dumps({i.name: index_declaration(i) for i in indexes}, separators=(",", ":"))


def step_arguments(plan: IndexPlan, number: int, shape: TableShape) -> list[str]:
    """The CDK arguments of update ``number`` (from 0): the last one is the declared stack itself."""
    if number == len(plan.steps) - 1:
        return []
    return ["-c", f"{INDEX_STEP_CONTEXT}={step_context(plan.steps[number], shape)}"]


def index_state(aws: Aws, table_name: str, index: str) -> tuple[str | None, bool]:
    """(IndexStatus or None when the index is gone, Backfilling)."""
    table = aws.client("dynamodb").describe_table(TableName=table_name)["Table"]
    for gsi in table.get("GlobalSecondaryIndexes") or []:
        if gsi["IndexName"] == index:
            return gsi.get("IndexStatus", ACTIVE), bool(gsi.get("Backfilling"))
    return None, False


def settled(action: str, status: str | None) -> bool:
    """A created index is ACTIVE; a deleted one is gone."""
    return status == ACTIVE if action == CREATE else status is None


class IndexWatch:
    """Progress lines for one index while an update runs (a thread polling DescribeTable), and the wait for
    it to settle once the update returns."""

    def __init__(
        self, aws: Aws, table_name: str, step: Step, say: Callable[[str], None], *, timeout: float
    ) -> None:
        self.aws, self.table_name, self.step, self.say, self.timeout = aws, table_name, step, say, timeout
        self.started = time.monotonic()
        self.last: tuple[str | None, bool] | None = None
        self.last_said = 0.0
        self.lines: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _observe(self) -> tuple[str | None, bool]:
        state = index_state(self.aws, self.table_name, self.step.index)
        now = time.monotonic()
        if state != self.last or now - self.last_said >= REPORT_EVERY:
            status, backfilling = state
            elapsed = now - self.started
            self.lines.append(
                {"index": self.step.index, "status": status, "backfilling": backfilling, "elapsed": elapsed}
            )
            absent = (
                "not there yet" if self.step.action == CREATE else "gone"
            )  # no status: DescribeTable lists none
            self.say(
                f"index {self.step.index}: {status or absent}"
                + (", backfilling" if backfilling else "")
                + f" ({elapsed:.0f}s)"
            )
            self.last, self.last_said = state, now
        return state

    def _run(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            try:
                self._observe()
            except ClientError:
                continue  # a transient read failure: the next poll tells

    def __enter__(self) -> IndexWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=POLL_SECONDS * 2)

    def wait_settled(self) -> float:
        """Poll until the index is ACTIVE (created) or gone (deleted); the seconds it took since the step
        began. UserError past ``timeout``."""
        while True:
            status, _ = self._observe()
            if settled(self.step.action, status):
                return time.monotonic() - self.started
            if time.monotonic() - self.started > self.timeout:
                raise UserError(
                    f"index {self.step.index} is still {status} after {self.timeout:.0f}s; nothing is lost: "
                    "run doctable deploy again once it settles, and it continues from there"
                )
            time.sleep(POLL_SECONDS)


def wait_for_busy(
    aws: Aws, table_name: str, busy: list[str], say: Callable[[str], None], *, timeout: float
) -> None:
    """Indexes not ACTIVE before the deploy (a backfill of an earlier run): DynamoDB takes no other index change
    until they are, so wait for them."""
    for name in busy:
        status, _ = index_state(aws, table_name, name)
        if status is None:
            continue
        action = DELETE if status == "DELETING" else CREATE
        say(f"index {name} is {status} (an earlier change): waiting for it before the next update")
        IndexWatch(aws, table_name, Step(action, name, ()), say, timeout=timeout).wait_settled()


def deploy_steps(
    aws: Aws,
    table_name: str,
    config: DocTableConfig,
    plan: IndexPlan,
    base_command: list[str],
    run: Callable[[list[str]], int],
    say: Callable[[str], None],
    steps: list[dict[str, Any]],
    *,
    index_timeout: float,
    check: Callable[[int], Any] | None = None,
) -> int:
    """One cdk deploy (``run``, of ``base_command`` plus the step's context) per GSI creation or deletion, the last
    one the declared stack and the only one when there is a single change, each waiting for its index; a record
    per update appended to ``steps``. The exit code of the first that fails (CloudFormation rolls that one back;
    the next doctable deploy continues from the live table). ``check(number)`` before each update
    (doctable/lifecycle/step_check.py): what changed since the plan (a ``StepStale``), which stops the deploy
    there (exit 1, its record's ``stopped``), or None."""
    shape = table_shape(config)
    total = len(plan.steps)
    if total > 1:
        say(
            f"{total} index changes: CloudFormation takes one GSI creation or deletion per update, so this "
            f"deploy makes {total} updates"
        )
    for number, step in enumerate(plan.steps):
        record: dict[str, Any] = {"update": number + 1, "action": step.action, "index": step.index}
        stale = check(number) if check is not None else None
        if stale is not None:
            steps.append({**record, "exit": 1, "stopped": stale.to_json()})
            say(stale.line())
            return 1
        say(f"update {number + 1}/{total}: {step.action} index {step.index}")
        steps.append(record)
        watch = IndexWatch(aws, table_name, step, say, timeout=index_timeout)
        with watch:
            # CloudFormation itself waits for a new index's backfill before it completes the update.
            code = run(base_command + step_arguments(plan, number, shape))
        record["exit"] = code
        if code != 0:
            record["progress"] = watch.lines
            return code
        with user_errors(f"waiting for index {step.index}"):
            record["seconds"] = round(watch.wait_settled(), 1)
        record["progress"] = watch.lines
    return 0
