"""`make bench` writes its figures; this checks the shape of what it writes, never the speed."""
import json
import subprocess
import sys

import pytest

from conftest import ROOT


@pytest.mark.slow
def test_quick_bench_writes_json_and_table(tmp_path):
    out = tmp_path / "bench-results.json"
    # The core figures and the grading section. The others run in make bench; the lessons' and the kernels'
    # sections are smoke-tested by test_bench_notebooks and test_hub, the widgets' list by test_widgets_lesson,
    # the browser's moves by test_lab_ui (the test the browser section runs); the grading section grades a class,
    # as make test-grading does.
    skipped = ("notebooks", "isolation", "exploration", "widgets", "browser", "environments", "grading")
    proc = subprocess.run([sys.executable, "-m", "sandbox.bench.suite", "--quick", "--out", str(out),
                           *(a for name in skipped for a in ("--skip", name))],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(out.read_text())
    from sandbox.bench.suite import QUICK_SCENARIOS
    from sandbox.scenarios import SCENARIOS

    assert set(results["scenario_wall"]) == set(QUICK_SCENARIOS) and set(QUICK_SCENARIOS) <= set(SCENARIOS)
    for figure in results["scenario_wall"].values():
        assert figure["wall_s"] > 0 and figure["verdict"] == "valid"  # the idempotent handler is valid everywhere
    for section in ("compression", "cli_start", "overhead", "campaign", "cost_per_order", "memory", "misses",
                    "targets"):
        assert section in results
    assert not set(skipped) & set(results)  # left out as asked
    assert set(results["overhead"]) == {"no-fault", "concurrent-claims", "sqs-batch-failure"}
    for v in results["overhead"].values():
        # The ratios are taken before rounding; the rounded times reproduce them to within rounding.
        assert v["raw_moto_s"] > 0 and v["ratio_x"] == pytest.approx(v["scenario_s"] / v["raw_moto_s"], rel=0.02)
        assert v["prebuilt_s"] > 0 and v["aws_calls"] > 0
        assert v["prebuilt_ratio_x"] == pytest.approx(v["scenario_s"] / v["prebuilt_s"], rel=0.02)
        assert v["plain_x"] == pytest.approx(v["raw_moto_s"] / v["prebuilt_s"], rel=0.02)
        assert set(v["every_core"]) == {"ratio_x", "prebuilt_ratio_x"} and isinstance(v["pinned"], bool)
    cli = results["cli_start"]
    assert cli["ratio_x"] == pytest.approx(cli["cli_s"] / cli["bare_import_s"], rel=0.02)
    campaign = results["campaign"]
    assert campaign["runs"] == len(SCENARIOS) and campaign["valid"] == campaign["runs"]
    table = out.with_suffix(".txt").read_text()
    assert "Scenario wall time" in table and "Targets missed" in table
    assert table.strip() in proc.stdout


@pytest.mark.parametrize("name", ["no-fault", "concurrent-claims"])
def test_the_replay_makes_the_runs_calls_with_the_runs_outcomes(name):
    """The overhead ratio compares like with like: the same requests, answered the same way."""
    from sandbox import run_scenario
    from sandbox.aws import gateway
    from sandbox.bench import suite as bench

    calls = []
    with gateway.tap(lambda service, op, params, origin: calls.append((service, op, params, origin))):
        run = run_scenario(name, bench.HANDLER)
    recorded = [e["result"] for e in run.history.of_type("aws")]
    assert len(recorded) == len(calls) > 0
    replay = bench.MotoReplay()
    try:
        assert replay.replay(calls, cold=True) == recorded
        assert replay.replay(calls, cold=False) == recorded
    finally:
        replay.close()
    if name == "concurrent-claims":
        assert recorded == ["ok", "ConditionalCheckFailed", "ok"]  # the lost claim is replayed as lost


def test_one_core_pins_threads_started_meanwhile_and_lets_go_after():
    import os
    import threading

    from sandbox.bench import suite as bench

    if not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs a machine with two cores or more that can pin a thread")
    before = os.sched_getaffinity(0)
    seen = {}
    with bench.one_core() as pinned:
        worker = threading.Thread(target=lambda: seen.update(cpus=os.sched_getaffinity(0)))
        worker.start()
        worker.join()
    assert pinned and len(seen["cpus"]) == 1 and seen["cpus"] <= before
    assert os.sched_getaffinity(0) == before


def test_a_containers_dynamodb_calls_go_through_a_table_resource():
    """As the examples' handlers make them: one Table per container, its first action built then."""
    from sandbox.bench import suite as bench

    replay = bench.MotoReplay()
    try:
        caller = replay._cold_caller("dynamodb", "orders-handler/c1")
        assert isinstance(caller, bench._TableCaller)
        replay.replay([], cold=True)  # a fresh moto with the idempotency table
        caller.call("PutItem", {"TableName": "idempotency", "Item": {"pk": {"S": "k"}}})
        assert list(caller.tables) == ["idempotency"]
        got = caller.call("GetItem", {"TableName": "idempotency", "Key": {"pk": {"S": "k"}}, "ConsistentRead": True})
        assert got["Item"] == {"pk": "k"}  # a Table answers in Python values, as the handler sees them
        assert not isinstance(replay._cold_caller("sqs", "orders-handler/c1"), bench._TableCaller)
    finally:
        replay.close()


def test_the_browser_section_says_why_it_did_not_run_and_judges_its_ratio(monkeypatch, tmp_path):
    from sandbox.bench import browser

    monkeypatch.setattr(browser, "CHROMIUM", tmp_path / "no-chromium")
    r = browser.browser_times()
    assert r == {"not_run": f"{tmp_path / 'no-chromium'} is missing (make chromium installs it)"}
    assert browser.browser_table(r)[1] == f"  not run: {r['not_run']}" and browser.browser_misses(r) == []
    moves = [{"key": "Home", "lock_seconds": 0, "timeline_ms": 500, "map_ms": 520, "ms": 520}]
    over = {"moves": moves, "move_ms": 520, "bare_ms": 100.0, "ratio_x": 5.2}
    assert browser.browser_misses(over) == ["browser: a lock slider move showed both pictures 5.2x a bare run "
                                            "after the key press (target <= 5x)"]
    assert browser.browser_misses({**over, "ratio_x": 4.9}) == []
    assert "median 520 ms against a bare run of 100.0 ms: 5.20x" in browser.browser_table(over)[-1]


def test_the_crossing_floor_splits_a_real_call_and_never_sends_it():
    """The floor's halves are a real GetItem (the world half finds moto's table and answers it), its client half
    reaches no network (its send refuses), and the figure is a plausible number of milliseconds."""
    from sandbox.bench import environments

    check = environments._HALVES + environments._WORLD_HALF + """
import json
from moto.core.models import botocore_stubber
status, _, body = botocore_stubber.process_request(_prepared[0])
client_half()
_client.meta.events.unregister("before-send.dynamodb.GetItem", unique_id=None)
try:
    boto3.client("dynamodb", endpoint_url="http://192.0.2.1:9").list_tables()
    sent = True
except Exception as exc:
    sent = type(exc).__name__
print(json.dumps([status, body if isinstance(body, str) else body.decode(), sent]))
"""
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    status, body, sent = json.loads(done.stdout.strip().splitlines()[-1])
    assert (status, body) == (200, "{}")
    assert sent == "ConnectionRefusedError", sent
    floor = environments.crossing_floor()
    assert -5 < floor < 50, floor
