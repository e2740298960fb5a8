"""The learner's code compiled once per source, for every container that loads it.

On Lambda each cold start imports the handler's module and its sibling modules afresh,
in a new process. The sandbox does the same (``sandbox.runtime.container_state`` gives each container its
own modules), but compiling a file is most of what an import costs when no ``.pyc`` is
written (``PYTHONDONTWRITEBYTECODE``, a read-only folder), and a course runs thousands of
cold starts. A code object is immutable: every container executes the same one into a
module of its own, so sharing it shares no state. The cache is keyed by the file's bytes,
so an edited file is compiled again.
"""
from __future__ import annotations

import functools
import importlib.machinery
import sys
from types import CodeType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed.importlib import PathEntryFinderProtocol


@functools.lru_cache(maxsize=256)
def compiled(path: str, source: bytes) -> CodeType:
    """``source`` compiled as the import system compiles a source file."""
    return compile(source, path, "exec", dont_inherit=True)


class CachedSourceLoader(importlib.machinery.SourceFileLoader):
    """A source file loader whose compile step is :func:`compiled` (everything else is the standard one)."""

    # typeshed declares InspectLoader.source_to_code a staticmethod; SourceLoader's (which the import
    # system calls, on the loader) is a method with a private _optimize keyword.
    def source_to_code(self, data: Any, path: Any, *, _optimize: int = -1) -> Any:  # type: ignore[override]  # noqa: D102
        if _optimize != -1 or not isinstance(data, bytes):
            return super().source_to_code(data, path, _optimize=_optimize)
        return compiled(str(path), data)


def task_root_finder(folder: str) -> importlib.machinery.FileFinder:
    """A finder for the modules of one folder, loading its ``.py`` files with :class:`CachedSourceLoader`."""
    loaders = [(importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
               (CachedSourceLoader, importlib.machinery.SOURCE_SUFFIXES),
               (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES)]
    return importlib.machinery.FileFinder(folder, *loaders)


class TaskRoots:
    """Task roots whose imports compile once: each gets a caching finder in ``sys.path_importer_cache``.

    ``sys.path_importer_cache`` is where the import system keeps one finder per ``sys.path``
    entry; ``restore`` puts back what was there before, so nothing outlives the world.
    """

    def __init__(self) -> None:
        self._saved: dict[str, tuple[bool, PathEntryFinderProtocol | None]] = {}  # (had an entry, its finder)

    def add(self, folder: str) -> None:
        if folder in self._saved:
            return
        self._saved[folder] = (folder in sys.path_importer_cache, sys.path_importer_cache.get(folder))
        sys.path_importer_cache[folder] = task_root_finder(folder)

    def restore(self) -> None:
        for folder, (present, before) in self._saved.items():
            if present:
                sys.path_importer_cache[folder] = before
            else:
                sys.path_importer_cache.pop(folder, None)
        self._saved.clear()
