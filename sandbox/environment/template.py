"""The warm template: a process that forks one execution environment per cold start.

Starting Python and importing boto3, botocore and the runtime client takes about half a
second; Lambda's own cold starts do not pay that for each environment, and neither should
the sandbox's. The template does it once, parses the service models the course uses, and
then forks: a cold start costs a fork and the handler's own init. The template never holds
anything of a world (it is started before any, from a fresh interpreter), so a forked
environment has nothing of the world in its memory to read.

The world talks to the template on a control socket: ``spawn`` (with the environment's
channel passed as a file descriptor) answers with the new process's id, ``kill`` ends one
with SIGKILL, and ``status`` reports how one ended. The template reaps every child, and
ends them all when the world goes away (its control socket closes).
"""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import sys
import time
import traceback
from typing import Any

from . import guest, wire

#: The services whose models a handler's cold start would otherwise parse again.
WARM_SERVICES = ("dynamodb", "sqs", "kinesis", "events", "lambda", "sns", "s3", "stepfunctions")


def _warm() -> None:
    """Import and parse what every environment needs, once."""
    import awslambdaric.bootstrap  # noqa: F401  (loaded here so a fork needs no import)
    import boto3
    import botocore.handlers

    from .. import services  # noqa: F401

    botocore.handlers.BUILTIN_HANDLERS.append(("before-send", guest.before_send))
    # The default session's loader keeps every JSON document it read: clients that
    # boto3.client() and boto3.resource() make after the fork parse nothing from disk.
    boto3.DEFAULT_SESSION = boto3.session.Session(region_name="us-east-1")
    for name in WARM_SERVICES:
        boto3.DEFAULT_SESSION.client(name)
    boto3.DEFAULT_SESSION.resource("dynamodb").Table("warm")


def _child(channel: socket.socket, config: dict[str, Any]) -> None:
    """The forked environment: never returns."""
    code: Any = 0
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        guest.run(channel, config)
    except SystemExit as exc:
        code = exc.code
        guest.report_exit(exc)
    except BaseException as exc:  # noqa: BLE001 - as Python ends on an uncaught exception, exit status 1
        # Its last line only: the frames are the runtime's own, with this machine's paths in them.
        sys.stderr.write("".join(traceback.format_exception_only(type(exc), exc)))
        code = 1
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
    except BaseException:  # noqa: BLE001 - the process is ending either way
        pass
    if code is None:
        code = 0
    elif not isinstance(code, int):
        code = 1
    os._exit(code & 0xFF)


class _Children:
    def __init__(self) -> None:
        self.live: set[int] = set()
        self.ended: dict[int, int] = {}

    def reap(self, pid: int = -1, block: bool = False) -> None:
        while True:
            try:
                found, status = os.waitpid(pid, 0 if block else os.WNOHANG)
            except ChildProcessError:
                return
            if found == 0:
                return
            self.live.discard(found)
            self.ended[found] = os.waitstatus_to_exitcode(status)
            shutil.rmtree(guest.private_tmp(found), ignore_errors=True)
            if pid != -1:
                return

    def status(self, pid: int, wait: float) -> int | None:
        deadline = time.monotonic() + wait
        while pid not in self.ended and time.monotonic() < deadline:
            self.reap(pid)
            if pid not in self.ended:
                time.sleep(0.002)
        return self.ended.pop(pid, None)

    def kill(self, pid: int) -> None:
        if pid in self.live:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.reap(pid, block=True)

    def kill_all(self) -> None:
        for pid in list(self.live):
            self.kill(pid)


def serve(control: socket.socket) -> None:
    children = _Children()
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, 1 << 20, 1)
        except OSError:
            break
        if not data:
            break
        message = wire.decode(data)
        kind = message.get("t")
        if kind == "spawn":
            channel = socket.socket(fileno=fds[0])
            pid = os.fork()
            if pid == 0:
                control.close()
                _child(channel, message["config"])
            channel.close()
            children.live.add(pid)
            answer: dict[str, Any] = {"pid": pid}
        elif kind == "kill":  # no answer: the world goes on at once
            children.kill(int(message["pid"]))
            children.ended.pop(int(message["pid"]), None)
            children.reap()
            continue
        elif kind == "status":
            answer = {"status": children.status(int(message["pid"]), float(message.get("wait", 1.0)))}
        else:
            answer = {"error": f"unknown request {kind!r}"}
        children.reap()
        control.sendall(wire.encode(answer))
    children.kill_all()


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in the world's terminal is the world's to handle
    _warm()
    try:
        control.sendall(wire.encode({"ready": True}))
        serve(control)
    except OSError:  # the world went away (a command line that stopped early): nothing to serve
        pass


if __name__ == "__main__":
    main()
