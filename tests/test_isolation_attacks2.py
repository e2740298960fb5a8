"""Second round of attacks on the execution environment's boundary (red team h4). Every test here FAILS today.

Each one is a hole found by a handler in ``tests/handlers/hostile2/``; none is marked skip or xfail, so that the
maintainer sees them fail until each is fixed. They fall in three groups:

1. **Kernel state that Linux namespaces do not separate.** Each environment is a Firecracker microVM on Lambda:
   nothing of one is visible to another (lambda-runtime-environment.html; the security whitepaper's
   "lambda-isolation-technologies"). Here environments share one kernel, so POSIX record locks and OFD locks on a
   shared read-only file (``F_GETLK`` reports another environment's read lock; seccomp stops only ``flock``), the
   page cache (``preadv2(RWF_NOWAIT)``), inotify events on shared files (``IN_OPEN``) and per-user kernel quotas
   (inotify instances: every environment is the same user outside) each carry a "claim" from one environment to
   another. ``concurrent-claims`` with three copies must judge each of them invalid, as Lambda would send three
   emails; today each is judged **valid**, in the default isolation and under bubblewrap (the grader's).
2. **Memory the manager does not measure.** The manager sums ``Private_Dirty`` of the processes in ``/proc``;
   memory no process maps (a memfd written with ``write``, a SysV segment touched piecewise and detached) and the
   memory of a process that made itself non-dumpable are not counted. A 128 MB function holds 1 GiB and lives
   (Lambda: Runtime.OutOfMemory; the grader's host pays for it).
3. **Correct code judged wrongly.** ``asyncio.wait_for(proc.wait(), 0.5)`` on a slow real child is not honoured
   (the invocation times out at 3 s instead of going on after 0.5 s); a CPU-bound background thread starves the
   main thread (on Lambda both run under the GIL); init that computes past 10 s meets the world's 10 s watchdog
   before its 10.2 s init limit and the invocation disappears from the report; a 20 MB response is a crash
   (Runtime.ExitError) rather than Function.ResponseSizeTooLarge.
"""
from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

from sandbox import Sandbox, run_scenario

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "handlers" / "hostile2"


