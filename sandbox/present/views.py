"""How Jupyter shows the sandbox's objects: renderers registered from above, looked up by kind.

A history, a verdict, a run's result and a matrix each have an HTML view (``display``), but they know
nothing of it: their ``_repr_html_`` asks this registry, and ``display`` registers its renderers when it
is loaded. The package (``sandbox/__init__``) names the module that registers them, so the first object
shown loads it; nothing below imports a view. This module imports nothing of the sandbox.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

_RENDERERS: dict[str, Callable[[Any], str]] = {}
#: Modules that register renderers when loaded (set by the package), loaded on the first lookup.
PROVIDERS: list[str] = []


def register_html(kind: str, render: Callable[[Any], str]) -> None:
    """``render(obj)`` is the HTML Jupyter shows for objects of ``kind``."""
    _RENDERERS[kind] = render


def html_of(kind: str, obj: Any) -> str | None:
    """The HTML view of ``obj`` (None: no renderer, so Jupyter shows its repr)."""
    if kind not in _RENDERERS:
        while PROVIDERS:
            importlib.import_module(PROVIDERS.pop(0))
    render = _RENDERERS.get(kind)
    return render(obj) if render is not None else None
