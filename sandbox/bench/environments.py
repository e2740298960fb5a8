"""What execution environments as processes cost, against the in-process ("thread") isolation.

Part of ``make bench``; ``python -m sandbox.bench.environments`` runs it alone. Every figure is a
median, and each ratio is measured in this one run, the two isolations alternated run by run:

- a whole scenario run, process over thread (targets: at most 1.3x, and 1.5x for concurrent-claims, whose two
  environments start at once);
- a cold start from the warm template: the fork and the bootstrap, then the handler's own init
  (target: at most 10 ms median before the handler's init, cold starts back to back); beside it, as
  information, a cold start with a spare environment waiting, as a learner's runs find one;
- one AWS call's round trip, on top of the same call made in the world's own process (target:
  at most 0.5 ms), and beside it this machine's own floor for it: the call's two halves, boto3's client and moto,
  in two bare processes taking turns (``crossing_floor``).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from tabulate import tabulate

from .. import paths
from ..runtime.environment import host
from ..scenarios import run_scenario
from ..world import Sandbox
from .shapes import ColdStart, EnvironmentRun, Environments, RoundTrip

ROOT = paths.ROOT
HANDLER = str(ROOT / "examples" / "idempotent.py") + ":handler"
SCENARIOS = ("no-fault", "concurrent-claims", "sqs-batch-failure")
TARGETS = {"run_x": 1.3, "cold_start_ms": 10.0, "round_trip_ms": 0.5}
#: Runs whose target differs from ``run_x``.
RUN_TARGETS = {"concurrent-claims": 1.5}
_CALLS = 100
_ROUND_TRIP = f"""
import os
import boto3

table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])


def handler(event, context):
    for _ in range({_CALLS}):
        table.get_item(Key={{"pk": "nothing-here"}})
