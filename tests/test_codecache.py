"""Cold starts import the task root's modules afresh, compiled once per source (sandbox.runtime.codecache).

This is the "thread" isolation's machinery (a handler file run in the world's own process), so each world here
asks for it; a handler passed as a Python function always runs so.
"""
from __future__ import annotations

import sys
import textwrap

from sandbox import Sandbox
from sandbox.runtime import codecache


def _write_task_root(folder, marker: str) -> str:
    (folder / "helper_mod.py").write_text(textwrap.dedent(f"""
        LOADS = []
        MARK = {marker!r}
    """))
    (folder / "app.py").write_text(textwrap.dedent("""
        import helper_mod

        helper_mod.LOADS.append(1)

        def handler(event, context):
            import time
            time.sleep(1)
            return {"mark": helper_mod.MARK, "loads": len(helper_mod.LOADS), "module": id(helper_mod)}
    """))
    return f"{folder / 'app.py'}:handler"


def _concurrent_results(spec: str) -> list:
    with Sandbox(isolation="thread") as sb:
        fn = sb.function(spec)
        invs = [fn.start({}) for _ in range(3)]
        sb.run()
        assert len(fn.containers) == 3
        return [inv.result for inv in invs]


def test_each_container_gets_its_own_sibling_module_compiled_once(tmp_path, monkeypatch):
    # Where Python may write .pyc files, the first cold start writes them and the others load those: the cache
    # serves where it cannot (PYTHONDONTWRITEBYTECODE, read-only folders), which is the case measured here.
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    spec = _write_task_root(tmp_path, "first")
    codecache.compiled.cache_clear()
    results = _concurrent_results(spec)
    # three processes: three module objects, each loaded once, as three Lambda containers have
    assert [r["loads"] for r in results] == [1, 1, 1]
    assert len({r["module"] for r in results}) == 3
    # app.py and helper_mod.py compiled once each; the other two cold starts reuse both
    info = codecache.compiled.cache_info()
    assert (info.misses, info.hits) == (2, 4)


def test_an_edited_sibling_is_compiled_again(tmp_path):
    spec = _write_task_root(tmp_path, "first")
    assert {r["mark"] for r in _concurrent_results(spec)} == {"first"}
    _write_task_root(tmp_path, "second")
    assert {r["mark"] for r in _concurrent_results(spec)} == {"second"}


def test_the_import_cache_is_put_back_when_the_world_closes(tmp_path):
    spec = _write_task_root(tmp_path, "first")
    folder = str(tmp_path)
    before = sys.path_importer_cache.get(folder, "absent")
    with Sandbox(isolation="thread") as sb:
        sb.function(spec).invoke({})
        spec_found = sys.path_importer_cache[folder].find_spec("helper_mod")
        assert isinstance(spec_found.loader, codecache.CachedSourceLoader)
    assert sys.path_importer_cache.get(folder, "absent") is before


def test_a_module_replaced_by_the_handler_is_its_containers(tmp_path):
    """A handler that removes a module and imports it again keeps the new copy in its own process."""
    (tmp_path / "helper_mod.py").write_text("TOKEN = object()\n")
    (tmp_path / "app.py").write_text(textwrap.dedent("""
        import sys
        import helper_mod

        def handler(event, context):
            if event.get("reload"):
                del sys.modules["helper_mod"]
                import helper_mod as again
                return id(again.TOKEN)
            return id(sys.modules["helper_mod"].TOKEN)
    """))
    with Sandbox(isolation="thread") as sb:
        fn = sb.function(f"{tmp_path / 'app.py'}:handler")
        first = fn.invoke({}).result
        reloaded = fn.invoke({"reload": True}).result
        assert reloaded != first
        assert fn.invoke({}).result == reloaded  # the warm container kept the copy it imported last
    assert "helper_mod" not in sys.modules  # and the world's own process never had it


def test_a_handler_file_is_parsed_once_per_source_and_an_edit_is_seen(tmp_path):
    """Every run checks its handler file before it starts (a missing function, a syntax error): the outline is
    parsed once per source, and a file edited between two runs is checked as it now reads."""
    import pytest

    from sandbox.errors import BadInput, MissingHandler
    from sandbox.runtime.loader import _outline, check_handler_file

    path = tmp_path / "app.py"
    path.write_text("def handler(event, context):\n    return 1\n")
    _outline.cache_clear()
    for _ in range(3):
        assert check_handler_file(f"{path}:handler") == "app"
    assert (_outline.cache_info().misses, _outline.cache_info().hits) == (1, 2)
    path.write_text("def handlr(event, context):\n    return 1\n")
    with pytest.raises(MissingHandler, match="did you mean 'handlr'"):
        check_handler_file(f"{path}:handler")
    path.write_text("def handler(event, context):\n    return (\n")
    for _ in range(2):  # an error is raised each time, never kept
        with pytest.raises(BadInput, match="syntax error on line 2"):
            check_handler_file(f"{path}:handler")
