"""What keeps a submission in its place while the grader runs it.

- ``limit``: the process's own resource limits (``resource.setrlimit``): memory, CPU time,
  file size, no core dumps. The grading parent adds a wall-clock limit and kills on overrun.
- ``Guard``: an audit hook (PEP 578; an audit hook cannot be removed once added). Files
  outside the Python installation, the ``sandbox`` package and the submission's own folder
  cannot be opened or listed, so the solutions, the tests and the grader's files stay out of
  reach; nothing may be written outside that folder; no process can be started or signalled, no
  socket opened, no resource limit raised, no library loaded through ``ctypes`` (the
  scheduler's own use of ``ctypes`` to stop a busy loop is let through).
- ``Integrity``: a snapshot of every function and class of the ``sandbox`` package taken before
  the submission runs; a difference later means the submission patched the sandbox, its
  services or its checker. ``world_problems`` looks at the open world itself: its parts must
  still write to the world's own history, and none may have a method replaced on the instance.

Each refusal is reported (``report``) to the grading parent, which names it in the grade.
"""
from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

SANDBOX_DIR = str(Path(__file__).resolve().parents[1])
SCHEDULER = os.path.join(SANDBOX_DIR, "scheduler.py")
#: Audit events refused outright: new processes, signals, sockets, raised limits.
REFUSED = frozenset({
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "subprocess.Popen",
    "os.kill", "os.killpg", "pty.spawn", "socket.connect", "socket.bind", "socket.sendto", "socket.getaddrinfo",
    "resource.setrlimit", "resource.prlimit", "os.symlink", "os.link", "sys.remote_exec", "os.startfile",
    "ctypes.dlopen",
})
#: Audit events that change the file system, each checked against the writable folder.
WRITES = frozenset({"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate",
                    "os.utime", "shutil.rmtree", "shutil.move", "shutil.copyfile"})
