"""Every Lambda execution environment is an OS process of its own (sandbox/runtime/environment).

Each handler below is written the way learners write them, and each one fooled the sandbox
when every "container" shared the world's process: state kept on a stdlib module or in a
fixed /tmp file deduplicated across containers, a signal handler failed off the main thread,
a BaseException ended an invocation that was then never retried, and code could rebind the
checker or scrub the history. Here each is judged as Lambda would judge it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sandbox import run_scenario
from sandbox.runtime.environment import wire
from sandbox.runtime.environment.host import Template
from sandbox.runtime.environment.namespaces import INSIDE_UID

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _process_isolation(monkeypatch):
    monkeypatch.setenv("RWH_ISOLATION", "process")


def _handler(tmp_path: Path, body: str, name: str = "app.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return f"{path}:handler"


def _run(scenario: str, handler: str, seed: int = 0, **settings):
    return run_scenario(scenario, handler=handler, seed=seed, settings=settings or None)


def _emails(result) -> int:
    return sum(1 for e in result.history.effects("email") if e["status"] == "done")


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sandbox", *args, "--isolation", "process"], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


# -- what a process owns ---------------------------------------------------------------------
def test_state_on_a_stdlib_module_is_per_environment(tmp_path):
    """A claim set kept on ``json`` deduplicated across containers in one process; not across processes."""
    handler = _handler(tmp_path, """
        import json
        from sandbox.events import orders_in
        from sandbox.core.services import send_confirmation_email

        def handler(event, context):
            seen = json.__dict__.setdefault("_claimed", set())
            for order in orders_in(event):
                if order["orderId"] not in seen:
                    seen.add(order["orderId"])
                    send_confirmation_email(order)
    """)
    result = _run("concurrent-claims", handler)
    assert {e["container"] for e in result.history.of_type("invoke_start")} == {"orders-handler/c1",
                                                                                 "orders-handler/c2"}
    assert _emails(result) == 2 and result.status == "invalid"


def test_a_lock_file_in_tmp_is_per_environment(tmp_path):
    """An O_EXCL file under a fixed name in /tmp: each environment has its own /tmp."""
    handler = _handler(tmp_path, """
        import os
        from sandbox.events import orders_in
        from sandbox.core.services import send_confirmation_email

        def handler(event, context):
            for order in orders_in(event):
                try:
                    fd = os.open(f"/tmp/claim-{order['orderId']}", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                except FileExistsError:
                    continue
                os.close(fd)
                send_confirmation_email(order)
    """)
    first = _run("concurrent-claims", handler)
    assert _emails(first) == 2 and first.status == "invalid"
    assert not any(p.name.startswith("claim-o-") for p in Path("/tmp").iterdir()), "the world's /tmp was written"
    again = _run("concurrent-claims", handler)  # nothing survives from one run to the next
    assert _emails(again) == 2


def test_working_directory_is_the_task_root_and_read_only(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"greeting": "hello"}))
    handler = _handler(tmp_path, """
        import json, os
        from sandbox.events import orders_in
        from sandbox.core.services import send_confirmation_email

        with open("config.json") as f:          # relative to the task root, as on Lambda
            CONFIG = json.load(f)

        def handler(event, context):
            assert os.getcwd() == os.environ["LAMBDA_TASK_ROOT"]
            try:
                open("written-by-handler.txt", "w").write("x")
                writable = True
            except OSError:
                writable = False
            for order in orders_in(event):
                send_confirmation_email(order)
            return {"greeting": CONFIG["greeting"], "writable": writable}
    """)
    result = _run("no-fault", handler)
    assert result.status == "valid", result.verdict.explain()
    assert not (tmp_path / "written-by-handler.txt").exists()


def test_handler_runs_on_the_main_thread_with_signals(tmp_path):
    """A SIGALRM guard needs the main thread; asyncio.to_thread needs a free loop."""
    handler = _handler(tmp_path, """
        import asyncio, signal, threading
        from sandbox.events import orders_in
        from sandbox.core.services import send_confirmation_email

        def handler(event, context):
            assert threading.current_thread() is threading.main_thread()
            previous = signal.signal(signal.SIGALRM, lambda *_: None)
            signal.signal(signal.SIGALRM, previous)
            assert asyncio.run(asyncio.to_thread(lambda: 41 + 1)) == 42
            for order in orders_in(event):
                send_confirmation_email(order)
    """)
    result = _run("no-fault", handler)
    assert result.status == "valid", result.verdict.explain()
    assert all(e["outcome"] == "ok" for e in result.history.of_type("invoke_end"))


@pytest.mark.parametrize("raised", ["KeyboardInterrupt", "asyncio.CancelledError", "GeneratorExit",
                                    "SystemExit(3)", "Unprintable"])
def test_base_exception_exits_the_runtime_and_the_source_retries(tmp_path, raised):
    """On Lambda anything that is not an Exception ends the runtime (Runtime.ExitError), and async retries."""
    handler = _handler(tmp_path, f"""
        import asyncio
        from sandbox.events import orders_in
        from sandbox.core.services import send_confirmation_email

        class Unprintable(Exception):
            def __str__(self):
                raise RuntimeError("no words for this")

        def handler(event, context):
            for order in orders_in(event):
                send_confirmation_email(order)
            raise {raised}
    """)
    result = _run("async-retry", handler)
    starts = result.history.of_type("invoke_start")
    assert len(starts) == 3, "the event was not retried twice"
    assert result.status == "invalid"
    # The first meets the scenario's provider fault first. An error whose __str__ raises breaks
    # awslambdaric's own error report, so the runtime exits on it too.
    ends = result.history.of_type("invoke_end")[1:]
    assert all(e["outcome"] == "crashed" and e["error"].startswith("Runtime.ExitError") for e in ends)


def test_exits_and_stdout_leave_the_cli_whole(tmp_path):
    """signal.alarm, a closed stdout and an atexit os._exit(0) end only the environment."""
    handler = _handler(tmp_path, """
        import atexit, os, signal, sys
        from sandbox.events import orders_in
        from sandbox.core.services import send_confirmation_email

        atexit.register(os._exit, 0)

        def handler(event, context):
            for order in orders_in(event):
                send_confirmation_email(order)
                send_confirmation_email(order)
            sys.stdout.close()
            signal.alarm(1)
    """)
    done = _cli("run", "no-fault", "--handler", handler, "--json")
    assert done.returncode == 1 and done.stdout, (done.returncode, done.stderr[-3000:])
    report = json.loads(done.stdout)
    assert report["verdict"] == "invalid" and report["effects_per_key"]["o-1"]["email"] == 2


def test_tampering_in_the_handler_cannot_reach_the_verdict(tmp_path):
    """Rebinding the checker, swapping a function's code, scrubbing the history through gc."""
    handler = _handler(tmp_path, """
        import gc
        import sandbox.verdict.checker, sandbox.core.history
        from sandbox.events import orders_in
        from sandbox.core.services import send_confirmation_email

        def handler(event, context):
            for order in orders_in(event):
                send_confirmation_email(order)
                send_confirmation_email(order)
            sandbox.verdict.checker.check = lambda *a, **k: None
            sandbox.verdict.checker.check.__code__ = (lambda *a, **k: None).__code__
            for obj in gc.get_objects():
                if isinstance(obj, sandbox.core.history.History):
                    obj._events.clear()
    """)
    done = _cli("run", "no-fault", "--handler", handler, "--json")
    assert done.returncode == 1 and done.stdout, (done.returncode, done.stderr[-3000:])
    assert json.loads(done.stdout)["effects_per_key"]["o-1"]["email"] == 2


def test_environments_hold_nothing_of_the_world(tmp_path):
    handler = _handler(tmp_path, """
        import sys
        from sandbox.core import active
        from sandbox.events import orders_in
        from sandbox.core.services import send_confirmation_email

        def handler(event, context):
            assert active.current() is None
            assert "moto.dynamodb.models" not in sys.modules or not __import__("moto").dynamodb.models.dynamodb_backends
            for order in orders_in(event):
                send_confirmation_email(order)
    """)
    result = _run("no-fault", handler)
    assert result.status == "valid", result.history.logs()


@pytest.mark.parametrize("block", ["while True: pass",
                                   "pair = socket.socketpair(); select.select([pair[0]], [], [])"])
def test_a_blocked_handler_is_unknown_not_lost(tmp_path, block):
    """A busy loop, or a real select: the handler never returns, so what it would have done is unknown."""
    handler = _handler(tmp_path, f"""
        import select, socket
        from sandbox.events import orders_in
        from sandbox.core.services import send_confirmation_email

        def handler(event, context):
            for order in orders_in(event):
                if order["orderId"] == "o-2":
                    {block}
                send_confirmation_email(order)
    """)
    result = run_scenario("no-fault", handler=handler, seed=0, watchdog=3.0)  # generous: a loaded machine
    assert result.status == "unknown", result.verdict.explain()
    assert [f.kind for f in result.verdict.findings] == ["abandoned"]
    blocked = [e for e in result.history.of_type("invoke_end") if e.get("blocked")]
    assert [e["inv"] for e in blocked] == ["inv-2"] and "blocked outside the sandbox" in blocked[0]["error"]


def test_protocol_rejects_oversized_and_unknown_messages():
    import socket

    a, b = socket.socketpair()
    with a, b:
        a.sendall(wire._HEADER.pack(wire.MAX_FRAME + 1))
        with pytest.raises(wire.ProtocolError):
            wire.receive_from_environment(b)
    a, b = socket.socketpair()
    with a, b:
        wire.send(a, {"t": "exec", "code": "import os"})
        with pytest.raises(wire.ProtocolError, match="unknown message kind"):
            wire.receive_from_environment(b)
    a, b = socket.socketpair()
    with a, b:
        wire.send(a, {"t": "aws", "service": "dynamodb"})
        with pytest.raises(wire.ProtocolError, match="without"):
            wire.receive_from_environment(b)


def test_template_is_shared_and_killing_leaves_no_process(tmp_path):
    handler = _handler(tmp_path, """
        import os
        def handler(event, context):
            return os.getpid()
    """)
    from sandbox import Sandbox

    with Sandbox(seed=0) as sb:
        fn = sb.function(handler)
        assert fn.invoke({}).result == 2  # its own PID namespace: the init is 1, the runtime 2
        pid = sb.runtime.environments[0].pid  # the same process, as the world sees it
        assert pid != os.getpid()
        os.kill(pid, 0)
        template = Template.get()
    assert Template.get() is template
    import time

    for _ in range(1000):  # the world closed: its environments are killed and reaped (it does not wait)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.01)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_contained_environments_see_only_python_the_sandbox_and_their_task_root(tmp_path, monkeypatch):
    """The grader's containment: bubblewrap, an unprivileged user of its own namespace, no network, no repository."""
    monkeypatch.setenv("RWH_ISOLATION", "contained")
    marker = Path(f"/tmp/rwh-world-marker-{os.getpid()}")
    marker.write_text("the world's /tmp")
    handler = _handler(tmp_path, f"""
        import os, socket

        def handler(event, context):
            facts = {{"uid": os.getuid(), "tmp": os.path.exists({str(marker)!r}),
                      "solutions": os.path.exists({str(ROOT / "solutions")!r}),
                      "tests": os.path.exists({str(ROOT / "tests")!r}),
                      "world_tmp": os.path.exists({str(tmp_path)!r} + "/../..")}}
            try:
                socket.create_connection(("127.0.0.1", {_listening_port()}), timeout=1)
                facts["network"] = True
            except OSError:
                facts["network"] = False
            try:
                open("written.txt", "w")
                facts["task_root_writable"] = True
            except OSError:
                facts["task_root_writable"] = False
            return facts
    """)
    from sandbox import Sandbox

    try:
        with Sandbox(seed=0) as sb:
            inv = sb.function(handler).invoke({})
    finally:
        marker.unlink()
    assert inv.outcome == "ok", inv.error_text
    assert inv.result == {"uid": INSIDE_UID, "tmp": False, "solutions": False, "tests": False, "world_tmp": False,
                          "network": False, "task_root_writable": False}


def _listening_port() -> int:
    """A port the world's machine listens on (a connection from a contained environment must not reach it)."""
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=lambda: [server.accept() for _ in range(3)], daemon=True).start()
    return server.getsockname()[1]


