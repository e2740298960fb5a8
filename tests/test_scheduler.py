"""Deterministic concurrency: seeded, round-robin, scripted and exhaustive schedules."""
import subprocess
import sys
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox import SCENARIOS, HandlerBlocked, Sandbox, run_scenario
from sandbox.core.policies import ReplayPolicy
from sandbox.core.scheduler import Scheduler
from sandbox.modes.explore import explore, explore_scenario

from conftest import ROOT, example, no_real_sleep

READ_THEN_WRITE = example("read_then_write.py")
CONDITIONAL_PUT = str(ROOT / "solutions" / "02_claim_the_key.py") + ":handler"


def test_same_seed_same_history_byte_for_byte():
    a = run_scenario("concurrent-claims", READ_THEN_WRITE, seed=11, settings={"copies": 3})
    b = run_scenario("concurrent-claims", READ_THEN_WRITE, seed=11, settings={"copies": 3})
    assert a.history.to_json() == b.history.to_json()
    assert a.report() == b.report()


def test_cli_output_is_identical_across_processes():
    cmd = [sys.executable, "-m", "sandbox", "run", "concurrent-claims", "--handler", READ_THEN_WRITE,
           "--seed", "3", "--json"]
    runs = [subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120) for _ in range(2)]
    assert runs[0].stdout == runs[1].stdout and runs[0].stdout
    assert runs[0].returncode == runs[1].returncode


def test_seeds_choose_different_interleavings():
    orders = {run_scenario("concurrent-claims", READ_THEN_WRITE, seed=s).history.to_json() for s in range(10)}
    assert len(orders) > 1


def test_read_then_write_breaks_for_some_seeds():
    verdicts = {s: run_scenario("concurrent-claims", READ_THEN_WRITE, seed=s).status for s in range(50)}
    bad = [s for s, v in verdicts.items() if v == "invalid"]
    assert bad and len(bad) < 50, verdicts  # a race: neither always nor never
    dup = run_scenario("concurrent-claims", READ_THEN_WRITE, seed=bad[0]).verdict.duplicates[0]
    assert "concurrent duplicate" in dup.text


@pytest.mark.slow
def test_conditional_put_holds_for_seeds_0_to_59():
    # A slice: the exhaustive search below covers every schedule of three copies, and make campaign 200 seeds.
    bad = [s for s in range(60) if run_scenario("concurrent-claims", CONDITIONAL_PUT, seed=s).status != "valid"]
    assert bad == []


@pytest.mark.slow
def test_exhaustive_counts_the_bad_interleavings_of_read_then_write():
    result = explore_scenario("concurrent-claims", READ_THEN_WRITE)
    assert not result.truncated
    assert 0 < result.broken < result.schedules
    # Replaying the first bad schedule reproduces it exactly, from its choices and from its script.
    replay = run_scenario("concurrent-claims", READ_THEN_WRITE, policy=ReplayPolicy(result.first_broken))
    assert replay.status == "invalid"
    scripted = run_scenario("concurrent-claims", READ_THEN_WRITE, policy=result.first_broken_script)
    assert scripted.history.to_json() == replay.history.to_json()


def test_the_first_broken_schedule_replays_from_its_script_byte_for_byte():
    found = explore_scenario("concurrent-claims", READ_THEN_WRITE, max_schedules=3, seed=2)
    assert found.truncated and found.status == "invalid" and found.first_broken_verdict == "invalid"
    by_choices = run_scenario("concurrent-claims", READ_THEN_WRITE, seed=2, policy=ReplayPolicy(found.first_broken))
    by_script = run_scenario("concurrent-claims", READ_THEN_WRITE, seed=2, policy=found.first_broken_script)
    assert by_script.status == "invalid"
    assert by_script.history.to_json() == by_choices.history.to_json()


