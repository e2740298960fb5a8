"""The world's side of execution environments: start them, serve their requests, kill them.

An environment's code runs in its own process (``guest``). While it runs an invocation, the
invocation's task in the world waits on the environment's channel, and serves each request
it sends, one at a time, where the handler's own call used to run:

- an AWS request goes through the world's gateway (the scheduler's turn, faults, moto under
  its lock, the history), and its HTTP answer goes back for botocore to parse;
- an effect goes to the world's services, and its result (or the provider's error) back;
- a sleep is the scheduler's virtual sleep; a log line is kept in the history.

Every answer carries the world's time. A timeout, a crash or the world closing arrives as an
exception in that task; the environment is then killed (SIGKILL: no ``finally``, no
``atexit``), as Lambda resets an environment.
"""
from __future__ import annotations

import binascii
import compileall
import json
import os
import re
import shutil
import socket
import tempfile
import threading
import time
from base64 import b64decode, b64encode
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from botocore.awsrequest import AWSPreparedRequest
from botocore.compat import HTTPHeaders
from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

from ...core import active
from ...core.jsonvalues import json_number
from ...core.scheduler import blocked_message, current_task
from ...errors import (
    BadInput,
    HandlerBlocked,
    OutOfMemory,
    ProviderError,
    RealAwsRefused,
    ResponseTooLarge,
    RuntimeExit,
    SandboxError,
)
from . import wire
from .template_process import Template

#: What a task root may hold: Lambda's own limit for an unzipped deployment package is 250 MB.
MAX_TASK_ROOT_BYTES = 250 * 1024 * 1024
#: More files than a handler's folder needs (a deployment package's 250 MB holds far fewer in practice).
MAX_TASK_ROOT_FILES = 20_000
#: Seconds a gone process's exit status may take to arrive: enough for any load, and never a handler's time.
EXIT_REPORT_WAIT = 30.0
_SKIPPED = shutil.ignore_patterns("__pycache__", ".git", ".venv", ".ipynb_checkpoints", "*.pyc", "node_modules",
                                  ".hypothesis", ".pytest_cache", "rwh-*", "systemd-private-*")


def _skipped(folder: str, names: list[str]) -> set[str]:
    """Caches, environments and the sandbox's own folders; and anything but files and folders."""
    skipped = set(_SKIPPED(folder, names))
    for name in names:
        path = os.path.join(folder, name)
        if not (os.path.isfile(path) or os.path.isdir(path)) or not os.access(path, os.R_OK):
            skipped.add(name)
    return skipped


_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>[^\n]+)')


class EnvironmentFailed(SandboxError):
    """The environment broke the protocol, or its process could not be started."""


class InitPhase:
    """The init phase's time, against its limit: its sleeps on the world's clock, and what it computed."""

    def __init__(self, limit: float, started: float):
        self.limit, self.started, self.computed = limit, started, 0.0

    def spent(self) -> float:
        return _elapsed() - self.started + self.computed


def _elapsed() -> float:
    world = active.current()
    return world.clock.elapsed() if world is not None else 0.0


class InitTimedOut(Exception):
    """The init phase ran past Lambda's limit (10 s): https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html"""


class HandlerError(Exception):
    """The handler raised: the error payload awslambdaric sent, as an exception of the world.

    ``classes``: the names of the error's class and its bases, as the environment saw them.
    """

    def __init__(self, payload: wire.ErrorPayload, where: str | None, classes: list[str] | None = None):
        self.payload, self.where = payload, where
        self.error_type = str(payload.get("errorType") or "Exception")
        # The names are the environment's word, as the error itself is: a handler may define and raise a class
        # of any name with any bases, so they say no more than errorType does. They must at least describe the
        # error reported: the first is its errorType, or only errorType is kept (awslambdaric reports its own
        # Runtime.MarshalError from inside a FaultException handler, whose classes are not the error's).
        named = [str(c) for c in classes or [] if isinstance(c, str)][:50]
        self.classes = named if named[:1] == [self.error_type] else [self.error_type]
        super().__init__(str(payload.get("errorMessage") or ""))