def test_a_thread_pool_in_a_handler_works_and_leaves_cleanly(capfd):
    """On Python 3.13 the in-process threading patches broke a ThreadPoolExecutor at exit; an environment
    runs the learner's threads as the plain threads they are (make test-pythons runs this on 3.12 and 3.13)."""
    for scenario in ("no-fault", "async-duplicate"):
        result = run_scenario(scenario, str(ROOT / "tests" / "handlers" / "pooled.py") + ":handler")
        assert result.valid, (scenario, result.verdict.explain())
        assert not [e for e in result.history.logs() if "Error" in e["text"]], result.history.logs()
    out, err = capfd.readouterr()
    assert "thread not started" not in out + err and "Traceback" not in out + err


THREADED = """
    import asyncio, os, subprocess, threading, time
    import boto3

    table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])
    lock = threading.Lock()

    def work(i, done):
        with lock:  # held across a request: the other threads wait their turn on it
            table.put_item(Item={"pk": f"t-{i}"})
            done.append(i)

    async def both():
        start = time.time()
        got = await asyncio.gather(asyncio.to_thread(lambda: 41 + 1), asyncio.sleep(1, result="slept"))
        return got, time.time() - start

    def handler(event, context):
        done = []
        threads = [threading.Thread(target=work, args=(i, done)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        started = time.time()
        waited = threading.Event().wait(timeout=0.5)
        got, slept = asyncio.run(both())
        out = subprocess.run(["echo", "hi"], capture_output=True, text=True).stdout
        return {"done": done, "waited": waited, "waited_for": round(time.time() - started, 3), "got": got,
                "slept": round(slept, 3), "out": out}
"""


