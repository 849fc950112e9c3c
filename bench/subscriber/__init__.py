"""The subscriber wrapper's cost (issue 37, item 3): the same small team handler deployed through doctable's wrapper
(``functions/subscriber_runtime``, staged by ``tooling.asset.stage_subscriber``) and alone, with the same
Powertools (the bench's interpreter holds the layer's package for both), in the same run.

* Cold start: a fresh process imports the handler module and handles one INSERT (``bench/_coldstart_child.py``,
  as the consumer's cold start), interleaved in a shuffled order per round; wall ms to the response and CPU ms.
  The wrapper's goal: within 1.1x of the handler alone. The handler uses Powertools' Logger (``small.py``), as a
  handler on the layer does; ``plain.py``, the same work without Powertools, is reported beside it.
* CPU per record: a batch of ``batch`` INSERTs handled ``rounds`` times in one warm process (``_cpu_child.py``),
  as Lambda's Python runtime calls a handler (the invocation's JSON body decoded, the response encoded): the
  wrapper in batch mode (goal: within 1.1x of the handler alone) and with ``per_record`` (one call per record);
  and the handler call alone, without the runtime's part (reported: the wrapper's fixed cost per batch is
  the same in both, the ratio is stricter).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.coldstart import _run_child, summarize
from bench.common import PROJECT_ROOT
from bench.events import REGION, TABLE, image, record
from bench.figures import figure
from contract import names
from tooling.asset import stage_subscriber

HERE = Path(__file__).resolve().parent
RUNTIME = PROJECT_ROOT / "functions" / names.SUBSCRIBER_RUNTIME_PACKAGE
CPU_CHILD = HERE / "_cpu_child.py"
TARGET_RATIO = 1.1
OK: dict[str, list[Any]] = {"batchItemFailures": []}
WRAPPER_MODULE = names.SUBSCRIBER_HANDLER.rsplit(".", 1)[0]
# name -> (team file, the wrapper around it or the file alone, the function the wrapper calls, per_record)
COLD = {
    "wrapper": ("small.py", True, "handler", False),
    "alone": ("small.py", False, "handler", False),
    "plain_wrapper": ("plain.py", True, "handler", False),
    "plain_alone": ("plain.py", False, "handler", False),
}
CPU = {
    "wrapper": ("small.py", True, "handler", False),
    "wrapper_per_record": ("small.py", True, "on_record", True),
    "alone": ("small.py", False, "handler", False),
}


def _batch(count: int) -> dict[str, Any]:
    return {
        "Records": [
            record("INSERT", n, f"doc#{n}", "v#1", new=image(f"doc#{n}", "v#1", []) | _fields(n))
            for n in range(1, count + 1)
        ]
    }


def _fields(n: int) -> dict[str, Any]:
    return {"title": {"S": f"Document {n}"}, "author": {"S": "bench"}, "pages": {"N": str(n % 97)}}


def _env(stage_handler: str, function: str, per_record: bool) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "POWERTOOLS_", "DOCTABLE_"))}
    base.pop("PYTHONPATH", None)
    return base | {
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_LAMBDA_FUNCTION_NAME": "doctable-bench-Subscriber",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "PYTHONDONTWRITEBYTECODE": "1",
        names.ENV_SUBSCRIBER_NAME: "bench",
        names.ENV_SUBSCRIBER_HANDLER: f"{stage_handler.partition(':')[0]}:{function}",
        names.ENV_SUBSCRIBER_PER_RECORD: names.ENV_SUBSCRIBER_TRUE
        if per_record
        else names.ENV_SUBSCRIBER_FALSE,
        names.ENV_SUBSCRIBER_TABLE_NAME: TABLE,
        names.ENV_SUBSCRIBER_ENVIRONMENT: "bench",
    }


class Roots:
    """The task roots: each team file's wrapper asset as staged for deploy, and the same file alone (its
    ``subscriber_code`` package with the same bytecode)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.staged: dict[str, tuple[Path, str]] = {}

    def root(self, team_file: str, wrapped: bool) -> tuple[Path, str]:
        """(task root, the handler string the wrapper is configured with)."""
        if team_file not in self.staged:
            stage, handler = stage_subscriber(RUNTIME, team_file, "handler", HERE, self.tmp / "build")
            alone = self.tmp / f"alone-{Path(team_file).stem}"
            shutil.copytree(stage / names.SUBSCRIBER_CODE_PACKAGE, alone / names.SUBSCRIBER_CODE_PACKAGE)
            self.staged[team_file] = (stage, handler)
            self.staged[f"alone:{team_file}"] = (alone, handler)
        return self.staged[team_file if wrapped else f"alone:{team_file}"]


