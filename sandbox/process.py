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

_SANDBOX_DIR = str(Path(__file__).resolve().parent)
_SHARED_ROOTS = tuple(sorted({str(Path(p).resolve()) for key in ("stdlib", "platstdlib", "purelib", "platlib")
                              if (p := sysconfig.get_paths().get(key))}))
#: Modules found shared (stdlib, site-packages, the sandbox), by name: a module object's file never
#: changes, so every world's scan of ``sys.modules`` skips them (a new module under the name is looked at).
_SHARED_MODULES: dict[str, ModuleType] = {}


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
    import importlib.util

    found = sys.modules.get(name)
    if found is not None:
        return not is_private(found)
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    if spec is None or spec.origin is None:
        return False
    return spec.origin in ("built-in", "frozen") or not private_path(spec.origin)


class ProcessContext:
    """What one container's process holds apart from every other."""

    def __init__(self, env: dict[str, str], task_root: str | None):
        self.modules: dict[str, ModuleType] = {}
        self.env = dict(env)
        #: ``os.environ`` in its encoded form when ``env`` was last installed or captured (None: not yet):
        #: while the two are equal, ``env`` is still right and nothing needs decoding or setting.
        self.raw_env: dict | None = None
        self.path = ([task_root] if task_root else []) + [p for p in sys.path if p != task_root]


class Processes:
    """Installs one container's process context at a time, and the world's own when none runs."""

    def __init__(self):
        self.current: ProcessContext | None = None
        self._base_env: dict[str, str] | None = None
        self._base_raw: dict | None = None  # the encoded form of _base_env
        self._base_path: list[str] | None = None
        self._base_private: dict[str, ModuleType] = {}
        self._base_size = -1  # len(sys.modules) when _base_private was taken
        self._known: set[str] = set()

    def _private_modules(self) -> dict[str, ModuleType]:
        """The private modules in ``sys.modules``; a module already found shared is not looked at again."""
        private, shared = {}, _SHARED_MODULES
        for name, module in sys.modules.items():
            if shared.get(name) is module:
                continue
            if is_private(module):
                private[name] = module
            else:
                shared[name] = module
        return private

    def activate(self, ctx: ProcessContext | None) -> None:
        """Make ``ctx`` the running process (None: the world's own)."""
        if ctx is self.current:
            return
        if self.current is not None:
            self._leave(self.current)
        if ctx is not None:
            self._enter(ctx)
        self.current = ctx

    def _enter(self, ctx: ProcessContext) -> None:
        raw = _environ_raw()
        if raw != self._base_raw:  # the world's environment changed since it was last noted
            self._base_env, self._base_raw = dict(os.environ), raw
        self._base_path = list(sys.path)
        if len(sys.modules) != self._base_size:  # the world's own code imported something since
            self._base_private = self._private_modules()
            self._base_size = len(sys.modules)
        for name in self._base_private:
            del sys.modules[name]
        sys.modules.update(ctx.modules)
        ctx.raw_env = _replace_env(ctx.env, ctx.raw_env, raw)
        sys.path[:] = ctx.path
        self._known = set(sys.modules)

    def _leave(self, ctx: ProcessContext) -> None:
        self.capture(ctx)
        for name in ctx.modules:
            sys.modules.pop(name, None)
        sys.modules.update(self._base_private)
        self._base_raw = _replace_env(self._base_env or {}, self._base_raw, ctx.raw_env)
        sys.path[:] = self._base_path or sys.path

    def capture(self, ctx: ProcessContext) -> None:
        """Note what the running container changed: modules it imported, its environment."""
        for name in sys.modules.keys() - self._known:
            module = sys.modules.get(name)
            if module is not None and is_private(module):
                ctx.modules[name] = module
        self._known = set(sys.modules)
        raw = _environ_raw()
        if raw != ctx.raw_env:  # the container changed its environment: decode it once
            ctx.env, ctx.raw_env = dict(os.environ), raw
        ctx.path = list(sys.path)


def _environ_raw() -> dict:
    """A copy of ``os.environ``'s encoded mapping: a plain dict copy, where ``dict(os.environ)`` decodes
    every variable. Two copies are equal exactly when the environments are (the encoding is one-to-one).
    Code that replaced ``os.environ`` with a plain mapping gets a plain copy (its encoding is the identity)."""
    environ = os.environ
    return environ._data.copy() if isinstance(environ, os._Environ) else dict(environ)


def _replace_env(env: dict[str, str], env_raw: dict | None, now_raw: dict | None) -> dict:
    """Make ``os.environ`` equal ``env``; return its encoded form.

    ``env_raw`` is the encoded form of ``env`` and ``now_raw`` that of the current environment, when
    known. Only the variables that differ are set or removed (each change reaches the real process
    environment through ``os.environ``), the new ones in ``env``'s order, as a process would have them.
    """
    if env_raw is not None and env_raw == now_raw:
        return now_raw
    if now_raw is None:
        now_raw = _environ_raw()
    environ = os.environ
    encoded = isinstance(environ, os._Environ)
    encode_key, encode_value, decode_key = ((environ.encodekey, environ.encodevalue, environ.decodekey) if encoded
                                            else (str, str, str))
    wanted = {encode_key(k): (k, v, encode_value(v)) for k, v in env.items()}
    for raw_key in [k for k in now_raw if k not in wanted]:
        del environ[decode_key(raw_key)]
    for raw_key, (key, value, raw_value) in wanted.items():
        if now_raw.get(raw_key) != raw_value:
            environ[key] = value
    return _environ_raw()
