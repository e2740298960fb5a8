"""The world's handle on the warm template process, which forks every execution environment.

Kept apart from ``host`` (which serves the environments' requests, and so imports botocore and the
world's parts), so a command line can start the template first thing, with nothing heavier than
``subprocess`` loaded: the template's imports then overlap the world's own, on another core.
"""
from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from ...errors import TemplateFailed
from . import wire

#: Real seconds the world waits for the template to start (imports boto3 and the runtime client).
TEMPLATE_START = 60.0


class Template:
    """This interpreter's warm template process (started on first use, shared by every world).

    ``contained``: the template, so every environment forked from it, runs under bubblewrap
    (``containment.bwrap_command``): no network, its own ``/tmp``, read-only views of Python, the
    sandbox package and the task roots, and nothing else of the machine.
    """

    _lock = threading.Lock()
    _instances: dict[bool, "Template"] = {}
    _warned = False  # the world has said that environments are not contained here
    broken = False  # its control socket failed: the next ``get`` starts a new template
    #: Why environments are not in namespaces of their own here (None: they are), once the template said.
    uncontained: str | None = None

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
                   str(self.envs_tmp), str(self.roots)]
        if contained:
            command = bwrap_command(command, readable=[str(self.roots)])
            user = unprivileged_user()
            if user is not None:  # a root grader: bwrap starts as that user, with this Python in its reach
                command = unprivileged_command(command, user)
        # A process group of its own: the signals meant for the world's group are not the template's. A Jupyter
        # kernel shutting down sends SIGTERM to its group's children and waits until none is left; a template
        # killed so stays a zombie until the world's atexit reaps it, after that wait (2.6 s a shutdown). Out
        # of the group, it ends as it should: the world closes its control socket (at exit, or by dying, even
        # killed with its whole group), and the template ends what it forked. A Ctrl-C or Jupyter's interrupt
        # (SIGINT to the kernel's group) reaches the world, which closes what it runs, and not its spares.
        self.process = subprocess.Popen(command, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                        env=_template_env(), process_group=0)
        theirs.close()
        self.lock = threading.Lock()
        #: Environments waiting for a function, each with its door (``manager``): a cold start opens one.
        self.doors: list[tuple[int, socket.socket]] = []
        self.doors_lock = threading.Lock()
        self.ready = False
        self.owner = os.getpid()  # a forked copy of this process neither uses nor ends it (``_forget_in_child``)
        atexit.register(self.close)

    def close(self) -> None:
        """End the template (and so every environment it forked), and remove the task roots."""
        if os.getpid() != self.owner:  # a fork of the world that started it (a pool's worker): not ours to end
            return
        for _, door in self.doors:
            door.close()
        self.doors = []
        try:
            self.control.close()
            if not self.ready:  # still importing (a command line that stopped at bad input): it would not hear
                self.process.kill()
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
        self.uncontained = answer.get("uncontained") if isinstance(answer.get("uncontained"), str) else None
        if self.uncontained and not Template._warned:
            from .namespaces import describe_missing

            Template._warned = True
            # On the real stderr, whatever a run has swapped in for sys.stderr meanwhile.
            print(describe_missing(self.uncontained), file=sys.__stderr__ or sys.stderr)
        if self.contained and self.uncontained and answer.get("ready"):
            self.process.kill()
            from .containment import ContainmentUnavailable

            raise ContainmentUnavailable(f"grading needs each execution environment in namespaces of its own, and "
                                         f"inside bubblewrap the kernel refused them: {self.uncontained}")
        if not answer.get("ready"):
            self.process.kill()
            raise TemplateFailed("the execution environments' template process did not start "
                                    f"(exit status {self.process.poll()}); "
                                    "run: python -m sandbox.runtime.environment.template")
        self.control.settimeout(None)
        self.ready = True

    @classmethod
    def warm_up(cls, contained: bool = False) -> None:
        """Start the template now, without waiting for it: its imports overlap the world's own set-up."""
        with cls._lock:
            instance = cls._instances.get(contained)
            if instance is None or instance.broken or instance.process.poll() is not None:
                if instance is not None:
                    instance.close()
                cls._instances[contained] = cls(contained)

    @classmethod
    def get(cls, contained: bool = False) -> "Template":
        cls.warm_up(contained)
        with cls._lock:
            instance = cls._instances[contained]
            if not instance.ready:
                instance._wait_ready()
            return instance

    def _ask(self, message: wire.Message, fds: list[int] | None = None) -> wire.Message:
        with self.lock:
            socket.send_fds(self.control, [wire.encode(message)], fds or [])
            return wire.decode(self.control.recv(1 << 16))

    def spawn(self, config: wire.EnvironmentConfig, share_tmp: int | None = None) -> tuple[int, socket.socket]:
        """A new environment (``share_tmp``: another process of the environment that process belongs to)."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if share_tmp is None:
                pid = self._open_door(config, theirs)
            else:
                answer = self._ask({"t": "spawn", "config": config, "share_tmp": share_tmp}, [theirs.fileno()])
                if "pid" not in answer:
                    raise TemplateFailed(str(answer.get("error") or "the template answered nothing"))
                pid = int(answer["pid"])
        except (OSError, ValueError) as exc:  # the template is gone (killed): the next world starts another
            mine.close()
            self.broken = True
            raise TemplateFailed(f"the execution environments' template process ended ({exc}); "
                                 "the next run starts a new one") from None
        except TemplateFailed:
            mine.close()
            raise
        finally:
            theirs.close()
        return pid, mine

    def _open_door(self, config: wire.EnvironmentConfig, channel: socket.socket) -> int:
        """Hand a waiting environment its function and channel, through its door: no hop through the template
        (which is asked for more doors only when the world has none left)."""
        for _ in range(wire.HAND_OUT + 1):
            with self.doors_lock:
                if not self.doors:
                    self.doors = self._more_doors()
                pid, door = self.doors.pop(0)
            try:
                socket.send_fds(door, [wire.encode(config)], [channel.fileno()])
                return pid
            except OSError:  # that one ended while it waited (killed with its template's other children): the next
                continue
            finally:
                door.close()
        raise TemplateFailed("no waiting execution environment took its function")

    def _more_doors(self) -> list[tuple[int, socket.socket]]:
        with self.lock:
            socket.send_fds(self.control, [wire.encode({"t": "spares", "most": wire.HAND_OUT})], [])
            data, fds, _, _ = socket.recv_fds(self.control, 1 << 16, wire.HAND_OUT)
        answer = wire.decode(data)
        pids = answer.get("pids")
        doors = [socket.socket(fileno=fd) for fd in fds]
        if not isinstance(pids, list) or len(pids) != len(doors) or not doors:
            for door in doors:
                door.close()
            raise TemplateFailed(str(answer.get("error") or "the template handed out no environment"))
        return [(int(pid), door) for pid, door in zip(pids, doors)]

    def kill(self, pid: int) -> None:
        """SIGKILL one environment; the template reaps it and removes its /tmp (the world does not wait)."""
        with self.lock:
            socket.send_fds(self.control, [wire.encode({"t": "kill", "pid": pid})], [])

    def status(self, pid: int, wait: float = 1.0) -> tuple[int | None, str | None]:
        """How an environment's process ended (exit code, or minus the signal), and why its manager ended it."""
        answer = self._ask({"t": "status", "pid": pid, "wait": wait})
        status, why = answer.get("status"), answer.get("why")
        return (status if isinstance(status, int) else None), (why if isinstance(why, str) else None)

def _template_env() -> dict[str, str]:
    """The template's environment: enough to start Python, nothing of the caller's AWS settings."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "SYSTEMROOT",
            "RWH_NO_NAMESPACES")  # the last: run environments without namespaces, as where the kernel refuses them
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


def _forget_in_child() -> None:
    """A fork of the world (multiprocessing's workers) starts templates of its own when it needs one: two processes
    talking on one control socket, or opening the same doors, would answer each other's questions."""
    Template._instances = {}
    Template._lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_in_child)
