"""The warm template: a process that forks one execution environment per cold start.

Starting Python and importing boto3, botocore and the runtime client takes about half a
second; Lambda's own cold starts do not pay that for each environment, and neither should
the sandbox's. The template does it once, parses the service models the course uses, and
then forks: a cold start costs a fork and the handler's own init. The template never holds
anything of a world (it is started before any, from a fresh interpreter), so a forked
environment has nothing of the world in its memory to read.

The world talks to the template on a control socket: ``spares`` hands it environments forked
ahead, each behind its door (a socket the world opens itself on a cold start, sending the
function's config and channel straight to the waiting process), ``kill`` ends one with
SIGKILL, and ``status`` reports how one ended. ``spawn`` (with the channel passed as a file
descriptor) starts one and answers with its id; with ``share_tmp`` (a pid) it makes
another process of that one's execution environment, with the same ``/tmp`` (Lambda Managed
Instances run several processes per environment); a shared ``/tmp`` is removed with the last
process that uses it. The template reaps every child, and
ends them all when the world goes away (its control socket closes).
"""
from __future__ import annotations

import atexit
import gc
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from ...aws.parsecache import SharedParse
from . import guest, manager, namespaces, prefault, wire

#: The services whose models a handler's cold start would otherwise parse again.
WARM_SERVICES = ("dynamodb", "sqs", "kinesis", "events", "lambda", "sns", "s3", "stepfunctions")


def _warm() -> None:
    """Import and parse what every environment needs, once."""
    import multiprocessing.pool  # noqa: F401
    import multiprocessing.queues  # noqa: F401
    import multiprocessing.synchronize  # noqa: F401

    import awslambdaric.bootstrap  # noqa: F401  (loaded here so a fork needs no import)
    import boto3
    import botocore.handlers

    from ...core import services  # noqa: F401
    from . import realwaits  # noqa: F401  (and what it patches at each start: multiprocessing's parts)

    botocore.handlers.BUILTIN_HANDLERS.append(("before-send", guest.before_send))
    # The default session's loader keeps every JSON document it read: clients that boto3.client() and
    # boto3.resource() make after the fork parse nothing from disk. (Nothing of moto or the world is
    # imported here: a handler's `from sandbox import ...` loads only what it uses.)
    boto3.DEFAULT_SESSION = boto3.session.Session(region_name="us-east-1")
    # Each client the handler makes after the fork takes the model and endpoint rules parsed here, as
    # clients in the world's own process do (``parsecache``): each cold start still builds its clients.
    loader = boto3.DEFAULT_SESSION._session.get_component("data_loader")
    SharedParse(lambda: loader).install()
    _warm_calls(boto3.DEFAULT_SESSION.resource("dynamodb").Table("warm"))


def _learn_hot() -> None:
    """Which pages a cold start writes (``HOT``), for the spares forked from now on to copy ahead."""
    global HOT
    HOT = prefault.learn(_first_steps)


def _warm_later() -> None:
    """The other services' clients, made once the template has said it is ready and no request waits: a command
    line's first cold start waits for the template, and these took 80-100 ms of its start. (The spares forked
    before them parse what their handler uses, a few ms each: well under the quantum, no history changes.)"""
    import boto3

    for name in WARM_SERVICES:
        boto3.DEFAULT_SESSION.client(name)


def _frozen(load: Callable[[], None]) -> None:
    """``load()`` with the collector off, and what it leaves frozen: out of the collector's reach in every fork,
    which would otherwise copy the template's pages as it walks them."""
    gc.disable()
    load()
    gc.freeze()
    gc.enable()


def _first_steps() -> None:
    """What a cold start does first, for the scout that learns which pages it writes (``prefault``): make clients
    and call DynamoDB, read an event and answer it, and report an error as the runtime client does. Each step on its
    own: one that fails (another runtime client's API) leaves the others' pages learned."""
    import json

    import boto3
    from awslambdaric import bootstrap

    def calls() -> None:
        boto3.client("dynamodb")
        _warm_calls(boto3.resource("dynamodb").Table("warm"))

    def answer() -> None:
        event = json.loads('{"Records": [{"messageId": "m-1", "body": "{\\"orderId\\": \\"o-1\\"}"}]}')
        json.loads(event["Records"][0]["body"])
        bootstrap.to_json({"processed": [{"orderId": "o-1"}]})

    def error() -> None:
        try:
            raise KeyError("o-1")
        except KeyError:
            fault = bootstrap.build_fault_result(sys.exc_info(), None)
        bootstrap.to_json(fault)

    for step in (calls, answer, error):
        try:
            step()
        except Exception:  # noqa: BLE001 - a step the scout could not take is a page not copied ahead, no more
            pass