class InitError(HandlerError):
    """The handler's module could not be loaded, or its init code raised (Runtime.InitError)."""


# -- task roots ----------------------------------------------------------------------------------
def task_root_signature(folder: str) -> tuple:
    """What the folder holds, as names, sizes and modification times (a copy is reused while it matches).

    A folder larger than a deployment package can be, or with more files than any handler needs (a home
    folder, /tmp), is refused as soon as the walk finds out, before anything is copied: copying it would take
    minutes, and the run would seem to hang.
    """
    found, size = [], 0
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _skipped(root, list(dirs)))
        for name in sorted(set(files) - _skipped(root, files)):
            try:
                st = os.stat(os.path.join(root, name))
            except OSError:
                continue
            found.append((os.path.relpath(os.path.join(root, name), folder), st.st_size, st.st_mtime_ns))
            size += st.st_size
            if size > MAX_TASK_ROOT_BYTES:
                raise BadInput(f"the handler's folder {folder} holds more than 250 MB (Lambda's limit for an unzipped "
                               f"deployment package), and the sandbox copies it into each execution environment: "
                               f"put the handler in a folder of its own")
            if len(found) > MAX_TASK_ROOT_FILES:
                raise BadInput(f"the handler's folder {folder} holds more than {MAX_TASK_ROOT_FILES:,} files, and "
                               f"the sandbox copies it into each execution environment: put the handler in a "
                               f"folder of its own")
    return tuple(found)


class TaskRootCopies:
    """A read-only copy of each handler folder: the environments' task roots.

    On Lambda the deployment package is unpacked into ``/var/task``, which the function cannot
    write; a copy means nothing an environment does reaches the learner's own folder. A copy is
    made once per folder and content, and serves every world of this process while the folder is
    unchanged (nothing can write to it).
    """

    _shared: dict[tuple[str, str, tuple], Path] = {}
    _lock = threading.Lock()

    def __init__(self, template: Template) -> None:
        self.template = template
        self.copies: dict[str, Path] = {}

    def copy_of(self, folder: str) -> Path:
        if folder not in self.copies:
            key = (str(self.template.roots), folder, task_root_signature(folder))
            with self._lock:
                shared = self._shared.get(key)
                if shared is None or not shared.is_dir():
                    shared = self._shared[key] = self._copy(folder)
            self.copies[folder] = shared
        return self.copies[folder]

    def _copy(self, folder: str) -> Path:
        base = Path(tempfile.mkdtemp(prefix="root-", dir=self.template.roots))
        base.chmod(0o755)
        target = base / (Path(folder).name or "root")
        try:
            shutil.copytree(folder, target, ignore=_skipped, symlinks=True)
        except shutil.Error:
            pass  # a file that cannot be read (another user's, a socket) is not part of the package
        # Compiled once here: an environment cannot write __pycache__ into its read-only task root, and
        # would otherwise compile every module again at each cold start (a deployment package may carry
        # .pyc files too). The code objects name the copy's files, as an import would.
        compileall.compile_dir(str(target), quiet=2, workers=1)
        for path in [target, *target.rglob("*")]:
            if not path.is_symlink():
                path.chmod(0o555 if path.is_dir() else 0o444)
        return target

    def original(self, filename: str) -> str:
        """The learner's own path of a file in a task root copy."""
        for folder, copy in self.copies.items():
            try:
                return str(Path(folder) / Path(filename).relative_to(copy))
            except ValueError:
                continue
        return filename