"""
_EMPTY = "def handler(event, context):\n    return None\n"


def _median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 2)


def runs(repeat: int) -> dict[str, EnvironmentRun]:
    out: dict[str, EnvironmentRun] = {}
    for name in SCENARIOS:
        walls: dict[str, list[float]] = {"thread": [], "process": []}
        for isolation in walls:  # warm both: the template, the task root copy, the models
            run_scenario(name, HANDLER, seed=0, isolation=isolation)
        for i in range(repeat):
            for isolation in ("thread", "process") if i % 2 == 0 else ("process", "thread"):
                started = time.perf_counter()
                run_scenario(name, HANDLER, seed=i, isolation=isolation)
                walls[isolation].append(time.perf_counter() - started)
        thread, process = _median_ms(walls["thread"]), _median_ms(walls["process"])
        out[name] = {"thread_ms": thread, "process_ms": process, "ratio_x": round(process / thread, 2)}
    return out


#: Seconds between cold starts for the figure with a spare waiting: making one takes 15-30 ms here.
SPARE_TIME = 0.2


def cold_start(repeat: int) -> ColdStart:
    """Fork and bootstrap (spawn to 'ready'), then the handler's init (to its first 'next'): cold starts back to
    back (the target's figure: each one waits for the spare the one before used up to be made), and then, as
    information, cold starts each with a spare waiting (``SPARE_TIME`` apart, as runs a learner starts are)."""
    fork, init = _cold_starts(repeat, pause=0.0)
    waiting, _ = _cold_starts(repeat, pause=SPARE_TIME)
    return {"fork_to_ready_ms": _median_ms(fork), "empty_handler_init_ms": _median_ms(init),
            "spare_waiting_ms": _median_ms(waiting)}


def _cold_starts(repeat: int, pause: float) -> tuple[list[float], list[float]]:
    fork: list[float] = []
    init: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "empty.py"
        path.write_text(_EMPTY)
        for _ in range(repeat + 2):
            time.sleep(pause)
            with Sandbox(isolation="process") as sb:
                fn = sb.function(f"{path}:handler")
                template = host.Template.get()
                roots = host.TaskRootCopies(template)
                root = str(roots.copy_of(str(path.parent)))
                config = fn.environment_config("orders-handler/c1", root)
                started = time.perf_counter()
                env = host.EnvironmentProcess(config, roots, template)
                ready = env._receive()
                forked = time.perf_counter()
                assert ready["t"] == "ready"
                env._serve_until(("next", "init_error"))
                fork.append(forked - started)
                init.append(time.perf_counter() - forked)
                env.kill()
    return fork[2:], init[2:]


def round_trip(repeat: int) -> RoundTrip:
    per_call: dict[str, list[float]] = {"thread": [], "process": []}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "calls.py"
        path.write_text(_ROUND_TRIP)
        for i in range(repeat + 1):
            for isolation in ("thread", "process") if i % 2 == 0 else ("process", "thread"):
                with Sandbox(isolation=isolation) as sb:
                    fn = sb.function(f"{path}:handler", timeout=900)
                    fn.invoke({})  # the cold start, the table, the first call
                    started = time.perf_counter()
                    fn.invoke({})
                    if i:
                        per_call[isolation].append((time.perf_counter() - started) / _CALLS)
    thread, process = _median_ms(per_call["thread"]), _median_ms(per_call["process"])
    return {"thread_ms": thread, "process_ms": process, "extra_ms": round(process - thread, 3)}


#: The halves of one AWS call, as the sandbox splits them: an environment's (boto3 builds, signs and parses a
#: DynamoDB GetItem; botocore's own client, its answer handed to it before anything is sent) and the world's (moto
#: serves that same request). Fake credentials; the client half never reaches a network (its send refuses), and the
#: world half is moto's.
_HALVES = """
import io, os
os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
import boto3
import botocore.endpoint
from botocore.awsrequest import AWSResponse

def _refuse(*_, **__):
    raise ConnectionRefusedError("the crossing floor never sends a request")

botocore.endpoint.Endpoint._send = _refuse

class _Raw(io.BytesIO):
    def stream(self, **_):
        yield self.getvalue()

_client = boto3.client("dynamodb")
_client.meta.events.register_first("before-send.dynamodb.GetItem", lambda request, **_: AWSResponse(
    request.url, 200, {"Content-Type": "application/x-amz-json-1.0"}, _Raw(b"{}")))

def client_half():
    _client.get_item(TableName="t", Key={"pk": {"S": "nothing-here"}})
"""
#: The world's half: moto serves a GetItem as botocore prepared it (the request is made once, here).
_WORLD_HALF = """
from moto import mock_aws
from moto.core.models import botocore_stubber

_mock = mock_aws()
_mock.start()
_world = boto3.client("dynamodb")
_world.create_table(TableName="t", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                    AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
_prepared = []
_world.meta.events.register_first("before-send.dynamodb.GetItem", lambda request, **_: _prepared.append(request))
_world.get_item(TableName="t", Key={"pk": {"S": "nothing-here"}})

def world_half():
    botocore_stubber.process_request(_prepared[0])
"""
#: The environment's side: it answers each line after the client half.
_PARTNER = _HALVES + """
import sys
for line in sys.stdin:
    client_half()
    sys.stdout.write(line)
    sys.stdout.flush()
"""
#: The world's side, run in a process of its own (moto started in the bench's process would serve its worlds): each
#: turn the client half goes to the partner, or is done here, and then the world half is done here. It prints the
#: difference of the medians, alternated turn by turn so that the machine's drift falls on both alike.
_CALLER = _HALVES + _WORLD_HALF + """
import statistics, subprocess, sys, time

partner = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           text=True, bufsize=1)

def turn(alone):
    started = time.perf_counter()
    if alone:
        client_half()
    else:
        partner.stdin.write("x\\n")
        partner.stdout.readline()
    world_half()
    return time.perf_counter() - started

for _ in range(30):  # warm both
    turn(False)
    turn(True)
times = {False: [], True: []}
for i in range(2 * int(sys.argv[2])):
    times[bool(i % 2)].append(turn(bool(i % 2)))
partner.stdin.close()
partner.wait(timeout=30)
print((statistics.median(times[False]) - statistics.median(times[True])) * 1000)
"""
_FLOOR_TURNS = 400


def crossing_floor() -> float:
    """This machine's own price for splitting an AWS call between two processes: ms a round trip costs when one
    process does the client's half of a DynamoDB GetItem (boto3 builds, signs and parses it) and another then serves
    it with moto, over one process doing both halves. No part of the sandbox runs: an AWS call's extra in an
    environment cannot be cheaper than this. (The code's size counts: on the 2-core VM this was measured on, these
    halves cost 0.21-0.25 ms, where two processes each running a small loop as long took 0.09 ms.)"""
    import subprocess

    done = subprocess.run([sys.executable, "-c", _CALLER, _PARTNER, str(_FLOOR_TURNS)], capture_output=True,
                          text=True, timeout=600, env={k: v for k, v in os.environ.items() if not k.startswith("AWS_")})
    if done.returncode != 0:
        raise RuntimeError(f"the crossing floor's processes failed: {done.stderr[-2000:]}")
    return round(float(done.stdout.strip().splitlines()[-1]), 3)


def measure(repeat: int) -> Environments:
    trip = round_trip(max(3, repeat // 3))
    trip["machine_floor_ms"] = crossing_floor()
    return {"runs": runs(repeat), "cold_start": cold_start(repeat), "round_trip": trip,
            "targets": {**TARGETS, "run_x_by_scenario": RUN_TARGETS}}


def _run_target(name: str) -> float:
    return RUN_TARGETS.get(name, TARGETS["run_x"])


def environment_misses(r: Environments) -> list[str]:
    out = [f"environments: {name} runs {v['ratio_x']}x the thread isolation (target <= {_run_target(name)}x)"
           for name, v in r["runs"].items() if v["ratio_x"] > _run_target(name)]
    if r["cold_start"]["fork_to_ready_ms"] > TARGETS["cold_start_ms"]:
        out.append(f"environments: a cold start takes {r['cold_start']['fork_to_ready_ms']} ms before the handler's "
                   f"init (target <= {TARGETS['cold_start_ms']} ms)")
    if r["round_trip"]["extra_ms"] > TARGETS["round_trip_ms"]:
        out.append(f"environments: an AWS call costs {r['round_trip']['extra_ms']} ms more than in-process "
                   f"(target <= {TARGETS['round_trip_ms']} ms)")
    return out


def environment_table(r: Environments) -> list[str]:
    table = tabulate([[name, v["thread_ms"], v["process_ms"], f"{v['ratio_x']:.2f}x"] for name, v in r["runs"].items()],
                     ["run", "thread ms", "process ms", "ratio"], tablefmt="simple", floatfmt=".1f",
                     colalign=("left", "right", "right", "right"))
    lines = ["Execution environments as processes (medians; each ratio against the thread isolation, same run)",
             *textwrap.indent(table, "  ").splitlines()]
    c, t = r["cold_start"], r["round_trip"]
    lines.append(f"  cold start: {c['fork_to_ready_ms']} ms fork to ready, then {c['empty_handler_init_ms']} ms "
                 f"for an empty handler's init (back to back: each waits for a spare to be made)")
    if "spare_waiting_ms" in c:
        lines.append(f"  cold start with a spare waiting ({SPARE_TIME:g} s apart, as a learner's runs): "
                     f"{c['spare_waiting_ms']} ms fork to ready (information: no target)")
    lines.append(f"  one AWS call: {t['process_ms']} ms in an environment, {t['thread_ms']} ms in-process "
                 f"(+{t['extra_ms']} ms)")
    if "machine_floor_ms" in t:
        lines.append(f"  this machine: an AWS call's two halves (boto3's client, moto) in two processes taking turns "
                     f"cost +{t['machine_floor_ms']} ms over one process doing both (no sandbox: the floor under it)")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sandbox.bench.environments", description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    r = measure(args.repeat)
    print(json.dumps(r, indent=2) if args.json else "\n".join(environment_table(r) + environment_misses(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