@pytest.fixture(autouse=True)
def _template_finds_this_checkout(monkeypatch):
    """A contained template runs with ``--chdir /``: it finds ``sandbox`` on PYTHONPATH only when this checkout is
    not the installed one (a git worktree). Harmless where it is."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


def _handler(name: str) -> str:
    return f"{HOSTILE / name}.py:handler"


def _copy_with_salt(tmp_path: Path, name: str) -> str:
    """The page-cache claim with pages no earlier run has read: the salt names other pages each time."""
    code = (HOSTILE / f"{name}.py").read_text()
    code = code.replace('_SALT = int(float(open("/proc/uptime").read().split()[0]) // 30)', f'_SALT = "{uuid.uuid4()}"')
    path = tmp_path / f"{name}.py"
    path.write_text(code)
    return f"{path}:handler"


CLAIMS = ["claim_fcntl_getlk", "claim_ofd_getlk", "claim_page_cache_nowait", "claim_inotify", "claim_inotify_quota"]


@pytest.mark.parametrize("isolation", ["process", "contained"])
@pytest.mark.parametrize("attack", CLAIMS)
def test_no_claim_crosses_environments_through_the_shared_kernel(tmp_path, attack, isolation):
    handler = _copy_with_salt(tmp_path, attack) if attack == "claim_page_cache_nowait" else _handler(attack)
    result = run_scenario("concurrent-claims", handler, seed=0, settings={"copies": 3}, isolation=isolation)
    counts = [n for per_effect in result.verdict.effects_per_key.values() for n in per_effect.values()]
    # On Lambda each copy is a microVM of its own and sends the email: three emails, invalid. Here the
    # mechanism either shares nothing (three emails) or is refused, as a facility no environment may share
    # (the claim fails: no email). Never one email: that would be a claim that crossed environments.
    assert counts in ([3], [0]), f"{attack}: environments coordinated through the kernel: emails {counts}"
    assert result.status == "invalid", result.verdict.explain()


@pytest.mark.parametrize("hog", ["mem_memfd_1gib", "mem_sysv_shm_chunked", "mem_nondumpable_child"])
def test_memory_no_process_maps_still_counts_toward_the_function(hog):
    with Sandbox(seed=0) as sb:
        inv = sb.function(_handler(hog), memory_mb=128, timeout=30).invoke({})
    # Ended as Lambda ends it, or refused the means (memfd_create: memory no process maps, which nothing counts).
    ended = inv.outcome == "crashed" and (inv.error_text or "").startswith("Runtime.OutOfMemory")
    refused = inv.outcome == "error" and "[Errno 38]" in (inv.error_text or "")
    assert ended or refused, f"{hog}: a 128 MB function held 1 GiB and returned {inv.result!r} ({inv.error_text})"


ORDER = {"orderId": "o-1", "email": "a@example.com", "amount": 1}


def test_asyncio_wait_for_a_real_child_times_out_when_it_says():
    # On Lambda wait_for gives up after 0.5 s, the child is killed, and the email goes out well inside 3 s.
    with Sandbox(seed=0) as sb:
        inv = sb.function(_handler("asyncio_wait_for_slow_child"), timeout=3).invoke(ORDER)
    assert inv.outcome == "ok", inv.error_text
    assert inv.result == "helper timed out"


def test_asyncio_sleep_ends_on_time_while_a_child_runs():
    with Sandbox(seed=0) as sb:
        inv = sb.function(_handler("asyncio_nap_vs_child_timing"), timeout=10).invoke({})
    assert inv.outcome == "ok", inv.error_text
    assert inv.result["after_nap"] < 1.0, inv.result  # 0.2 s on Lambda; 2.0 s (the child's own time) today


def test_a_cpu_bound_background_thread_does_not_starve_the_handler():
    # On Lambda the threads share the GIL (a switch every 5 ms): the main thread sends its email and returns.
    result = run_scenario("no-fault", _handler("thread_cpu_past_timeout"), seed=0, settings={"orders": 1})
    outcomes = [inv.outcome for inv in result.invocations] if hasattr(result, "invocations") else []
    assert result.status == "valid", (outcomes, result.verdict.explain())


def test_init_that_computes_past_ten_seconds_is_an_init_timeout_and_is_recorded():
    # "The Init phase is limited to 10 seconds": Lambda retries init in the invoke phase within the function's
    # timeout, and the invocation times out (lambda-runtime-environment.html). It is an invocation with an outcome.
    with Sandbox(seed=0) as sb:
        inv = sb.function(_handler("init_busy_20s"), timeout=3).invoke({})
    assert inv.outcome == "timeout", f"outcome {inv.outcome!r}, error {inv.error_text!r}"


def test_a_response_over_the_channel_frame_is_response_size_too_large():
    # Lambda: a synchronous response over 6 MB is Function.ResponseSizeTooLarge, however large (gettingstarted-limits).
    with Sandbox(seed=0) as sb:
        inv = sb.function(_handler("response_20mb")).invoke({})
    assert (inv.error_text or "").startswith("Function.ResponseSizeTooLarge"), inv.error_text


def test_the_grader_gives_no_one_winner_credit_to_a_claim_held_in_the_kernel(tmp_path):
    """The student's exploit end to end: exercise 02 answered with a POSIX read lock on a shared file (and a set for
    the environment's own repeats), no DynamoDB at all. Today the grader (bubblewrap, namespaces) gives it 9/9."""
    import csv
    import shutil
    import subprocess

    subs = tmp_path / "subs" / "alice"
    subs.mkdir(parents=True)
    shutil.copy(HOSTILE / "grader_02_fcntl_claim.py", subs / "02_claim_the_key.py")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "sandbox", "grade", str(tmp_path / "subs"), "--out", str(out),
                           "--exercise", "02", "--jobs", "1", "--no-progress"],
                          capture_output=True, text=True, timeout=900, cwd=ROOT, env=env)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    rows = list(csv.DictReader((out / "grades.csv").open()))
    feedback = (out / "alice" / "feedback.txt").read_text()
    assert "✗ one-winner" in feedback, feedback[:1500]
    assert float(rows[0]["score"]) < float(rows[0]["max_score"]), rows


@pytest.mark.parametrize("kind", ["snapshot", "cloned", "clone_status"])
def test_a_snapstart_kind_sent_mid_invocation_ends_the_environment_as_a_protocol_error(kind):
    """wire.FROM_ENVIRONMENT accepts these kinds from any environment, and ``_serve_until`` hands them to ``_aws``,
    which raises KeyError('body') in the world: today that is reported as the handler's own error (errorType
    KeyError) and the environment is kept, still speaking after its forged message."""
    with Sandbox(seed=0) as sb:
        fn = sb.function(_handler("channel_forged_snapshot_kinds"), environment={"FORGE_KIND": kind})
        inv = fn.invoke(ORDER)
    assert (inv.error_text or "").startswith("EnvironmentFailed"), inv.error_text


