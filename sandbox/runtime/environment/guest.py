"""Inside an execution environment: the process that runs the learner's handler.

This is the only sandbox code that shares a process with handler code, and it holds nothing
of the world: no moto, no history, no clock but a copy of the world's time. It makes the
process look like a Lambda execution environment
(https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html,
https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html):

- its environment is Lambda's reserved variables plus the function's own; its working
  directory is the task root, first on ``sys.path``; ``/tmp`` is its own (a private mount where
  the kernel allows one);
- the handler runs on the main thread, under AWS's runtime client (``awslambdaric``), whose
  bootstrap loads the module ``_HANDLER`` names, builds the context, formats errors and exits
  the process on anything that is not an ``Exception`` (Runtime.ExitError);
- every AWS request, effect and sleep leaves the process as one request on the channel, and
  each answer carries the world's time, which ``time``, ``datetime`` and ``monotonic`` read.
"""
from __future__ import annotations

import ctypes
import io
import json
import os
import random
import socket
import sys
import threading
from base64 import b64decode, b64encode
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from ...paths import PACKAGE
from . import alarms, filetimes, realwaits, turns, wire

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_MS_RDONLY, _MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18


class Channel:
    """The environment's end of the channel: one request at a time, whatever thread asks."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.lock = threading.Lock()
        self.now: float = 0.0
        self.traveller: Any = None
        self.turns: Any = None  # the handler's threads' turns (see turns.py), once installed
        self.answered_at = _REAL_MONOTONIC()  # real time of the world's last answer
        self.shown = 0.0  # the latest reading handed out: the clock never runs backwards
        #: In a process forked from the environment: the reading and real time at the fork (None: the runtime).
        self.forked_at: tuple[float, float] | None = None
        self.cloning = False  # a SnapStart snapshot is forking a restored environment
        self.files: filetimes.FileClock | None = None  # file times on this clock (filetimes.py), once installed

    def reading(self) -> float:
        """The environment's clock: the world's time at its last answer and, once the code has computed
        past ``wire.QUANTUM`` since, that real time too (as the world will charge it at the next request)."""
        if self.forked_at is not None:
            now, real = self.forked_at
            return now + (_REAL_MONOTONIC() - real)
        extra = _REAL_MONOTONIC() - self.answered_at
        self.shown = max(self.shown, self.now + (extra if extra > wire.QUANTUM else 0.0))
        return self.shown

    def detach(self) -> None:
        """A forked process: the channel is the runtime's, not this one's (closed here, never written)."""
        self.forked_at = (self.reading(), _REAL_MONOTONIC())
        self.turns = None
        try:
            self.sock.close()
        except OSError:
            pass

    def ask(self, message: wire.Message) -> wire.Message:
        """A request of the handler's code: sent when it is this thread's turn to ask (see turns.py). An alarm
        that came due meanwhile rings as it is answered (alarms.py)."""
        answer = self.request(message) if self.turns is None else self.turns.ask(message)
        alarms.answered()
        return answer

    def request(self, message: wire.Message) -> wire.Message:
        """Send ``message`` now, and wait for the answer (the Runtime API's next keeps the turn: a frozen
        environment runs no thread)."""
        if self.forked_at is not None:
            if message.get("t") == wire.Kind.NEXT:  # a forked copy of the runtime, done: it simply ends
                os._exit(0)
            raise RuntimeError(FORKED)
        with self.lock:
            if self.files is not None:
                self.files.sending()
            if self.turns is not None:  # waiting on the world is no computing: nobody preempts it (turns.py)
                self.turns.requesting = True
            try:
                wire.send(self.sock, message)
                answer = wire.receive(self.sock)
            except (wire.ChannelClosed, OSError):
                _world_gone()
            if self.turns is not None:
                self.turns.requesting = False
                self.turns.requested()
        self.answered_at = _REAL_MONOTONIC()
        self.see_time(answer.get("now"))
        if self.files is not None:
            self.files.answered(self.now)
        return answer

    def tell(self, message: wire.Message) -> None:
        """A message with no answer (a log line). A forked process's are not kept."""
        if self.forked_at is not None:
            return
        with self.lock:
            try:
                wire.send(self.sock, message)
            except OSError:
                _world_gone()

    def see_time(self, now: Any) -> None:
        if isinstance(now, (int, float)) and now > self.now:
            self.now = float(now)
            if self.traveller is not None:
                self.traveller.move_to(self.now)


