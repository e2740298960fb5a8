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

import atexit
import compileall
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from base64 import b64decode, b64encode
from collections.abc import Callable
from pathlib import Path
from typing import Any

from botocore.awsrequest import AWSPreparedRequest
from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

from ...aws.dynamo import json_number
from ...core import active
from ...core.scheduler import blocked_message, current_task
from ...errors import BadInput, HandlerBlocked, ProviderError, RealAwsRefused, RuntimeExit, SandboxError
from . import wire

#: Real seconds the world waits for the template to start (imports boto3 and the runtime client).
TEMPLATE_START = 60.0
#: What a task root may hold: Lambda's own limit for an unzipped deployment package is 250 MB.
MAX_TASK_ROOT_BYTES = 250 * 1024 * 1024
#: More files than a handler's folder needs (a deployment package's 250 MB holds far fewer in practice).
MAX_TASK_ROOT_FILES = 20_000
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


class HandlerError(Exception):
    """The handler raised: the error payload awslambdaric sent, as an exception of the world.

    ``classes``: the names of the error's class and its bases, as the environment saw them.
    """

    def __init__(self, payload: dict[str, Any], where: str | None, classes: list[str] | None = None):
        self.payload, self.where = payload, where
        self.error_type = str(payload.get("errorType") or "Exception")
        self.classes = [str(c) for c in classes or [] if isinstance(c, str)][:50] or [self.error_type]
        super().__init__(str(payload.get("errorMessage") or ""))


class InitError(HandlerError):
    """The handler's module could not be loaded, or its init code raised (Runtime.InitError)."""


# -- the template ------------------------------------------------------------------------------
class Template:
    """This interpreter's warm template process (started on first use, shared by every world).

    ``contained``: the template, so every environment forked from it, runs under bubblewrap
    (``containment.bwrap_command``): no network, its own ``/tmp``, read-only views of Python, the
    sandbox package and the task roots, and nothing else of the machine.
    """

    _lock = threading.Lock()
    _instances: dict[bool, "Template"] = {}

    def __init__(self, contained: bool = False) -> None:
        from .containment import bwrap_command, unprivileged_command, unprivileged_user

        self.contained = contained
        _sweep_leftovers()
        # Task roots live here, outside /tmp (each environment mounts a /tmp of its own over it).
        outside = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
        self.roots = Path(tempfile.mkdtemp(prefix=f"rwh-roots-{os.getpid()}-", dir=outside))
        self.roots.chmod(0o755)
        # Each environment's /tmp is a folder in here (contained: in the template's own /tmp instead).
        self.envs_tmp = Path(tempfile.mkdtemp(prefix=f"rwh-envs-{os.getpid()}-"))
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        command = [sys.executable, "-m", "sandbox.runtime.environment.template", str(theirs.fileno()),
                   str(self.envs_tmp)]
        if contained:
            command = bwrap_command(command, readable=[str(self.roots)])
            user = unprivileged_user()
            if user is not None:  # a root grader: bwrap starts as that user, with this Python in its reach
                command = unprivileged_command(command, user)
        self.process = subprocess.Popen(command, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                        env=_template_env())
        theirs.close()
        self.lock = threading.Lock()
        self.ready = False
        atexit.register(self.close)

    def close(self) -> None:
        """End the template (and so every environment it forked), and remove the task roots."""
        try:
            self.control.close()
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
        _remove(self.roots)
        shutil.rmtree(self.envs_tmp, ignore_errors=True)

    def _wait_ready(self) -> None:
        self.control.settimeout(TEMPLATE_START)
        try:
            answer = wire.decode(self.control.recv(1 << 16) or b"{}")
        except (OSError, ValueError):
            answer = {}
        if not answer.get("ready"):
            self.process.kill()
            raise EnvironmentFailed("the execution environments' template process did not start "
                                    f"(exit status {self.process.poll()}); "
                                    "run: python -m sandbox.runtime.environment.template")
        self.control.settimeout(None)
        self.ready = True

    @classmethod
    def warm_up(cls, contained: bool = False) -> None:
        """Start the template now, without waiting for it: its imports overlap the world's own set-up."""
        with cls._lock:
            instance = cls._instances.get(contained)
            if instance is None or instance.process.poll() is not None:
                cls._instances[contained] = cls(contained)

    @classmethod
    def get(cls, contained: bool = False) -> "Template":
        cls.warm_up(contained)
        with cls._lock:
            instance = cls._instances[contained]
            if not instance.ready:
                instance._wait_ready()
            return instance

    def _ask(self, message: dict[str, Any], fds: list[int] | None = None) -> dict[str, Any]:
        with self.lock:
            socket.send_fds(self.control, [wire.encode(message)], fds or [])
            return wire.decode(self.control.recv(1 << 16))

    def spawn(self, config: dict[str, Any], share_tmp: int | None = None) -> tuple[int, socket.socket]:
        """A new environment (``share_tmp``: another process of the environment that process belongs to)."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            answer = self._ask({"t": "spawn", "config": config, "share_tmp": share_tmp}, [theirs.fileno()])
        finally:
            theirs.close()
        return int(answer["pid"]), mine

    def kill(self, pid: int) -> None:
        """SIGKILL one environment; the template reaps it and removes its /tmp (the world does not wait)."""
        with self.lock:
            socket.send_fds(self.control, [wire.encode({"t": "kill", "pid": pid})], [])

    def status(self, pid: int, wait: float = 1.0) -> int | None:
        return self._ask({"t": "status", "pid": pid, "wait": wait}).get("status")


def _template_env() -> dict[str, str]:
    """The template's environment: enough to start Python, nothing of the caller's AWS settings."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "SYSTEMROOT")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    return env


