"""``python -m sandbox.bench``: speed and memory figures, never timed tests.

Every figure is a median over repeated runs, and every comparison is a ratio of two
figures measured in this same run on this same machine, so the numbers travel between
laptops and CI even though absolute times do not. Results go to ``bench-results.json``
and a readable table (printed, and written to ``bench-results.txt``).

Figures and their targets:
- wall time of every scenario with default settings (target < 2 s);
- time compression, virtual seconds per wall second, for async-retry and ttl-lag (≥ 1,000×);
- sandbox overhead: a scenario's wall time over the raw moto cost of the same AWS calls
  replayed directly with boto3 in this process (≤ 1.3×; 1.0× is the floor);
- cost per order at 100, 1,000 and 10,000 orders for sqs-batch-failure and
  concurrent-claims (flat within 1.5×);
- peak memory (traced Python allocations of the largest run, and the process's max RSS).
"""
from __future__ import annotations

import argparse
import base64
import json
import resource
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import botocore.session
from botocore import xform_name
from botocore.exceptions import ClientError
from moto import mock_aws

from . import adapter, gateway
from .scenarios import SCENARIOS, run_scenario
from .vocab import RecordType

ROOT = Path(__file__).resolve().parent.parent
HANDLER = str(ROOT / "examples" / "idempotent.py") + ":handler"
TARGETS = {"scenario_wall_s": 2.0, "compression_x": 1000.0, "overhead_x": 1.3, "cost_flatness_x": 1.5}


def _median_wall(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, last = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        last = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), last


def scenario_walls(repeat: int) -> dict[str, dict[str, float]]:
    out = {}
    for name in SCENARIOS:
        wall, result = _median_wall(lambda: run_scenario(name, HANDLER, seed=0), repeat)
        out[name] = {"wall_s": round(wall, 4), "virtual_s": result.history.end_time(),
                     "verdict": result.status, "aws_calls": len(result.history.of_type(RecordType.AWS))}
    return out


def compression(walls: dict[str, dict[str, float]]) -> dict[str, float]:
    return {name: round(walls[name]["virtual_s"] / walls[name]["wall_s"], 1)
            for name in ("async-retry", "ttl-lag") if name in walls and walls[name]["wall_s"] > 0}


# -- overhead: the same AWS calls, straight into moto ----------------------------------------
def _record_calls(name: str) -> list[tuple[str, str, dict]]:
    calls: list[tuple[str, str, dict]] = []
    with gateway.tap(lambda service, op, params: calls.append((service, op, params))):
        run_scenario(name, HANDLER, seed=0)
    return calls


def _to_boto3(service: str, params: dict) -> dict:
    """Wire JSON back to boto3 input: only Kinesis blobs differ (base64 on the wire)."""
    if service == "kinesis" and "Data" in params:
        params = {**params, "Data": base64.b64decode(params["Data"])}
    if service == "kinesis" and "Records" in params:
        params = {**params, "Records": [{**r, "Data": base64.b64decode(r["Data"])} for r in params["Records"]]}
    return params


def _replay(calls: list[tuple[str, str, dict]]) -> None:
    session = botocore.session.get_session()
    session.register_component("data_loader", adapter.shared_loader())
    b3 = boto3.Session(botocore_session=session, region_name="us-east-1", aws_access_key_id="testing",
                       aws_secret_access_key="testing")
    with mock_aws():
        clients: dict[str, Any] = {}
        for service, op, params in calls:
            client = clients.get(service) or clients.setdefault(service, b3.client(service))
            try:
                getattr(client, xform_name(op))(**_to_boto3(service, params))
            except ClientError:
                pass  # stale receipt handles and lost claims cost what they cost in the scenario too


def overhead(names: list[str], repeat: int) -> dict[str, dict[str, float]]:
    out = {}
    for name in names:
        if name not in SCENARIOS:
            continue
        calls = _record_calls(name)
        # Alternate the two, so a slow patch of the machine slows both alike.
        scenario_times, replay_times = [], []
        for _ in range(repeat):
            scenario_times.append(_median_wall(lambda: run_scenario(name, HANDLER, seed=0), 1)[0])
            replay_times.append(_median_wall(lambda: _replay(calls), 1)[0])
        scenario_wall, replay_wall = statistics.median(scenario_times), statistics.median(replay_times)
        out[name] = {"scenario_s": round(scenario_wall, 4), "raw_moto_s": round(replay_wall, 4),
                     "aws_calls": len(calls), "ratio_x": round(scenario_wall / replay_wall, 2)}
    return out