_REAL_MONOTONIC = turns._REAL_MONOTONIC  # the real clock, bound before the environment's replaces it
#: What a process forked from the environment meets when it asks the world for something.
FORKED = ("this process was forked from the environment's runtime process: in the sandbox only the runtime "
          "process reaches AWS and the effect services (on Lambda a child process would need its own client)")


def _world_gone() -> NoReturn:
    """The world closed this environment's channel: it is being reset, and nothing of it may run on."""
    os._exit(1)


# -- the Runtime API, spoken over the channel ------------------------------------------------
class ChannelRuntimeClient:
    """What ``awslambdaric.bootstrap.run`` calls to reach the Runtime API, over the channel."""

    def __init__(self, channel: Channel):
        from awslambdaric.lambda_runtime_marshaller import LambdaMarshaller

        self.channel = channel
        self.marshaller = LambdaMarshaller()

    def wait_next_invocation(self) -> Any:
        from awslambdaric.lambda_runtime_client import InvocationRequest

        job = self.channel.request({"t": wire.Kind.NEXT})
        return InvocationRequest(
            invoke_id=job["request_id"], x_amzn_trace_id=None, invoked_function_arn=job["arn"],
            deadline_time_in_ms=job["deadline_ms"], client_context=None, cognito_identity=None,
            tenant_id=None, content_type="application/json", event_body=job["event"].encode(), invocation_id=None)

    def post_invocation_result(self, invoke_id: str, result_data: Any, content_type: str = "application/json",
                               *_: Any) -> None:
        body = result_data.decode("utf-8", "surrogateescape") if isinstance(result_data, bytes) else result_data
        body = body[:wire.RESPONSE_LIMIT + 1]  # past Lambda's limit it fails whatever it held (see wire.py)
        self.channel.tell({"t": wire.Kind.RESPONSE, "body": body, "content_type": content_type,
                           "bytes": isinstance(result_data, bytes) and content_type != "application/json"})

    def post_invocation_error(self, invoke_id: str, error_response_data: Any, xray_fault: Any = None,
                              *_: Any) -> None:
        self.channel.tell({"t": wire.Kind.ERROR, "body": error_response_data, "classes": list(ERROR_CLASSES)})

    def post_init_error(self, error_response_data: Any, error_type_override: Any = None) -> None:
        body = error_response_data if isinstance(error_response_data, str) else json.dumps(error_response_data)
        self.channel.tell({"t": wire.Kind.INIT_ERROR, "body": body})

    def restore_next(self) -> None:
        """SnapStart (``AWS_LAMBDA_INITIALIZATION_TYPE=snap-start``): init is done and the before-snapshot
        hooks have run, so this process becomes the snapshot. Each restored environment is a fork of it:
        its memory as init left it (so whatever init made unique is the same in every one of them, as AWS
        warns: snapstart-uniqueness.html) and a copy of its /tmp. The fork returns from here into the
        runtime's after-restore hooks and then its invocations; the snapshot itself runs none."""
        serve_as_snapshot(self.channel)

    def report_restore_error(self, restore_error_data: Any) -> None:
        self.post_init_error(restore_error_data)


# -- SnapStart: the snapshot and its restored copies -------------------------------------------
def serve_as_snapshot(channel: Channel) -> None:
    """Make restored environments on the world's request, until this process is killed; return in each."""
    import signal

    channel.tell({"t": wire.Kind.SNAPSHOT})
    restored = 0
    while True:
        try:
            message = wire.receive(channel.sock)
        except (wire.ChannelClosed, wire.ProtocolError, OSError):
            _world_gone()
        kind = message.get("t")
        if kind == wire.Kind.CLONE:
            restored += 1
            world_end, own_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            channel.cloning = True  # the copy is an environment with a channel of its own, not a stray fork
            try:
                pid = os.fork()
            finally:
                channel.cloning = False
            if pid == 0:  # the restored environment: it dies with its snapshot, whatever it is doing
                _libc().prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
                world_end.close()
                channel.sock.close()
                channel.sock = own_end
                _restored_tmp(restored)
                return
            own_end.close()
            wire.send_with_fd(channel.sock, {"t": wire.Kind.CLONED, "pid": pid}, world_end.fileno())
            world_end.close()
        elif kind == wire.Kind.KILL_CLONE:
            pid = int(message.get("pid", 0))
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (OSError, ChildProcessError):
                pass
        elif kind == wire.Kind.CLONE_STATUS:
            wire.send(channel.sock, {"t": wire.Kind.CLONE_STATUS,
                                     "status": _ended(int(message.get("pid", 0)), float(message.get("wait", 1.0)))})


