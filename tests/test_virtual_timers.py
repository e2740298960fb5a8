"""The environment's clock everywhere a handler reads time: file times, ``signal.alarm``, an event loop's timers
racing a real child, and a thread that computes without waiting.

The unit tests drive ``alarms.Alarm`` and ``filetimes.FileClock`` on clocks of their own, with Hypothesis choosing
the durations; the others run handlers in execution environments, as a learner would.
"""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox import Sandbox
from sandbox.runtime.environment import alarms, filetimes

ORDER = {"orderId": "o-1", "email": "ana@example.com", "amount": 12}


def _write(tmp_path: Path, name: str, code: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(code))
    return f"{path}:handler"


# -- alarms, on a clock of the test's own ---------------------------------------------------------
class Rang(Exception):
    pass


class _Clock:
    def __init__(self) -> None:
        self.t = 1000.0
        self.rings: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.t += seconds


def _glibc_alarm_return(left: float) -> int:
    """What glibc's alarm() returns for ``left`` seconds of the old timer (alarm.c): rounded to the nearest
    second, never 0 while it was armed."""
    whole, fraction = int(left), left - int(left)
    return whole + 1 if fraction >= 0.5 or (whole == 0 and fraction > 0) else whole


@settings(max_examples=200, deadline=None)
@given(alarm=st.integers(1, 30), sleep=st.floats(0, 40, allow_nan=False))
def test_an_alarm_cuts_a_sleep_that_spans_it_and_its_exception_leaves_the_sleep(alarm, sleep):
    clock = _Clock()

    def ring() -> None:
        clock.rings.append(clock.t)
        raise Rang()

    timer = alarms.Alarm(clock.now, ring)
    start = clock.t
    assert timer.alarm(alarm) == 0
    try:
        timer.sleep(sleep, clock.sleep)
    except Rang:
        assert alarm <= sleep and clock.rings == [start + alarm] and clock.t == start + alarm
    else:
        assert alarm > sleep and clock.rings == [] and clock.t == start + sleep
        assert timer.alarm(0) == _glibc_alarm_return(start + alarm - clock.t)
    assert timer.get() == (0.0, 0.0)


@settings(max_examples=200, deadline=None)
@given(first=st.floats(0.001, 5), interval=st.one_of(st.just(0.0), st.floats(0.01, 3)), sleep=st.floats(0, 12))
def test_a_handler_that_returns_lets_the_sleep_go_on_and_an_interval_timer_rings_each_period(first, interval, sleep):
    """PEP 475: a signal handler that returns does not end the sleep; it goes on for the rest, to the same end."""
    clock = _Clock()
    timer = alarms.Alarm(clock.now, lambda: clock.rings.append(clock.t))
    start = clock.t
    assert timer.set(first, interval) == (0.0, 0.0)
    timer.sleep(sleep, clock.sleep)
    assert math.isclose(clock.t, start + sleep, abs_tol=1e-9)
    expected = 0 if first > sleep else (1 if interval == 0 else 1 + int((sleep - first) / interval + 1e-9))
    assert abs(len(clock.rings) - expected) <= (1 if interval else 0)  # a ring at the very end: either way
    for n, at in enumerate(clock.rings):
        assert math.isclose(at, start + first + n * interval, abs_tol=1e-6)


def test_alarm_zero_disarms_and_says_what_was_left():
    clock = _Clock()
    timer = alarms.Alarm(clock.now, lambda: None)
    assert timer.alarm(5) == 0
    clock.sleep(1.2)
    assert timer.alarm(0) == 4  # 3.8 s left
    assert timer.alarm(0) == 0
    timer.set(0.2)
    assert timer.alarm(0) == 1  # glibc: never 0 while it was armed


# -- file times, on a clock of the test's own -----------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, 5_000_000_000), st.floats(0, 100)), min_size=1, max_size=20),
       pick=st.data())
