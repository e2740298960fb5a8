"""`make bench`'s notebook section: it times lessons on fresh kernels and reports failures; never the speed itself."""
import nbformat
import pytest

from sandbox.bench.notebooks import course, notebook_misses, notebook_table, notebook_times
from sandbox.errors import BadInput


def _lesson(folder, name, *sources):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# {name}")]
                                  + [nbformat.v4.new_code_cell(s) for s in sources])
    nbformat.write(nb, folder / name)


@pytest.mark.notebook
def test_each_lesson_is_timed_on_its_own_kernel_and_a_failing_one_is_named(tmp_path):
    _lesson(tmp_path, "00_fine.ipynb", "import os\nstarted_in = os.getcwd()", "x = sum(range(1000))")
    _lesson(tmp_path, "01_broken.ipynb", "1 / 0", "print('never reached')")
    (tmp_path / "notes.ipynb").write_text("not a lesson: no number")
    r = notebook_times(folder=tmp_path)
    assert list(r["notebooks"]) == ["00_fine.ipynb", "01_broken.ipynb"] and r["complete"]
    fine, broken = r["notebooks"].values()
    assert fine["error"] is None and fine["code_cells"] == 2 and fine["slowest_cell"]["index"] in (1, 2)
    assert 0 < fine["kernel_start_s"] <= fine["wall_s"]
    # the kernel's shutdown is counted: a learner's "Restart Kernel" waits for it
    assert 0 < fine["kernel_shutdown_s"] and fine["kernel_start_s"] + fine["kernel_shutdown_s"] <= fine["wall_s"]
    assert 0 < fine["kernel_cpu_s"] and r["course_kernel_cpu_s"] == pytest.approx(
        fine["kernel_cpu_s"] + broken["kernel_cpu_s"], abs=0.1)
    assert broken["error"].startswith("ZeroDivisionError")
    assert r["course_s"] == pytest.approx(fine["wall_s"] + broken["wall_s"], abs=0.1)
    misses = notebook_misses(r)
    assert any("01_broken.ipynb failed: ZeroDivisionError" in m for m in misses)
    assert not any("00_fine" in m for m in misses if "to shut down" not in m)  # a shutdown's time varies with load
    slow = {**r, "notebooks": {"00_fine.ipynb": {**fine, "kernel_shutdown_s": 2.6}}}
    assert notebook_misses(slow) == ["notebook: 00_fine.ipynb's kernel took 2.6 s to shut down (target <= 0.5 s)"]
    table = "\n".join(notebook_table(r))
    assert "00_fine.ipynb" in table and "FAILED: ZeroDivisionError" in table and "the whole course" in table


@pytest.mark.notebook
def test_quick_times_the_first_lesson_only_and_does_not_call_it_the_course():
    r = notebook_times(quick=True)
    assert list(r["notebooks"]) == ["00_start_here.ipynb"] and not r["complete"]
    assert r["notebooks"]["00_start_here.ipynb"]["error"] is None
    assert not any(m.startswith("course:") for m in notebook_misses({**r, "course_s": 10_000}))


def test_lessons_are_picked_by_number_or_stem_and_a_miss_is_bad_input(tmp_path):
    for name in ("00_a.ipynb", "01_b.ipynb", "02_c.ipynb"):
        _lesson(tmp_path, name)
    assert [p.name for p in course(tmp_path, ["02", "00_a"])] == ["00_a.ipynb", "02_c.ipynb"]
    with pytest.raises(BadInput, match="no lesson in .* matches 07"):
        notebook_times(folder=tmp_path, only=["07"])