def _ended(pid: int, wait: float) -> int | None:
    """How a restored environment ended (its exit code, or minus the signal), if it has within ``wait`` s.

    Real seconds, counted in real pauses: this process's clock is the world's, which stands still here."""
    for _ in range(max(1, int(wait / 0.005))):
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return os.waitstatus_to_exitcode(status)
        turns.real_pause(0.005)
    return None


def _restored_tmp(number: int) -> None:
    """The restored environment's own /tmp: a copy of the snapshot's, as the snapshot holds disk state too
    (https://docs.aws.amazon.com/lambda/latest/dg/snapstart.html)."""
    import shutil
    import tempfile

    base = "/tmp" if _Mounts.private else _Mounts.tmp
    mine = os.path.join(base, ".restored", str(number))
    os.makedirs(mine)
    mounted = {p.split("/")[2] for p in _needed_under_tmp()} if _Mounts.private else set()
    for name in os.listdir(base):
        if name == ".restored" or name in mounted:
            continue
        source = os.path.join(base, name)
        if os.path.isdir(source) and not os.path.islink(source):
            shutil.copytree(source, os.path.join(mine, name), symlinks=True)
        else:
            shutil.copy2(source, os.path.join(mine, name), follow_symlinks=False)
    if _Mounts.private and _private_tmp_mount(mine):
        return
    os.environ["TMPDIR"] = _Mounts.tmp = mine
    tempfile.tempdir = None


# -- what leaves the process: AWS requests, effects, sleeps, logs -------------------------------
class ChannelWriter(io.TextIOBase):
    """``sys.stdout`` or ``sys.stderr``: every write goes to the world's log of this environment."""

    def __init__(self, channel: Channel, stream: str):
        self.channel, self.stream = channel, stream

    def writable(self) -> bool:
        return True

    #: Characters per log message: well inside the channel's frame limit even if JSON escapes each one.
    CHUNK = 256 * 1024

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        for start in range(0, len(text), self.CHUNK):  # a print of megabytes is a log, never an error
            self.channel.tell({"t": wire.Kind.LOG, "stream": self.stream, "text": text[start:start + self.CHUNK]})
        return len(text)

    def close(self) -> None:  # closing stdout ends no invocation: later prints still reach the log
        return None

    @property
    def closed(self) -> bool:
        return False

    def fileno(self) -> int:
        raise io.UnsupportedOperation("the sandbox's log stream has no file descriptor")


def _send_aws(channel: Channel) -> Callable[..., Any]:
    from botocore.awsrequest import AWSResponse
    from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

    raises = {"ReadTimeoutError": ReadTimeoutError, "ConnectTimeoutError": ConnectTimeoutError,
              "EndpointConnectionError": EndpointConnectionError}

    class _Raw(io.BytesIO):
        """The answer's body as urllib3 would hold it: ``stream()`` for botocore's parsers, and ``read()``
        for a streaming member (S3 GetObject's Body), which botocore hands the handler unread."""

        def stream(self, **_: Any) -> Iterator[bytes]:
            yield self.getvalue()

    def before_send(request: Any = None, **_: Any) -> Any:
        # No service or operation goes with the request: the world reads both from the request itself.
        body = request.body
        if hasattr(body, "read"):
            body = body.read()
        body = body.encode() if isinstance(body, str) else (body or b"")
        headers = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in request.headers.items()}
        answer = channel.ask({"t": wire.Kind.AWS, "method": request.method, "url": request.url, "headers": headers,
                              "body": b64encode(body).decode()})
        if "raise" in answer:
            error = raises.get(answer["raise"], EndpointConnectionError)
            raise error(endpoint_url=request.url, error=answer.get("message", ""))
        content = b64decode(answer["body"])
        return AWSResponse(request.url, answer["status"], answer["headers"], _Raw(content))

    return before_send


#: Where ``before_send`` sends, once this process is an environment (None in the template).
_SENDER: Any = None


def before_send(**kwargs: Any) -> Any:
    """botocore's ``before-send`` hook, in every session's handlers since the template made them."""
    if _SENDER is None:
        return None
    return _SENDER(**kwargs)


def _refuse_network(self: Any, request: Any) -> NoReturn:
    raise ConnectionRefusedError(f"refused to send {request.method} {request.url}: an execution environment in the "
                                 "sandbox reaches AWS only through the world")


def _effects(channel: Channel) -> Callable[[str, wire.EffectArgs], Any]:
    """The effect services' client: each call is a request to the world's services."""

    def call(kind: str, args: wire.EffectArgs) -> Any:
        answer = channel.ask({"t": wire.Kind.EFFECT, "kind": kind, "args": args})
        if "raise" in answer:
            from ... import errors
            from ...core import services

            error = getattr(services, answer["raise"], None) or getattr(errors, answer["raise"], None)
            if not (isinstance(error, type) and issubclass(error, Exception)):
                error = RuntimeError
            raise error(answer.get("message", ""))
        return answer["result"]

    return call