def test_exploration_reports_each_schedule_as_it_ends():
    heard = []
    found = explore_scenario("concurrent-claims", CONDITIONAL_PUT, settings={"copies": 3}, max_schedules=4,
                             on_schedule=heard.append)
    assert heard == ["valid"] * 4 and found.schedules == 4 and found.truncated and found.status == "unknown"


def test_exhaustive_finds_no_bad_interleaving_of_the_conditional_put():
    two = explore_scenario("concurrent-claims", CONDITIONAL_PUT, reduction=False)  # every interleaving
    assert two.schedules > 5 and two.all_valid


@pytest.mark.slow
@pytest.mark.usefixtures("thread_isolation")
def test_exhaustive_three_copies_of_the_conditional_put():
    """Every inequivalent interleaving of three claims (the reduced search, which test_dpor checks against the full
    one on two and three copies; the full search of three copies, over a hundred schedules, runs in make bench)."""
    three = explore_scenario("concurrent-claims", CONDITIONAL_PUT, settings={"copies": 3})
    assert three.reduction and three.schedules >= 6 and three.all_valid  # at least each order of the three claims


def test_scripted_schedule_shows_the_race_every_time():
    race = ["inv-1:GetItem", "inv-2:GetItem", "inv-1:PutItem", "inv-2:PutItem"]
    for seed in range(3):
        r = run_scenario("concurrent-claims", READ_THEN_WRITE, seed=seed, policy=race)
        assert r.status == "invalid"
        ops = [(e["inv"], e["op"], e["result"]) for e in r.history.of_type("aws")]
        assert ops[:4] == [("inv-1", "GetItem", "ok"), ("inv-2", "GetItem", "ok"),
                           ("inv-1", "PutItem", "ok"), ("inv-2", "PutItem", "ok")]
    safe = ["inv-1:GetItem", "inv-1:PutItem", "inv-2:GetItem"]
    assert run_scenario("concurrent-claims", READ_THEN_WRITE, policy=safe).status == "valid"


def test_scripted_schedule_names_an_impossible_step():
    with pytest.raises(Exception, match="wants 'inv-9'"):
        run_scenario("concurrent-claims", READ_THEN_WRITE, policy=["inv-9"])


def test_round_robin_alternates():
    r = run_scenario("concurrent-claims", READ_THEN_WRITE, policy="round-robin")
    ops = [e["inv"] for e in r.history.of_type("aws")]
    assert ops[:2] == ["inv-1", "inv-2"]


def test_clock_jumps_to_the_next_wake_up():
    order = []
    with Sandbox() as sb:
        def sleeper(name, seconds):
            time.sleep(seconds)
            order.append((name, sb.clock.elapsed()))

        for name, secs in (("a", 30), ("b", 10), ("c", 20)):
            sb.scheduler.spawn(sleeper, name, secs, name=name)
        with no_real_sleep() as slept:
            sb.run()
        assert slept == []  # sixty virtual seconds, and no real sleep at all
    assert order == [("b", 10), ("c", 20), ("a", 30)]


def test_explore_visits_every_interleaving_of_two_two_step_tasks():
    seen = set()

    def case(policy):
        with Sandbox(policy=policy) as sb:
            log = []

            def worker(name):
                for step in range(2):
                    sb.scheduler.yield_point(f"{name}{step}")
                    log.append(f"{name}{step}")

            sb.scheduler.spawn(worker, "a", name="a")
            sb.scheduler.spawn(worker, "b", name="b")
            sb.run()
        seen.add(tuple(log))
        return "valid"

    result = explore(case)
    # 4 steps, 2 from each task, in order within a task: C(4,2) = 6 interleavings.
    assert len(seen) == 6 and result.schedules >= 6


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(SCENARIOS)), st.integers(0, 50),
       st.sampled_from([example("naive_email.py"), example("idempotent.py")]))
