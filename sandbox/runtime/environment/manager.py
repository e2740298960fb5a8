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

The environment's first process is forked ahead, before any function is known, and waits behind a
door: a socket the template made before it forked the manager, and whose other end it hands the world.
The world opens the door itself on a cold start, sending the function's config and the channel
straight to the process: no hop through the template or the manager on the cold start's path. Before
any of the function's code runs, the process tells the manager the function's limits on a socket of
their own (and waits, only if ``/tmp`` must be resized), then closes it: what the handler could say
later, the manager never hears.

Orders (template -> manager, one datagram each): ``spawn`` with the function's config and the new
process's channel attached (another process of a Managed Instances environment); ``kill`` one process.
Reports (manager -> template): ``waiting`` (the first process's pid), ``spawned``
(a later process's pid) and ``ended`` (its exit status, and ``why`` when the manager ended it: ``"oom"``).
"""
from __future__ import annotations

import os
import select
import signal
import socket
from collections.abc import Callable, Mapping
from typing import NoReturn

from . import namespaces, wire

#: How often the manager measures the environment's memory once its function is known (real seconds).
MEASURE_EVERY = 0.05
#: Lambda's quotas for each execution environment (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html).
FILE_DESCRIPTORS = 1024
PROCESSES_AND_THREADS = 1024
#: What each process of the environment becomes (the template's ``_run_function``).
Become = Callable[[socket.socket, wire.EnvironmentConfig], NoReturn]


def over_memory(limit_mb: float) -> bool:
    """Whether the environment's processes hold more memory of their own than ``limit_mb``.

    Walking every page table (``private_memory_mb``) took a tenth of a manager's CPU. The kernel keeps a count of
    each process's anonymous and shared-memory pages, and their sum bounds what it wrote of its own (a page copied
    from the template is anonymous): while that bound is under the limit, no walk is needed."""
    if _resident_bound_mb() <= limit_mb:
        return False
    return private_memory_mb() > limit_mb


def _resident_bound_mb() -> float:
    return _summed_kb("status", (b"RssAnon:", b"RssShmem:")) / 1024 + _detached_shared_memory_mb()


def _summed_kb(file: str, fields: tuple[bytes, ...]) -> int:
    """The kB that ``fields`` of ``/proc/<pid>/<file>`` add up to, over the environment's processes (its init left out:
    it is the sandbox's own, and ``/proc`` shows no one else's)."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit() or name == "1":
            continue
        try:
            with open(f"/proc/{name}/{file}", "rb") as f:
                total += sum(int(line.split()[1]) for line in f if line.startswith(fields))
        except (OSError, ValueError):
            continue  # it ended meanwhile, or is a kernel thread
    return total


def private_memory_mb() -> float:
    """What the environment's processes wrote to memory of their own, in MB (``/proc`` shows only them).

    Pages shared with the template (the runtime, boto3, the sandbox's modules) are left out until a
    process writes to one (an environment forked ahead copies some 10 MB of them while it waits: ``prefault``);
    Lambda counts its runtime's ~40 MB too, so the sandbox is about 30 MB kinder."""
    return _summed_kb("smaps_rollup", (b"Private_Dirty:",)) / 1024 + _detached_shared_memory_mb()


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