def _sleep(channel: Channel) -> Callable[[Any], None]:
    def sleep(seconds: float) -> None:
        seconds = float(seconds)
        if seconds != seconds:  # as CPython's own time.sleep refuses them: the world would end the environment
            raise ValueError("Invalid value NaN (not a number)")
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        if seconds > wire.MAX_SLEEP:
            raise OverflowError("timestamp out of range for platform time_t")
        if channel.forked_at is not None:  # a forked process sleeps in real time (it has no world to ask)
            turns.real_pause(seconds)
            return
        if channel.turns is None:
            channel.request({"t": wire.Kind.SLEEP, "seconds": seconds})
        elif alarms.ALARM is not None and alarms.on_main_thread():  # the alarm may cut it short
            alarms.ALARM.sleep(seconds, channel.turns.sleep)
        else:
            channel.turns.sleep(seconds)

    return sleep


# -- the process itself ----------------------------------------------------------------------
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


class _Mounts:
    """This process's own mount namespace, where it has one (see ``prepare``)."""

    libc: Any = None
    private = False
    tmp = ""
    own_namespaces = False  # made by the environment's manager (manager.py): nothing left to mount here


def _mount(source: bytes | None, target: bytes, flags: int) -> bool:
    mount = _Mounts.libc.mount
    mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
    return mount(source, target, None, flags, None) == 0


def _private_tmp_mount(tmp: str) -> bool:
    """A mount namespace of this process only, with ``tmp`` on /tmp. False where the kernel refuses one
    (no root, no user namespaces): then only code that asks ``tempfile`` for a folder gets a private one."""
    libc = _Mounts.libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWNS) != 0:
        if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS) != 0:
            return False
        try:  # map ourselves to ourselves inside the new user namespace
            with open("/proc/self/setgroups", "w") as f:
                f.write("deny")
            with open("/proc/self/uid_map", "w") as f:
                f.write(f"{uid} {uid} 1")
            with open("/proc/self/gid_map", "w") as f:
                f.write(f"{gid} {gid} 1")
        except OSError:
            return False
    if not _mount(None, b"/", _MS_REC | _MS_PRIVATE):
        return False
    # What the process runs from and lives under /tmp (a checkout or a venv there) must stay in sight:
    # hold each folder open, mount the private /tmp, and bind each back, read-only, at its own path.
    kept = [(path, os.open(path, os.O_PATH)) for path in _needed_under_tmp()]
    try:
        if not _mount(tmp.encode(), b"/tmp", _MS_BIND):
            return False
        for path, fd in kept:
            os.makedirs(path, exist_ok=True)
            if _mount(f"/proc/self/fd/{fd}".encode(), path.encode(), _MS_BIND | _MS_REC):
                _mount(None, path.encode(), _MS_REMOUNT | _MS_BIND | _MS_RDONLY)
    finally:
        for _, fd in kept:
            os.close(fd)
    return True


def _needed_under_tmp() -> list[str]:
    """Python's own folders, the import path's and this package's, where they lie under /tmp (outermost only)."""
    here = str(PACKAGE)
    found = sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, here, *sys.path)
                    if p and os.path.isdir(p)})
    under = [p for p in found if p.startswith("/tmp/")]
    return [p for p in under if not any(p != q and p.startswith(q + "/") for q in under)]


def _read_only(folder: str) -> None:
    """The task root, read-only in this process's mount namespace (Lambda's /var/task is)."""
    root = folder.encode()
    if _Mounts.own_namespaces:
        return
    if _Mounts.private and _mount(root, root, _MS_BIND | _MS_REC):
        _mount(None, root, _MS_REMOUNT | _MS_BIND | _MS_RDONLY)


def prepare(tmp: str | None) -> None:
    """What any environment does first, whatever its function: done ahead, in a spare fork.

    The log keeps what goes through sys.stdout and sys.stderr (print, logging, tracebacks). Writes
    straight to file descriptors 1 and 2 (a C library's) are dropped, never the world's terminal.
    """
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    if tmp is None:  # its own namespaces (manager.py): /tmp is a tmpfs of its own, everything else read-only
        _Mounts.tmp, _Mounts.private, _Mounts.own_namespaces = "/tmp", True, True
        return
    _Mounts.tmp = tmp
    _Mounts.private = _private_tmp_mount(tmp)


