"""``doctable deploy`` converting a live single-region table to a global table, its items kept: the resource
import CDK's Table -> TableV2 migration describes, one CloudFormation operation per step (infra/handover.py
builds each step's template from the ``table_handover`` context):

1. ``retain``: a deploy giving the table DeletionPolicy/UpdateReplacePolicy Retain;
2. ``detached``: a deploy without the table resource (CloudFormation keeps the retained table), everything that
   referred to it naming it by its name, ARN and stream ARN (unchanged: the table is kept, so is its stream);
3. ``import``: ``cdk import --resource-mapping --force`` adopting the table as AWS::DynamoDB::GlobalTable with
   no replica yet (an import changes no other resource);

then ``doctable deploy`` goes on with its ordinary deploy, which adds the replicas. Where a conversion starts is
the live state preflight found: ``table.to_global`` (the stack has the single-region table: from the start; the
retain deploy changes nothing when it already is retained) or ``table.handover`` (the table is out of the stack
at the detached step: the import). A failed step stops; the next deploy continues from the live state.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from contract import names
from contract.knobs import TABLE_HANDOVER_CONTEXT, TABLE_STREAM_CONTEXT, DocTableConfig
from doctable.core.errors import UserError

if TYPE_CHECKING:
    from contract.findings import Finding
    from doctable.core.aws import Aws

RETAIN, DETACHED, IMPORT = "retain", "detached", "import"  # infra/handover.py's steps
STEPS = (RETAIN, DETACHED, IMPORT)
WHAT = {
    RETAIN: "the table retained (DeletionPolicy Retain)",
    DETACHED: "the table taken out of the stack (kept by CloudFormation)",
    IMPORT: "the table imported as AWS::DynamoDB::GlobalTable (cdk import)",
}
START = {"table.to_global": RETAIN, "table.handover": IMPORT}


def start_step(findings: Sequence[Finding]) -> str | None:
    """The step a conversion starts at, from preflight's findings; None when there is none to make."""
    return next((START[f.code] for f in findings if f.code in START), None)


def stream_arn(aws: Aws, table_name: str) -> str:
    """The live table's stream ARN (the detached steps refer to it); UserError when it has none."""
    table = aws.client("dynamodb").describe_table(TableName=table_name)["Table"]
    arn = table.get("LatestStreamArn")
    if not arn or not (table.get("StreamSpecification") or {}).get("StreamEnabled"):
        raise UserError(f"table {table_name} has no stream: a global table replicates through it")
    return str(arn)


def import_command(deploy_command: Sequence[str], mapping_file: str) -> list[str]:
    """``cdk import`` of the stack ``deploy_command`` deploys, with its context and output directory."""
    command: list[str] = []
    skip = False
    for part in deploy_command:
        if skip:
            skip = False
        elif part in ("--require-approval", "--outputs-file"):
            skip = True  # deploy's options, with their value
        else:
            command.append(part)
    command[command.index("deploy")] = "import"  # the CDK CLI's command word (the first "deploy")
    return command + ["--resource-mapping", mapping_file, "--force"]


def step_command(
    step: str, deploy_command: Sequence[str], config: DocTableConfig, stream: str | None, mapping_file: str
) -> list[str]:
    """The CDK CLI command of one step."""
    context = ["-c", f"{TABLE_HANDOVER_CONTEXT}={step}"]
    if step != RETAIN:
        context += ["-c", f"{TABLE_STREAM_CONTEXT}={stream}"]
    if step == IMPORT:
        return import_command([*deploy_command, *context], mapping_file)
    return [*deploy_command, *context]


def convert(
    aws: Aws,
    config: DocTableConfig,
    start: str,
    deploy_command: Sequence[str],
    run: Callable[[list[str]], int],
    say: Callable[[str], None],
    records: list[dict[str, Any]],
) -> tuple[int, str | None]:
    """Run the steps from ``start`` (``run`` runs one CDK CLI command and gives its exit code); each step's name,
    command and exit code appended to ``records``. (0, None) when all succeeded, else (exit code, the step)."""
    steps = STEPS[STEPS.index(start) :]
    if start != RETAIN:
        say(f"the conversion of {config.table_name} to a global table continues at step {start}")
    with tempfile.TemporaryDirectory(prefix="doctable-import-") as folder:
        mapping_file = os.path.join(folder, "resource-mapping.json")
        with open(mapping_file, "w", encoding="utf-8") as out:
            json.dump({names.table_logical_id(): {"TableName": config.table_name}}, out)
        for step in steps:
            number = STEPS.index(step) + 1
            say(f"conversion step {number}/{len(STEPS)} ({step}): {WHAT[step]}")
            stream = None if step == RETAIN else stream_arn(aws, config.table_name)
            command = step_command(step, deploy_command, config, stream, mapping_file)
            say("$ " + " ".join(command))
            code = run(command)
            records.append({"step": step, "command": command, "exit": code})
            if code != 0:
                return code, step
    say(f"conversion of {config.table_name} imported: the deploy now adds the replicas")
    return 0, None