def test_a_stamp_reads_as_the_clock_read_when_the_kernel_made_it(steps, pick):
    """Each answer: some real nanoseconds pass, then the world's clock moves on. A stamp between two answers is
    the world's time at the first, plus the real time since once that passes the quantum (and never past the
    next answer's time)."""
    clock = filetimes.FileClock.__new__(filetimes.FileClock)
    clock.reals, clock.virtuals, clock.virtual_ns, clock.quantum_ns = [0], [1.0e9], [10**18], 1_000_000_000
    clock.set_times = {}
    real, virtual = 0, 1.0e9
    for real_step, virtual_step in steps:
        real, virtual = real + real_step + 1, virtual + virtual_step
        clock.reals.append(real)
        clock.virtuals.append(virtual)
        clock.virtual_ns.append(round(virtual * 1e9))
    i = pick.draw(st.integers(0, len(clock.reals) - 1))
    end = clock.reals[i + 1] if i + 1 < len(clock.reals) else clock.reals[i] + 10**10
    stamp = pick.draw(st.integers(clock.reals[i], end - 1))
    seconds, ns = clock.virtual(stamp)
    ahead = stamp - clock.reals[i]
    if ahead <= clock.quantum_ns:
        assert (seconds, ns) == (clock.virtuals[i], clock.virtual_ns[i])
    else:
        assert ns == min([clock.virtual_ns[i] + ahead, *clock.virtual_ns[i + 1:i + 2]])
    assert clock.virtual(stamp + 1)[1] >= ns  # later stamps never read earlier


FILE_AGES = """
    import os, pathlib, shutil, time

    def handler(event, context):
        marker = pathlib.Path("/tmp/marker")
        marker.write_text("sent")
        t0 = time.time()
        written = os.path.getmtime(marker)
        time.sleep(event["sleep"])
        age = time.time() - marker.stat().st_mtime
        os.utime(marker, (t0 - 100.5, t0 - 50.25))
        touched = os.stat(marker).st_atime - t0  # before a read moves it (relatime)
        shutil.copy2(marker, "/tmp/copy")
        with os.scandir("/tmp") as entries:
            scanned = {e.name: e.stat().st_mtime - t0 for e in entries if e.name in ("marker", "copy")}
        with open(marker) as f:
            opened = os.fstat(f.fileno()).st_mtime - t0
        return {"written": written - t0, "age": age, "touched": touched,
                "scanned": scanned, "opened": opened}
"""


@pytest.mark.parametrize("sleep", [0.0, 0.5, 2.0, 120.0])
def test_a_files_age_is_the_virtual_time_since_it_was_written(tmp_path, sleep):
    with Sandbox(seed=0) as sb:
        inv = sb.function(_write(tmp_path, "ages", FILE_AGES), timeout=300).invoke({"sleep": sleep})
    assert inv.outcome == "ok", inv.error_text
    assert inv.result == {"written": 0.0, "age": sleep, "touched": -100.5, "scanned": {"marker": -50.25,
                          "copy": -50.25}, "opened": -50.25}


# -- alarms in an environment -------------------------------------------------------------------
ALARMS = """
    import signal, time

    RINGS = []

    def _ring(signum, frame):
        RINGS.append(round(time.monotonic() - START[0], 6))

    START = [0.0]

    def handler(event, context):
        signal.signal(signal.SIGALRM, _ring)
        START[0] = time.monotonic()
        signal.alarm(1)
        time.sleep(2.5)  # the handler returns: the sleep goes on to its end
        slept = round(time.monotonic() - START[0], 6)
        signal.alarm(5)
        time.sleep(1.2)
        left = signal.alarm(0)
        signal.setitimer(signal.ITIMER_REAL, 0.3, 0.5)
        time.sleep(2)
        itimer = signal.setitimer(signal.ITIMER_REAL, 0)
        return {"rings": RINGS, "slept": slept, "left": left, "itimer_left": round(itimer[0], 6)}
"""