def _set_up(config: wire.EnvironmentConfig, channel: Channel) -> None:
    os.environ.clear()
    os.environ.update(config["environ"])
    if not _Mounts.private:
        os.environ["TMPDIR"] = _Mounts.tmp
    import tempfile

    tempfile.tempdir = None  # asked again, from this environment's TMPDIR
    _read_only(config["task_root"])
    os.chdir(config["task_root"])
    sys.path[:] = [config["task_root"]] + [p for p in sys.path if p not in ("", config["task_root"])]
    sys.setrecursionlimit(1000)
    random.seed(config["seed"])  # botocore's retry jitter draws from the random module
    _virtual_time(config["now"], channel)


def _virtual_time(now: float, channel: Channel) -> None:
    import time

    from ...core.clock import time_machine

    travel = time_machine.travel(now, tick=False)
    channel.traveller = travel.start()
    channel.now = now
    start = now

    def monotonic() -> float:
        return channel.reading() - start + 1_000.0

    # Wall-clock time is the world's, and past the quantum the real time computed since its last answer too.
    frozen_ns = channel.traveller.time_ns

    def time_ns() -> int:
        ahead = channel.reading() - channel.now
        return frozen_ns() + (round(ahead * 1e9) if ahead > 0 else 0)

    channel.traveller.time_ns = time_ns
    time.monotonic = monotonic
    time.monotonic_ns = lambda: int(monotonic() * 1e9)
    time.perf_counter = monotonic
    time.perf_counter_ns = time.monotonic_ns
    time.sleep = _sleep(channel)
    channel.files = filetimes.install(now, wire.QUANTUM, time_machine.escape_hatch.time.time_ns)


def _wire_up(channel: Channel) -> None:
    import botocore.endpoint
    import botocore.handlers

    from ...core import services

    global _SENDER
    _SENDER = _send_aws(channel)
    if ("before-send", before_send) not in botocore.handlers.BUILTIN_HANDLERS:
        botocore.handlers.BUILTIN_HANDLERS.append(("before-send", before_send))
    botocore.endpoint.Endpoint._send = _refuse_network
    services.connect(_effects(channel))
    sys.stdout = ChannelWriter(channel, "stdout")
    sys.stderr = ChannelWriter(channel, "stderr")


#: The class names (its MRO) of the error the runtime client is reporting: the error payload names only
#: the class itself, and a grader asks whether it is a StillInProgressError of any kind.
ERROR_CLASSES: list[str] = []


def _note_error_classes(bootstrap: Any) -> None:
    """awslambdaric builds its X-Ray fault inside its ``except`` block: note the error's classes there."""
    original = bootstrap.make_xray_fault

    def make_xray_fault(*args: Any, **kwargs: Any) -> Any:
        kind = sys.exc_info()[0]
        ERROR_CLASSES[:] = [c.__name__ for c in kind.__mro__] if kind is not None else []
        return original(*args, **kwargs)

    bootstrap.make_xray_fault = make_xray_fault


#: This process's channel, once it is an environment.
CHANNEL: Channel | None = None


def report_exit(exc: BaseException) -> None:
    """Tell the world where the code was when it called ``sys.exit`` (``os._exit`` leaves no such word)."""
    import traceback

    if CHANNEL is None:
        return
    frames = [[f.filename, f.lineno, f.name] for f in traceback.extract_tb(exc.__traceback__)][-50:]
    try:
        CHANNEL.tell({"t": wire.Kind.EXIT, "frames": frames})
    except BaseException:  # noqa: BLE001 - the process is ending either way
        pass


def run(sock: socket.socket, config: wire.EnvironmentConfig) -> None:
    """Become the execution environment ``config`` describes, then serve invocations until killed."""
    global CHANNEL
    channel = CHANNEL = Channel(sock)
    channel.turns = turns.install(channel.request, channel.reading, lambda: (channel.now, channel.answered_at))
    _set_up(config, channel)
    _wire_up(channel)
    realwaits.install(channel.sock.fileno())
    channel.turns.alarm = alarms.install(channel.reading, lambda: channel.forked_at is None,
                                         lambda: (channel.now, channel.answered_at), wire.QUANTUM)
    os.register_at_fork(after_in_child=lambda: realwaits.forked_child(channel))
    channel.tell({"t": wire.Kind.READY})
    try:
        from awslambdaric import bootstrap
    except ImportError:  # no wheel for this platform: the sandbox's own loop (see loop.py)
        from . import loop as bootstrap
    _note_error_classes(bootstrap)
    bootstrap.run(config["handler"], ChannelRuntimeClient(channel))
