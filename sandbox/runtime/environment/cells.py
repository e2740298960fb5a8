"""A handler defined in a notebook cell, written out as a Lambda function's file.

An execution environment is a process of its own, so a function object from the notebook's kernel
cannot be handed to it. Lambda runs a file, not a kernel's memory; so does the sandbox. The cell
that defined the handler becomes ``lambda_function.py`` (the name the Lambda console gives a new
Python function's file) in a task root of its own:

- the cell's code, as the kernel ran it, minus the statements that drive the sandbox from the
  notebook (``run_scenario(...)``, ``check(...)``, a plot of their result, a magic): those run in
  the notebook, never in a Lambda environment;
- what the cell uses from other cells, written ahead of it: an import for a module or for a
  function of an installed package, the source of a function or class defined in another cell,
  and the value of a plain constant (a number, a string, a list of them). Anything else (an object
  built in another cell) cannot travel, and is refused with the name to move into the cell;
- the ``.py`` files beside the notebook (a helper module the cell imports, such as
  ``run_once_kit``), as the kernel's working directory lets the cell import them.
"""
from __future__ import annotations

import ast
import atexit
import builtins
import hashlib
import importlib
import inspect
import linecache
import os
import shutil
import symtable
import tempfile
import textwrap
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import BadInput

#: The file a cell's handler becomes (the Lambda console's name for a new Python function's file).
MODULE = "lambda_function"
#: The sandbox's modules a handler uses inside Lambda; the rest of ``sandbox`` drives it from outside.
HANDLER_SIDE = ("sandbox.core.services", "sandbox.events", "sandbox.errors")
_folder: list[Path] = []


def handler_file(function: Any) -> str | None:
    """``"path/lambda_function.py:name"``: ``function``'s cell written out as a task root of its own.

    None where ``function`` is no cell's top-level ``def`` (a module's function, a lambda, a partial):
    such a handler runs in the world's process, as before.
    """
    function = inspect.unwrap(function)
    code = getattr(function, "__code__", None)
    if code is None or getattr(function, "__module__", None) != "__main__" or os.path.isfile(code.co_filename):
        return None
    cell = "".join(linecache.getlines(code.co_filename))
    try:
        tree = ast.parse(cell)
    except SyntaxError:  # the kernel's text for the cell is not plain Python (a magic it transformed)
        return None
    if not any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == function.__name__
               for s in tree.body):
        return None
    kept, left_out = _without_notebook_steps(cell, tree, function.__globals__)
    carried = _carried(kept, function.__globals__, set())
    source = "\n".join([
        f'"""The cell that defined {function.__name__}, as a Lambda function\'s file (the sandbox wrote it)."""',
        *(["# Left in the notebook (they drive the sandbox): " + ", ".join(left_out)] if left_out else []),
        *carried, "", kept, ""])
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    root = _cells_folder() / digest
    if not root.is_dir():
        staging = Path(tempfile.mkdtemp(dir=_cells_folder()))
        for helper in sorted(Path.cwd().glob("*.py")):
            if helper.name != f"{MODULE}.py":
                shutil.copy2(helper, staging / helper.name)
        (staging / f"{MODULE}.py").write_text(source)
        try:
            staging.rename(root)
        except OSError:  # another world of this process wrote the same cell first
            shutil.rmtree(staging, ignore_errors=True)
    return f"{root / MODULE}.py:{function.__name__}"


def _cells_folder() -> Path:
    if not _folder:
        _folder.append(Path(tempfile.mkdtemp(prefix=f"rwh-cells-{os.getpid()}-")))
        atexit.register(shutil.rmtree, _folder[0], True)
    return _folder[0]


# -- the cell's own code ----------------------------------------------------------------------
def _is_notebook_tool(value: Any) -> bool:
    if isinstance(value, types.ModuleType):
        return False
    module = getattr(value, "__module__", None) or type(value).__module__ or ""
    if not isinstance(module, str):
        return False
    if module.startswith("IPython") or module.startswith("ipykernel"):
        return True
    return (module == "sandbox" or module.startswith("sandbox.")) and not module.startswith(HANDLER_SIDE)


def _without_notebook_steps(cell: str, tree: ast.Module, names: Mapping[str, object]) -> tuple[str, list[str]]:
    """The cell's top-level statements as written, minus those that use the sandbox's notebook tools (or
    what they made)."""
    tools = {n for n, v in names.items() if _is_notebook_tool(v)} | {"get_ipython", "display"}
    lines = cell.splitlines()
    kept: list[str] = []
    left_out: list[str] = []
    for statement in tree.body:
        used = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)}
        if isinstance(statement, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef,
                                  ast.ClassDef)) or not used & tools:
            first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", [])])
            kept.append("\n".join(lines[first - 1:statement.end_lineno]))
            continue
        left_out.append(ast.unparse(statement).splitlines()[0][:60])
        tools |= _bound_by(statement)
    return "\n\n".join(kept), left_out


def _bound_by(statement: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


# -- what it uses from other cells ------------------------------------------------------------
def _free_names(source: str) -> list[str]:
    """The global names ``source`` reads but never binds at its top level, in order of first use."""
    top = symtable.symtable(source, "<cell>", "exec")
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    found: list[str] = []

    def walk(table: symtable.SymbolTable) -> None:
        for symbol in table.get_symbols():
            name = symbol.get_name()
            is_global = symbol.is_global() if table.get_type() != "module" else True
            if is_global and symbol.is_referenced() and name not in bound and name not in found:
                found.append(name)
        for child in table.get_children():
            walk(child)

    walk(top)
    return [n for n in found if not hasattr(builtins, n)]


def _carried(source: str, names: Mapping[str, object], seen: set[str]) -> list[str]:
    """Lines that bring in what ``source`` uses from the kernel's other cells, in the order they are needed."""
    lines: list[str] = []
    for name in _free_names(source):
        if name in seen or name not in names:
            continue  # a name nobody defined: the handler's own NameError, as on Lambda
        seen.add(name)
        lines += _carry(name, names[name], names, seen)
    return lines


def _carry(name: str, value: Any, names: Mapping[str, object], seen: set[str]) -> list[str]:
    if isinstance(value, types.ModuleType):
        return [f"import {value.__name__}" if value.__name__ == name else f"import {value.__name__} as {name}"]
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if isinstance(value, (types.FunctionType, type)) and module == "__main__":
        try:
            own = textwrap.dedent(inspect.getsource(value))
        except (OSError, TypeError):
            own = None
        if own is not None:
            return _carried(own, names, seen) + ["", own]
    elif module and qualname and "." not in qualname and _importable(module, qualname, value):
        return [f"from {module} import {qualname}" + ("" if qualname == name else f" as {name}")]
    try:
        if ast.literal_eval(repr(value)) == value:
            return [f"{name} = {value!r}"]
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    raise BadInput(f"the handler's cell uses {name!r}, a {type(value).__name__} made in another cell. A Lambda "
                   f"environment runs the handler's file alone, without the notebook's memory: make {name!r} in "
                   "the handler's cell (or import it there)")


def _importable(module: str, qualname: str, value: Any) -> bool:
    try:
        return getattr(importlib.import_module(module), qualname, None) is value
    except Exception:  # noqa: BLE001 - a module that will not import is simply not a way to carry the value
        return False