def test_alarm_and_itimer_ring_on_the_environments_clock(tmp_path):
    with Sandbox(seed=0) as sb:
        inv = sb.function(_write(tmp_path, "alarms", ALARMS), timeout=30).invoke(ORDER)
    assert inv.outcome == "ok", inv.error_text
    assert inv.result == {"rings": [1.0, 4.0, 4.5, 5.0, 5.5], "slept": 2.5, "left": 4, "itimer_left": 0.3}


ALARM_IN_WAITS = """
    import queue, signal, subprocess, threading, time
    from sandbox import orders_in, send_confirmation_email

    class Slow(Exception):
        pass

    def _ring(signum, frame):
        raise Slow(round(time.monotonic() - START[0], 6))

    START = [0.0]

    def _guarded(wait, seconds=0.5):
        START[0] = time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            wait()
        except Slow as rang:
            return f"rang at {rang}"
        finally:
            signal.alarm(0)
        return "no ring"

    def handler(event, context):
        signal.signal(signal.SIGALRM, _ring)
        worker = threading.Thread(target=time.sleep, args=(2,))
        worker.start()
        said = {"join": _guarded(worker.join), "event": _guarded(lambda: threading.Event().wait(3)),
                "queue": _guarded(lambda: queue.Queue().get(timeout=3)),
                "child": _guarded(lambda: subprocess.run(["sleep", "3"])),
                "email": _guarded(lambda: [send_confirmation_email(o) for o in orders_in(event)], 0.001)}
        signal.signal(signal.SIGALRM, lambda signum, frame: RANG.append(round(time.monotonic() - START[0], 6)))
        said["event_goes_on"] = _guarded(lambda: threading.Event().wait(1.25)), RANG
        return said

    RANG = []
"""


def test_an_alarm_ends_the_main_threads_waits_and_rings_as_its_requests_are_answered(tmp_path):
    """join, Event.wait, Queue.get and a child (real time: about 0.5 s) are cut by the alarm; an email whose round
    trip moves the clock past it rings as it is answered; a handler that returns lets the wait go on."""
    with Sandbox(seed=0) as sb:
        inv = sb.function(_write(tmp_path, "alarm_waits", ALARM_IN_WAITS), timeout=60).invoke(ORDER)
    assert inv.outcome == "ok", inv.error_text
    result = inv.result
    child = result.pop("child")
    assert result == {"join": "rang at 0.5", "event": "rang at 0.5", "queue": "rang at 0.5",
                      "email": result["email"], "event_goes_on": ["no ring", [0.5]]}
    # in real time, and then the world's clock is moved to it (later only on a machine too loaded to look in time)
    assert child.startswith("rang at ") and 0.5 <= float(child.split()[-1]) < 5, child
    assert result["email"].startswith("rang at ") and float(result["email"].split()[-1]) >= 0.001, result["email"]


# -- an event loop's timers beside a real child ------------------------------------------------------
ASYNCIO_CHILD = """
    import asyncio, time

    async def _main():
        t0 = time.monotonic()
        proc = await asyncio.create_subprocess_exec("sh", "-c", "sleep 0.1; echo hi",
                                                    stdout=asyncio.subprocess.PIPE)
        out, _ = await asyncio.wait_for(proc.communicate(), 5)  # the child answers long before the timeout
        after_child = time.monotonic() - t0
        t1 = time.monotonic()
        await asyncio.sleep(60)  # no child: the world's sleep, instant in real time
        return {"out": out.decode().strip(), "after_child_under_1s": after_child < 1.0,
                "slept": round(time.monotonic() - t1, 6)}

    def handler(event, context):
        return asyncio.run(_main())
"""


def test_an_event_loops_timeout_waits_for_a_real_child_and_a_lone_sleep_stays_virtual(tmp_path):
    import time

    started = time.monotonic()
    with Sandbox(seed=0) as sb:
        inv = sb.function(_write(tmp_path, "asyncio_child", ASYNCIO_CHILD), timeout=120).invoke({})
    assert inv.outcome == "ok", inv.error_text
    assert inv.result == {"out": "hi", "after_child_under_1s": True, "slept": 60.0}
    assert time.monotonic() - started < 30  # the minute's sleep took no real minute


