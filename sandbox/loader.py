"""Loading a handler file, ``path/to/file.py:function``, as one container's own copy of it."""
from __future__ import annotations

import importlib.util
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import BadInput


def split_spec(spec: str) -> tuple[Path, str]:
    """``path/to/file.py:function`` -> (path, function name), checked."""
    if not isinstance(spec, str) or ":" not in spec:
        raise BadInput(f"handler must look like path/to/file.py:function, got {spec!r}")
    path_text, _, func = spec.rpartition(":")
    path = Path(path_text)
    if not path.is_file():
        raise BadInput(f"handler file not found: {path_text}")
    if not func.isidentifier():
        raise BadInput(f"handler function name {func!r} is not a Python identifier")
    return path, func


def load_handler(spec: str) -> Callable:
    """Load ``path/to/file.py:function`` as a fresh module (one per container)."""
    path, func = split_spec(spec)
    module_name = f"_rwh_handler_{uuid.uuid4().hex}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(loader_spec)
    folder = path.parent.resolve()
    before = set(sys.modules)
    sys.path.insert(0, str(folder))
    try:
        loader_spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise BadInput(f"handler file {path} has a syntax error on line {exc.lineno}: {exc.msg}") from None
    except Exception as exc:
        raise BadInput(f"handler file {path} failed to import: {type(exc).__name__}: {exc}") from None
    finally:
        sys.path.remove(str(folder))
        # Sibling modules the handler imported (its run_once, say) belong to this container
        # alone: forget them so the next cold start imports its own copy, as Lambda would.
        for name in set(sys.modules) - before:
            origin = getattr(sys.modules[name], "__file__", None) or ""
            if origin and Path(origin).resolve().is_relative_to(folder):
                del sys.modules[name]
    handler = getattr(module, func, None)
    if handler is None:
        raise BadInput(f"handler file {path} defines no {func!r}")
    if not callable(handler):
        raise BadInput(f"{func!r} in {path} is not a function")
    return handler


def check_handler(handler: Any) -> None:
    """Fail early, with a clear message, on anything that cannot be a handler."""
    if isinstance(handler, str):
        load_handler(handler)
    elif not callable(handler):
        raise BadInput(f"a handler is a function handler(event, context) or 'file.py:function', got {handler!r}")