# -- cost per order ----------------------------------------------------------------------------
def cost_per_order(names: list[str], sizes: list[int], repeat_small: int) -> dict[str, dict[str, Any]]:
    out = {}
    for name in names:
        if name not in SCENARIOS or "orders" not in SCENARIOS[name].all_settings():
            continue
        per = {}
        for n in sizes:
            reps = repeat_small if n <= 1000 else 1
            wall, result = _median_wall(lambda: run_scenario(name, HANDLER, seed=0, settings={"orders": n}), reps)
            per[str(n)] = {"wall_s": round(wall, 3), "ms_per_order": round(1000 * wall / n, 3),
                           "verdict": result.status}
        costs = [v["ms_per_order"] for v in per.values()]
        out[name] = {"sizes": per, "flatness_x": round(max(costs) / min(costs), 2)}
    return out


def peak_memory(name: str, orders: int) -> dict[str, float]:
    tracemalloc.start()
    try:
        run_scenario(name, HANDLER, seed=0, settings={"orders": orders})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return {"scenario": name, "orders": orders, "traced_peak_mib": round(peak / 2**20, 1),
            "process_max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


# -- report -------------------------------------------------------------------------------------
def run(quick: bool = False) -> dict[str, Any]:
    repeat = 1 if quick else 5
    sizes = [10, 30] if quick else [100, 1000, 10000]
    walls = scenario_walls(repeat)
    results = {
        "machine": {"python": sys.version.split()[0], "platform": sys.platform},
        "quick": quick,
        "targets": TARGETS,
        "scenario_wall": walls,
        "compression": compression(walls),
        "overhead": overhead(["sqs-batch-failure", "concurrent-claims", "no-fault"], 1 if quick else 21),
        "cost_per_order": cost_per_order(["sqs-batch-failure", "concurrent-claims"], sizes, 3 if not quick else 1),
        "memory": peak_memory("sqs-batch-failure" if "sqs-batch-failure" in SCENARIOS else "no-fault",
                              30 if quick else 1000),
    }
    results["misses"] = misses(results)
    return results


def misses(r: dict[str, Any]) -> list[str]:
    out = []
    for name, v in r["scenario_wall"].items():
        if v["wall_s"] >= TARGETS["scenario_wall_s"]:
            out.append(f"scenario wall: {name} took {v['wall_s']} s (target < 2 s)")
    for name, x in r["compression"].items():
        if x < TARGETS["compression_x"]:
            out.append(f"compression: {name} {x}x (target >= 1000x)")
    for name, v in r["overhead"].items():
        if v["ratio_x"] > TARGETS["overhead_x"]:
            out.append(f"overhead: {name} {v['ratio_x']}x raw moto (target <= 1.3x)")
    for name, v in r["cost_per_order"].items():
        if v["flatness_x"] > TARGETS["cost_flatness_x"]:
            out.append(f"cost per order: {name} varies {v['flatness_x']}x across sizes (target <= 1.5x)")
    return out


def table(r: dict[str, Any]) -> str:
    lines = ["Scenario wall time (median, default settings, idempotent handler)",
             f"  {'scenario':<24}{'wall s':>9}{'virtual s':>12}{'aws calls':>11}  verdict"]
    for name, v in r["scenario_wall"].items():
        lines.append(f"  {name:<24}{v['wall_s']:>9.3f}{v['virtual_s']:>12.1f}{v['aws_calls']:>11}  {v['verdict']}")
    lines += ["", "Time compression (virtual s per wall s)"]
    lines += [f"  {name:<24}{x:>12,.0f}x" for name, x in r["compression"].items()]
    lines += ["", "Sandbox overhead (scenario wall / same AWS calls straight into moto)",
              f"  {'scenario':<24}{'scenario s':>11}{'raw moto s':>12}{'calls':>7}{'ratio':>8}"]
    for name, v in r["overhead"].items():
        lines.append(f"  {name:<24}{v['scenario_s']:>11.3f}{v['raw_moto_s']:>12.3f}{v['aws_calls']:>7}"
                     f"{v['ratio_x']:>7.2f}x")
    lines += ["", "Cost per order (ms)"]
    for name, v in r["cost_per_order"].items():
        sizes = "  ".join(f"{n}: {s['ms_per_order']:.2f}" for n, s in v["sizes"].items())
        lines.append(f"  {name:<24}{sizes}   flat within {v['flatness_x']}x")
    m = r["memory"]
    lines += ["", f"Peak memory: {m['traced_peak_mib']} MiB traced for {m['scenario']} with {m['orders']} orders; "
              f"process max RSS {m['process_max_rss_mib']} MiB", ""]
    lines.append("Targets missed: " + ("none" if not r["misses"] else ""))
    lines += [f"  - {miss}" for miss in r["misses"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sandbox.bench", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes and one repetition (a smoke run)")
    p.add_argument("--out", default="bench-results.json", help="where to write the JSON results")
    args = p.parse_args(argv)
    results = run(quick=args.quick)
    out = Path(args.out)
    out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    text = table(results)
    out.with_suffix(".txt").write_text(text + "\n")
    print(text)
    print(f"\nwrote {out} and {out.with_suffix('.txt')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