def test_a_turn_handed_straight_back_changes_nothing(name, seed, handler):
    """A forced step taken on the task's own thread gives the history the loop would have given."""
    straight = run_scenario(name, handler, seed=seed)
    original = Scheduler._resume_at_once
    Scheduler._resume_at_once = lambda self, task: False  # every turn goes back to the loop
    try:
        through_loop = run_scenario(name, handler, seed=seed)
    finally:
        Scheduler._resume_at_once = original
    assert straight.history.to_json() == through_loop.history.to_json()
    assert straight.report() == through_loop.report()


def test_many_quick_turns_in_a_row_are_not_a_blocked_task():
    """The watchdog counts from the last yield point, also when the task took its turns on its own."""
    def works_between_sleeps(event, context):
        for _ in range(8):
            busy_until = time.perf_counter() + 0.06  # real work, well under the watchdog each time
            while time.perf_counter() < busy_until:
                pass
            time.sleep(1)  # virtual: a yield point
        return "done"

    with Sandbox(watchdog=0.3) as sb:
        inv = sb.function(works_between_sleeps, timeout=30).invoke({})
        assert inv.outcome == "ok" and inv.result == "done"  # 0.48 s of real work in all, 0.06 s at a time
        assert sb.clock.elapsed() == 8.0


def test_busy_loop_is_detected_and_named():
    def spin(event, context):
        while True:
            pass

    with Sandbox(watchdog=0.3) as sb:
        inv = sb.function(spin).invoke({})
        assert inv.outcome == "error"
        assert "inv-1" in inv.error_text or "blocked outside the sandbox" in inv.error_text
        end = sb.history.of_type("invoke_end")[-1]
        assert end["inv"] == "inv-1" and "blocked outside the sandbox" in end["error"]


def test_an_event_nobody_sets_times_the_function_out_in_virtual_time():
    never = threading.Event()

    def waits(event, context):
        never.wait()  # a cooperative wait: the world runs on, and the deadline comes

    with no_real_sleep(), Sandbox(watchdog=30) as sb:
        inv = sb.function(waits, timeout=5).invoke({})
        assert inv.outcome == "timeout" and sb.clock.elapsed() == 5.0


def test_blocking_c_call_is_abandoned_with_a_clear_error():
    release = threading.Lock()
    release.acquire()

    def stuck(event, context):
        release.acquire()  # a raw lock wait in C: cannot be interrupted

    try:
        with Sandbox(watchdog=0.3) as sb:
            sb.accept({"orderId": "o-1"})
            inv = sb.function(stuck).invoke({}, keys=["o-1"])
            assert inv.outcome == "error" and "inv-1 ran for 0.3 s of real time" in inv.error_text
            verdict = sb.check()
            # The handler never returned: whether it would have sent the email is unknown, not lost.
            assert verdict.status == "unknown"
            assert [f.kind for f in verdict.findings] == ["abandoned"]
    finally:
        release.release()


def test_deadlock_between_tasks_is_reported():
    with Sandbox() as sb:
        holder = {}

        def a():
            sb.scheduler.wait_for(holder["b"])

        def b():
            sb.scheduler.wait_for(holder["a"])

        holder["a"] = sb.scheduler.spawn(a, name="task-a")
        holder["b"] = sb.scheduler.spawn(b, name="task-b")
        with pytest.raises(HandlerBlocked, match="deadlock: task-a, task-b"):
            sb.run()


@settings(max_examples=20, deadline=None)
@given(st.lists(st.floats(0, 50, allow_nan=False), min_size=1, max_size=6), st.integers(0, 10**6))
def test_virtual_sleeps_wake_in_time_order_whatever_the_seed(delays, seed):
    with Sandbox(seed=seed) as sb:
        woke = []
        for i, d in enumerate(delays):
            sb.scheduler.spawn(lambda i=i, d=d: (sb.scheduler.sleep(d), woke.append((sb.clock.elapsed(), i))),
                               name=f"t{i}")
        sb.run()
    assert [t for t, _ in woke] == sorted(t for t, _ in woke)
    assert sorted(t for t, _ in woke) == pytest.approx(sorted(delays), abs=1e-6)
