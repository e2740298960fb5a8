"""Each Lambda container is a process of its own: its modules, its environment, its ``sys.path``.

On Lambda every execution environment is a separate process: a module-level set, a
sibling module's globals or an ``os.environ`` change in one container is invisible to
every other, and the task root (the handler's folder) is on ``sys.path``. In the sandbox
all containers share one Python process, and only one task runs at a time; so at every
switch between containers the runtime swaps what a process would own:

- *private modules*: the handler's module (named after its file, as Lambda names it) and
  every module imported from outside the standard library and site-packages, except the
  sandbox itself (Lambda's runtime provides boto3; the task root holds your code);
- ``os.environ``, with Lambda's reserved variables for the function;
- ``sys.path``, with the task root first.

A handler passed as a Python function (defined in a notebook) shares the notebook's own
globals, which no swap can separate; a handler file gets the full isolation.
"""
from __future__ import annotations

import functools
import os
import sys
import sysconfig
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from ..paths import PACKAGE

_SANDBOX_DIR = str(PACKAGE)
_SHARED_ROOTS = tuple(sorted({str(Path(p).resolve()) for key in ("stdlib", "platstdlib", "purelib", "platlib")
                              if (p := sysconfig.get_paths().get(key))}))
#: Modules found shared (stdlib, site-packages, the sandbox), by name: a module object's file never
#: changes, so every world's scan of ``sys.modules`` skips them (a new module under the name is looked at).
_SHARED_MODULES: dict[str, ModuleType] = {}
#: The last scan of ``sys.modules`` for private modules: its entries, and what it found.
_LAST_SCAN: tuple[tuple, dict[str, ModuleType]] | None = None


def is_private(module: object) -> bool:
    """A module a process owns alone: loaded from a file outside the stdlib, site-packages and the sandbox."""
    path = getattr(module, "__file__", None)
    return isinstance(path, str) and bool(path) and private_path(path)


@functools.lru_cache(maxsize=8192)
def private_path(path: str) -> bool:
    """Is a file outside the stdlib, site-packages and the sandbox (the learner's own code)?"""
    resolved = os.path.realpath(path)
    return not resolved.startswith(_SHARED_ROOTS) and not resolved.startswith(_SANDBOX_DIR)


def shadows_shared(name: str) -> bool:
    """Would a private module called ``name`` hide a module of the stdlib or site-packages?"""
    found = sys.modules.get(name)
    if found is not None:
        return not is_private(found)
    return _installed_elsewhere(name, tuple(sys.path))


@functools.lru_cache(maxsize=256)
def _installed_elsewhere(name: str, path: tuple[str, ...]) -> bool:
    """Is ``name`` a built-in module or one found on ``path`` outside the learner's folders? (a search
    of every folder on the path, done once per name and path)"""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    if spec is None or spec.origin is None:
        return False
    return spec.origin in ("built-in", "frozen") or not private_path(spec.origin)