# -- a thread that computes without waiting ---------------------------------------------------------
COMPUTING_THREAD = """
    import threading, time
    from sandbox import orders_in, send_confirmation_email

    def _crunch(seconds, done):
        end = time.process_time() + seconds  # CPU time: it never waits on anything
        while time.process_time() < end:
            pass
        time.sleep(0.1)  # then it waits, and takes turns again
        done.append("crunched")

    def handler(event, context):
        done = []
        worker = threading.Thread(target=_crunch, args=(1.5, done))
        worker.start()
        for order in orders_in(event):
            send_confirmation_email(order)  # sent while the worker computes, once it is past the quantum
        sent_while_crunching = not done
        worker.join()
        return {"sent_while_crunching": sent_while_crunching, "done": done}
"""


def test_a_thread_computing_past_the_quantum_is_preempted_and_takes_turns_again_when_it_waits(tmp_path):
    with Sandbox(seed=0) as sb:
        inv = sb.function(_write(tmp_path, "computing", COMPUTING_THREAD), timeout=30).invoke(ORDER)
    assert inv.outcome == "ok", inv.error_text
    assert inv.result == {"sent_while_crunching": True, "done": ["crunched"]}


HEARTBEAT_BESIDE_COMPUTING = """
    import threading, time

    BEATS = []

    def _beat():
        while True:
            time.sleep(0.5)
            BEATS.append(time.monotonic())

    def handler(event, context):
        threading.Thread(target=_beat, daemon=True).start()
        t0 = time.monotonic()
        end = time.process_time() + 2.5
        while time.process_time() < end:  # computing past the quantum: the heartbeat runs beside it
            pass
        elapsed = time.monotonic() - t0
        # real time, on a loaded machine too: far from the 30 s the world's sleeps would reach at once
        return {"beats": len(BEATS) >= 2, "elapsed_as_real_time": 2.0 <= elapsed < 20,
                "beats_as_real_time": len(BEATS) <= elapsed / 0.5 + 1}
"""


def test_a_sleeping_thread_beside_a_computing_one_sleeps_in_real_time_not_in_a_race_of_the_worlds_sleeps(tmp_path):
    """Once the main thread is preempted, the heartbeat's 0.5 s sleeps end as real time passes: the world's sleeps,
    taken one after another at once, would run the clock past the timeout while the main thread computes."""
    with Sandbox(seed=0) as sb:
        inv = sb.function(_write(tmp_path, "heartbeat", HEARTBEAT_BESIDE_COMPUTING), timeout=30).invoke(ORDER)
    assert inv.outcome == "ok", inv.error_text
    assert inv.result == {"beats": True, "elapsed_as_real_time": True, "beats_as_real_time": True}


SAME_EVERY_RUN = """
    import os, signal, threading, time
    from sandbox import orders_in, send_confirmation_email

    class Slow(Exception):
        pass

    def _ring(signum, frame):
        raise Slow()

    def handler(event, context):
        signal.signal(signal.SIGALRM, _ring)
        for order in orders_in(event):
            marker = f"/tmp/sent-{order['orderId']}"
            age = time.time() - os.path.getmtime(marker) if os.path.exists(marker) else None
            print("marker age", age)
            if age is None or age > 1.5:
                send_confirmation_email(order)
                with open(marker, "w") as f:
                    f.write("sent")
        signal.setitimer(signal.ITIMER_REAL, 0.25)
        try:
            worker = threading.Thread(target=time.sleep, args=(0.1,))
            worker.start()
            worker.join()
            time.sleep(0.5)
        except Slow:
            print("rang at", time.time(), "left", signal.alarm(0))
        return "ok"
"""


def test_file_times_and_alarms_keep_the_same_seeds_history_the_same(tmp_path):
    from sandbox import run_scenario

    handler = _write(tmp_path, "same_every_run", SAME_EVERY_RUN)
    first, second = (run_scenario("async-duplicate", handler, seed=0) for _ in range(2))
    assert "marker age" in first.history.to_json() and "rang at" in first.history.to_json()
    assert first.history.to_json() == second.history.to_json()


