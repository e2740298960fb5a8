"""Every notebook is stored clean, runs top to bottom in a fresh kernel, and computes what it teaches.

Key facts live in ``tests/notebook_facts/<notebook>.py``: assertions run in the notebook's own
kernel after its last cell, on the values it computed (never on printed text), so a lesson
whose prose says "two emails" really produced two emails. The course's shape is checked too:
objectives at the top, a recap at the end, a "Try it" section, a pointer to an exercise, and
AWS's own pages behind the AWS claims.
"""
import json
import re
import warnings
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.warnings import MissingIDFieldWarning

from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
FACTS = ROOT / "tests" / "notebook_facts"


def _markdown(nb) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "markdown"]


def test_every_notebook_has_key_facts():
    assert NOTEBOOKS, "no notebooks found"
    assert sorted(p.stem for p in FACTS.glob("*.py")) == sorted(nb.stem for nb in NOTEBOOKS)


def test_the_notebooks_are_numbered_in_course_order():
    numbers = [int(p.name[:2]) for p in NOTEBOOKS]
    assert numbers == list(range(len(NOTEBOOKS))), [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_without_outputs(path: Path):
    with warnings.catch_warnings():  # a cell without an id gets a random one from Jupyter's next save: a diff
        warnings.simplefilter("error", MissingIDFieldWarning)
        nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert dirty == [], f"{path.name}: cells {dirty} were stored with outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_lesson_has_objectives_a_recap_a_try_it_and_an_exercise(path: Path):
    text = _markdown(nbformat.read(path, as_version=4))
    assert text and text[0].startswith(f"# {path.name[:2]} · "), "the first cell is the title: '# NN · ...'"
    assert "**In this notebook you will**" in text[0], "learning objectives at the top"
    assert text[-1].startswith("## Recap"), "a recap at the end"
    assert any(t.startswith("## Try it") for t in text), "a 'Try it' section"
    assert any(re.search(r"exercises/\d\d_\w+\.ipynb", t) for t in text) or path.name.startswith("00"), \
        "a pointer to an exercise"
    assert any("https://docs.aws.amazon.com/" in t for t in text), "AWS's own pages behind the AWS claims"


TRY_IT_GIVEAWAYS = {"05": ["With one attempt there is one message"], "10": ["the verdict turns valid",
                                                                            "before it can delete anything"],
                    "11": ["keeps its `eventID`:"]}


@pytest.mark.parametrize("lesson", sorted(TRY_IT_GIVEAWAYS))
def test_a_try_its_answer_is_revealed_not_shown(lesson: str):
    """A learner found the Try it answers in view before trying (lessons 05, 10, 11): the question stands before
    the cell, and the answer after it, in a collapsed ``<details>`` the learner opens; nothing else in the section
    but the exercise's pointer."""
    (path,) = [p for p in NOTEBOOKS if p.name.startswith(lesson)]
    cells = nbformat.read(path, as_version=4).cells
    start = next(i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("## Try it"))
    end = next(i for i, c in enumerate(cells) if i > start and c.source.startswith("## Recap"))
    first_code = next(i for i in range(start, end) if cells[i].cell_type == "code")
    after = "\n\n".join(c.source for c in cells[first_code:end] if c.cell_type == "markdown")
    assert "<details><summary>" in after and "</details>" in after, "the answer, collapsed, after the cell"
    shown = re.sub(r"<details>.*?</details>", "", after, flags=re.S)
    paragraphs = [p.strip() for p in shown.split("\n\n") if p.strip()]
    assert all(p.startswith("Exercise:") for p in paragraphs), paragraphs
    in_view = "\n".join(c.source for c in cells[start:end] if c.cell_type == "markdown")
    in_view = re.sub(r"<details>.*?</details>", "", in_view, flags=re.S)
    assert [g for g in TRY_IT_GIVEAWAYS[lesson] if g in in_view] == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_notebook_carries_plumbing(path: Path):
    """Lessons import what they teach from ``sandbox`` and ``examples``; the machinery stays out of sight."""
    code = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    private = re.findall(r"from sandbox\.(?:adapter|gateway|interpose|process|scheduler|dpor)\b|\._[a-z]", code)
    assert private == [], f"{path.name} reaches into the sandbox's internals: {private}"


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_restart_and_run_all(path: Path, tmp_path, monkeypatch):
    """Every cell runs, and every figure the lesson draws reads at the width it is drawn (9 in): the kernel runs
    with the figure audit on (``sandbox.present.timeline.audit``), which measures each figure as it is drawn."""
    monkeypatch.setenv("RWH_FIGURE_AUDIT", str(tmp_path))
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell((FACTS / f"{path.stem}.py").read_text()))
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError, naming the cell, if any cell fails
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})
              or 'class="sandbox-timeline"' in o.get("data", {}).get("text/html", "")]  # a gallery's, or a dashboard's
    assert images, f"{path.name} shows no timeline"
    cells = {c.source: i for i, c in enumerate(nb.cells) if c.cell_type == "code"}
    figures = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("*.json"))]
    assert len(figures) >= len(images), "a figure the lesson shows was not measured"
    faults = [f"cell {cells.get(f['cell'], '?')}, {f['kind']} {f['title']!r}: {fault}"
              for f in figures for fault in f["faults"]]
    assert faults == [], f"{path.name}:\n" + "\n".join(faults)