# -- one environment ---------------------------------------------------------------------------
class EnvironmentProcess:
    """One execution environment: an OS process, its channel, its private ``/tmp``."""

    def __init__(self, config: wire.EnvironmentConfig, roots: TaskRootCopies, template: Template,
                 snapshot: "EnvironmentProcess | None" = None, share_tmp: "EnvironmentProcess | None" = None):
        self.roots = roots
        self.template = template
        #: SnapStart: the snapshot this environment was restored from (a fork of it), else None.
        self.snapshot = snapshot
        if snapshot is not None:
            self.pid, self.sock = snapshot.restore()
        else:
            self.pid, self.sock = self.template.spawn(config, share_tmp.pid if share_tmp is not None else None)
        self.dead = False
        self.logs: Callable[[str, str], None] = lambda stream, text: None
        self.asked = False  # the environment is waiting for its next invocation
        self.exit_where: str | None = None  # where its code called sys.exit, once it has

    # -- the conversation ----------------------------------------------------------------
    def init(self, limit: float | None = None) -> float:
        """Run the bootstrap and the handler's init, serving its requests, until it asks for work.

        ``limit``: seconds the init phase may take, its sleeps on the world's clock and its computing in
        real time together (``InitTimedOut`` past it). Returns the real seconds it computed, which the
        world's clock has not seen (the init phase comes before an invocation's timeout counts).

        A SnapStart function's first environment stops at its snapshot instead, and serves restores from
        then on; a restored one starts past its init, at the runtime's after-restore hooks.
        """
        phase = None if limit is None else InitPhase(limit, _elapsed())
        if self.snapshot is None:
            answered = time.monotonic()
            ready = self._receive(*self._deadline(answered, phase))
            if ready["t"] != wire.Kind.READY:
                raise EnvironmentFailed(f"an environment began with {ready['t']!r} instead of 'ready'")
            if phase is not None:
                phase.computed += time.monotonic() - answered
        message = self._serve_until((wire.Kind.NEXT, wire.Kind.INIT_ERROR, wire.Kind.SNAPSHOT), phase)
        took = phase.computed if phase is not None else 0.0
        if message["t"] == wire.Kind.SNAPSHOT:
            return took
        self.asked = True
        if message["t"] == wire.Kind.INIT_ERROR:
            payload = _payload(message["body"])
            raise InitError(payload, self._where(payload))
        return took

    # -- SnapStart -------------------------------------------------------------------------
    def restore(self) -> tuple[int, socket.socket]:
        """One more environment restored from this snapshot: its pid and the world's end of its channel."""
        if self.dead:
            raise EnvironmentFailed("the SnapStart snapshot is gone")
        try:
            wire.send(self.sock, {"t": wire.Kind.CLONE})
            message, fd = wire.receive_with_fd(self.sock, deadline=time.monotonic() + 30.0)
        except (OSError, wire.TimedOut, wire.ChannelClosed, wire.ProtocolError) as exc:
            self.kill()
            raise EnvironmentFailed(f"the SnapStart snapshot could not restore an environment: {exc}") from None
        return message["pid"], socket.socket(fileno=fd)

    def _restored_status(self, pid: int, wait: float) -> int | None:
        try:
            wire.send(self.sock, {"t": wire.Kind.CLONE_STATUS, "pid": pid, "wait": wait})
            answer = wire.receive_from_environment(self.sock, deadline=time.monotonic() + wait + 5.0)
        except (OSError, wire.TimedOut, wire.ChannelClosed, wire.ProtocolError):
            return None
        # The snapshot ran the handler's init: a thread of it may print, and its word is all the world has
        status = answer.get("status") if answer["t"] == wire.Kind.CLONE_STATUS else None
        return status if isinstance(status, int) else None

    def invoke(self, event: Any, request_id: str, deadline: float, arn: str) -> Any:
        """One invocation: the event in, the response (or the handler's error) out.

        What the environment still did after its last response (a thread of its own, say) is
        served first, now: on Lambda an environment is frozen between invocations and thaws
        with the next one.
        """
        if not self.asked:
            self._serve_until((wire.Kind.NEXT,))
        self.asked = False
        # The deadline in whole milliseconds, floored as the environment floors its clock's reading
        # (awslambdaric: deadline_ms - int(time.time() * 1000)): the time left never exceeds the timeout.
        wire.send(self.sock, {"t": wire.Kind.INVOCATION, "request_id": request_id, "event": json.dumps(event),
                              "deadline_ms": int(deadline * 1000), "arn": arn, "now": _now()})
        message = self._serve_until((wire.Kind.RESPONSE, wire.Kind.ERROR))
        if message["t"] == wire.Kind.ERROR:
            payload = _payload(message["body"])
            classes = message.get("classes")
            raise HandlerError(payload, self._where(payload), classes if isinstance(classes, list) else None)
        body = message["body"]
        if len(body.encode("utf-8", "surrogateescape")) > wire.RESPONSE_LIMIT:
            raise ResponseTooLarge()
        if message.get("bytes"):
            return body.encode("utf-8", "surrogateescape")
        if message.get("content_type") == "application/json":
            try:
                return wire.loads(body, depth=_RESPONSE_DEPTH)
            except wire.ProtocolError as exc:  # awslambdaric sends JSON it made itself: this is no such response
                self.kill()
                raise EnvironmentFailed(f"the environment broke the protocol: its response is {exc}") from None
        return body

    def _serve_until(self, ends: tuple[str, ...], phase: "InitPhase | None" = None) -> wire.Message:
        """Serve the environment's requests until it sends one of ``ends``.

        Time as on Lambda: what the code computes between two requests is real time. Past ``wire.QUANTUM``
        it all counts, on the world's clock and toward the function's timeout; and the world waits no
        longer than the time the invocation has left, so code that computes past its timeout times out.
        ``phase``: the init phase, whose computing and sleeping together have a limit (``InitTimedOut``).
        The watchdog counts from the last answer too: log lines are not progress."""
        answered = time.monotonic()
        while True:
            message = self._receive(*self._deadline(answered, phase))
            kind = message["t"]
            if kind in (wire.Kind.LOG, wire.Kind.EXIT) and kind not in ends:
                self._aside(message)
                continue
            self._spend(time.monotonic() - answered, phase)
            if kind in ends:
                return message
            if kind in (wire.Kind.NEXT, wire.Kind.RESPONSE, wire.Kind.ERROR, wire.Kind.INIT_ERROR, wire.Kind.READY,
                        wire.Kind.SNAPSHOT, wire.Kind.CLONED, wire.Kind.CLONE_STATUS):
                self.kill()
                raise EnvironmentFailed(f"the environment sent {kind!r} out of turn")
            answer = self._serve(message)
            answer.update({"t": wire.Kind.ANSWER, "now": _now()})
            wire.send(self.sock, answer)
            answered = time.monotonic()

    def _aside(self, message: wire.Message) -> None:
        """A message that wants no answer: a log line, or where the code called ``sys.exit``."""
        if message["t"] == wire.Kind.LOG:
            self.logs(str(message["stream"]), self._loggable(str(message["text"])))
            return
        frames = message["frames"] if isinstance(message["frames"], list) else []
        self.exit_where = self._where_in([f for f in frames if isinstance(f, list) and len(f) == 3])

    def _spend(self, seconds: float, phase: "InitPhase | None") -> None:
        """Real seconds the code computed between two requests. In an invocation, past the quantum, they go
        on the world's clock (past the deadline the scheduler stops the invocation, and this raises). In the
        init phase they count toward its limit only: the function's timeout has not started."""
        task = current_task()
        if phase is not None:
            phase.computed += seconds
            if phase.spent() > phase.limit:
                self.kill()
                raise InitTimedOut()
        elif seconds > wire.QUANTUM and task is not None and task.deadline is not None \
                and not getattr(task.sched.clock, "real", False):  # a wall clock saw the compute happen
            task.sched.sleep(seconds, label="compute")

    @staticmethod
    def _deadline(answered: float, phase: "InitPhase | None") -> tuple[float | None, str]:
        """When the wait for the code's next request ends, and why: the invocation's ``deadline`` (what it
        has left on the world's clock, as real seconds past the quantum), the init phase's ``limit``, or
        the world's ``watchdog``. (None: no task, no deadline.)"""
        task = current_task()
        ends: list[tuple[float, str]] = []
        if phase is not None:
            ends.append((answered + max(0.0, phase.limit - phase.spent()) + wire.QUANTUM, "limit"))
        if task is None:
            return min(ends) if ends else (None, "watchdog")
        task.own_watchdog = True
        # In the init phase its limit stops code that never asks anything; the watchdog waits past it.
        watchdog = task.sched.watchdog if phase is None else max(task.sched.watchdog, ends[0][0] - answered + 1.0)
        ends.append((answered + watchdog, "watchdog"))
        if task.deadline is not None and task.on_deadline is not None:
            left = max(0.0, task.deadline - task.sched.clock.elapsed())
            ends.append((answered + left + wire.QUANTUM, "deadline"))
        return min(ends)

    def _receive(self, deadline: float | None = None, why: str = "watchdog") -> wire.Message:
        """The environment's next message. Until it comes, the environment runs the learner's code: past
        ``deadline`` it has run out of time (``why``: its deadline, its phase's limit) or is blocked outside
        the sandbox (the watchdog), and is killed."""
        try:
            return wire.receive_from_environment(self.sock, deadline=deadline)
        except wire.TimedOut:
            task = current_task()
            assert task is not None  # an invocation's task waits on its environment
            if why == "deadline" and task.deadline is not None:
                # It computed past its deadline: the world's clock reaches it, and the runtime stops the
                # invocation there (the scheduler raises its timeout; the environment is reset).
                task.computed_out = True
                task.sched.sleep(max(0.0, task.deadline - task.sched.clock.elapsed()) + 1e-6, label="compute")
            self.kill()
            if why == "limit":
                raise InitTimedOut() from None
            raise HandlerBlocked(blocked_message(task.name, task.sched.watchdog)) from None
        except wire.ChannelClosed:
            status, ended_by = self._exit_status()
            if ended_by == "oom":
                raise OutOfMemory() from None
            exit_ = RuntimeExit(status)
            if self.exit_where is not None:
                exit_.where = self.exit_where
            raise exit_ from None
        except wire.ProtocolError as exc:
            self.kill()
            raise EnvironmentFailed(f"the environment broke the protocol: {exc}") from None

    def _exit_status(self) -> tuple[int, str | None]:
        # The process is gone (its channel closed): its manager says how within milliseconds, unless the
        # machine is loaded; a wait long enough for any load, not a guess at the status, decides.
        status, why = (self.template.status(self.pid, wait=EXIT_REPORT_WAIT) if self.snapshot is None
                       else (self.snapshot._restored_status(self.pid, wait=EXIT_REPORT_WAIT), None))
        if status is None:
            self.kill()
            return 1, None
        self.dead = True
        return (status if status >= 0 else 128 - status), why

    # -- one request -------------------------------------------------------------------------
    def _serve(self, message: wire.Message) -> wire.Message:
        world = active.current()
        kind = message["t"]
        if kind == wire.Kind.SLEEP:  # a finite, non-negative number of seconds (wire.FROM_ENVIRONMENT checked it)
            world.scheduler.sleep(float(message["seconds"]), label="sleep")
            return {}
        try:
            return _effect(world, message) if kind == wire.Kind.EFFECT else _aws(world, message)
        except EnvironmentFailed:  # a request no guest of ours sends: nothing more of this environment runs
            self.kill()
            raise

    def _loggable(self, text: str) -> str:
        """A log write as the history keeps it.

        AWS's runtime client logs a handler's error as one record, ``[ERROR] Type: message`` and then
        the stack trace, its lines joined by carriage returns (bootstrap.py's log_error). The history
        keeps the first line: the trace's file paths and line numbers belong to this machine, this
        checkout and this Python, and a history must be the same on every one of them. The
        invocation's ``where`` names the learner's own line.
        """
        if text.startswith("[ERROR] ") and "\r" in text:
            return text.split("\r", 1)[0]
        return text

    def _where(self, payload: wire.ErrorPayload) -> str | None:
        """The last frame of the learner's own code in an error payload's stack trace."""
        found = (_FRAME.search(str(entry)) for entry in payload.get("stackTrace") or [])
        return self._where_in([[m["file"], m["line"], m["name"]] for m in found if m is not None])

    def _where_in(self, frames: list[list[Any]]) -> str | None:
        """The last of ``frames`` (file, line, name) in the learner's own code: ``file.py:12 in handler``."""
        for filename, line, name in reversed(frames):
            original = self.roots.original(str(filename))
            if original == filename:
                continue
            try:
                shown = str(Path(original).resolve().relative_to(Path.cwd()))
            except ValueError:
                shown = original
            return f"{shown}:{line} in {str(name).strip()}"
        return None

    def kill(self) -> None:
        """SIGKILL: nothing more of this environment runs. Its ``/tmp`` goes with it (the template removes it)."""
        if not self.dead:
            self.dead = True
            try:
                if self.snapshot is None:
                    self.template.kill(self.pid)
                elif not self.snapshot.dead:  # a restored environment is the snapshot's child, not the template's
                    wire.send(self.snapshot.sock, {"t": wire.Kind.KILL_CLONE, "pid": self.pid})
            except OSError:
                pass
        self.sock.close()