LISTINGS = frozenset({"os.listdir", "os.scandir", "glob.glob", "glob.glob/2"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def limit(memory_mb: int, cpu_seconds: int, file_mb: int = 16) -> None:
    """This process's resource limits (set before anything else runs)."""
    import resource

    mb = 1024 * 1024
    for name, soft, hard in (("RLIMIT_AS", memory_mb * mb, memory_mb * mb),
                             ("RLIMIT_CPU", cpu_seconds, cpu_seconds + 5),
                             ("RLIMIT_FSIZE", file_mb * mb, file_mb * mb), ("RLIMIT_CORE", 0, 0)):
        if hasattr(resource, name):
            resource.setrlimit(getattr(resource, name), (soft, hard))


def python_roots() -> list[str]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths |= {p for k in ("stdlib", "platstdlib", "purelib", "platlib") if (p := sysconfig.get_paths().get(k))}
    return sorted({os.path.realpath(p) for p in paths if p})


class Guard:
    """The audit hook. ``readable`` and ``writable`` are folders; ``report(text)`` hears each refusal."""

    def __init__(self, readable: Iterable[str], writable: Iterable[str], report: Callable[[str], None],
                 listable: Iterable[str] = ()):
        self.readable = tuple(_folder(p) for p in readable)
        self.writable = tuple(_folder(p) for p in writable)
        self.listable = tuple(_folder(p) for p in listable) + self.readable
        self.report = report
        self._reported: set[str] = set()

    def install(self) -> "Guard":
        sys.addaudithook(self._hook)
        return self

    def _hook(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            self._open(args)
        elif event in LISTINGS:
            self._path(args[0] if args else ".", self.listable, "list")
        elif event in WRITES:
            for arg in args[:2]:
                if isinstance(arg, (str, bytes, os.PathLike)):
                    self._path(arg, self.writable, "change")
        elif event in REFUSED:
            self._refuse(f"{event} is not allowed while grading")
        elif event.startswith("ctypes.") and not _from_scheduler():
            self._refuse(f"{event} is not allowed while grading (ctypes reaches past Python)")

    def _open(self, args: tuple[Any, ...]) -> None:
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        if not isinstance(path, (str, bytes, os.PathLike)):
            return  # an already open descriptor
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool((flags or 0) & _WRITE_FLAGS)
        if writing:
            self._path(path, self.writable, "write")
        else:
            self._path(path, self.readable, "read")

    def _path(self, path: Any, allowed: tuple[str, ...], verb: str) -> None:
        text = os.fsdecode(path) if isinstance(path, (bytes, os.PathLike)) else str(path)
        full = os.path.normpath(os.path.join(os.getcwd(), text))
        if full in ("/dev/null", "/dev/urandom") or any(full == a[:-1] or full.startswith(a) for a in allowed):
            return
        self._refuse(f"tried to {verb} {full}: the grader's files, the solutions and everything outside the "
                     f"submission's own folder are off limits")

    def _refuse(self, text: str) -> None:
        if text not in self._reported:
            self._reported.add(text)
            self.report(text)
        raise PermissionError(text)


def _folder(path: str) -> str:
    return os.path.join(os.path.normpath(os.path.abspath(path)), "")


def _from_scheduler() -> bool:
    frame = sys._getframe(2)
    for _ in range(6):
        if frame is None:
            return False
        if frame.f_code.co_filename == SCHEDULER:
            return True
        frame = frame.f_back
    return False


# -- integrity -----------------------------------------------------------------------------------------
def _members(module: ModuleType) -> dict[str, int]:
    out = {}
    for name, value in list(vars(module).items()):
        if isinstance(value, type) and value.__module__ == module.__name__:
            out[f"{module.__name__}.{name}"] = id(value)
            out.update({f"{module.__name__}.{name}.{k}": id(v) for k, v in list(vars(value).items())
                        if not k.startswith("__") or k in ("__init__", "__call__", "__enter__", "__exit__")})
        elif callable(value) and getattr(value, "__module__", None) == module.__name__:
            out[f"{module.__name__}.{name}"] = id(value)
    return out


def snapshot(prefix: str = "sandbox") -> dict[str, int]:
    """Identity of every module, function, class and class member of the package, as loaded now."""
    out = {}
    for name, module in list(sys.modules.items()):
        if (name == prefix or name.startswith(prefix + ".")) and isinstance(module, ModuleType):
            out[name] = id(module)
            out.update(_members(module))
    return out


class Integrity:
    """Compares the package with its snapshot; ``check()`` returns what changed (empty when nothing did)."""

    def __init__(self, prefix: str = "sandbox"):
        self.prefix = prefix
        self.before = snapshot(prefix)

    def check(self) -> list[str]:
        now = snapshot(self.prefix)
        return sorted(name for name, ident in self.before.items() if now.get(name) != ident)


#: The world's parts that write to its history (``Sandbox`` attributes).
WORLD_PARTS = ("gateway", "runtime", "services", "sweeper", "scheduler", "clock", "faults", "replicas")


def _parts(world: Any) -> list[tuple[str, Any]]:
    return [("world", world)] + [(n, p) for n in WORLD_PARTS if (p := getattr(world, n, None)) is not None]


def world_methods(world: Any) -> dict[str, int]:
    """Identity of every method set on the instance of the world or one of its parts (the sandbox sets
    a few itself); taken when the world writes its first record, before any handler runs."""
    return {f"{type(part).__name__}.{attr}": id(value) for _, part in _parts(world)
            for attr, value in list(vars(part).items())
            if callable(value) and callable(getattr(type(part), attr, None))}


def world_problems(world: Any, history: Any, baseline: dict[str, int]) -> list[str]:
    """How the open ``world`` was changed under the grader: a part writing to another history than
    ``history`` (the one the grader has been copying), or a method replaced on an instance since
    ``baseline`` (``world_methods`` when the world opened)."""
    out = []
    if world.history is not history:
        out.append("the world's history was replaced")
    for name, part in _parts(world)[1:]:
        if "history" in vars(part) and part.history is not history:
            out.append(f"the world's {name} writes to another history")
    now = world_methods(world)
    out += [f"{name} was replaced on the instance" for name, ident in now.items() if baseline.get(name) != ident]
    return out
