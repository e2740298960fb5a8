"""Loading a handler file, ``path/to/file.py:function``, as one container's module ``file``.

Lambda imports the handler's module by its file name (``_HANDLER=app.handler`` imports
``app``), in every execution environment alike, and libraries key on that name (Powertools'
idempotency keys include the function's module). Each container loads its own copy, under
that same name, into its own process (``sandbox.runtime.container_state``), with the file's folder, the
task root, on ``sys.path``.
"""
from __future__ import annotations

import ast
import difflib
import functools
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BadInput, MissingHandler
from .codecache import CachedSourceLoader
from .container_state import shadows_shared


@dataclass(frozen=True)
class HandlerSpec:
    """``path/to/file.py:function``, parsed once: the file, the function, and the names Lambda derives.

    Lambda imports the handler's module by the file's name (``_HANDLER=app.handler`` imports ``app``)
    from the task root, the folder the file is in
    (https://docs.aws.amazon.com/lambda/latest/dg/python-handler.html).
    """

    path: Path
    function: str

    @classmethod
    def parse(cls, spec: "str | HandlerSpec") -> "HandlerSpec":
        """The spec, checked without running anything; bad input says what is wrong, in one line."""
        if isinstance(spec, HandlerSpec):
            return spec
        if not isinstance(spec, str) or ":" not in spec:
            raise BadInput(f"handler must look like path/to/file.py:function, got {spec!r}")
        path_text, _, func = spec.rpartition(":")
        path = Path(path_text)
        if path.is_dir():
            raise BadInput(f"handler path {path_text} is a folder; give a .py file in it, as "
                           "path/to/file.py:function")
        if path.suffix != ".py":
            raise BadInput(f"handler file must be a Python file ending in .py, got {path_text}")
        if not path.is_file():
            raise BadInput(f"handler file not found: {path_text}")
        if not func.isidentifier():
            raise BadInput(f"handler function name {func!r} is not a Python identifier")
        return cls(path, func)

    @property
    def module(self) -> str:
        """The module name Lambda gives the handler file: its name without ``.py``."""
        name = self.path.stem
        if not name or "." in name:
            # Lambda splits _HANDLER at its last dot: "my.app.handler" would mean package my, module app.
            raise BadInput(f"handler file name {self.path.name!r} has a dot in it; Lambda imports the handler's "
                           f"module by the file's name, so use a name without dots")
        if shadows_shared(name):
            raise BadInput(f"handler file {self.path.name} would hide the installed module {name!r}; rename the file")
        return name

    @property
    def task_root(self) -> str:
        """The folder Lambda would unpack the function into (the file's own)."""
        return str(self.path.resolve().parent)

    @property
    def lambda_handler(self) -> str:
        """The function's handler setting, as ``_HANDLER`` carries it: ``module.function``."""
        return f"{self.module}.{self.function}"

    def source(self) -> bytes:
        """The handler file's bytes, refused as bad input when they cannot be read or are not text."""
        try:
            source = self.path.read_bytes()
        except OSError as exc:
            raise BadInput(f"handler file {self.path} cannot be read: {exc.strerror}") from None
        if b"\0" in source:
            raise BadInput(f"handler file {self.path} contains null bytes, so it is not Python source")
        return source

    def __str__(self) -> str:
        return f"{self.path}:{self.function}"


def load_handler(spec: "str | HandlerSpec", module_name: str | None = None) -> Callable:
    """Execute the handler file as module ``module_name`` (in the running process) and return the function."""
    parsed = HandlerSpec.parse(spec)
    path, func = parsed.path, parsed.function
    name = module_name or parsed.module
    parsed.source()  # checked here; the loader reads it again, through its compiled-code cache
    loader_spec = importlib.util.spec_from_file_location(name, path, loader=CachedSourceLoader(name, str(path)))
    assert loader_spec is not None and loader_spec.loader is not None  # a loader was given
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[name] = module  # as an import does: the module can import itself and be found by name
    try:
        loader_spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        raise BadInput(f"handler file {path} has a syntax error on line {exc.lineno}: {exc.msg}") from None
    except Exception:
        sys.modules.pop(name, None)
        raise
    handler = getattr(module, func, None)
    if handler is None:
        functions = [n for n, v in vars(module).items() if callable(v) and not n.startswith("__")]
        close = difflib.get_close_matches(func, functions, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise BadInput(f"handler file {path} defines no {func!r}{hint}")
    if not callable(handler):
        raise BadInput(f"{func!r} in {path} is not a function")
    return handler


def _top_level_names(tree: ast.Module) -> set[str] | None:
    """Names a module binds at its top level (None: it may bind any, through ``import *``)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
        else:  # assignments, and definitions under if/try/with at the top level
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
                elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(sub.name)
                elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                    if any(a.name == "*" for a in sub.names):
                        return None
                    names.update(a.asname or a.name.split(".")[0] for a in sub.names)
    return names


@functools.lru_cache(maxsize=128)
def _outline(path: str, source: bytes) -> tuple[frozenset[str] | None, tuple[str, ...]]:
    """A handler file's top-level names (None: a star import hides them) and its functions, parsed once per source:
    every run checks its handler first, and a campaign runs the same file thousands of times (a parse is ~2 ms).
    A syntax error is raised, never kept (the cache keeps only what returns)."""
    tree = ast.parse(source, filename=path)
    bound = _top_level_names(tree)
    functions = sorted(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return (frozenset(bound) if bound is not None else None), tuple(functions)


def check_handler_file(spec: "str | HandlerSpec", *, names: bool = True) -> str:
    """Check a handler file without running it (it runs only in its execution environments).

    A missing file, a syntax error or (with ``names``) a function the file never defines is bad
    input, refused at once; returns the module name Lambda gives the file.
    """
    parsed = HandlerSpec.parse(spec)
    path, func, name = parsed.path, parsed.function, parsed.module
    try:
        bound, functions = _outline(str(path), parsed.source())
    except SyntaxError as exc:
        raise BadInput(f"handler file {path} has a syntax error on line {exc.lineno}: {exc.msg}") from None
    if names and bound is not None and func not in bound:
        close = difflib.get_close_matches(func, functions, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise MissingHandler(f"handler file {path} defines no {func!r}{hint}")
    return name


def check_handler(handler: Any) -> None:
    """Fail early, with a clear message, on anything that cannot be a handler (files are checked, not run)."""
    if isinstance(handler, str):
        HandlerSpec.parse(handler).module  # noqa: B018 - a property that checks the module's name
    elif not callable(handler):
        raise BadInput(f"a handler is a function handler(event, context) or 'file.py:function', got {handler!r}")