def run(orders: socket.socket, door: socket.socket, become: Become, tmp_mb: int,
        ahead: Callable[[socket.socket], None] = lambda door: None) -> NoReturn:
    """Manage one environment: ``become(channel, config)`` runs in each of its processes, and never returns.

    ``door``: the inside end of the socket through which the world hands the first process its function;
    ``tmp_mb``: the size its ``/tmp`` was mounted with."""
    try:
        _Manager(orders, door, become, tmp_mb, ahead).serve()
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
        if not namespaces.tell_parent(ready_w, b"1"):
            os._exit(0)  # the manager is gone already (its template ended while this spare was made): so is this
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

    def __init__(self, orders: socket.socket, door: socket.socket, become: Become, tmp_mb: int,
                 ahead: Callable[[socket.socket], None]) -> None:
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(number, signal.SIG_DFL)
        namespaces.set_dumpable(False)
        self.orders, self.become, self.tmp_mb, self.ahead = orders, become, tmp_mb, ahead
        self.init = _start_init()
        self.memory_mb: float | None = None
        # The environment's first process, forked ahead and ready but for its function: no fork on a cold
        # start's path (a Managed Instances environment forks its later processes when asked). It counts as
        # live from now: if its door closes unused, it ends, and the environment with it.
        pid, limits = self.fork_waiting(door)
        self.limits: socket.socket | None = limits
        self.live: set[int] = {pid}
        self.report({"t": "waiting", "pid": pid})

    def fork_waiting(self, door: socket.socket) -> tuple[int, socket.socket]:
        limits, limits_inside = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            self.orders.close()
            limits.close()
            _become_process(door, None, self.become, (limits_inside, self.tmp_mb), self.ahead)
        door.close()
        limits_inside.close()
        return pid, limits

    def serve(self) -> NoReturn:
        while True:
            waits = [self.orders] if self.limits is None else [self.orders, self.limits]
            for ready in select.select(waits, [], [], MEASURE_EVERY if self.memory_mb is not None else 1.0)[0]:
                if ready is self.orders:
                    self.take_order()
                else:
                    self.take_limits()
            self.reap()
            if not self.live:
                self.end()
            if self.memory_mb is not None and over_memory(self.memory_mb):
                self.end("oom")

    def take_limits(self) -> None:
        """The function's limits, from its first process before any of its code ran; the socket closes after."""
        assert self.limits is not None
        try:
            limits = wire.decode_limits(self.limits.recv(1 << 16) or b"{}")
        except (OSError, ValueError):
            limits = {}
        self.memory_mb = float(limits.get("memory_mb") or 0) or None
        tmp_mb = limits.get("tmp_mb")
        if isinstance(tmp_mb, int) and tmp_mb != self.tmp_mb:
            namespaces.resize_tmp(tmp_mb)
            self.tmp_mb = tmp_mb
            try:
                self.limits.send(b"1")
            except OSError:
                pass
        self.limits.close()
        self.limits = None

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

    def spawn(self, config: wire.EnvironmentConfig, channel: int) -> None:
        """Another process of this environment (Lambda Managed Instances): its limits are the first one's."""
        pid = os.fork()
        if pid == 0:
            self.orders.close()
            if self.limits is not None:
                self.limits.close()
            _become_process(socket.socket(fileno=channel), config, self.become)
        os.close(channel)
        self.live.add(pid)
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

    def report(self, message: wire.Message) -> None:
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


def _become_process(channel: socket.socket, config: wire.EnvironmentConfig | None, become: Become,
                    limits: tuple[socket.socket, int] | None = None,
                    ahead: Callable[[socket.socket], None] = lambda door: None) -> NoReturn:
    """One process of the environment: the handler's user, no capabilities, a session of its own, Lambda's limits.

    ``config`` None: forked ahead; ``channel`` is its door, which brings the function's config and the real
    channel later, and ``limits`` the socket on which it tells the manager the function's limits (with the
    size ``/tmp`` has now)."""
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
        ahead(channel)  # its door: the copying ahead stops when the function comes
        data, fds, _, _ = socket.recv_fds(channel, 1 << 20, 1)
        channel.close()
        if not data or not fds:
            os._exit(0)  # the environment ended before it was used
        channel, config = socket.socket(fileno=fds[0]), wire.decode_config(data)
        if limits is not None:
            _tell_limits(config, *limits)
    become(channel, config)


def _tell_limits(config: wire.EnvironmentConfig, manager: socket.socket, tmp_mb: int) -> None:
    """Give the manager the function's limits; wait only while it resizes ``/tmp``. Then the socket closes, before
    any code of the function runs: nothing the handler says later reaches the manager."""
    given = config.get("limits")
    limits: Mapping[str, object] = given if isinstance(given, dict) else {}  # a config from the world, read warily
    try:
        manager.send(wire.encode({"memory_mb": limits.get("memory_mb"), "tmp_mb": limits.get("tmp_mb")}))
        if isinstance(limits.get("tmp_mb"), int) and limits["tmp_mb"] != tmp_mb:
            manager.recv(1)
    except OSError:
        os._exit(70)
    manager.close()