def _module(wrapped: bool, handler: str) -> str:
    return WRAPPER_MODULE if wrapped else handler.partition(":")[0]


def cold_starts(roots: Roots, event_path: Path, runs: int, rng: random.Random) -> dict[str, Any]:
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in COLD}
    problems: list[str] = []
    for round_ in range(runs + 1):  # round 0 warms the page cache and is not recorded
        order = list(COLD)
        rng.shuffle(order)
        for name in order:
            team_file, wrapped, function, per_record = COLD[name]
            root, handler = roots.root(team_file, wrapped)
            result = _run_child(
                _module(wrapped, handler), root, event_path, _env(handler, function, per_record)
            )
            if result["response"] != OK:
                problems.append(f"{name}: response {result['response']}")
            if round_:
                samples[name].append(result)
    out: dict[str, Any] = {"problems": sorted(set(problems))}
    for name, results in samples.items():
        out[name] = {
            "wall_s": summarize([r["wall_s"] for r in results]),
            "cpu_s": summarize([r["cpu_s"] for r in results]),
            "modules_loaded": results[-1]["modules_loaded"],
        }
    return out


def cpu_per_record(roots: Roots, event_path: Path, rounds: int, repeats: int) -> dict[str, Any]:
    """Microseconds of CPU per record, the median of ``repeats`` children per variant (interleaved): as Lambda's
    runtime calls the handler (``us_per_record``) and the handler call alone (``call_us_per_record``)."""
    per_record: dict[str, list[float]] = {name: [] for name in CPU}
    per_call: dict[str, list[float]] = {name: [] for name in CPU}
    problems: list[str] = []
    for _ in range(repeats):
        for name, (team_file, wrapped, function, per_rec) in CPU.items():
            root, handler = roots.root(team_file, wrapped)
            proc = subprocess.run(
                [
                    sys.executable,
                    str(CPU_CHILD),
                    _module(wrapped, handler),
                    str(root),
                    str(event_path),
                    str(rounds),
                ],
                env={**_env(handler, function, per_rec), "LAMBDA_TASK_ROOT": str(root)},
                cwd=str(PROJECT_ROOT),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                timeout=600,
                check=False,
            )
            lines = [line for line in proc.stderr.splitlines() if line.startswith("BENCH_RESULT ")]
            if proc.returncode or not lines:
                raise RuntimeError(
                    f"CPU child for {name} failed (rc={proc.returncode}): {proc.stderr[-800:]}"
                )
            result = json.loads(lines[-1].split(" ", 1)[1])
            if result["response"] != OK:
                problems.append(f"{name}: response {result['response']}")
            records = result["rounds"] * result["records"]
            per_record[name].append(result["runtime_cpu_s"] / records * 1e6)
            per_call[name].append(result["cpu_s"] / records * 1e6)
    return {
        "problems": sorted(set(problems)),
        **{
            name: {
                "us_per_record": statistics.median(v),
                "samples": v,
                "call_us_per_record": statistics.median(per_call[name]),
                "call_samples": per_call[name],
            }
            for name, v in per_record.items()
        },
    }