def test_handler_threads_take_turns_in_the_same_order_every_run(tmp_path):
    """Threads, a contended lock, an event's timeout, asyncio.to_thread beside asyncio.sleep, and a child
    process all work; the waits count the world's seconds; and the history is the same every run (the
    operating system chose which thread asked first, and four runs gave four histories)."""
    from sandbox import Sandbox

    handler = _handler(tmp_path, THREADED)
    with Sandbox(seed=0) as sb:
        inv = sb.function(handler).invoke({})
    assert inv.outcome == "ok", inv.error_text
    assert inv.result == {"done": [0, 1, 2, 3], "waited": False, "waited_for": 1.5, "got": [42, "slept"],
                          "slept": 1.0, "out": "hi\n"}
    pooled = str(ROOT / "tests" / "handlers" / "pooled.py") + ":handler"
    histories = {_run("sqs-batch-failure", pooled, seed=3).history.to_json() for _ in range(4)}
    assert len(histories) == 1


def test_a_killed_worlds_folders_are_swept_and_a_live_ones_kept(tmp_path):
    """A world killed with SIGKILL never removes its task roots and /tmp folders: the next one does."""
    import tempfile

    from sandbox.runtime.environment.template_process import _sweep_leftovers

    dead = 2 ** 22 + 12345  # above any pid this machine hands out
    gone = [Path(tempfile.mkdtemp(prefix=f"rwh-envs-{dead}-")), Path(tempfile.mkdtemp(prefix=f"rwh-roots-{dead}-"))]
    (gone[0] / "env-1").mkdir()
    (gone[0] / "env-1" / "lock").write_text("x")
    alive = Path(tempfile.mkdtemp(prefix=f"rwh-envs-{os.getpid()}-"))
    try:
        _sweep_leftovers()
        assert not any(p.exists() for p in gone) and alive.is_dir()
    finally:
        alive.rmdir()
    from sandbox.runtime.environment.template_process import _remove

    _remove(gone[0])  # already gone (another world swept it first): no error