class Environment:
    """One process's environment variables, and what it takes to put them in ``os.environ`` again.

    ``raw`` is ``os.environ``'s encoded form when these variables were last installed or captured
    (None: not yet): while ``os.environ`` still equals it, nothing needs decoding or setting. The
    variables' encoded form, in their own order, is made once per set of variables.
    """

    __slots__ = ("variables", "raw", "_encoded")
    # (whether for an os._Environ, {encoded key: (key, value, encoded value)}); None until first needed
    _encoded: tuple[bool, dict[Any, tuple[str, str, Any]]] | None

    def __init__(self, variables: dict[str, str], raw: dict | None = None):
        self.variables, self.raw, self._encoded = variables, raw, None

    def install(self, now_raw: dict | None) -> None:
        """Make ``os.environ`` equal these variables (``now_raw``: its encoded form now, if known).

        Only the variables that differ are set or removed (each change reaches the real process
        environment through ``os.environ``), new ones in this environment's order, as a process has them.
        """
        if self.raw is not None and self.raw == now_raw:
            return
        if now_raw is None:
            now_raw = _environ_raw()
        environ = os.environ
        decode_key = environ.decodekey if isinstance(environ, os._Environ) else str
        wanted = self._wanted(environ)
        for raw_key in [k for k in now_raw if k not in wanted]:
            del environ[decode_key(raw_key)]
        for raw_key, (key, value, raw_value) in wanted.items():
            if now_raw.get(raw_key) != raw_value:
                environ[key] = value
        self.raw = _environ_raw()

    def _wanted(self, environ: Any) -> dict:
        encoded = isinstance(environ, os._Environ)
        if self._encoded is None or self._encoded[0] != encoded:
            wanted = {}
            for key, value in self.variables.items():
                raw_key, raw_value = _encoded(environ, key, value) if encoded else (key, value)
                wanted[raw_key] = (key, value, raw_value)
            self._encoded = encoded, wanted
        return self._encoded[1]

    @classmethod
    def capture(cls, before: "Environment | None") -> "Environment":
        """``os.environ`` as it is now: ``before`` itself while nothing changed, else decoded once."""
        raw = _environ_raw()
        if before is not None and raw == before.raw:
            return before
        return cls(dict(os.environ), raw)


_ENCODINGS: dict[tuple[str, str], tuple] = {}


def _encoded(environ: Any, key: str, value: str) -> tuple:
    """``(key, value)`` as ``os.environ`` stores them; every world sets the same few variables, so each
    pair is encoded once (the encoding of a string never changes within a process)."""
    pair = _ENCODINGS.get((key, value))
    if pair is None:
        if len(_ENCODINGS) > 4096:
            _ENCODINGS.clear()
        pair = _ENCODINGS[(key, value)] = (environ.encodekey(key), environ.encodevalue(value))
    return pair


class ProcessContext:
    """What one container's process holds apart from every other."""

    def __init__(self, env: dict[str, str], task_root: str | None):
        self.modules: dict[str, ModuleType] = {}
        self.environment = Environment(dict(env))
        self.path = ([task_root] if task_root else []) + [p for p in sys.path if p != task_root]

    @property
    def env(self) -> dict[str, str]:
        return self.environment.variables


class ProcessSwitch(Protocol):
    """What the runtime calls on its processes: ``Processes``, or real threads' ``SharedProcesses``."""

    @property
    def current(self) -> ProcessContext | None: ...

    def activate(self, ctx: ProcessContext | None) -> None: ...

    def capture(self, ctx: ProcessContext) -> None: ...