#: The pages of the template a cold start writes, which each environment forked ahead copies while it waits.
HOT: prefault.Ranges = []


def _copy_ahead(door: socket.socket) -> None:
    """Copy the hot pages ahead, until the environment's function comes through ``door``."""
    prefault.copy_ahead(HOT, wanted=lambda: bool(select.select([door], [], [], 0)[0]))


def _warm_calls(table: Any) -> None:
    """Make the calls a run_once makes, answered here with an empty 200, so what botocore builds on a
    client's first call (operation models, serialisers, parsers, resolved endpoints) is built once,
    before the fork. Nothing leaves the process; the answers are thrown away."""
    from botocore.awsrequest import AWSResponse

    class _Empty:
        def stream(self, **_: Any) -> Iterator[bytes]:
            yield b"{}"

    guest._SENDER = lambda request=None, **_: AWSResponse(request.url, 200, {}, _Empty())
    try:
        table.get_item(Key={"pk": "warm"}, ConsistentRead=True)
        table.put_item(Item={"pk": "warm"}, ConditionExpression="attribute_not_exists(pk)")
        table.update_item(Key={"pk": "warm"}, UpdateExpression="SET #s = :s", ExpressionAttributeNames={"#s": "s"},
                          ExpressionAttributeValues={":s": "warm"})
        table.delete_item(Key={"pk": "warm"})
        table.meta.client.get_item(TableName="warm", Key={"pk": {"S": "warm"}})
    finally:
        guest._SENDER = None


def _spare(inherited: list[socket.socket], orders: socket.socket, tmp: str) -> None:
    """A forked environment waiting for its function (where namespaces are refused): never returns.

    It does what every environment does first (``guest.prepare``), then waits for its config and
    channel. Forking ahead keeps the fork off a cold start's path; nothing of a function has run here.
    """
    for sock in inherited:  # the world's control socket, the other spares' orders: none of them is ours
        sock.close()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    guest.prepare(tmp)
    _copy_ahead(orders)
    data, fds, _, _ = socket.recv_fds(orders, 1 << 20, 1)
    orders.close()
    if not data or not fds:
        os._exit(0)  # the template is ending: it was never used
    _run_function(socket.socket(fileno=fds[0]), wire.decode_config(data))


def _run_function(channel: socket.socket, config: wire.EnvironmentConfig) -> NoReturn:
    """Be the execution environment ``config`` describes until it ends; exit as Python would."""
    code: Any = 0
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if guest.CHANNEL is None and not guest._Mounts.tmp:
            guest.prepare(None)  # in its own namespaces: /tmp is already its own
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


