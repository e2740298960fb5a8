"""Handlers that try to coordinate through, or escape into, what Lambda environments never share.

Each is written the way a student after marks writes one: no DynamoDB claim at all, only kernel state
that would be shared if environments were plain processes of one machine. On Lambda each environment
is a microVM of its own, so each of these sends the email once per copy: ``concurrent-claims`` must judge
every one of them invalid, in the default isolation and under bubblewrap (the grader's). Issue 29 found
each of them valid (or worse) before environments had namespaces of their own.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from sandbox import run_scenario

ROOT = Path(__file__).resolve().parents[1]

#: Kernel-state "claims": each returns True for the first environment to ask about an order.
CLAIMS = {
    "abstract_socket": """
        import socket
        HELD = []
        def claim(order_id):
            s = socket.socket(socket.AF_UNIX)
            try:
                s.bind("\\0rwh-claim-" + order_id)
            except OSError:
                return False
            HELD.append(s)
            return True
    """,
    "flock_stdlib_file": """
        import fcntl, json
        HELD = []
        def claim(order_id):
            f = open(json.__file__, "rb")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False
            HELD.append(f)
            return True
    """,
    "dev_shm_o_excl": """
        import os
        def claim(order_id):
            try:
                os.close(os.open("/dev/shm/claim-" + order_id, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except OSError:
                return False
            return True
    """,
    "var_tmp_o_excl": """
        import os
        def claim(order_id):
            try:
                os.close(os.open("/var/tmp/claim-" + order_id, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except OSError:
                return False
            return True
    """,
    "proc_comm": """
        import os
        def claim(order_id):
            name = ("c-" + order_id)[:15]
            for pid in os.listdir("/proc"):
                try:
                    if pid.isdigit() and open(f"/proc/{pid}/comm").read().strip() == name:
                        return False
                except OSError:
                    pass
            open("/proc/self/comm", "w").write(name)
            return True
    """,
    "sysv_semaphore_via_posix_mq": """
        import os
        def claim(order_id):
            # POSIX shared memory lives in /dev/shm; SysV IPC keys in the IPC namespace.
            path = "/dev/shm/sem." + order_id
            try:
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except OSError:
                return False
            return True
    """,
    "loopback_port": """
        import socket, zlib
        HELD = []
        def claim(order_id):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", 20000 + zlib.crc32(order_id.encode()) % 20000))
                s.listen()
            except OSError:
                return False
            HELD.append(s)
            return True
    """,
}

HANDLER = """
from sandbox import orders_in, send_confirmation_email

{claim}

def handler(event, context):
    for order in orders_in(event):
        if claim(order["orderId"]):
            send_confirmation_email(order)
    return "ok"
"""


def _write(tmp_path: Path, name: str, code: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(code))
    return f"{path}:handler"


@pytest.mark.parametrize("isolation", ["process", "contained"])
@pytest.mark.parametrize("attack", sorted(CLAIMS))
def test_kernel_state_shared_by_no_two_environments(tmp_path, attack, isolation):
    claim = textwrap.dedent(CLAIMS[attack])
    handler = _write(tmp_path, attack, HANDLER.format(claim=claim))
    result = run_scenario("concurrent-claims", handler, seed=0, settings={"copies": 3}, isolation=isolation)
    assert result.status == "invalid", result.verdict.explain()
    counts = [n for per_effect in result.verdict.effects_per_key.values() for n in per_effect.values()]
    # Each environment sent it; or (/dev/shm, which Lambda does not have) no environment could claim at all.
    assert counts == ([0] if "dev_shm" in attack or "posix" in attack else [3]), counts


SPY = """
import errno, json, os

def handler(event, context):
    seen = {}
    pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    seen["pids"] = pids
    seen["comms"] = sorted({open(f"/proc/{p}/comm").read().strip() for p in pids if os.path.exists(f"/proc/{p}/comm")})
    for name, path in [("world", %(world)r), ("project", %(project)r)]:
        try:
            with open(path, "a") as f:
                f.write("x")
            seen[name] = "written"
        except OSError as exc:
            seen[name] = errno.errorcode.get(exc.errno, str(exc.errno))
    try:
        open(%(tmp_marker)r).read()
        seen["host_tmp"] = "read"
    except OSError as exc:
        seen["host_tmp"] = type(exc).__name__
    seen["uid"] = os.getuid()
    seen["caps"] = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]
    return seen
"""


def test_an_environment_sees_no_process_or_file_of_the_world(tmp_path):
    marker = Path("/tmp") / f"rwh-host-marker-{os.getpid()}"
    marker.write_text("the world's")
    project_file = ROOT / f".rwh-attack-{os.getpid()}.txt"  # the project folder, where the world works
    project_file.write_text("mine")
    try:
        handler = _write(tmp_path, "spy", SPY % {"world": f"/proc/{os.getpid()}/environ", "project": str(project_file),
                                                 "tmp_marker": str(marker)})
        from sandbox import Sandbox

        with Sandbox(seed=0) as sb:
            seen = sb.function(handler).invoke({}).result
    finally:
        marker.unlink()
        text = project_file.read_text()
        project_file.unlink()
    assert seen["pids"] == [1, 2]  # its init and itself: no world, template or other environment
    assert seen["world"] == "ENOENT"  # no such process in its /proc
    assert seen["project"] in ("EROFS", "EACCES")  # read-only, and another user's
    assert text == "mine"
    assert seen["host_tmp"] == "FileNotFoundError"  # /tmp is its own
    assert seen["uid"] != 0 and int(seen["caps"], 16) == 0


KILLER = """
import os, signal, subprocess, time
from sandbox import orders_in, send_confirmation_email

def handler(event, context):
    subprocess.Popen(["sleep", "300"], start_new_session=True)  # a child that would outlive its environment
    if os.fork() == 0:  # a daemon of its own session
        os.setsid()
        time.sleep(300)
        os._exit(0)
    try:
        os.killpg(os.getpgrp(), signal.SIGTERM)  # its own process group only
    except ProcessLookupError:
        pass
    for order in orders_in(event):
        send_confirmation_email(order)
"""


def test_a_handler_kills_only_its_own_group_and_leaves_no_process_behind(tmp_path):
    handler = _write(tmp_path, "killer", KILLER)
    before = _sleepers()
    done = subprocess.run([sys.executable, "-m", "sandbox", "run", "no-fault", "--handler", handler, "--json"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    report = json.loads(done.stdout)  # the CLI lived to print its report
    assert report["scenario"] == "no-fault"
    deadline = time.monotonic() + 10
    while _sleepers() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _sleepers() - before  # every sleep child died with its environment


def _sleepers() -> set[int]:
    found = set()
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", b"300"]:
                found.add(int(pid))
        except OSError:
            pass
    return found


def test_an_environment_reaches_no_server_of_the_machine(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted: list[object] = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    port = server.getsockname()[1]
    handler = _write(tmp_path, "caller", f"""
        import socket
        def handler(event, context):
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=1).close()
                return "connected"
            except OSError as exc:
                return type(exc).__name__
    """)
    from sandbox import Sandbox

    try:
        with Sandbox(seed=0) as sb:
            said = sb.function(handler).invoke({}).result
    finally:
        server.close()
    assert said == "ConnectionRefusedError" and not accepted  # its own loopback, nobody listening


def test_ephemeral_storage_is_the_functions_and_full_is_enospc(tmp_path):
    handler = _write(tmp_path, "filler", """
        import errno
        def handler(event, context):
            try:
                with open("/tmp/big", "wb") as f:
                    for _ in range(600):
                        f.write(b"x" * (1 << 20))
                return "wrote 600 MB"
            except OSError as exc:
                return errno.errorcode[exc.errno]
    """)
    from sandbox import Sandbox

    with Sandbox(seed=0) as sb:
        assert sb.function(handler).invoke({}).result == "ENOSPC"  # 512 MB by default


def test_file_descriptors_and_threads_are_capped_as_on_lambda(tmp_path):
    handler = _write(tmp_path, "hoarder", """
        import os, threading
        def handler(event, context):
            fds = []
            try:
                for _ in range(5000):
                    fds.append(os.open("/dev/null", os.O_RDONLY))
            except OSError:
                pass
            opened = len(fds)
            for fd in fds:
                os.close(fd)
            import resource
            return {"fds": opened, "nproc": resource.getrlimit(resource.RLIMIT_NPROC)[0]}
    """)
    from sandbox import Sandbox

    with Sandbox(seed=0) as sb:
        seen = sb.function(handler).invoke({}).result
    assert 1000 <= seen["fds"] < 1024 and seen["nproc"] == 1024


def test_touching_more_memory_than_the_function_has_is_runtime_out_of_memory(tmp_path):
    handler = _write(tmp_path, "hog", """
        def handler(event, context):
            hog = bytearray(1 << 30)  # 1 GiB, touched
            for i in range(0, len(hog), 4096):
                hog[i] = 1
            return "survived"
    """)
    from sandbox import Sandbox

    with Sandbox(seed=0) as sb:
        inv = sb.function(handler, memory_mb=128).invoke({})
    assert inv.outcome == "crashed" and inv.error_text.startswith("Runtime.OutOfMemory"), inv.error_text


def test_the_world_is_not_killed_by_a_handler_signalling_everything(tmp_path):
    handler = _write(tmp_path, "nuke", """
        import os, signal
        def handler(event, context):
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.kill(-1, sig)  # every process it may signal
                except OSError:
                    pass
            return "still here"
    """)
    from sandbox import Sandbox

    with Sandbox(seed=0) as sb:
        inv = sb.function(handler).invoke({})
        assert inv.outcome in ("crashed", "ok")
    os.kill(os.getpid(), 0)  # this process (the world) lives on
    signal.getsignal(signal.SIGTERM)


@pytest.mark.parametrize(("megabytes", "outcome"), [(5, "ok"), (7, "error"), (20, "error")])
def test_a_synchronous_response_over_six_mb_is_function_response_size_too_large(tmp_path, megabytes, outcome):
    handler = _write(tmp_path, "big", f"""
        def handler(event, context):
            return "x" * ({megabytes} * 1024 * 1024)
    """)
    from sandbox import Sandbox

    with Sandbox(seed=0) as sb:
        inv = sb.function(handler).invoke({})
    assert inv.outcome == outcome, inv.error_text
    if outcome == "error":
        assert inv.error_text.startswith("Function.ResponseSizeTooLarge"), inv.error_text


def test_an_async_invoke_over_one_mb_is_refused_by_lambda(tmp_path):
    import boto3
    from botocore.exceptions import ClientError

    from sandbox import Sandbox
    from sandbox.sources.async_invoke import AsyncInvokeSource
    from sandbox.sources.sync_invoke import SyncInvokeEndpoint

    handler = _write(tmp_path, "quiet", """
        def handler(event, context):
            return "ok"
    """)
    with Sandbox(seed=0) as sb:
        fn = sb.function(handler)
        SyncInvokeEndpoint.of(sb).serve(fn, AsyncInvokeSource(sb, fn))
        client = boto3.client("lambda", region_name="us-east-1")
        big = json.dumps({"blob": "x" * (1024 * 1024)})
        with pytest.raises(ClientError) as caught:
            client.invoke(FunctionName=fn.config.name, InvocationType="Event", Payload=big)
        small = client.invoke(FunctionName=fn.config.name, InvocationType="Event", Payload=json.dumps({"a": 1}))
    assert caught.value.response["Error"]["Code"] == "RequestTooLargeException"
    assert small["StatusCode"] == 202


def test_an_environment_that_broke_the_protocol_is_never_reused(tmp_path):
    handler = _write(tmp_path, "garbage", """
        import os, socket
        from sandbox.runtime.environment import guest
        CALLS = []

        def handler(event, context):
            CALLS.append(1)
            if len(CALLS) == 1 and event.get("break"):
                guest.CHANNEL.sock.sendall(b"\\x00\\x00\\x00\\x05hello")  # five bytes that are not JSON
            return len(CALLS)
    """)
    from sandbox import Sandbox

    with Sandbox(seed=0) as sb:
        fn = sb.function(handler)
        first = fn.invoke({"break": True})
        second = fn.invoke({})
    assert first.outcome != "ok"
    assert (second.outcome, second.result) == ("ok", 1)  # a fresh environment, its first call


def test_a_template_killed_between_two_invocations_is_replaced_not_charged(tmp_path):
    handler = _write(tmp_path, "plain", """
        def handler(event, context):
            if event.get("exit"):
                raise SystemExit(0)
    """)
    from sandbox import Sandbox
    from sandbox.runtime.environment.host import Template

    with Sandbox(seed=0) as sb:
        fn = sb.function(handler)
        assert fn.invoke({"exit": True}).outcome == "crashed"  # its environment is gone
        os.kill(Template.get().process.pid, signal.SIGTERM)
        Template.get().process.wait(timeout=10)
        again = fn.invoke({})
    assert again.outcome == "ok", again.error_text


def test_a_forked_child_that_returns_from_the_handler_changes_nothing(tmp_path):
    handler = _write(tmp_path, "forker", """
        import os
        from sandbox import orders_in, send_confirmation_email

        def handler(event, context):
            os.fork()  # both copies go on; only the runtime's is the invocation
            for order in orders_in(event):
                send_confirmation_email(order)
            return os.getpid()
    """)
    verdicts = {run_scenario("no-fault", handler, seed=0).verdict.explain() for _ in range(3)}
    assert len(verdicts) == 1
    (verdict,) = verdicts
    assert verdict.startswith("valid"), verdict


def test_without_namespaces_the_cli_says_once_what_is_not_contained(tmp_path):
    """Where the kernel refuses user namespaces (or on a Mac) the run goes on, and says what it lost."""
    handler = _write(tmp_path, "plain", """
        from sandbox import orders_in, send_confirmation_email

        def handler(event, context):
            for order in orders_in(event):
                send_confirmation_email(order)
    """)
    env = {**os.environ, "RWH_NO_NAMESPACES": "1"}
    done = subprocess.run([sys.executable, "-m", "sandbox", "run", "concurrent-claims", "--handler", handler],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert done.stderr.count("NOT contained") == 1, done.stderr
    assert "unprivileged user namespaces" in done.stderr
    assert done.returncode in (0, 1)  # a verdict, as ever
