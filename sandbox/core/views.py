"""How a run is shown: its views registered from above, looked up by kind.

A history, a verdict, a run's result and a matrix each have an HTML view, and a world and a run's result draw a
timeline, but none of them knows how: their ``_repr_html_``, ``timeline()`` and ``plot()`` ask this registry.
``present`` registers its views when it is loaded. The package (``sandbox/__init__``) names the modules that
register them, so the first view asked for loads them; nothing below ``present`` imports it. This module imports
nothing of the sandbox.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

_RENDERERS: dict[str, Callable[[Any], str]] = {}
_FIGURES: dict[str, Callable[..., Any]] = {}
#: Modules that register views when loaded (set by the package), loaded on the first lookup that misses.
PROVIDERS: list[str] = []


def register_html(kind: str, render: Callable[[Any], str]) -> None:
    """``render(obj)`` is the HTML Jupyter shows for objects of ``kind``."""
    _RENDERERS[kind] = render


def register_figure(kind: str, draw: Callable[..., Any]) -> None:
    """``draw(history, **options)`` draws a run as ``kind`` says (``timeline``, ``timeline-file``)."""
    _FIGURES[kind] = draw


def _load_providers() -> None:
    while PROVIDERS:
        importlib.import_module(PROVIDERS.pop(0))


def html_of(kind: str, obj: Any) -> str | None:
    """The HTML view of ``obj`` (None: no renderer, so Jupyter shows its repr)."""
    if kind not in _RENDERERS:
        _load_providers()
    render = _RENDERERS.get(kind)
    return render(obj) if render is not None else None


def figure(kind: str) -> Callable[..., Any]:
    """The function that draws a run as ``kind`` (LookupError: no module registered one)."""
    if kind not in _FIGURES:
        _load_providers()
    if kind not in _FIGURES:
        raise LookupError(f"no view draws a {kind!r}: sandbox.present is not installed with this package")
    return _FIGURES[kind]