def test_a_files_mtime_and_time_time_read_the_same_clock():
    """File times come from the kernel's real clock, time.time() from the world's (months apart): a marker file's
    age is negative, so a one-second expiry by mtime never expires. In async-duplicate the copy arrives 2 s later in
    the same environment: on Lambda the marker is stale and the email goes again (invalid); today: valid."""
    result = run_scenario("async-duplicate", _handler("tmp_marker_mtime_expiry"), seed=0)
    assert result.status == "invalid", result.verdict.explain()


def test_signal_alarm_interrupts_a_sleep_as_on_lambda():
    """signal.alarm(1) around a 2 s time.sleep: on Lambda SIGALRM arrives after 1 s, inside the sleep. The sleep is
    the world's (instant in real time) and the alarm the kernel's, so today the sleep always wins."""
    with Sandbox(seed=0) as sb:
        inv = sb.function(_handler("alarm_guard")).invoke(ORDER)
    assert inv.outcome == "ok" and inv.result == "alarm", (inv.outcome, inv.result)


def test_a_thread_answers_over_a_socketpair_while_the_main_thread_waits_in_recv():
    """A blocking ``recv`` (socket timeout 2 s) waits in turns: the worker thread, which sends after a 0.1 s sleep,
    runs meanwhile. On Lambda the answer arrives after 0.1 s. (Before, the recv kept the turn until it gave up.)"""
    with Sandbox(seed=0) as sb:
        inv = sb.function(_handler("socketpair_thread_handoff")).invoke(ORDER)
    assert inv.outcome == "ok" and inv.result == "go", (inv.outcome, inv.result)


def test_a_submission_sees_none_of_the_graders_environment_variables(tmp_path):
    """The world hands each environment ``dict(os.environ)`` (world.py: ``env=lambda: dict(os.environ)``) plus
    Lambda's variables: under the grader that is the grading machine's environment (tokens included, if it has
    any), and a submission can print it into its own feedback. Lambda gives a function its reserved variables and
    its configuration's (configuration-envvars.html), nothing of the host."""
    import shutil
    import subprocess

    subs = tmp_path / "subs" / "mallory"
    subs.mkdir(parents=True)
    shutil.copy(HOSTILE / "grader_02_env_exfil.py", subs / "02_claim_the_key.py")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RWH_H4_GRADER_MARKER": "grader-secret-4242"}
    done = subprocess.run([sys.executable, "-m", "sandbox", "grade", str(tmp_path / "subs"), "--out", str(out),
                           "--exercise", "02", "--jobs", "1", "--no-progress"],
                          capture_output=True, text=True, timeout=900, cwd=ROOT, env=env)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    feedback = "\n".join(p.read_text(errors="replace") for p in (out / "mallory").rglob("*") if p.is_file())
    assert "grader-secret-4242" not in feedback, "the grader's environment reached a submission's feedback"


def test_multiprocessing_pool_and_queue_fail_as_on_lambda_without_dev_shm():
    """Lambda has no /dev/shm, so multiprocessing's semaphores (Pool, Queue, Lock) raise OSError 38 there (AWS
    Compute Blog, "Parallel Processing in Python with AWS Lambda"). The environment mounts a /dev/shm of its own
    (namespaces.SMALL_TMPFS_MB), so a handler built on Pool is judged by code that would fail on every invocation
    on Lambda."""
    with Sandbox(seed=0) as sb:
        inv = sb.function(_handler("mp_pool_needs_dev_shm"), timeout=30).invoke({})
    # Lambda's glibc says ENOSYS (38); here /dev/shm is a read-only mount of no tmpfs, and this glibc says EROFS.
    assert set(inv.result.values()) <= {"OSError 38", "OSError 30"} and set(inv.result) == {"pool", "queue"}, inv.result


def test_a_contained_run_from_an_uninstalled_copy_is_the_sandboxs_failure_not_a_verdict(tmp_path):
    """``python -m sandbox run ... --isolation contained`` from a copy of the package that is not the installed one
    (a git worktree, a second clone): bubblewrap starts the template with ``--chdir /``, so it imports no ``sandbox``
    (ModuleNotFoundError) and every invocation is reported as the handler's Runtime.InitError, judged ``invalid``
    (exit 1). It is the sandbox that failed: exit 2, and no verdict about the handler."""
    import shutil
    import subprocess

    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "sandbox", copy / "sandbox", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    baseline = str(ROOT / "tests" / "handlers" / "hostile2" / "correct_baseline.py") + ":handler"
    done = subprocess.run([sys.executable, "-m", "sandbox", "run", "no-fault", "--set", "orders=1", "--isolation",
                           "contained", "--handler", baseline], capture_output=True, text=True, timeout=300, cwd=copy,
                          env=env)
    assert done.returncode == 2, (done.returncode, done.stdout[-800:], done.stderr[-800:])