def test_a_flood_on_the_channel_is_a_log_or_a_blocked_handler(tmp_path):
    """A print of megabytes is kept as a log (its first LOG_CAP characters) and the run judged; a loop that only
    prints is blocked."""
    from sandbox.runtime.functions import LOG_CAP

    big = _handler(tmp_path, """
        from sandbox import orders_in, send_confirmation_email

        def handler(event, context):
            print("x" * 20_000_000)
            for order in orders_in(event):
                send_confirmation_email(order)
    """, name="big.py")
    result = _run("no-fault", big)
    assert result.status == "valid", result.verdict.explain()
    kept, note = result.history.logs("inv-1")
    assert len(kept["text"]) == LOG_CAP and note["text"].startswith(f"[sandbox] {20_000_000 - LOG_CAP:,} more")
    endless = _handler(tmp_path, """
        def handler(event, context):
            while True:
                print("still here")
    """, name="endless.py")
    result = run_scenario("no-fault", handler=endless, seed=0, watchdog=2.0)
    assert result.status == "unknown"
    assert all(e.get("blocked") for e in result.history.of_type("invoke_end"))


def test_a_noisy_correct_handler_is_judged_and_its_log_is_capped(tmp_path):
    """Megabytes of prints are no fault: the run is judged on its effects, and the history keeps the first
    LOG_CAP characters of each invocation's log and one line saying how much more there was."""
    from sandbox.runtime.functions import LOG_CAP

    handler = _handler(tmp_path, """
        from sandbox.events import orders_in
        from sandbox.core.services import send_confirmation_email

        def handler(event, context):
            for _ in range(5000):
                print("noise " * 100)
            for order in orders_in(event):
                send_confirmation_email(order)
    """)
    result = _run("no-fault", handler, orders=1)
    assert result.valid
    logs = result.history.logs()
    assert sum(len(e["text"]) for e in logs[:-1]) <= LOG_CAP
    assert logs[-1]["text"].startswith("[sandbox] ") and "more characters of output were not kept" in logs[-1]["text"]