def _sweep_leftovers() -> None:
    """Remove the task roots and /tmp folders of worlds whose process is gone (killed, so never cleaned)."""
    for folder in ("/var/tmp", tempfile.gettempdir()):
        try:
            found = list(Path(folder).glob("rwh-*-*-*"))
        except OSError:
            continue
        for path in found:
            parts = path.name.split("-")
            if parts[1] not in ("roots", "envs") or not parts[2].isdigit():
                continue
            try:
                os.kill(int(parts[2]), 0)
            except ProcessLookupError:
                _remove(path)
            except PermissionError:  # another user's world, alive
                pass


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


def _remove(base: Path) -> None:
    """Remove a folder of read-only copies; one that another process is removing meanwhile is no error."""
    try:
        paths = [base, *base.rglob("*")]
    except OSError:  # it went while we looked
        paths = []
    for path in paths:
        try:
            if not path.is_symlink():
                path.chmod(0o755 if path.is_dir() else 0o644)
        except OSError:
            pass
    shutil.rmtree(base, ignore_errors=True)


# -- one environment ---------------------------------------------------------------------------
class EnvironmentProcess:
    """One execution environment: an OS process, its channel, its private ``/tmp``."""

    def __init__(self, config: dict[str, Any], roots: TaskRootCopies, template: Template,
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
    def init(self) -> None:
        """Run the bootstrap and the handler's init, serving its requests, until it asks for work.

        A SnapStart function's first environment stops at its snapshot instead, and serves restores from
        then on; a restored one starts past its init, at the runtime's after-restore hooks.
        """
        if self.snapshot is None:
            ready = self._receive(self._deadline())
            if ready["t"] != wire.Kind.READY:
                raise EnvironmentFailed(f"an environment began with {ready['t']!r} instead of 'ready'")
        message = self._serve_until((wire.Kind.NEXT, wire.Kind.INIT_ERROR, wire.Kind.SNAPSHOT))
        if message["t"] == wire.Kind.SNAPSHOT:
            return
        self.asked = True
        if message["t"] == wire.Kind.INIT_ERROR:
            payload = _payload(message["body"])
            raise InitError(payload, self._where(payload))

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
            status = wire.receive_from_environment(self.sock, deadline=time.monotonic() + wait + 5.0)["status"]
        except (OSError, wire.TimedOut, wire.ChannelClosed, wire.ProtocolError):
            return None
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
        if message.get("bytes"):
            return body.encode("utf-8", "surrogateescape")
        if message.get("content_type") == "application/json":
            return json.loads(body)
        return body

    def _serve_until(self, ends: tuple[str, ...]) -> dict[str, Any]:
        # The watchdog counts from the last answer: log lines are not progress (a loop that only
        # prints is as blocked as one that only spins).
        deadline = self._deadline()
        while True:
            message = self._receive(deadline)
            kind = message["t"]
            if kind in ends:
                return message
            if kind == wire.Kind.LOG:
                self.logs(str(message["stream"]), self._loggable(str(message["text"])))
                continue
            if kind == wire.Kind.EXIT:
                frames = message["frames"] if isinstance(message["frames"], list) else []
                self.exit_where = self._where_in([f for f in frames if isinstance(f, list) and len(f) == 3])
                continue
            if kind in (wire.Kind.NEXT, wire.Kind.RESPONSE, wire.Kind.ERROR, wire.Kind.INIT_ERROR, wire.Kind.READY):
                self.kill()
                raise EnvironmentFailed(f"the environment sent {kind!r} out of turn")
            answer = self._serve(message)
            answer.update(t=wire.Kind.ANSWER, now=_now())
            wire.send(self.sock, answer)
            deadline = self._deadline()

    @staticmethod
    def _deadline() -> float | None:
        """When the learner's code, running from now on, has run past the world's watchdog (None: no task)."""
        task = current_task()
        if task is None:
            return None
        task.own_watchdog = True
        return time.monotonic() + task.sched.watchdog

    def _receive(self, deadline: float | None = None) -> dict[str, Any]:
        """The environment's next message. Until it comes, the environment runs the learner's code: past
        ``deadline`` the environment is blocked outside the sandbox, and is killed."""
        try:
            return wire.receive_from_environment(self.sock, deadline=deadline)
        except wire.TimedOut:
            self.kill()
            task = current_task()
            assert task is not None  # an invocation's task waits on its environment
            raise HandlerBlocked(blocked_message(task.name, task.sched.watchdog)) from None
        except wire.ChannelClosed:
            exit_ = RuntimeExit(self._exit_status())
            if self.exit_where is not None:
                exit_.where = self.exit_where
            raise exit_ from None
        except wire.ProtocolError as exc:
            self.kill()
            raise EnvironmentFailed(f"the environment broke the protocol: {exc}") from None

    def _exit_status(self) -> int:
        status = (self.template.status(self.pid, wait=2.0) if self.snapshot is None
                  else self.snapshot._restored_status(self.pid, wait=2.0))
        if status is None:
            self.kill()
            return 1
        self.dead = True
        return status if status >= 0 else 128 - status

    # -- one request -------------------------------------------------------------------------
    def _serve(self, message: dict[str, Any]) -> dict[str, Any]:
        world = active.current()
        kind = message["t"]
        if kind == wire.Kind.SLEEP:
            seconds = message["seconds"]
            if not isinstance(seconds, (int, float)) or seconds < 0:
                raise EnvironmentFailed(f"a sleep of {seconds!r} seconds")
            world.scheduler.sleep(float(seconds), label="sleep")
            return {}
        if kind == wire.Kind.EFFECT:
            return _effect(world, message)
        return _aws(world, message)

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

    def _where(self, payload: dict[str, Any]) -> str | None:
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


def _payload(body: Any) -> dict[str, Any]:
    try:
        payload = json.loads(body) if isinstance(body, str) else body
    except ValueError:
        payload = None
    return payload if isinstance(payload, dict) else {"errorMessage": str(body)[:2000], "errorType": "Runtime.Unknown"}


_EFFECTS = {"send_confirmation_email": ("order",), "send_cancellation_email": ("order",),
            "charge_card": ("order", "idempotency_key")}


def _effect(world, message: dict[str, Any]) -> dict[str, Any]:
    kind, args = message["kind"], message["args"]
    if kind not in _EFFECTS or not isinstance(args, dict) or set(args) - set(_EFFECTS[kind]):
        raise EnvironmentFailed(f"an unknown effect request {str(kind)[:40]!r}")
    try:
        result = getattr(world.services, kind)(**args)
    except (ProviderError, BadInput) as exc:
        return {"raise": type(exc).__name__, "message": str(exc)}
    return {"result": json.loads(json.dumps(result, default=json_number))}


def _aws(world, message: dict[str, Any]) -> dict[str, Any]:
    headers = message["headers"]
    if not isinstance(headers, dict):
        raise EnvironmentFailed("an AWS request whose headers are not a mapping")
    request = AWSPreparedRequest(method=str(message["method"]), url=str(message["url"]),
                                 headers={str(k): str(v) for k, v in headers.items()},
                                 body=b64decode(str(message["body"])), stream_output=False)
    try:
        response = world.gateway.handle(str(message["service"]), str(message["op"]), request)
    except (ReadTimeoutError, ConnectTimeoutError, EndpointConnectionError) as exc:
        return {"raise": type(exc).__name__, "message": str(exc)}
    except RealAwsRefused as exc:
        return {"raise": "EndpointConnectionError", "message": str(exc)}
    return {"status": response.status_code, "headers": dict(response.headers.items()),
            "body": b64encode(response.content).decode()}

