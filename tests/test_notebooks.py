"""Every notebook is stored clean, runs top to bottom in a fresh kernel, and shows its key facts.

Key facts are checked by running a few assertions in the notebook's own kernel after its
last cell, so a lesson whose prose says "valid" really computed "valid".
"""
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

#: notebook file name -> Python statements that must hold after it ran.
KEY_FACTS = {
    "00_start_here.ipynb": """
assert result.status == "valid", result.verdict.explain()
assert result.verdict.effects_per_key == {"o-1": {"email": 1}, "o-2": {"email": 1}, "o-3": {"email": 1}}
assert bad.status == "invalid" and len(bad.verdict.duplicates) == 3
assert try_it.status == "valid" and len(try_it.verdict.effects_per_key) == 5
assert invocation.outcome == "ok"
""",
}


def test_every_notebook_has_key_facts():
    assert NOTEBOOKS, "no notebooks found"
    assert sorted(KEY_FACTS) == sorted(nb.name for nb in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_without_outputs(path: Path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert dirty == [], f"{path.name}: cells {dirty} were stored with outputs"


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_restart_and_run_all(path: Path):
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(KEY_FACTS[path.name]))
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError, naming the cell, if any cell fails
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert images, f"{path.name} shows no timeline"
