"""An execution environment's manager: the process that holds its namespaces and ends them.

The template forks one manager per environment, into new namespaces (``namespaces.fork_into``). The
manager never runs learner code. It forks the namespace's init (which mounts a ``/proc`` that shows
only this environment) and then, on the template's orders, the environment's processes: one for an
ordinary function, several for Lambda Managed Instances. Each of those drops every capability,
starts a session of its own and takes Lambda's limits before the runtime client loads the handler.

While the environment runs, the manager measures it as Lambda's sandbox would: past the function's
memory it ends the environment, which the world reports as ``Runtime.OutOfMemory``. When its last
process ends, or the template goes, the manager kills the init, and the kernel ends every process
left in the namespace (a daemon, a pool's workers, a ``sleep`` child).

Orders (template -> manager, one datagram each): ``spawn`` with the function's config and the new
process's channel attached; ``kill`` one process. Reports (manager -> template): ``spawned`` (its pid)
and ``ended`` (its exit status, and ``why`` when the manager ended it: ``"oom"``).
"""
from __future__ import annotations

import os
import select
import signal
import socket
from collections.abc import Callable
from typing import Any, NoReturn

from . import namespaces, wire

#: How often the manager measures the environment's memory while it has processes (real seconds).
MEASURE_EVERY = 0.05
#: Lambda's quotas for each execution environment (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html).
FILE_DESCRIPTORS = 1024
PROCESSES_AND_THREADS = 1024
#: What each process of the environment becomes (the template's ``_run_function``).
Become = Callable[[socket.socket, dict[str, Any]], NoReturn]