def _now() -> float:
    world = active.current()
    return world.clock.now() if world is not None else 0.0


#: How deep a handler's JSON response may nest: well past any event shape, well inside the world's recursion limit.
_RESPONSE_DEPTH = 200


def _payload(body: Any) -> wire.ErrorPayload:
    try:
        payload = wire.loads(body, depth=_RESPONSE_DEPTH) if isinstance(body, str) else body
    except wire.ProtocolError:
        payload = None
    if isinstance(payload, dict):  # what awslambdaric posted, untrusted: its readers turn each value into text
        return cast("wire.ErrorPayload", payload)
    return {"errorMessage": str(body)[:2000], "errorType": "Runtime.Unknown"}


_EFFECTS = {"send_confirmation_email": ("order",), "send_cancellation_email": ("order",),
            "charge_card": ("order", "idempotency_key")}


def _effect(world: Any, message: wire.Message) -> wire.Message:
    """One call to the effect services, as the guest's client makes it: a known kind, its own arguments (the
    order required). What the arguments hold is the services' to judge, as for a call made in the world:
    a wrong order or key is the handler's BadInput, answered to it."""
    kind, args = message["kind"], message["args"]
    if kind not in _EFFECTS or set(args) - set(_EFFECTS[kind]) or "order" not in args:
        raise EnvironmentFailed(f"an unknown effect request {str(kind)[:40]!r} with arguments {sorted(args)[:5]}")
    try:
        result = getattr(world.services, kind)(**args)
    except (ProviderError, BadInput) as exc:
        return {"raise": type(exc).__name__, "message": str(exc)}
    return {"result": json.loads(json.dumps(result, default=json_number))}


def _aws(world: Any, message: wire.Message) -> wire.Message:
    """One AWS request, as botocore prepared it in the environment: the world reads its service and operation
    from the request itself (``sandbox.aws.operations``); the environment sends no name for either."""
    try:
        body = b64decode(message["body"], validate=True)
    except (binascii.Error, ValueError):  # wire checked its alphabet; a bad length or padding is left
        raise EnvironmentFailed("an AWS request whose body is not base64") from None
    headers = HTTPHeaders()
    for name, value in message["headers"].items():  # one of each name, whatever its case (wire checked)
        headers[name] = value
    request = AWSPreparedRequest(method=message["method"], url=message["url"], headers=headers, body=body,
                                 stream_output=False)
    try:
        response = world.gateway.handle(request)
    except (ReadTimeoutError, ConnectTimeoutError, EndpointConnectionError) as exc:
        return {"raise": type(exc).__name__, "message": str(exc)}
    except RealAwsRefused as exc:
        return {"raise": "EndpointConnectionError", "message": str(exc)}
    return {"status": response.status_code, "headers": dict(response.headers.items()),
            "body": b64encode(response.content).decode()}