ALARM_IN_COMPUTING = """
    import os, signal, time

    class Slow(Exception):
        pass

    def _ring(signum, frame):
        raise Slow()

    def handler(event, context):
        signal.signal(signal.SIGALRM, _ring)
        assert signal.getsignal(signal.SIGALRM) is _ring
        t0 = time.monotonic()
        signal.alarm(2)
        try:
            while True:  # computing, past the quantum: the clock moves in real time, and the alarm rings in it
                sum(range(1000))
        except Slow:
            computed = round(time.monotonic() - t0, 1)
        try:
            os.kill(os.getpid(), signal.SIGALRM)  # no timer's: straight to the handler
            for _ in range(1000):
                sum(range(1000))
            killed = "not delivered"
        except Slow:
            killed = "delivered"
        return computed, killed
"""


def test_an_alarm_interrupts_code_that_computes_past_the_quantum_and_a_kill_reaches_the_handler(tmp_path):
    with Sandbox(seed=0) as sb:
        inv = sb.function(_write(tmp_path, "alarm_computing", ALARM_IN_COMPUTING), timeout=10).invoke(ORDER)
    assert inv.outcome == "ok", inv.error_text
    computed, killed = inv.result
    assert 2.0 <= computed < 4.0 and killed == "delivered", inv.result


ALARM_CANCELLED_ELSEWHERE = """
    import signal, threading, time

    def handler(event, context):
        signal.signal(signal.SIGALRM, lambda signum, frame: RANG.append(time.monotonic()))
        signal.alarm(1)

        def cancel():
            time.sleep(0.5)
            signal.alarm(0)

        threading.Thread(target=cancel).start()
        t0 = time.monotonic()
        got = threading.Event().wait(2)
        return {"got": got, "waited": round(time.monotonic() - t0, 6), "rang": len(RANG)}

    RANG = []
"""


def test_a_wait_whose_alarm_another_thread_cancelled_waits_its_whole_timeout(tmp_path):
    with Sandbox(seed=0) as sb:
        inv = sb.function(_write(tmp_path, "alarm_cancelled", ALARM_CANCELLED_ELSEWHERE)).invoke(ORDER)
    assert inv.outcome == "ok", inv.error_text
    assert inv.result == {"got": False, "waited": 2.0, "rang": 0}


LOOP_READS_A_CHILDS_PIPE = """
    import asyncio, os, subprocess, time

    async def _main():
        read_end, write_end = os.pipe()
        child = subprocess.Popen(["sh", "-c", "sleep 0.2; echo ready >&%d" % write_end], pass_fds=[write_end])
        os.close(write_end)
        loop = asyncio.get_running_loop()
        line = loop.create_future()
        loop.add_reader(read_end, lambda: line.done() or line.set_result(os.read(read_end, 100)))
        t0 = time.monotonic()
        try:
            got = (await asyncio.wait_for(line, 5)).decode().strip()  # no watcher thread: the loop alone waits
        except asyncio.TimeoutError:
            got = "timed out"
        waited = time.monotonic() - t0
        loop.remove_reader(read_end)
        child.wait()
        return {"got": got, "waited_under_5s": waited < 5}

    def handler(event, context):
        return asyncio.run(_main())
"""


def test_an_event_loop_watching_a_childs_pipe_keeps_its_timers_in_real_time(tmp_path):
    """The loop's selector holds a pipe a child fills in real time: its 5 s timeout must not be the world's sleep,
    taken at once (as for a pidfd, which Python 3.12's event loop watches instead of a waiting thread)."""
    with Sandbox(seed=0) as sb:
        inv = sb.function(_write(tmp_path, "loop_pipe", LOOP_READS_A_CHILDS_PIPE), timeout=30).invoke({})
    assert inv.outcome == "ok", inv.error_text
    assert inv.result == {"got": "ready", "waited_under_5s": True}