def private_memory_mb() -> float:
    """What the environment's processes wrote to memory of their own, in MB (``/proc`` shows only them).

    Pages shared with the template (the runtime, boto3, the sandbox's modules) are left out until a
    process writes to one; Lambda counts its runtime's ~40 MB too, so the sandbox is that much kinder."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit() or name == "1":
            continue
        try:
            with open(f"/proc/{name}/smaps_rollup", "rb") as f:
                for line in f:
                    if line.startswith(b"Private_Dirty:"):
                        total += int(line.split()[1])
                        break
        except (OSError, ValueError):
            continue  # it ended meanwhile, or is a kernel thread
    return total / 1024 + _detached_shared_memory_mb()


def _detached_shared_memory_mb() -> float:
    """System V shared memory in this environment's own IPC namespace, as ``/proc/sysvipc/shm`` shows it to the
    manager, which is in it: a segment's pages are in no process's private memory, attached or not (a page an
    attached process has touched may be counted twice: the limit errs on Lambda's side)."""
    total = 0
    try:
        with open("/proc/sysvipc/shm") as f:
            rss = f.readline().split().index("rss")
            for line in f:
                fields = line.split()
                if len(fields) > rss:
                    total += int(fields[rss])
    except (OSError, ValueError):
        return 0.0
    return total / (1024 * 1024)


def run(orders: socket.socket, become: Become) -> NoReturn:
    """Manage one environment: ``become(channel, config)`` runs in each of its processes, and never returns."""
    try:
        _Manager(orders, become).serve()
    except BaseException as exc:  # noqa: BLE001 - the sandbox's own failure: said on the template's stderr
        os.write(2, f"sandbox: an execution environment's manager failed: {exc!r}\n".encode())
        os._exit(1)


def _start_init() -> int:
    """Fork the PID namespace's init, and wait until it has mounted the namespace's ``/proc``."""
    ready_r, ready_w = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(ready_r)
        try:
            namespaces.become_init()
        except OSError as exc:
            os.write(2, f"sandbox: an execution environment's init failed: {exc}\n".encode())
            os._exit(1)
        os.write(ready_w, b"1")
        os.close(ready_w)
        while True:  # reap whatever ends, until the manager dies and takes this process with it
            try:
                os.wait()
            except ChildProcessError:
                signal.pause()
    os.close(ready_w)
    mounted = os.read(ready_r, 1) == b"1"
    os.close(ready_r)
    if not mounted:
        os._exit(1)
    return init


class _Manager:
    """One environment's processes, its memory, and its end."""

    def __init__(self, orders: socket.socket, become: Become) -> None:
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(number, signal.SIG_DFL)
        namespaces.set_dumpable(False)
        self.orders, self.become = orders, become
        self.init = _start_init()
        self.live: set[int] = set()
        self.memory_mb: float | None = None
        self.spawned = False
        # The environment's first process, forked ahead and ready but for its function: no fork on a cold
        # start's path (a Managed Instances environment forks its later processes when asked).
        self.waiting: tuple[int, socket.socket] | None = self.fork_waiting()

    def fork_waiting(self) -> tuple[int, socket.socket]:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            self.orders.close()
            mine.close()
            _become_process(theirs, None, self.become)
        theirs.close()
        return pid, mine

    def serve(self) -> NoReturn:
        while True:
            if select.select([self.orders], [], [], MEASURE_EVERY if self.live else 1.0)[0]:
                self.take_order()
            self.reap()
            if self.spawned and not self.live:
                self.end()
            if self.live and self.memory_mb is not None and private_memory_mb() > self.memory_mb:
                self.end("oom")

    def take_order(self) -> None:
        try:
            data, fds, _, _ = socket.recv_fds(self.orders, 1 << 20, 1)
        except OSError:
            data, fds = b"", []
        if not data:  # the template has gone: so does the environment
            self.end()
        message = wire.decode(data)
        if message.get("t") == "spawn" and fds:
            self.spawn(message["config"], fds[0])
        elif message.get("t") == "kill" and message.get("pid") in self.live:
            os.kill(int(message["pid"]), signal.SIGKILL)

    def spawn(self, config: dict[str, Any], channel: int) -> None:
        if not self.spawned:  # the environment's first process brings the function's limits
            limits = config.get("limits") or {}
            self.memory_mb = float(limits.get("memory_mb") or 0) or None
            if limits.get("tmp_mb"):
                namespaces.resize_tmp(int(limits["tmp_mb"]))
        if self.waiting is not None:
            pid, ready = self.waiting
            self.waiting = None
            socket.send_fds(ready, [wire.encode(config)], [channel])
            ready.close()
        else:
            pid = os.fork()
            if pid == 0:
                self.orders.close()
                _become_process(socket.socket(fileno=channel), config, self.become)
        os.close(channel)
        self.live.add(pid)
        self.spawned = True
        self.report({"t": "spawned", "pid": pid})

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.init:
                self.end()
            if pid in self.live:
                self.live.discard(pid)
                self.report({"t": "ended", "pid": pid, "status": os.waitstatus_to_exitcode(status), "why": None})

    def report(self, message: dict[str, Any]) -> None:
        try:
            self.orders.send(wire.encode(message))
        except OSError:
            pass

    def end(self, why: str | None = None) -> NoReturn:
        os.kill(self.init, signal.SIGKILL)  # the kernel ends every process of the namespace with its init
        for pid in sorted(self.live):
            try:
                _, status = os.waitpid(pid, 0)
                code = os.waitstatus_to_exitcode(status)
            except ChildProcessError:
                code = -signal.SIGKILL
            self.report({"t": "ended", "pid": pid, "status": code, "why": why})
        os._exit(0)


def _become_process(channel: socket.socket, config: dict[str, Any] | None, become: Become) -> NoReturn:
    """One process of the environment: the handler's user, no capabilities, a session of its own, Lambda's limits.

    ``config`` None: forked ahead, ``channel`` brings the function's config and the real channel later."""
    try:
        os.setsid()
        os.setresgid(namespaces.INSIDE_GID, namespaces.INSIDE_GID, namespaces.INSIDE_GID)
        os.setresuid(namespaces.INSIDE_UID, namespaces.INSIDE_UID, namespaces.INSIDE_UID)
        namespaces.set_dumpable(True)  # a change of user made /proc/self root's; the handler may read its own
        namespaces.drop_privileges()
        namespaces.set_limits(FILE_DESCRIPTORS, PROCESSES_AND_THREADS)
    except OSError:
        os._exit(70)
    if config is None:
        data, fds, _, _ = socket.recv_fds(channel, 1 << 20, 1)
        channel.close()
        if not data or not fds:
            os._exit(0)  # the environment ended before it was used
        channel, config = socket.socket(fileno=fds[0]), wire.decode(data)
    become(channel, config)