class Processes:
    """Installs one container's process context at a time, and the world's own when none runs."""

    def __init__(self) -> None:
        self.current: ProcessContext | None = None
        self._base_env: Environment | None = None
        self._base_path: list[str] | None = None
        self._base_private: dict[str, ModuleType] = {}
        self._base_size = -1  # len(sys.modules) when _base_private was taken
        #: sys.modules when the running container was entered or last captured: its size and last entry
        #: (a dict keeps insertion order, so while nothing was removed the imports since are the entries
        #: after that one).
        self._known_size = 0
        self._known_last: tuple | None = None

    @staticmethod
    def _private_modules() -> dict[str, ModuleType]:
        """The private modules in ``sys.modules``; a module already found shared is not looked at again.

        Worlds opened one after another mostly find ``sys.modules`` exactly as the last one left it
        (the same names bound to the same modules, in the same order): then the last answer stands.
        """
        global _LAST_SCAN
        entries = tuple(sys.modules.items())
        if _LAST_SCAN is not None and _LAST_SCAN[0] == entries:
            return dict(_LAST_SCAN[1])
        private, shared = {}, _SHARED_MODULES
        for name, module in entries:
            if shared.get(name) is module:
                continue
            if is_private(module):
                private[name] = module
            else:
                shared[name] = module
        _LAST_SCAN = entries, dict(private)
        return private

    def activate(self, ctx: ProcessContext | None) -> None:
        """Make ``ctx`` the running process (None: the world's own)."""
        if ctx is self.current:
            return
        if self.current is not None and ctx is not None:
            self._swap(self.current, ctx)
        else:
            if self.current is not None:
                self._leave(self.current)
            if ctx is not None:
                self._enter(ctx)
        self.current = ctx

    def _swap(self, old: ProcessContext, new: ProcessContext) -> None:
        """One container's process for another's, as leaving one and entering the other would, without
        putting the world's own in place in between (no code of the world runs there)."""
        self._take_out(old)
        self._put_in(new, old.environment.raw)

    def _enter(self, ctx: ProcessContext) -> None:
        self._base_env = Environment.capture(self._base_env)  # the world's environment may have changed
        self._base_path = list(sys.path)
        if len(sys.modules) != self._base_size:  # the world's own code imported something since
            self._base_private = self._private_modules()
            self._base_size = len(sys.modules)
        for name in self._base_private:
            del sys.modules[name]
        self._put_in(ctx, self._base_env.raw)

    def _leave(self, ctx: ProcessContext) -> None:
        self._take_out(ctx)
        sys.modules.update(self._base_private)
        assert self._base_env is not None  # captured by _enter
        self._base_env.install(ctx.environment.raw)
        sys.path[:] = self._base_path or sys.path

    def _take_out(self, ctx: ProcessContext) -> None:
        """Note what the running container changed, then take its modules out of ``sys.modules``."""
        self.capture(ctx)
        for name in ctx.modules:
            sys.modules.pop(name, None)

    def _put_in(self, ctx: ProcessContext, now_raw: dict | None) -> None:
        """Install ``ctx``'s modules, environment and path (``now_raw``: ``os.environ``'s encoded form now)."""
        sys.modules.update(ctx.modules)
        ctx.environment.install(now_raw)
        sys.path[:] = ctx.path
        self._note_modules()

    def capture(self, ctx: ProcessContext) -> None:
        """Note what the running container changed: modules it imported, its environment."""
        for name in self._new_modules():
            module = sys.modules.get(name)
            if module is not None and is_private(module):
                ctx.modules[name] = module
        self._note_modules()
        ctx.environment = Environment.capture(ctx.environment)
        ctx.path = list(sys.path)

    def _note_modules(self) -> None:
        self._known_size = len(sys.modules)
        self._known_last = _last_entry()

    def _new_modules(self) -> list[str]:
        """Names added to ``sys.modules`` since it was last noted."""
        size, added = len(sys.modules), len(sys.modules) - self._known_size
        if added >= 0 and _last_entry(skip=added) == self._known_last:
            # Only appended (a removal before the noted last entry would shift it): the tail is new.
            return list(sys.modules)[self._known_size:size] if added else []
        # Something was removed or replaced: look at every module not known to be shared (capture keeps
        # the private ones; those the container already had are kept again, unchanged or re-imported).
        return [name for name, module in sys.modules.items() if _SHARED_MODULES.get(name) is not module]


def _last_entry(skip: int = 0) -> tuple | None:
    """The ``skip``-th entry of ``sys.modules`` from the end (0: the last), as (name, module)."""
    items = reversed(sys.modules.items())
    try:
        for _ in range(skip):
            next(items)
        name, module = next(items)
    except StopIteration:
        return None
    return name, module


def _environ_raw() -> dict:
    """A copy of ``os.environ``'s encoded mapping: a plain dict copy, where ``dict(os.environ)`` decodes
    every variable. Two copies are equal exactly when the environments are (the encoding is one-to-one).
    Code that replaced ``os.environ`` with a plain mapping gets a plain copy (its encoding is the identity)."""
    environ = os.environ
    # _data: _Environ's encoded mapping, which typeshed leaves out (it is private).
    return environ._data.copy() if isinstance(environ, os._Environ) else dict(environ)  # type: ignore[attr-defined]