def run(
    runs: int = 15, batch: int = 100, rounds: int = 200, repeats: int = 3, seed: int = 11
) -> dict[str, Any]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="doctable-bench-subscriber-") as tmp_name:
        tmp = Path(tmp_name)
        roots = Roots(tmp)
        single, batch_path = tmp / "single.json", tmp / "batch.json"
        single.write_text(json.dumps(_batch(1)))
        batch_path.write_text(json.dumps(_batch(batch)))
        cold = cold_starts(roots, single, runs, rng)
        cpu = cpu_per_record(roots, batch_path, rounds, repeats)
    return {"runs": runs, "batch": batch, "rounds": rounds, "repeats": repeats, "cold": cold, "cpu": cpu}


def subscriber_figures(section: dict[str, Any]) -> list[dict[str, Any]]:
    """The wrapper's figures: each against the same handler alone, in the same run."""
    cold, cpu = section["cold"], section["cpu"]
    wrong = bool(cold["problems"] or cpu["problems"])
    problems = f"; PROBLEMS: {cold['problems'] + cpu['problems']}" if wrong else ""
    figures = []
    for fid, what, wrapped, alone, metric, goal in (
        ("subscriber_cold_start_ms", "wall ms to response", "wrapper", "alone", "wall_s", True),
        ("subscriber_cold_start_cpu_ms", "CPU ms (user+sys)", "wrapper", "alone", "cpu_s", True),
        ("subscriber_plain_cold_start_ms", "handler without Powertools: wall ms", "plain_wrapper", "plain_alone",
         "wall_s", False),
    ):  # fmt: skip
        w, a = cold[wrapped][metric], cold[alone][metric]
        ratio = w["median"] / a["median"]
        figures.append(
            figure(
                fid,
                f"Subscriber wrapper, cold start, 1 INSERT: {what}, median [p10-p90], n={w['n']} (vs the handler alone)",
                "ms",
                w["median"] * 1000,
                a["median"] * 1000,
                ratio=ratio,
                target=f"<= {TARGET_RATIO:g}x alone" if goal else "(reported)",
                met=(ratio <= TARGET_RATIO and not wrong) if goal else None,
                note=f"modules: wrapper {cold[wrapped]['modules_loaded']}, alone {cold[alone]['modules_loaded']}"
                + problems,
                spread={
                    "project": {k: v * 1000 for k, v in w.items() if k != "n"},
                    "baseline": {k: v * 1000 for k, v in a.items() if k != "n"},
                },
            )
        )
    for fid, name, key, what, goal in (
        ("subscriber_cpu_us_per_record", "wrapper", "us_per_record", "batch mode, as Lambda's runtime calls it "
         "(the invocation's JSON decoded, the response encoded)", True),
        ("subscriber_call_cpu_us_per_record", "wrapper", "call_us_per_record", "batch mode, the handler call alone",
         False),
        ("subscriber_per_record_cpu_us_per_record", "wrapper_per_record", "us_per_record", "per_record = true, as "
         "Lambda's runtime calls it", False),
    ):  # fmt: skip
        value, alone = cpu[name][key], cpu["alone"][key]
        figures.append(
            figure(
                fid,
                f"Subscriber wrapper, CPU per record, {what}, batch of {section['batch']} x {section['rounds']} "
                f"(us; vs the handler alone)",
                "us",
                value,
                alone,
                ratio=value / alone,
                target=f"<= {TARGET_RATIO:g}x alone" if goal else "(reported)",
                met=(value / alone <= TARGET_RATIO and not wrong) if goal else None,
                note=f"median of {section['repeats']} processes; the wrapper adds "
                f"{(value - alone) * section['batch']:.0f} us per batch (proof line with its EMF metrics, the batch "
                f"walk): within {TARGET_RATIO:g}x of a handler spending >= "
                f"{max(value - alone, 0) / (TARGET_RATIO - 1):.0f} us per record" + problems,
            )
        )
    return figures
