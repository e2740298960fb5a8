"""Loading a handler file, ``path/to/file.py:function``, as one container's module ``file``.

Lambda imports the handler's module by its file name (``_HANDLER=app.handler`` imports
``app``), in every execution environment alike, and libraries key on that name (Powertools'
idempotency keys include the function's module). Each container loads its own copy, under
that same name, into its own process (``sandbox.process``), with the file's folder, the
task root, on ``sys.path``.
"""
from __future__ import annotations

import ast
import difflib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .codecache import CachedSourceLoader
from .errors import BadInput, MissingHandler
from .process import shadows_shared


def split_spec(spec: str) -> tuple[Path, str]:
    """``path/to/file.py:function`` -> (path, function name), checked."""
    if not isinstance(spec, str) or ":" not in spec:
        raise BadInput(f"handler must look like path/to/file.py:function, got {spec!r}")
    path_text, _, func = spec.rpartition(":")
    path = Path(path_text)
    if path.suffix != ".py":
        raise BadInput(f"handler file must be a Python file ending in .py, got {path_text}")
    if not path.is_file():
        raise BadInput(f"handler file not found: {path_text}")
    if not func.isidentifier():
        raise BadInput(f"handler function name {func!r} is not a Python identifier")
    return path, func


def handler_module_name(spec: str) -> str:
    """The module name Lambda gives the handler file: its name without ``.py``."""
    path, _ = split_spec(spec)
    name = path.stem
    if not name or "." in name:
        # Lambda splits _HANDLER at its last dot: "my.app.handler" would mean package my, module app.
        raise BadInput(f"handler file name {path.name!r} has a dot in it; Lambda imports the handler's "
                       f"module by the file's name, so use a name without dots")
    if shadows_shared(name):
        raise BadInput(f"handler file {path.name} would hide the installed module {name!r}; rename the file")
    return name


def _source(path: Path) -> bytes:
    """The handler file's bytes, refused as bad input when they cannot be read or are not text."""
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise BadInput(f"handler file {path} cannot be read: {exc.strerror}") from None
    if b"\0" in source:
        raise BadInput(f"handler file {path} is not Python source (it contains null bytes)")
    return source


def load_handler(spec: str, module_name: str | None = None) -> Callable:
    """Execute the handler file as module ``module_name`` (in the running process) and return the function."""
    path, func = split_spec(spec)
    name = module_name or handler_module_name(spec)
    _source(path)  # checked here; the loader reads it again, through its compiled-code cache
    loader_spec = importlib.util.spec_from_file_location(name, path, loader=CachedSourceLoader(name, str(path)))
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


def check_handler_file(spec: str, *, names: bool = True) -> str:
    """Check a handler file without running it (it runs only in its execution environments).

    A missing file, a syntax error or (with ``names``) a function the file never defines is bad
    input, refused at once; returns the module name Lambda gives the file.
    """
    path, func = split_spec(spec)
    name = handler_module_name(spec)
    source = _source(path)
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise BadInput(f"handler file {path} has a syntax error on line {exc.lineno}: {exc.msg}") from None
    bound = _top_level_names(tree) if names else None
    if bound is not None and func not in bound:
        functions = sorted(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        close = difflib.get_close_matches(func, functions, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise MissingHandler(f"handler file {path} defines no {func!r}{hint}")
    return name


def check_handler(handler: Any) -> None:
    """Fail early, with a clear message, on anything that cannot be a handler (files are checked, not run)."""
    if isinstance(handler, str):
        handler_module_name(handler)
    elif not callable(handler):
        raise BadInput(f"a handler is a function handler(event, context) or 'file.py:function', got {handler!r}")