class _Managed:
    """Environments in namespaces of their own (``manager``): each spare is a manager, its namespaces made.

    The world names an environment by its manager's pid, and a later process of it (Lambda Managed Instances)
    by that process's pid; each belongs to one manager.
    """

    def __init__(self, control: socket.socket, plan: namespaces.Plan) -> None:
        self.control, self.plan = control, plan
        self.spares: list[tuple[int, socket.socket, socket.socket]] = []  # manager pid, orders, door
        self.managers: dict[int, socket.socket] = {}  # manager pid -> its orders socket, once in use
        self.owner: dict[int, int] = {}  # process (or environment) name -> manager pid
        self.first: dict[int, int] = {}  # an environment's first process's pid -> its manager's
        self.ended: dict[int, wire.Message] = {}
        self.dying: set[int] = set()  # killed managers, not yet reaped
        #: Spares still unsharing, whose maps the template writes once they have (``mapped``): it answers the world
        #: meanwhile, where it waited 0-23 ms (3.5 ms median) on each spare it made.
        self.unmapped: dict[int, namespaces.Started] = {}

    def _sockets(self) -> list[socket.socket]:
        return [self.control, *(s for _, orders, door in self.spares for s in (orders, door)),
                *self.managers.values()]

    def short(self) -> bool:
        return len(self.spares) < SPARES

    def fork_spare(self) -> None:
        """A manager, its namespaces and its first process on their way; the door to that process is here now,
        so the world may have it at once (what it sends waits in the socket until the process reads it)."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        door, door_inside = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pipes = tuple(fd for started in self.unmapped.values() for fd in started.fds())
        child = namespaces.fork_started(self.plan, close=pipes)  # it unshares while the template answers the world
        if child.pid == 0:
            for sock in [*self._sockets(), mine, door]:
                sock.close()
            manager.run(theirs, door_inside, _run_function, self.plan.tmp_mb, _copy_ahead)
        theirs.close()
        door_inside.close()
        self.unmapped[child.pid] = child
        self.spares.append((child.pid, mine, door))

    def waiting(self) -> list[int]:
        """The pipes of the spares still unsharing: each readable once its spare has (or has failed)."""
        return [started.waiting for started in self.unmapped.values()]

    def mapped(self, ready: list[int]) -> None:
        """Write the maps of the spares whose pipes in ``ready`` are readable. One that could not unshare is gone
        (killed by ``finish``), and so is its place among the spares; a world that has its door already finds it
        closed, and opens the next (``Template._open_door``)."""
        for pid, started in list(self.unmapped.items()):
            if started.waiting not in ready:
                continue
            del self.unmapped[pid]
            try:
                started.finish()
            except OSError as exc:
                print(f"sandbox: an execution environment's namespaces could not be made: {exc}", file=sys.stderr)
                for spare in [s for s in self.spares if s[0] == pid]:
                    self.spares.remove(spare)
                    spare[1].close()
                    spare[2].close()

    def take(self, most: int) -> list[tuple[int, socket.socket]]:
        """Up to ``most`` environments waiting for a function (at least one): each one's name and door. The
        caller sends the function's config and channel through the door; its manager is in use from now."""
        if not self.spares:
            self.fork_spare()
        taken: list[tuple[int, socket.socket]] = []
        while self.spares and len(taken) < most:
            manager_pid, orders, door = self.spares.pop(0)
            self.ended.pop(manager_pid, None)  # a pid given again: not this one's end
            self.managers[manager_pid] = orders
            self.owner[manager_pid] = manager_pid
            taken.append((manager_pid, door))
        return taken

    def spawn(self, config: wire.EnvironmentConfig, channel: int, share_tmp: int | None = None) -> int:
        manager_pid = self.owner.get(share_tmp) if share_tmp is not None else None
        if manager_pid is None or manager_pid not in self.managers:
            [(name, door)] = self.take(1)
            socket.send_fds(door, [wire.encode(config)], [channel])
            door.close()
            return name
        orders = self.managers[manager_pid]
        socket.send_fds(orders, [wire.encode({"t": "spawn", "config": config})], [channel])
        while True:
            message = self._report(manager_pid, block=True)
            if message is None:
                raise OSError("the environment's manager ended before it started the process")
            if message.get("t") == "spawned":
                pid = int(message["pid"])
                self.ended.pop(pid, None)
                self.owner[pid] = manager_pid
                return pid

    def _report(self, manager_pid: int, block: bool = False) -> wire.Message | None:
        orders = self.managers.get(manager_pid)
        if orders is None or not (block or select.select([orders], [], [], 0)[0]):
            return None
        try:
            data = orders.recv(1 << 16)
        except OSError:
            data = b""
        if not data:
            self._gone(manager_pid)
            return None
        message = wire.decode(data)
        if message.get("t") == "waiting":  # the environment's first process: the world knows it by the manager's pid
            self.first[int(message["pid"])] = manager_pid
        elif message.get("t") == "ended":
            pid = int(message["pid"])
            self.ended[self.first.pop(pid, pid)] = {"status": message.get("status"), "why": message.get("why")}
        return message

    def _gone(self, manager_pid: int, killed: bool = False) -> None:
        orders = self.managers.pop(manager_pid, None)
        if orders is not None:
            orders.close()
        for pid, owner in list(self.owner.items()):
            if owner == manager_pid:
                if killed:  # nobody asks how it ended, and its pid may come back for another environment
                    self.ended.pop(pid, None)
                else:
                    self.ended.setdefault(pid, {"status": -signal.SIGKILL, "why": None})
                del self.owner[pid]

    def reap(self, pid: int = -1, block: bool = False) -> None:
        for manager_pid in list(self.managers):
            while self._report(manager_pid) is not None:
                pass
        while True:
            try:
                found, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if found == 0:
                return
            while found in self.managers and self._report(found) is not None:
                pass  # what it said before it ended
            killed = found in self.dying
            self.dying.discard(found)
            self._gone(found, killed)

    def status(self, pid: int, wait: float) -> wire.Message | None:
        deadline = time.monotonic() + wait
        while pid not in self.ended and time.monotonic() < deadline:
            self.reap()
            if pid not in self.ended:
                time.sleep(0.002)
        return self.ended.pop(pid, None)

    def kill(self, pid: int, block: bool = True) -> None:
        manager_pid = self.owner.get(pid)
        if manager_pid is None:
            return
        others = [p for p, m in self.owner.items() if m == manager_pid and p != pid and p not in self.ended]
        if others:  # one process of a Managed Instances environment: the manager ends just that one
            self.managers[manager_pid].send(wire.encode({"t": "kill", "pid": pid}))
            return
        try:  # its environment's last process: the whole environment goes, whatever it started
            os.kill(manager_pid, signal.SIGKILL)
            self.dying.add(manager_pid)  # reaped soon (the world names an environment by its manager's pid)
        except ProcessLookupError:
            pass

    def kill_all(self) -> None:
        for manager_pid in [*self.managers, *(pid for pid, *_ in self.spares)]:
            try:
                os.kill(manager_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class _Children:
    def __init__(self, control: socket.socket, tmp_root: str) -> None:
        self.control = control
        self.tmp_root = tmp_root  # each environment's /tmp is a folder in it
        self.tmp: dict[int, str] = {}
        self.live: set[int] = set()
        self.ended: dict[int, int] = {}
        self.spares: list[tuple[int, socket.socket]] = []
        self.dying: set[int] = set()  # killed, not yet reaped

    def short(self) -> bool:
        return len(self.spares) < SPARES

    def waiting(self) -> list[int]:
        """Nothing to map: these environments have no namespaces."""
        return []

    def mapped(self, ready: list[int]) -> None:
        """Nothing to map (``waiting`` names no pipe)."""

    def fork_spare(self) -> None:
        self._fork_sharing(tempfile.mkdtemp(prefix="env-", dir=self.tmp_root))

    def take(self, most: int) -> list[tuple[int, socket.socket]]:
        """Up to ``most`` forked environments waiting for a function (at least one): each one's pid and door."""
        if not self.spares:
            self.fork_spare()
        taken, self.spares = self.spares[:most], self.spares[most:]
        return taken

    def _fork_sharing(self, tmp: str) -> None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            _spare([self.control, mine, *(orders for _, orders in self.spares)], theirs, tmp)
        theirs.close()
        self.live.add(pid)
        self.tmp[pid] = tmp
        self.spares.append((pid, mine))

    def spawn(self, config: wire.EnvironmentConfig, channel: int, share_tmp: int | None = None) -> int:
        """Hand a spare its function and channel; it becomes that environment (or, with ``share_tmp``, a
        fresh fork becomes another process of the environment that process ``share_tmp`` belongs to)."""
        if share_tmp is not None and share_tmp in self.tmp:
            self._fork_sharing(self.tmp[share_tmp])
            pid, orders = self.spares.pop()
        else:
            if not self.spares:
                self.fork_spare()
            pid, orders = self.spares.pop(0)
        self.ended.pop(pid, None)  # a pid the kernel gave again: an earlier environment's end is not this one's
        socket.send_fds(orders, [wire.encode(config)], [channel])
        orders.close()
        return pid

    def reap(self, pid: int = -1, block: bool = False) -> None:
        while True:
            try:
                found, status = os.waitpid(pid, 0 if block else os.WNOHANG)
            except ChildProcessError:
                return
            if found == 0:
                return
            self.live.discard(found)
            if found in self.dying:  # killed: nobody asks how it ended
                self.dying.discard(found)
            else:
                self.ended[found] = os.waitstatus_to_exitcode(status)
            tmp = self.tmp.pop(found, "")
            if tmp and tmp not in self.tmp.values():  # its last process: the environment's /tmp goes
                shutil.rmtree(tmp, ignore_errors=True)
            if pid != -1:
                return

    def status(self, pid: int, wait: float) -> wire.Message | None:
        deadline = time.monotonic() + wait
        while pid not in self.ended and time.monotonic() < deadline:
            self.reap(pid)
            if pid not in self.ended:
                time.sleep(0.002)
        return {"status": self.ended.pop(pid), "why": None} if pid in self.ended else None

    def kill(self, pid: int, block: bool = True) -> None:
        if pid in self.live:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.dying.add(pid)
            if block:
                self.reap(pid, block=True)

    def kill_all(self) -> None:
        for pid in list(self.live):
            self.kill(pid)


#: Environments forked ahead, waiting for a function: a burst of this many cold starts (two copies of a
#: concurrent claim, say) needs no fork on its path.
SPARES = 3


def _pending(control: socket.socket, children: "_Children | _Managed", wait: float | None = 0.0) -> bool:
    """Whether the world has asked something, within ``wait`` seconds (None: once it has); a spare that has unshared
    meanwhile gets its maps."""
    while True:
        ready = select.select([control.fileno(), *children.waiting()], [], [], wait)[0]
        asked = control.fileno() in ready
        pipes = [fd for fd in ready if fd != control.fileno()]
        if pipes:
            children.mapped(pipes)
        if asked or wait is not None:
            return asked


def serve(control: socket.socket, children: "_Children | _Managed") -> None:
    """Answer the world's requests; between them, while none is waiting, fork spares, make the other services'
    clients and learn which pages the next spares should copy ahead (once each: the first spares go without,
    rather than keep a cold start waiting), and reap."""
    idle = [lambda: _frozen(_warm_later), _learn_hot]  # each once, in turn, while no request waits
    while True:
        if children.short() and not _pending(control, children):
            children.fork_spare()
            continue
        if idle and not _pending(control, children):
            idle.pop(0)()
            continue
        children.reap()
        if not _pending(control, children, 0.005 if children.dying else None):
            continue  # a killed environment is still going: reap it soon, without holding up a request
        try:
            data, fds, _, _ = socket.recv_fds(control, 1 << 20, 1)
        except OSError:
            break
        if not data:
            break
        message = wire.decode(data)
        kind = message.get("t")
        answer: wire.Message
        if kind == "spawn":
            share = message.get("share_tmp")
            try:
                answer = {"pid": children.spawn(message["config"], fds[0], share if isinstance(share, int) else None)}
            except OSError as exc:  # the machine refused (no memory, no processes left): the sandbox's failure
                answer = {"error": f"the execution environment could not be made: {exc}"}
            os.close(fds[0])
            control.sendall(wire.encode(answer))
            continue
        elif kind == "spares":
            _hand_out(control, children, message.get("most"))
            continue
        elif kind == "kill":  # no answer, and no wait for it to end: the world goes on at once
            children.kill(int(message["pid"]), block=False)
            continue
        elif kind == "status":
            answer = children.status(int(message["pid"]), float(message.get("wait", 1.0))) or {}
        else:
            answer = {"error": f"unknown request {kind!r}"}
        children.reap()
        control.sendall(wire.encode(answer))
    children.kill_all()


def _hand_out(control: socket.socket, children: "_Children | _Managed", most: Any) -> None:
    """Give the world environments waiting for a function, their doors attached: on a cold start it opens one
    itself, with no hop through the template."""
    try:
        taken = children.take(max(1, min(most, wire.HAND_OUT))) if isinstance(most, int) else children.take(1)
    except OSError as exc:
        control.sendall(wire.encode({"error": f"the execution environment could not be made: {exc}"}))
        return
    socket.send_fds(control, [wire.encode({"pids": [pid for pid, _ in taken]})], [door.fileno() for _, door in taken])
    for _, door in taken:
        door.close()


def _plan(roots: str | None) -> namespaces.Plan:
    """What each environment must still see: Python, its packages, this sandbox, the task roots."""
    keep = {sys.prefix, sys.base_prefix, sys.exec_prefix, *(p for p in sys.path if p and os.path.isdir(p))}
    keep.add(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # the sandbox package
    if roots:
        keep.add(roots)
    return namespaces.Plan(tmp_mb=DEFAULT_TMP_MB, keep=tuple(sorted(keep)), root_outside=os.geteuid() == 0)


#: Lambda's default ephemeral storage (configuration-ephemeral-storage.html); a function's own comes with it.
DEFAULT_TMP_MB = 512


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    # The environments' /tmp folders where namespaces are refused: in the world's folder for them.
    tmp_root = sys.argv[2] if len(sys.argv) > 2 and os.path.isdir(sys.argv[2]) else tempfile.mkdtemp(prefix="rwh-")
    roots = sys.argv[3] if len(sys.argv) > 3 and os.path.isdir(sys.argv[3]) else None
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in the world's terminal is the world's to handle
    namespaces.set_dumpable(False)  # nothing of this machine's users' may ptrace the template
    # Probed before the warm-up: a fork now is small. The world says once what is not contained.
    uncontained = None if os.environ.get("RWH_NO_NAMESPACES") != "1" else "turned off by RWH_NO_NAMESPACES=1"
    uncontained = uncontained or namespaces.probe()
    # Everything loaded now is shared with every fork, copy-on-write: the collector is kept from touching it (a
    # collection in a child would copy page after page of the template). It is off while the imports run, and
    # what they leave is frozen as it is: a full collection first took 0.16 s of a command line's start.
    _frozen(_warm)
    children: _Children | _Managed = (_Children(control, tmp_root) if uncontained
                                      else _Managed(control, _plan(roots)))
    try:
        control.sendall(wire.encode({"ready": True, "uncontained": uncontained}))
        serve(control, children)
    except OSError:  # the world went away (a command line that stopped early): nothing to serve
        pass


if __name__ == "__main__":
    main()
    # What it forked is killed, and it holds nothing to flush or remove: the interpreter's own ending (freeing
    # every module's objects, 30-50 ms) would only keep the world's exit waiting for it.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