def test_the_git_filter_strips_outputs_and_leaves_a_clean_notebook_as_it_is(tmp_path):
    import subprocess
    import sys

    clean = NOTEBOOKS[0].read_text()
    nb = nbformat.reads(clean, as_version=4)
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.outputs = [nbformat.v4.new_output("stream", text="hello\n")]
    code.execution_count = 3
    ran = tmp_path / "ran.ipynb"
    nbformat.write(nb, ran)
    filtered = subprocess.run([sys.executable, "-m", "sandbox.tools.strip_outputs"], input=ran.read_text(),
                              capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert filtered == clean
    assert subprocess.run([sys.executable, "-m", "sandbox.tools.strip_outputs", str(ran)], cwd=ROOT).returncode == 0
    assert ran.read_text() == clean
    assert subprocess.run([sys.executable, "-m", "sandbox.tools.strip_outputs", str(tmp_path / "nope.ipynb")],
                          cwd=ROOT, capture_output=True).returncode == 2


@pytest.mark.notebook
def test_a_kernel_run_leaves_nothing_after_the_strip_filter_or_a_reset(tmp_path):
    """A kernel writes its Python's version and lexers into language_info; git must not see them as an edit."""
    import subprocess
    import sys

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# One cell"),
                                         nbformat.v4.new_code_cell("print(6 * 7)")])
    nb.metadata = nbformat.from_dict(nbformat.reads(NOTEBOOKS[0].read_text(), as_version=4).metadata)
    clean = tmp_path / "clean.ipynb"
    nbformat.write(nb, clean)
    subprocess.run([sys.executable, "-m", "sandbox.tools.strip_outputs", str(clean)], cwd=ROOT, check=True)
    NotebookClient(nb, timeout=60, kernel_name="python3", store_widget_state=True).execute()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    ran = tmp_path / "ran.ipynb"
    nbformat.write(nb, ran)
    assert "version" in nb.metadata.language_info and ran.read_text() != clean.read_text()
    filtered = subprocess.run([sys.executable, "-m", "sandbox.tools.strip_outputs"], input=ran.read_text(),
                              capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert filtered == clean.read_text()
    subprocess.run([sys.executable, "-m", "sandbox.tools.strip_outputs", str(ran)], cwd=ROOT, check=True)
    assert ran.read_text() == clean.read_text()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_link_in_a_lesson_goes_somewhere(path: Path):
    """A link is a web address, an anchor, or a file of the repository (relative to the lesson)."""
    broken = []
    for text in _markdown(nbformat.read(path, as_version=4)):
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"https?://[\w.-]+\.\w+/", target) or target.startswith("#"):
                continue
            if not (path.parent / target.split("#", 1)[0]).exists():
                broken.append(target)
    assert broken == [], f"{path.name}: links that go nowhere: {broken}"


@pytest.mark.parametrize("path", NOTEBOOKS[:-1], ids=lambda p: p.name)
def test_each_recap_links_the_next_lesson(path: Path):
    recap = _markdown(nbformat.read(path, as_version=4))[-1]
    following = NOTEBOOKS[NOTEBOOKS.index(path) + 1].name
    assert re.search(rf"Next: \[[^\]]+\]\({re.escape(following)}\)", recap), f"the recap's 'Next:' links {following}"


def test_every_lesson_names_the_kernel_jupyter_names():
    """One kernelspec everywhere, so JupyterLab has nothing to rewrite on save."""
    specs = {nbformat.read(p, as_version=4).metadata.get("kernelspec", {}).get("display_name") for p in NOTEBOOKS}
    assert specs == {"Python 3 (ipykernel)"}