def test_a_streaming_body_reads_in_an_environment(tmp_path):
    """S3 GetObject hands the handler its Body unread: it reads in pieces, as from a real socket."""
    from sandbox import Sandbox

    handler = _handler(tmp_path, """
        import boto3

        def handler(event, context):
            s3 = boto3.client("s3")
            s3.create_bucket(Bucket="orders-bucket")
            s3.put_object(Bucket="orders-bucket", Key="o-1.json", Body=b"hello world")
            body = s3.get_object(Bucket="orders-bucket", Key="o-1.json")["Body"]
            return {"first": body.read(5).decode(), "rest": body.read().decode()}
    """)
    with Sandbox(seed=0) as sb:
        inv = sb.function(handler, timeout=30).invoke({})
    assert inv.outcome == "ok", inv.error_text
    assert inv.result == {"first": "hello", "rest": " world"}


def test_a_cold_start_imports_compiled_code_and_parses_no_model_again(tmp_path):
    """What the world's process is spared, an environment is spared too: its read-only task root holds the
    modules compiled once, and its clients take the service model the template parsed (each environment
    still makes its own clients, as on Lambda)."""
    handler = _handler(tmp_path, """
        import os, sys
        import boto3
        from sandbox.events import orders_in
        from sandbox.core.services import send_confirmation_email

        def handler(event, context):
            mine = boto3.client("dynamodb")
            print("compiled", os.path.exists(sys.modules[__name__].__cached__ or ""),
                  "pid", os.readlink("/proc/self/ns/pid"),
                  "model", id(mine.meta.service_model), "other", id(boto3.client("dynamodb").meta.service_model))
            for order in orders_in(event):
                send_confirmation_email(order)
    """)
    result = _run("concurrent-claims", handler)
    lines = [e["text"].split() for e in result.history.logs() if e["text"].startswith("compiled")]
    assert len(lines) == 2 and {w[1] for w in lines} == {"True"} and lines[0][3] != lines[1][3]  # two environments
    # One parsed model for every client of every environment: the template's, inherited at the fork.
    assert len({w[5] for w in lines} | {w[7] for w in lines}) == 1
    assert not (tmp_path / "__pycache__").exists()  # compiled in the copy, not in the learner's folder


def test_a_handler_in_a_folder_too_big_to_copy_is_refused_at_once(tmp_path, monkeypatch):
    """A handler saved in a home folder or /tmp: the sandbox copies its folder into each environment, so a folder
    past Lambda's 250 MB (or with more files than a handler needs) is bad input, said when the function is made,
    not a cold start that copies for minutes and a run with no invocation in it."""
    from sandbox.errors import BadInput
    from sandbox.runtime.environment import host

    handler = _handler(tmp_path, """
        def handler(event, context):
            return "ok"
    """)
    monkeypatch.setattr(host, "MAX_TASK_ROOT_FILES", 3)
    for i in range(3):
        (tmp_path / f"notes-{i}.txt").write_text("x")
    with pytest.raises(BadInput, match=f"the handler's folder {tmp_path} holds more than 3 files"):
        _run("no-fault", handler)
    monkeypatch.setattr(host, "MAX_TASK_ROOT_FILES", 100)
    monkeypatch.setattr(host, "MAX_TASK_ROOT_BYTES", 1000)
    (tmp_path / "data.bin").write_bytes(b"\0" * 1001)
    with pytest.raises(BadInput, match="holds more than 250 MB"):
        _run("no-fault", handler)
    (tmp_path / "data.bin").unlink()
    assert _run("no-fault", handler).history.invocations()  # within both: it runs


def test_a_pid_the_kernel_gives_again_never_reads_an_earlier_environments_end():
    # A long test session or notebook makes more processes than pid_max (32,768 here), so a new environment's
    # manager may get a killed one's pid. The killed one's end must not become the new one's exit status
    # (seen as "exit status 137" for a handler that called os._exit(0)).
    import socket

    from sandbox.runtime.environment import template

    managed = template._Managed(socket.socket(), None)  # type: ignore[arg-type]
    orders, door = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    managed.ended[4242] = {"status": -9, "why": None}  # an environment once named 4242, ended
    managed.spares.append((4242, orders, door))
    [(name, _)] = managed.take(1)
    assert name == 4242 and 4242 not in managed.ended
    managed._gone(4242, killed=True)  # killed: nobody asks how it ended, so nothing is kept for its pid
    assert 4242 not in managed.ended and 4242 not in managed.owner
    door.close()


def test_a_forked_childs_sleep_takes_its_real_time_and_no_cpu(tmp_path):
    """A process the handler forks has no world to ask, so its sleep is a real pause: it lasts as long as asked, and
    it waits without computing (a pause that returned at once made ``time.sleep(0.3)`` in a child take no time, and
    the environment's file-stamp wait spun a core)."""
    from sandbox import Sandbox

    handler = _handler(tmp_path, """
        import json, os, time

        def handler(event, context):
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read)
                started, cpu = time.monotonic(), os.times()
                time.sleep(0.3)
                after = os.times()
                spent = (after.user - cpu.user) + (after.system - cpu.system)
                os.write(write, json.dumps([time.monotonic() - started, spent]).encode())
                os._exit(0)
            os.close(write)
            os.waitpid(pid, 0)
            return json.loads(os.read(read, 200))
    """)
    with Sandbox(seed=0) as sb:
        inv = sb.function(handler, timeout=30).invoke({})
    assert inv.outcome == "ok", inv.error_text
    slept, computed = inv.result
    assert slept >= 0.3
    assert computed < 0.15


_SLOW_UNSHARE = r"""
import json, os, socket, sys, time
from sandbox.runtime.environment import namespaces, template

real = namespaces.unshare
def slow():  # the child's unshare, taking its time (a busy machine took up to 23 ms)
    time.sleep(0.4)
    real()
namespaces.unshare = slow
control, world = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
children = template._Managed(control, template._plan(None))
started = time.monotonic()
children.fork_spare()
forked = time.monotonic() - started
pid = children.spares[0][0]
world.send(b"status?")
asked = template._pending(control, children, 1.0)
answered = time.monotonic() - started
unmapped_then = len(children.waiting())
while children.waiting() and time.monotonic() - started < 5:
    template._pending(control, children, 0.05)
with open(f"/proc/{pid}/uid_map") as f:
    maps = f.read().split()
children.kill_all()
print(json.dumps({"forked": forked, "asked": asked, "answered": answered, "unmapped_then": unmapped_then,
                  "waiting_after": len(children.waiting()), "maps": maps}))
"""


def test_the_template_answers_the_world_while_a_spare_unshares():
    """A spare's maps are written when it has unshared, not while the template waits for it: the template made
    each spare and then waited for its unshare (0-23 ms), and a world out of spares waited with it."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _SLOW_UNSHARE], capture_output=True, text=True, timeout=60,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    said = json.loads(done.stdout.splitlines()[-1])
    assert said["forked"] < 0.3 and said["asked"] and said["answered"] < 0.3, said
    assert said["unmapped_then"] == 1 and said["waiting_after"] == 0, said
    from sandbox.runtime.environment.namespaces import INSIDE_UID

    assert said["maps"][0] == str(INSIDE_UID) and len(said["maps"]) == 3, said  # its maps, written once it unshared
